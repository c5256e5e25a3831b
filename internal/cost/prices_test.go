package cost

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Hand-computed costs: prices are micro-dollars per million tokens, so a token kind costs
// tokens × price / 10^6 micro-dollars; the sum is rounded up once, and the bill is the exact sum
// × 8 / 7 (cost / 0.875), rounded up once.
func TestPriceArithmetic(t *testing.T) {
	t.Parallel()
	sonnet, ok := Default().Lookup("claude-sonnet-4-5")
	if !ok {
		t.Fatal("sonnet is not priced")
	}
	cases := []struct {
		name       string
		model      string
		u          Usage
		cost, bill Micros
	}{
		// 1000 in × $3/M = 3000 µ$; 500 out × $15/M = 7500 µ$ → 10500; × 8/7 = 12000.
		{"input and output", "claude-sonnet-4-5", Usage{Input: 1000, Output: 500}, 10_500, 12_000},
		// Every kind: 1000 in = 3000; 200 out = 3000; 400 cache writes of which 100 1h:
		// 300 × 3.75 = 1125, 100 × 6 = 600; 2000 cache reads × 0.30 = 600 → 8325; × 8/7 = 9514.28… → 9515.
		{"all kinds", "claude-sonnet-4-5", Usage{Input: 1000, Output: 200, CacheWrite: 400, CacheWrite1h: 100, CacheRead: 2000}, 8_325, 9_515},
		// One token of haiku input: 1 µ$ exactly; bill 8/7 → 2.
		{"one token", "claude-haiku-4-5", Usage{Input: 1}, 1, 2},
		// A third of a micro-dollar rounds up: 1 cache read token of haiku = 0.1 µ$ → 1; bill 0.114… → 1.
		{"rounds up once", "claude-haiku-4-5", Usage{CacheRead: 1}, 1, 1},
		// Reasoning tokens are part of output: 1000 out (300 reasoning) of gpt-4.1 = 8000, not 10400.
		{"reasoning not double counted", "gpt-4.1", Usage{Output: 1000, Reasoning: 300}, 8_000, 9_143},
		// OpenRouter spelling resolves to the same model.
		{"openrouter id", "anthropic/claude-sonnet-4.5", Usage{Input: 1000, Output: 500}, 10_500, 12_000},
		{"dated snapshot", "claude-sonnet-4-5-20250929", Usage{Input: 1000, Output: 500}, 10_500, 12_000},
		{"openai dated", "gpt-4.1-2025-04-14", Usage{Input: 1_000_000}, 2_000_000, 2_285_715},
		{"zero", "claude-opus-4-5", Usage{}, 0, 0},
	}
	for _, c := range cases {
		p, ok := Default().Lookup(c.model)
		if !ok {
			t.Errorf("%s: %s not priced", c.name, c.model)
			continue
		}
		if got := p.Cost(c.u); got != c.cost {
			t.Errorf("%s: cost = %d, want %d", c.name, got, c.cost)
		}
		if got := p.Bill(c.u); got != c.bill {
			t.Errorf("%s: bill = %d, want %d", c.name, got, c.bill)
		}
	}
	// Worst case: input at the dearest input rate (1h cache write, $6/M for sonnet) plus max output.
	// 10000 × 6 = 60000; 4096 × 15 = 61440 → 121440; bill × 8/7 = 138788.57… → 138789.
	if got := sonnet.WorstCase(10_000, 4096); got != 121_440 {
		t.Errorf("worst case = %d, want 121440", got)
	}
	if got := sonnet.WorstCaseBill(10_000, 4096); got != 138_789 {
		t.Errorf("worst case bill = %d, want 138789", got)
	}
	if _, ok := Default().Lookup("made-up-model-9"); ok {
		t.Error("an unknown model has a price")
	}
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"claude-sonnet-4-5":           "claude-sonnet-4-5",
		"anthropic/claude-sonnet-4.5": "claude-sonnet-4-5",
		"claude-sonnet-4-5-20250929":  "claude-sonnet-4-5",
		"openai/gpt-4.1-mini":         "gpt-4-1-mini",
		"gpt-4.1-2025-04-14":          "gpt-4-1",
		"google/gemini-2.5-pro":       "gemini-2-5-pro",
		"meta-llama/llama-3-8b:free":  "llama-3-8b",
		"Claude-Haiku-4-5":            "claude-haiku-4-5",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTotal(t *testing.T) {
	t.Parallel()
	m := Micros(50_000)
	cases := []struct {
		parts []*Micros
		want  string
	}{
		{nil, "0.00"},
		{[]*Micros{&m}, "0.05"},
		{[]*Micros{nil}, "unknown"},
		{[]*Micros{&m, nil}, "at least 0.05"},
	}
	for _, c := range cases {
		var tot Total
		for _, p := range c.parts {
			tot.Add(p)
		}
		if got := tot.String(); got != c.want {
			t.Errorf("%v: %q, want %q", c.parts, got, c.want)
		}
	}
}

func TestLoadTableOverride(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "prices.json")
	os.WriteFile(p, []byte(`{"version": "test-1", "families": {"fable": "my-model"},
		"models": {"my-model": {"input": 7000000, "output": 9000000, "cacheWrite5m": 0, "cacheWrite1h": 0, "cacheRead": 0},
		           "claude-haiku-4-5": {"input": 2000000, "output": 10000000, "cacheWrite5m": 0, "cacheWrite1h": 0, "cacheRead": 0}}}`), 0o644)
	tab, err := LoadTable(p)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Version != "test-1" {
		t.Errorf("version %q", tab.Version)
	}
	if id, _ := tab.FamilyModel("fable"); id != "my-model" {
		t.Errorf("fable → %q", id)
	}
	if id, _ := tab.FamilyModel("sonnet"); id != "claude-sonnet-4-5" {
		t.Errorf("sonnet → %q (embedded families must stay)", id)
	}
	if pr, _ := tab.Lookup("claude-haiku-4-5"); pr.Input != 2_000_000 {
		t.Errorf("override not applied: %+v", pr)
	}
	if _, ok := tab.Lookup("gpt-4.1"); !ok {
		t.Error("embedded models lost")
	}
	for _, bad := range []string{`{"models": {}}`, `{"version": "x", "models": {"m": {"input": -1}}}`,
		`{"version": "x", "families": {"haiku": "nope"}, "models": {}}`, `{"version": "x", "models": {}, "extra": 1}`} {
		os.WriteFile(p, []byte(bad), 0o644)
		if _, err := LoadTable(p); err == nil {
			t.Errorf("LoadTable accepted %s", bad)
		}
	}
}

// TestLoadTableListForm loads what GET /v2/prices returns (models as a list, with unit and markup),
// edited: the server's own view of the embedded table round-trips, and an edit applies.
func TestLoadTableListForm(t *testing.T) {
	t.Parallel()
	d := Default()
	entries := d.Entries()
	entries = append(entries, Entry{Model: "my-model", Price: Price{Input: 7_000_000, Output: 9_000_000}})
	// The shape of GET /v2/prices (internal/server getPrices).
	b, err := json.Marshal(map[string]any{"version": "edited-1", "unit": "micro-dollars per million tokens",
		"markup": "server access is billed at cost / 0.875", "families": map[string]string{"fable": "my-model"}, "models": entries})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "prices.json")
	os.WriteFile(p, b, 0o644)
	tab, err := LoadTable(p)
	if err != nil {
		t.Fatal(err)
	}
	if tab.Version != "edited-1" {
		t.Errorf("version %q", tab.Version)
	}
	if pr, ok := tab.Lookup("my-model"); !ok || pr.Input != 7_000_000 || pr.Output != 9_000_000 {
		t.Errorf("my-model: %+v %v", pr, ok)
	}
	if id, _ := tab.FamilyModel("fable"); id != "my-model" {
		t.Errorf("fable → %q", id)
	}
	if len(tab.Entries()) != len(entries) {
		t.Errorf("%d models, want %d", len(tab.Entries()), len(entries))
	}
	for _, e := range d.Entries() {
		if pr, _ := tab.Lookup(e.Model); pr != e.Price {
			t.Errorf("%s: %+v, want %+v", e.Model, pr, e.Price)
		}
	}
	// A file's families may name embedded models it does not list itself.
	os.WriteFile(p, []byte(`{"version": "x", "families": {"haiku": "claude-sonnet-4-5"}, "models": [{"model": "m", "input": 1}]}`), 0o644)
	if tab, err := LoadTable(p); err != nil {
		t.Error(err)
	} else if id, _ := tab.FamilyModel("haiku"); id != "claude-sonnet-4-5" {
		t.Errorf("haiku → %q", id)
	}
}

// TestParseTableErrors: a bad entry's error names its field's path.
func TestParseTableErrors(t *testing.T) {
	t.Parallel()
	for bad, want := range map[string]string{
		`[]`:                           "want a JSON object",
		`{"models": {}}`:               "version is required",
		`{"version": 3, "models": {}}`: "version: want a string",
		`{"version": "x", "models": {}, "extr": 1}`:                               `unknown field "extr"`,
		`{"version": "x", "unit": "dollars", "models": []}`:                       `unit: prices are read as`,
		`{"version": "x", "models": 5}`:                                           "models: want an object",
		`{"version": "x", "models": {"m": {"input": -1}}}`:                        `models["m"].input: negative price`,
		`{"version": "x", "models": {"m": {"input": 1.5}}}`:                       `models["m"].input: want a whole number`,
		`{"version": "x", "models": {"m": {"inptu": 1}}}`:                         `models["m"].inptu: unknown field`,
		`{"version": "x", "models": {"m": {"model": "m"}}}`:                       `models["m"].model: unknown field`,
		`{"version": "x", "models": {"m": 3}}`:                                    `models["m"]: want an object`,
		`{"version": "x", "models": [{"model": "a", "input": 1}, {"input": 2}]}`:  "models[1].model is required",
		`{"version": "x", "models": [{"model": "a", "output": "3"}]}`:             `models[0].output: want a whole number of micro-dollars per million tokens, got "3"`,
		`{"version": "x", "models": [{"model": "a"}, {"model": "A"}]}`:            `models[1]: model "A" is given twice (also at models[0])`,
		`{"version": "x", "models": [{"model": 7}]}`:                              "models[0].model: want a model id",
		`{"version": "x", "families": {"tiny": "a"}, "models": [{"model": "a"}]}`: "families.tiny: not a family",
		`{"version": "x", "families": {"haiku": "nope"}, "models": []}`:           `family haiku maps to "nope", which has no price`,
	} {
		_, err := ParseTable([]byte(bad))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTable(%s) = %v, want an error with %q", bad, err, want)
		}
	}
}
