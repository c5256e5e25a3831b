package cost

import (
	"os"
	"path/filepath"
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
