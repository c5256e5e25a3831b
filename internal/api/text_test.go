package api

import (
	"testing"
	"unicode/utf8"
)

func TestFirstLine(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"  first\nsecond", 10, "first"},
		{"windows\r\nline", 20, "windows"},
		{"abcdef", 3, "abc…"},
		{"héllo", 2, "h…"}, // é is 2 bytes: cut before it, not through it
		{"héllo", 3, "hé…"},
		{"日本語テキスト", 4, "日…"}, // 3-byte characters
		{"日本語テキスト", 2, "…"},
		{"🙂🙂", 5, "🙂…"},
		{"exact", 5, "exact"},
		{"", 5, ""},
	} {
		got := FirstLine(c.in, c.n)
		if got != c.want || !utf8.ValidString(got) {
			t.Errorf("FirstLine(%q, %d) = %q, want %q (valid UTF-8)", c.in, c.n, got, c.want)
		}
	}
}
