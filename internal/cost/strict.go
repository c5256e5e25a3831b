package cost

import (
	"fmt"
	"regexp"
)

// strictUSD is the grammar of a money value in the API: digits without a leading zero (or one
// zero), optionally a point and one to six decimals. No sign, spaces, "$", exponent or ".5".
var strictUSD = regexp.MustCompile(`^(0|[1-9][0-9]*)(\.[0-9]{1,6})?$`)

// ParseUSDStrict is ParseUSD for a value a client sent (spec.maxCostUSD, perRunMaxCostUSD,
// a group's maxCostUSD, a credit amount): it must match the strict decimal grammar exactly, so
// " 1" or "$1" is refused rather than stored as a string other readers may parse differently.
func ParseUSDStrict(s string) (Micros, error) {
	if !strictUSD.MatchString(s) {
		return 0, fmt.Errorf("amount %q is not a plain decimal number of dollars (like 1, 0.50 or 12.345678: digits, at most six decimals, no spaces, sign or $)", s)
	}
	return ParseUSD(s)
}
