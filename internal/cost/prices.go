package cost

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"sort"
	"strconv"
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

// Unit is how the price table states its prices (GET /v2/prices says it as "unit").
const Unit = "micro-dollars per million tokens"

// priceFields are a model's price fields, in the order errors name them.
var priceFields = []string{"input", "output", "cacheWrite5m", "cacheWrite1h", "cacheRead"}

// ParseTable reads a price table: an object with version (required), families (family → model
// id) and models, either a map from model id to its price (the embedded file's form) or a list of
// entries each naming its model (the form GET /v2/prices returns, so its output can be saved,
// edited and loaded). Prices are whole micro-dollars per million tokens. note, unit and markup
// are accepted and informational (unit, when given, must be Unit; the markup is the server's own).
// Unknown fields, prices that are not whole non-negative numbers, a model given twice, and
// families naming models the table does not price are errors, each naming its field's path.
func ParseTable(data []byte) (*Table, error) {
	t, err := parseTable(data)
	if err != nil {
		return nil, fmt.Errorf("price table: %w", err)
	}
	return t, t.check()
}

func parseTable(data []byte) (*Table, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return nil, fmt.Errorf("not valid JSON: %v (at byte %d)", err, syn.Offset)
		}
		return nil, fmt.Errorf("want a JSON object with version, families and models: %v", err)
	}
	if top == nil {
		return nil, fmt.Errorf("want a JSON object with version, families and models, not null")
	}
	for _, k := range sortedKeys(top) {
		switch k {
		case "version", "note", "unit", "markup", "families", "models":
		default:
			return nil, fmt.Errorf("unknown field %q (the fields are version, note, unit, markup, families and models)", k)
		}
	}
	var version, unit string
	for field, dst := range map[string]*string{"version": &version, "note": new(string), "unit": &unit, "markup": new(string)} {
		if raw, ok := top[field]; ok && json.Unmarshal(raw, dst) != nil {
			return nil, fmt.Errorf("%s: want a string, got %s", field, clip(raw))
		}
	}
	if strings.TrimSpace(version) == "" {
		return nil, fmt.Errorf("version is required")
	}
	if unit != "" && unit != Unit {
		return nil, fmt.Errorf("unit: prices are read as %q, not %q", Unit, unit)
	}
	t := &Table{Version: version, Families: map[string]string{}, models: map[string]Price{}, ids: map[string]string{}}
	if raw, ok := top["families"]; ok && !isNull(raw) {
		var fams map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fams); err != nil {
			return nil, fmt.Errorf("families: want an object mapping a family to a model id, got %s", clip(raw))
		}
		for _, fam := range sortedKeys(fams) {
			var id string
			if err := json.Unmarshal(fams[fam], &id); err != nil || strings.TrimSpace(id) == "" {
				return nil, fmt.Errorf("families.%s: want a model id, got %s", fam, clip(fams[fam]))
			}
			if !isFamily(fam) {
				return nil, fmt.Errorf("families.%s: not a family: use haiku, sonnet, opus or fable", fam)
			}
			t.Families[fam] = id
		}
	}
	seen := map[string]string{} // Normalize(id) → the path that gave it
	add := func(path, id string, p Price) error {
		k := Normalize(id)
		if prev, ok := seen[k]; ok {
			return fmt.Errorf("%s: model %q is given twice (also at %s)", path, id, prev)
		}
		seen[k] = path
		t.models[k], t.ids[k] = p, id
		return nil
	}
	raw := bytes.TrimSpace(top["models"])
	switch {
	case len(raw) == 0 || isNull(raw):
	case raw[0] == '[':
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("models: %v", err)
		}
		for i, e := range list {
			path := fmt.Sprintf("models[%d]", i)
			id, p, err := parsePrice(path, e, true)
			if err != nil {
				return nil, err
			}
			if err := add(path, id, p); err != nil {
				return nil, err
			}
		}
	case raw[0] == '{':
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("models: %v", err)
		}
		for _, id := range sortedKeys(m) {
			path := fmt.Sprintf("models[%q]", id)
			if strings.TrimSpace(id) == "" {
				return nil, fmt.Errorf("%s: a model id is required", path)
			}
			_, p, err := parsePrice(path, m[id], false)
			if err != nil {
				return nil, err
			}
			if err := add(path, id, p); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("models: want an object (model id → price) or a list of {\"model\": ..., \"input\": ...} entries, got %s", clip(raw))
	}
	return t, nil
}

// parsePrice reads one model's price at path; in the list form the entry names its model.
func parsePrice(path string, raw json.RawMessage, list bool) (string, Price, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return "", Price{}, fmt.Errorf("%s: want an object with %s, got %s", path, strings.Join(priceFields, ", "), clip(raw))
	}
	var p Price
	dst := map[string]*Micros{"input": &p.Input, "output": &p.Output, "cacheWrite5m": &p.CacheWrite5m, "cacheWrite1h": &p.CacheWrite1h, "cacheRead": &p.CacheRead}
	var id string
	for _, k := range sortedKeys(fields) {
		v := bytes.TrimSpace(fields[k])
		if k == "model" && list {
			if err := json.Unmarshal(v, &id); err != nil {
				return "", Price{}, fmt.Errorf("%s.model: want a model id, got %s", path, clip(v))
			}
			continue
		}
		d, ok := dst[k]
		if !ok {
			known := strings.Join(priceFields, ", ")
			if list {
				known = "model, " + known
			}
			return "", Price{}, fmt.Errorf("%s.%s: unknown field (the fields are %s)", path, k, known)
		}
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return "", Price{}, fmt.Errorf("%s.%s: want a whole number of %s, got %s", path, k, Unit, clip(v))
		}
		if n < 0 {
			return "", Price{}, fmt.Errorf("%s.%s: negative price %d", path, k, n)
		}
		*d = Micros(n)
	}
	if list && strings.TrimSpace(id) == "" {
		return "", Price{}, fmt.Errorf("%s.model is required (the model id this entry prices)", path)
	}
	return id, p, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func isNull(raw []byte) bool { return string(bytes.TrimSpace(raw)) == "null" }

// clip quotes at most 60 bytes of a JSON value for an error.
func clip(raw []byte) string {
	s := string(bytes.TrimSpace(raw))
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
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
	o, err := parseTable(b) // its families may name embedded models: checked once merged
	if err != nil {
		return nil, fmt.Errorf("%s: price table: %w", path, err)
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
