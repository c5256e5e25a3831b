package policy

import (
	"strconv"
	"strings"
)

// unescape removes the backslashes of an unquoted literal, and says whether it has an unescaped
// glob character, and whether a brace is open at its end.
func unescape(s string, brace bool) (text string, glob, braceOpen bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					b.WriteByte(s[i])
				}
				continue
			}
		case '*', '?', '[':
			glob = true
		case '{':
			brace = true
		case '}':
			if brace {
				glob = true
			}
		}
		b.WriteByte(c)
	}
	return b.String(), glob, brace
}

// unescapeDQ removes the backslashes the shell removes inside double quotes.
func unescapeDQ(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch n := s[i+1]; n {
			case '\n':
				i++
				continue
			case '$', '`', '"', '\\':
				b.WriteByte(n)
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ansiC decodes the inside of a $'...' string.
func ansiC(s string) string {
	var b strings.Builder
	i := 0
	digits := func(max int, ok func(byte) bool) string {
		j := i
		for j < len(s) && j-i < max && ok(s[j]) {
			j++
		}
		d := s[i:j]
		i = j
		return d
	}
	isHex := func(c byte) bool { return strings.IndexByte("0123456789abcdefABCDEF", c) >= 0 }
	simple := map[byte]string{'a': "\a", 'b': "\b", 'e': "\x1b", 'E': "\x1b", 'f': "\f", 'n': "\n",
		'r': "\r", 't': "\t", 'v': "\v", '\\': "\\", '\'': "'", '"': "\"", '?': "?"}
	for i < len(s) {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			i++
			continue
		}
		n := s[i+1]
		i += 2
		if r, ok := simple[n]; ok {
			b.WriteString(r)
			continue
		}
		switch {
		case n >= '0' && n <= '7':
			i--
			v, _ := strconv.ParseUint(digits(3, func(c byte) bool { return c >= '0' && c <= '7' }), 8, 16)
			b.WriteByte(byte(v))
		case n == 'x':
			if d := digits(2, isHex); d != "" {
				v, _ := strconv.ParseUint(d, 16, 8)
				b.WriteByte(byte(v))
			} else {
				b.WriteString(`\x`)
			}
		case n == 'u' || n == 'U':
			max := 4
			if n == 'U' {
				max = 8
			}
			if d := digits(max, isHex); d != "" {
				v, _ := strconv.ParseUint(d, 16, 32)
				b.WriteRune(rune(v))
			} else {
				b.WriteByte('\\')
				b.WriteByte(n)
			}
		case n == 'c' && i < len(s):
			b.WriteByte(s[i] & 0x1f)
			i++
		default:
			b.WriteByte('\\')
			b.WriteByte(n)
		}
	}
	return b.String()
}
