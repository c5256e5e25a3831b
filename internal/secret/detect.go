package secret

// The one detector of known secret values in text, shared by the learning checks (a proposal
// holding a value the run was handed is refused) and MCP redaction (a value a server was given
// is replaced in what it says back). A value is found as written and in the forms a model or a
// tool could carry it in: JSON-escaped, hex, base64 (standard and URL alphabets, padded or not,
// at any byte offset inside a longer encoded string), reversed, %-encoded, and split into chunks
// joined across whitespace, newlines, quotes and the punctuation of string concatenation; and,
// for a value long enough that a part of it is itself unguessable, any run of WindowLen of its
// characters (a key handed back ten characters at a time).

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"sort"
	"strings"
)

const (
	// MinDetect is the shortest value looked for; shorter ones would match ordinary text.
	MinDetect = 4
	// WindowLen is the length of the parts of a value found on their own, once the value is
	// at least windowMinValue long.
	WindowLen      = 10
	windowMinValue = 16
	// minEncoded is the shortest encoded part looked for (an interior base64 run of a short
	// value is too short to mean anything).
	minEncoded = 8
)

// Detector finds known secret values. The zero value finds nothing; Add gives it values.
type Detector struct {
	forms []form
	// windows maps each WindowLen-long part of a long value (and of its encoded forms) to the
	// value's reference.
	windows map[string]string
}

type form struct{ ref, text string }

// Add makes d look for value, reporting and replacing it as ref. A value shorter than MinDetect
// is ignored.
func (d *Detector) Add(ref, value string) {
	if len(value) < MinDetect {
		return
	}
	seen := map[string]bool{}
	add := func(s string) {
		if len(s) >= MinDetect && !seen[s] {
			seen[s] = true
			d.forms = append(d.forms, form{ref: ref, text: s})
		}
	}
	add(value)
	if q, err := json.Marshal(value); err == nil {
		add(string(q[1 : len(q)-1]))
	}
	add(reverse(value))
	add(url.QueryEscape(value))
	add(url.PathEscape(value))
	add(percentAll(value, true))
	add(percentAll(value, false))
	hx := hex.EncodeToString([]byte(value))
	add(hx)
	add(strings.ToUpper(hx))
	var b64 []string
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		full := enc.EncodeToString([]byte(value))
		add(full)
		b64 = append(b64, full)
		// Inside a longer encoded string the value starts at byte offset 0, 1 or 2 of a
		// 3-byte group: the groups wholly inside it encode the same whatever surrounds it.
		for k := 0; k < 3; k++ {
			e := enc.EncodeToString(append(make([]byte, k), value...))
			start, end := (k+2)/3, (k+len(value))/3
			if end > start && 4*(end-start) >= minEncoded {
				s := e[4*start : 4*end]
				add(s)
				b64 = append(b64, s)
			}
		}
	}
	// The value split into chunks: looked for in text with its separators taken out (squeeze),
	// so the value and its forms are squeezed too.
	for _, f := range []string{value, hx, reverse(value)} {
		if sq := squeeze(f); sq != f {
			add(sq)
		}
	}
	if len(value) >= windowMinValue {
		if d.windows == nil {
			d.windows = map[string]string{}
		}
		// A key's leading prefix ("sk-ant-api03-", "ghp_") is the same in every key of its kind:
		// parts of the value are looked for only after it.
		pre := prefixLen(value)
		window := func(f string, from, to int) {
			for i := from; i+WindowLen <= to; i++ {
				if w := f[i : i+WindowLen]; distinctive(w) {
					d.windows[w] = ref
				}
			}
		}
		window(value, pre, len(value))
		sq := squeeze(value)
		window(sq, prefixLen(sq), len(sq))
		window(hx, 2*pre, len(hx))
		window(strings.ToUpper(hx), 2*pre, len(hx))
		window(reverse(value), 0, len(value)-pre)
		for _, f := range b64 {
			window(f, 0, len(f))
		}
	}
	// Longest first, so a form that holds another is replaced whole.
	sort.SliceStable(d.forms, func(i, j int) bool { return len(d.forms[i].text) > len(d.forms[j].text) })
}

// Longest is the length of the longest form d looks for (0: none), so a reader of text arriving
// in pieces knows how much of its end a later piece could still make part of a value.
func (d *Detector) Longest() int {
	n := 0
	for _, f := range d.forms {
		n = max(n, len(f.text))
	}
	return n
}

// Empty reports whether d looks for nothing.
func (d *Detector) Empty() bool { return d == nil || len(d.forms) == 0 }

// Find reports the reference of a known value s holds, in any of its forms ("", false: none).
func (d *Detector) Find(s string) (string, bool) {
	if d.Empty() {
		return "", false
	}
	spans := d.spans(s, true)
	if len(spans) == 0 {
		return "", false
	}
	return spans[0].ref, true
}

// Redact returns s with each known value, in any of its forms, replaced by "[" + its reference
// + "]".
func (d *Detector) Redact(s string) string {
	if d.Empty() {
		return s
	}
	spans := d.spans(s, false)
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	at := 0
	for _, sp := range spans {
		if sp.start < at {
			continue
		}
		b.WriteString(s[at:sp.start])
		b.WriteString("[" + sp.ref + "]")
		at = sp.end
	}
	b.WriteString(s[at:])
	return b.String()
}

type span struct {
	start, end int
	ref        string
}

// spans are the byte ranges of s that hold a known value's form, merged and in order (first:
// stop at the first found).
func (d *Detector) spans(s string, first bool) []span {
	var out []span
	mark := func(start, end int, ref string) { out = append(out, span{start, end, ref}) }
	for _, f := range d.forms {
		for i := 0; ; {
			j := strings.Index(s[i:], f.text)
			if j < 0 {
				break
			}
			mark(i+j, i+j+len(f.text), f.ref)
			if first {
				return out
			}
			i += j + len(f.text)
		}
	}
	// The same with the separators taken out, mapped back to s: a value in chunks.
	sq, at := squeezeMap(s)
	if len(sq) != len(s) {
		for _, f := range d.forms {
			for i := 0; ; {
				j := strings.Index(sq[i:], f.text)
				if j < 0 {
					break
				}
				a, b := i+j, i+j+len(f.text)
				mark(at[a], at[b-1]+1, f.ref)
				if first {
					return out
				}
				i = b
			}
		}
	}
	// Parts of a long value, in s as it is and squeezed.
	if len(d.windows) > 0 {
		for _, text := range []struct {
			s  string
			at []int
		}{{s, nil}, {sq, at}} {
			for i := 0; i+WindowLen <= len(text.s); i++ {
				ref, ok := d.windows[text.s[i:i+WindowLen]]
				if !ok {
					continue
				}
				a, b := i, i+WindowLen
				if text.at != nil {
					a, b = text.at[a], text.at[b-1]+1
				}
				mark(a, b, ref)
				if first {
					return out
				}
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	merged := out[:1]
	for _, sp := range out[1:] {
		last := &merged[len(merged)-1]
		if sp.start <= last.end {
			if sp.end > last.end {
				last.end = sp.end
			}
			continue
		}
		merged = append(merged, sp)
	}
	return merged
}

// separator reports whether c is what chunks of a value are joined across: whitespace, quotes,
// and the punctuation of string concatenation and lists.
func separator(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\v', '\f', '"', '\'', '`', '+', ',', ';', '|', '[', ']', '(', ')', '{', '}':
		return true
	}
	return false
}

// squeeze is s without separators and without the escapes \n, \r and \t (a chunk per line of a
// JSON string).
func squeeze(s string) string {
	sq, _ := squeezeMap(s)
	return sq
}

// squeezeMap is squeeze(s) and, for each of its bytes, the offset in s it came from.
func squeezeMap(s string) (string, []int) {
	var b strings.Builder
	at := make([]int, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if separator(c) {
			continue
		}
		if c == '\\' && i+1 < len(s) && (s[i+1] == 'n' || s[i+1] == 'r' || s[i+1] == 't') {
			i++
			continue
		}
		b.WriteByte(c)
		at = append(at, i)
	}
	return b.String(), at
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

// percentAll is s with every byte %-encoded (the form an encoder that escapes everything gives),
// in upper- or lowercase hex digits.
func percentAll(s string, upper bool) string {
	digits := "0123456789abcdef"
	if upper {
		digits = "0123456789ABCDEF"
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte('%')
		b.WriteByte(digits[s[i]>>4])
		b.WriteByte(digits[s[i]&15])
	}
	return b.String()
}

// prefixLen is the length of value's leading prefix: up to its last '-' or '_' among the first 16
// characters (0 when there is none).
func prefixLen(value string) int {
	head := value[:min(len(value), 16)]
	return strings.LastIndexAny(head, "-_") + 1
}

// distinctive reports whether a part of a value is worth finding on its own: it mixes at least
// two of lowercase letters, uppercase letters and digits, as a key's random part does, so a
// value's common prefix ("sk-ant-api", "https://ex") is not looked for alone.
func distinctive(w string) bool {
	var lower, upper, digit int
	for i := 0; i < len(w); i++ {
		switch c := w[i]; {
		case c >= 'a' && c <= 'z':
			lower = 1
		case c >= 'A' && c <= 'Z':
			upper = 1
		case c >= '0' && c <= '9':
			digit = 1
		}
	}
	return lower+upper+digit >= 2
}
