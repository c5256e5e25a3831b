package cost

import "strings"

// Price is a model's price in micro-dollars per million tokens.
type Price struct {
	Input, Output, CacheWrite5m, CacheWrite1h, CacheRead Micros
}

// prices is the embedded price table (vendor list prices, USD per million tokens, as micro-dollars).
// Issue 4 makes it versioned and overridable; until then unknown models price as unknown.
var prices = map[string]Price{
	"claude-haiku-4-5":  {Input: 1_000_000, Output: 5_000_000, CacheWrite5m: 1_250_000, CacheWrite1h: 2_000_000, CacheRead: 100_000},
	"claude-sonnet-4-5": {Input: 3_000_000, Output: 15_000_000, CacheWrite5m: 3_750_000, CacheWrite1h: 6_000_000, CacheRead: 300_000},
	"claude-opus-4-5":   {Input: 5_000_000, Output: 25_000_000, CacheWrite5m: 6_250_000, CacheWrite1h: 10_000_000, CacheRead: 500_000},
	"gpt-4.1":           {Input: 2_000_000, Output: 8_000_000, CacheRead: 500_000},
	"gpt-4.1-mini":      {Input: 400_000, Output: 1_600_000, CacheRead: 100_000},
}

// LookupPrice finds a model's price; dated snapshots ("claude-sonnet-4-5-20250929") and vendor
// prefixes ("anthropic/claude-sonnet-4.5") resolve to their base model.
func LookupPrice(model string) (Price, bool) {
	m := strings.ToLower(model)
	if i := strings.LastIndex(m, "/"); i >= 0 {
		m = m[i+1:]
	}
	m = strings.ReplaceAll(m, ".", "-")
	if p, ok := prices[m]; ok {
		return p, true
	}
	// Strip a trailing date stamp.
	if i := strings.LastIndex(m, "-"); i > 0 && len(m)-i-1 == 8 {
		if p, ok := prices[m[:i]]; ok {
			return p, true
		}
	}
	return Price{}, false
}

// ModelCost prices one call's usage; ok is false when the model is not in the table (the cost is
// unknown, never zero). Each token kind rounds up to a whole micro-dollar.
func ModelCost(model string, input, output, cacheWrite, cacheRead int64) (Micros, bool) {
	p, ok := LookupPrice(model)
	if !ok {
		return 0, false
	}
	return perTokens(input, p.Input) + perTokens(output, p.Output) + perTokens(cacheWrite, p.CacheWrite5m) + perTokens(cacheRead, p.CacheRead), true
}

func perTokens(n int64, perMillion Micros) Micros {
	if n <= 0 {
		return 0
	}
	return Micros((n*int64(perMillion) + 999_999) / 1_000_000)
}
