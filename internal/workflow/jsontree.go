package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Document traversal bounds, as the published language has them.
const (
	maxDepth  = 128
	maxValues = 100000
)

// value is one JSON value with the byte offset where it starts, so every error can name the
// line and column of what it is about. Objects keep their members in file order.
type value struct {
	kind  byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	off   int
	mem   []member
	elems []*value
	str   string
	num   json.Number
	b     bool
}

type member struct {
	key    string
	keyOff int
	val    *value
}

func (v *value) get(key string) *value {
	if v == nil || v.kind != 'o' {
		return nil
	}
	for _, m := range v.mem {
		if m.key == key {
			return m.val
		}
	}
	return nil
}

func (v *value) typeName() string {
	if v == nil {
		return "nothing"
	}
	switch v.kind {
	case 'o':
		return "an object"
	case 'a':
		return "an array"
	case 's':
		return "a string"
	case 'n':
		return "a number"
	case 'b':
		return "a boolean"
	}
	return "null"
}

// toAny is the value as encoding/json would decode it (numbers as json.Number).
func (v *value) toAny() any {
	switch v.kind {
	case 'o':
		m := make(map[string]any, len(v.mem))
		for _, e := range v.mem {
			m[e.key] = e.val.toAny()
		}
		return m
	case 'a':
		a := make([]any, len(v.elems))
		for i, e := range v.elems {
			a[i] = e.toAny()
		}
		return a
	case 's':
		return v.str
	case 'n':
		return v.num
	case 'b':
		return v.b
	}
	return nil
}

// parser decodes with encoding/json's tokenizer and tracks where each value starts.
type jparser struct {
	raw   []byte
	dec   *json.Decoder
	count int
	errs  *[]Error
	lines *lineIndex
	// at is the pointer's segments down to the value being read, joined only for an error: a
	// pointer string per level would cost the square of the depth (long keys, 128 levels).
	at []string
}

// pointer is the JSON pointer of the value being read, with seg below it.
func (p *jparser) pointer(seg string) string {
	return "/" + strings.Join(append(p.at[:len(p.at):len(p.at)], seg), "/")
}

// parse decodes a whole document. A syntax error is returned as an Error with its position;
// duplicate keys are recorded in errs and parsing goes on (the later value is the one kept in
// the tree, as encoding/json would, but the document is invalid).
func parse(raw []byte, errs *[]Error, lines *lineIndex) (*value, error) {
	p := &jparser{raw: raw, dec: json.NewDecoder(bytes.NewReader(raw)), errs: errs, lines: lines}
	p.dec.UseNumber()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if _, err := p.dec.Token(); !errors.Is(err, io.EOF) {
		off := int(p.dec.InputOffset())
		return nil, p.syntax(off, "there is more after the document's closing brace; a file holds one JSON document")
	}
	return v, nil
}

func (p *jparser) syntax(off int, msg string) error {
	l, c := p.lines.pos(off)
	return &Error{Code: CodeJSONSyntax, Pointer: "", Line: l, Column: c, Message: msg}
}

// start is where the next token begins: past whitespace and the separators the tokenizer eats.
func (p *jparser) start(from int) int {
	for from < len(p.raw) {
		switch p.raw[from] {
		case ' ', '\t', '\r', '\n', ',', ':':
			from++
			continue
		}
		break
	}
	return from
}

func (p *jparser) token() (json.Token, int, error) {
	off := p.start(int(p.dec.InputOffset()))
	tok, err := p.dec.Token()
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, 0, p.syntax(p.syntaxAt(), "not valid JSON: "+se.Error())
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, 0, p.syntax(len(p.raw), "the document ends early: a brace, bracket or quote is not closed")
		}
		return nil, 0, p.syntax(off, "not valid JSON: "+err.Error())
	}
	return tok, off, nil
}

// syntaxAt is where the syntax error Token just returned is. The error's own Offset is not that:
// for a bad value it counts the bytes the decoder has scanned in values so far, leaving out the
// delimiters and spaces Token read itself, so it fell lines early in a longer document. After the
// error the decoder stands at the bad character or at the start of the bad value; a fresh
// decoder over the rest finds the character within that value.
func (p *jparser) syntaxAt() int {
	from := int(p.dec.InputOffset())
	var v any
	err := json.NewDecoder(bytes.NewReader(p.raw[from:])).Decode(&v)
	var se *json.SyntaxError
	if errors.As(err, &se) && se.Offset > 0 {
		return from + int(se.Offset) - 1
	}
	return from
}

func (p *jparser) value(depth int) (*value, error) {
	tok, off, err := p.token()
	if err != nil {
		return nil, err
	}
	p.count++
	if p.count > maxValues {
		return nil, p.syntax(off, fmt.Sprintf("the document has more than %d values; split it into child workflows", maxValues))
	}
	v := &value{off: off}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= maxDepth {
			return nil, p.syntax(off, fmt.Sprintf("the document nests deeper than %d levels", maxDepth))
		}
		switch t {
		case '{':
			v.kind = 'o'
			seen := map[string]int{}
			for p.dec.More() {
				kt, koff, err := p.token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, p.syntax(koff, "an object key must be a string")
				}
				p.at = append(p.at, escapePtr(key))
				child, err := p.value(depth + 1)
				p.at = p.at[:len(p.at)-1]
				if err != nil {
					return nil, err
				}
				if i, dup := seen[key]; dup {
					l, c := p.lines.pos(koff)
					*p.errs = append(*p.errs, Error{Code: CodeDuplicateKey, Pointer: p.pointer(escapePtr(key)), Line: l, Column: c,
						Message: fmt.Sprintf("key %q appears twice in this object; keep one", key)})
					v.mem[i].val = child
					continue
				}
				seen[key] = len(v.mem)
				v.mem = append(v.mem, member{key: key, keyOff: koff, val: child})
			}
			if _, _, err := p.token(); err != nil {
				return nil, err
			}
		case '[':
			v.kind = 'a'
			for i := 0; p.dec.More(); i++ {
				p.at = append(p.at, strconv.Itoa(i))
				child, err := p.value(depth + 1)
				p.at = p.at[:len(p.at)-1]
				if err != nil {
					return nil, err
				}
				v.elems = append(v.elems, child)
			}
			if _, _, err := p.token(); err != nil {
				return nil, err
			}
		}
	case string:
		v.kind, v.str = 's', t
	case json.Number:
		v.kind, v.num = 'n', t
	case bool:
		v.kind, v.b = 'b', t
	case nil:
		v.kind = 'z'
	}
	return v, nil
}

// escapePtr escapes one JSON pointer token (RFC 6901).
func escapePtr(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// lineIndex turns byte offsets into 1-based line and column (columns count characters).
type lineIndex struct {
	raw    []byte
	starts []int
}

func newLineIndex(raw []byte) *lineIndex {
	li := &lineIndex{raw: raw, starts: []int{0}}
	for i, b := range raw {
		if b == '\n' {
			li.starts = append(li.starts, i+1)
		}
	}
	return li
}

func (li *lineIndex) pos(off int) (int, int) {
	if off > len(li.raw) {
		off = len(li.raw)
	}
	lo, hi := 0, len(li.starts)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if li.starts[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	col := len([]rune(string(li.raw[li.starts[lo]:off]))) + 1
	return lo + 1, col
}
