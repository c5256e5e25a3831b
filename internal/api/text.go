package api

import (
	"strings"
	"unicode/utf8"
)

// FirstLine is the first line of s, trimmed, cut to at most n bytes on a character boundary (a
// cut line ends in "…"): the short form of a text in timeline events and pages. Cutting at a
// byte count could split a UTF-8 character and store invalid text.
func FirstLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	s = strings.TrimRight(s, "\r")
	if len(s) <= n {
		return s
	}
	cut := max(n, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
