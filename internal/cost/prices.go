package cost

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"sort"
	"strings"
)

// Price is a model's price in integer micro-dollars per million tokens, for each kind of token a
// vendor bills: uncached input, output (reasoning tokens included), cache writes with the 5-minute
// and the 1-hour lifetime, and cache reads.
type Price struct {
	Input        Micros `json:"input"`
	Output       Micros `json:"output"`
	CacheWrite5m Micros `json:"cacheWrite5m"`
	CacheWrite1h Micros `json:"cacheWrite1h"`
	CacheRead    Micros `json:"cacheRead"`
}

// Usage is one call's token counts, as model.Usage has them: Input excludes the cache counts;
// CacheWrite is every cache-write token and CacheWrite1h the part of it written with the one-hour
// lifetime; Reasoning is part of Output (never billed twice).
type Usage struct {
	Input, Output, CacheWrite, CacheWrite1h, CacheRead, Reasoning int64
}

// Families the router chooses among, cheapest first.
var Families = []string{"haiku", "sonnet", "opus", "fable"}

// Table is a versioned price table: concrete model ids with their prices, and the router's families
// mapped to model ids.
type Table struct {
	Version  string
	Families map[string]string
	models   map[string]Price // by Normalize(id)
	ids      map[string]string
}

type tableFile struct {
	Version  string            `json:"version"`
	Note     string            `json:"note,omitempty"`
	Families map[string]string `json:"families,omitempty"`
	Models   map[string]Price  `json:"models"`
}

//go:embed prices.json
var embedded []byte

var defaultTable = mustParse(embedded)

func mustParse(b []byte) *Table {
	t, err := ParseTable(b)
	if err != nil {
		panic("embedded price table: " + err.Error())
	}
	return t
}

// Default is the embedded price table.
func Default() *Table { return defaultTable }

// ParseTable reads a price table in the embedded file's JSON format. Unknown fields, negative
// prices and families naming models the table does not price are errors.
func ParseTable(data []byte) (*Table, error) {
	var f tableFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("price table: %w", err)
	}
	if strings.TrimSpace(f.Version) == "" {
		return nil, fmt.Errorf("price table: version is required")
	}
	t := &Table{Version: f.Version, Families: map[string]string{}, models: map[string]Price{}, ids: map[string]string{}}
	for id, p := range f.Models {
		if p.Input < 0 || p.Output < 0 || p.CacheWrite5m < 0 || p.CacheWrite1h < 0 || p.CacheRead < 0 {
			return nil, fmt.Errorf("price table: model %q: negative price", id)
		}
		t.models[Normalize(id)] = p
		t.ids[Normalize(id)] = id
	}
	for fam, id := range f.Families {
		if !isFamily(fam) {
			return nil, fmt.Errorf("price table: family %q: use haiku, sonnet, opus or fable", fam)
		}
		t.Families[fam] = id
	}
	return t, t.check()
}

func (t *Table) check() error {
	for fam, id := range t.Families {
		if _, ok := t.Lookup(id); !ok {
			return fmt.Errorf("price table: family %s maps to %q, which has no price", fam, id)
		}
	}
	return nil
}

func isFamily(f string) bool {
	for _, x := range Families {
		if x == f {
			return true
		}
	}
	return false
}

// LoadTable returns the embedded table overridden by the file at path (its models replace or add
// to the embedded ones, its families replace theirs, its version names the result). An empty path
// returns the embedded table.
func LoadTable(path string) (*Table, error) {
	if path == "" {
		return Default(), nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load prices: %w", err)
	}
	o, err := ParseTable(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	base := Default()
	t := &Table{Version: o.Version, Families: map[string]string{}, models: map[string]Price{}, ids: map[string]string{}}
	for k, v := range base.models {
		t.models[k], t.ids[k] = v, base.ids[k]
	}
	for k, v := range base.Families {
		t.Families[k] = v
	}
	for k, v := range o.models {
		t.models[k], t.ids[k] = v, o.ids[k]
	}
	for k, v := range o.Families {
		t.Families[k] = v
	}
	if err := t.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Normalize maps a model id to the table's key: lower case, without a vendor prefix
// ("anthropic/claude-sonnet-4.5"), dots as dashes, and without a date stamp
// ("claude-sonnet-4-5-20250929", "gpt-4.1-2025-04-14").
func Normalize(model string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndex(m, "/"); i >= 0 {
		m = m[i+1:]
	}
	m, _, _ = strings.Cut(m, ":") // OpenRouter variants such as ":free" price as the base model
	m = strings.ReplaceAll(m, ".", "-")
	parts := strings.Split(m, "-")
	n := len(parts)
	switch {
	case n > 1 && len(parts[n-1]) == 8 && digits(parts[n-1]):
		parts = parts[:n-1]
	case n > 3 && len(parts[n-3]) == 4 && len(parts[n-2]) == 2 && len(parts[n-1]) == 2 && digits(parts[n-3]+parts[n-2]+parts[n-1]):
		parts = parts[:n-3]
	}
	return strings.Join(parts, "-")
}

func digits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// Lookup finds a model's price; ok is false when the table does not price it (its cost is unknown,
// never zero).
func (t *Table) Lookup(model string) (Price, bool) {
	p, ok := t.models[Normalize(model)]
	return p, ok
}

// FamilyModel is the model id a family maps to.
func (t *Table) FamilyModel(family string) (string, bool) {
	id, ok := t.Families[family]
	return id, ok
}

// Entry is one row of a table, for listing.
type Entry struct {
	Model string `json:"model"`
	Price
}

// Entries lists the table's models by id.
func (t *Table) Entries() []Entry {
	out := make([]Entry, 0, len(t.models))
	for k, p := range t.models {
		out = append(out, Entry{Model: t.ids[k], Price: p})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Model < out[j].Model })
	return out
}

// exact is the cost of u in micro-dollars times a million (1e-12 USD), with no rounding.
func (p Price) exact(u Usage) *big.Int {
	sum := new(big.Int)
	add := func(tokens int64, per Micros) {
		if tokens > 0 && per > 0 {
			sum.Add(sum, new(big.Int).Mul(big.NewInt(tokens), big.NewInt(int64(per))))
		}
	}
	w1h := min(max(u.CacheWrite1h, 0), max(u.CacheWrite, 0))
	add(u.Input, p.Input)
	add(u.Output, p.Output) // reasoning tokens are part of the output count
	add(u.CacheWrite-w1h, p.CacheWrite5m)
	add(w1h, p.CacheWrite1h)
	add(u.CacheRead, p.CacheRead)
	return sum
}

var million = big.NewInt(1_000_000)

// ceilDiv is ⌈n·num/den⌉ for non-negative n, as Micros.
func ceilDiv(n *big.Int, num, den int64) Micros {
	x := new(big.Int).Mul(n, big.NewInt(num))
	d := big.NewInt(den)
	q, r := new(big.Int).QuoRem(x, d, new(big.Int))
	if r.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return Micros(1<<62 - 1)
	}
	return Micros(q.Int64())
}

// Cost is what the call cost at the vendor's list price: Σ tokens × price per million ÷ 10^6,
// rounded up once to the micro-dollar.
func (p Price) Cost(u Usage) Micros { return ceilDiv(p.exact(u), 1, 1_000_000) }

// Markup: on the server's access a call is billed at cost / 0.875, that is cost × 8 / 7.
const (
	MarkupNum = 8
	MarkupDen = 7
)

// Bill is what a call on the server's access is charged: the exact vendor cost × 8 / 7
// (cost / 0.875), rounded up once to the micro-dollar.
func (p Price) Bill(u Usage) Micros { return ceilDiv(p.exact(u), MarkupNum, MarkupDen*1_000_000) }

// worstExact prices inputTokens at the dearest input rate (uncached, or either cache write) and
// maxOutput tokens of output.
func (p Price) worstExact(inputTokens, maxOutput int64) *big.Int {
	in := max(p.Input, p.CacheWrite5m, p.CacheWrite1h)
	return Price{Input: in, Output: p.Output}.exact(Usage{Input: inputTokens, Output: maxOutput})
}

// WorstCase is the most a call with at most inputTokens of input and maxOutput tokens of output
// can cost at list price; WorstCaseBill is the most it can be billed.
func (p Price) WorstCase(inputTokens, maxOutput int64) Micros {
	return ceilDiv(p.worstExact(inputTokens, maxOutput), 1, 1_000_000)
}

// WorstCaseBill is WorstCase with the server's markup.
func (p Price) WorstCaseBill(inputTokens, maxOutput int64) Micros {
	return ceilDiv(p.worstExact(inputTokens, maxOutput), MarkupNum, MarkupDen*1_000_000)
}

// MarkupOf is an exact amount's price with the markup (used for sums that are already rounded).
func MarkupOf(m Micros) Micros {
	return ceilDiv(big.NewInt(int64(m)), MarkupNum, MarkupDen)
}

// Total is a sum of costs some of which may be unknown.
type Total struct {
	Known   Micros
	Unknown int // how many parts could not be priced
}

// Add adds one part; nil is an unknown part.
func (t *Total) Add(m *Micros) {
	if m == nil {
		t.Unknown++
		return
	}
	t.Known += *m
}

// String is the amount, "unknown" when nothing known was added and something unknown was, or
// "at least X" when both were.
func (t Total) String() string {
	switch {
	case t.Unknown == 0:
		return t.Known.String()
	case t.Known == 0:
		return "unknown"
	}
	return "at least " + t.Known.String()
}
