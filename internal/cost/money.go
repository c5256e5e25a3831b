// Package cost owns money: integer micro-dollar amounts, their decimal parsing and printing, and
// (as it grows) the price table, caps, reservations and the credits ledger. Money is never a float;
// an amount that cannot be priced is Unknown, never zero.
package cost

import (
	"fmt"
	"strconv"
	"strings"
)

// Micros is an amount of money in integer micro-dollars (1 USD = 1,000,000).
type Micros int64

// PerDollar is the number of micro-dollars in a dollar.
const PerDollar Micros = 1_000_000

// ParseUSD parses a non-negative decimal dollar string such as "1", "0.50" or "0.000125" (at most
// six decimals). It never goes through floating point.
func ParseUSD(s string) (Micros, error) {
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "$"))
	if s == "" {
		return 0, fmt.Errorf("empty amount")
	}
	whole, frac, hasDot := strings.Cut(s, ".")
	if whole == "" {
		whole = "0"
	}
	if hasDot && frac == "" {
		return 0, fmt.Errorf("amount %q: nothing after the decimal point", s)
	}
	if len(frac) > 6 {
		return 0, fmt.Errorf("amount %q: more than six decimals", s)
	}
	for _, r := range whole + frac {
		if r < '0' || r > '9' {
			return 0, fmt.Errorf("amount %q is not a non-negative decimal number", s)
		}
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > 1_000_000_000 {
		return 0, fmt.Errorf("amount %q is too large", s)
	}
	frac += strings.Repeat("0", 6-len(frac))
	f, _ := strconv.ParseInt(frac, 10, 64)
	return Micros(w)*PerDollar + Micros(f), nil
}

// String prints the amount as dollars with as many decimals as it needs (at least two).
func (m Micros) String() string {
	neg := m < 0
	if neg {
		m = -m
	}
	s := fmt.Sprintf("%d.%06d", m/PerDollar, m%PerDollar)
	for strings.HasSuffix(s, "0") && len(s) > len(s[:strings.Index(s, ".")])+3 {
		s = s[:len(s)-1]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// Dollars puts the dollar sign on an amount as the API writes it, after any qualifier:
// "1.25" → "$1.25", "at least 1.25" → "at least $1.25", "at most 1.25" → "at most $1.25",
// "-0.5" → "-$0.5"; "unknown" and "" stay as they are.
func Dollars(s string) string {
	if s == "" || s == "unknown" {
		return s
	}
	for _, q := range []string{"at least ", "at most "} {
		if rest, ok := strings.CutPrefix(s, q); ok {
			return q + Dollars(rest)
		}
	}
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		return "-$" + rest
	}
	return "$" + s
}

// Bound is what a call on the server's access is charged when its reported usage prices at billed
// and reserved is the worst case checked (and reserved from credits) before it was made: never more
// than the reservation. The usage is the vendor's claim, and a call cannot honestly cost more than
// its request's bytes and maxTokens allow; excess (billed − reserved, or 0) is a vendor
// discrepancy, recorded, not charged, so no vendor reply can take a run past its cap or the
// credits below zero.
func Bound(billed, reserved Micros) (charged, excess Micros) {
	if billed <= reserved {
		return billed, 0
	}
	return reserved, billed - reserved
}
