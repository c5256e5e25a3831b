// Package humanjson writes JSON for people to read: compact, keys in their order, and without the
// HTML escaping encoding/json applies by default (a tool call's arguments such as
// {"command":"echo x > out.txt"} read as written, not as "echo x \u003e out.txt").
package humanjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// String is raw JSON re-encoded for people: compact, object keys in the order given, strings
// without HTML escaping (<, > and & as themselves), numbers as written. Text that is not a single
// JSON value is returned unchanged.
func String(raw []byte) string {
	s, err := encode(raw)
	if err != nil {
		return string(raw)
	}
	return s
}

// Of marshals v for people: like json.Marshal, without HTML escaping.
func Of(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(b.String(), "\n")
}

type frame struct {
	object bool
	n      int // tokens written inside: in an object, keys and values alternate
}

func encode(raw []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b strings.Builder
	var stack []frame
	values := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			b.WriteByte(byte(d))
			continue
		}
		if len(stack) == 0 {
			if values++; values > 1 {
				return "", errors.New("more than one JSON value")
			}
		} else {
			f := &stack[len(stack)-1]
			switch {
			case f.object && f.n%2 == 1:
				b.WriteByte(':')
			case f.n > 0:
				b.WriteByte(',')
			}
			f.n++
		}
		switch v := tok.(type) {
		case json.Delim:
			b.WriteByte(byte(v))
			stack = append(stack, frame{object: v == '{'})
		case string:
			b.WriteString(Of(v))
		case json.Number:
			b.WriteString(v.String())
		case bool:
			if v {
				b.WriteString("true")
			} else {
				b.WriteString("false")
			}
		case nil:
			b.WriteString("null")
		}
	}
	if values == 0 || len(stack) > 0 {
		return "", errors.New("not one whole JSON value")
	}
	return b.String(), nil
}
