package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// pathElem is one step of a JSONPath: a key, or an index into a list.
type pathElem struct {
	key     string
	index   int
	isIndex bool
}

// jsonPath is the kubectl JSONPath subset `wait --for=jsonpath=` needs: {.a.b}, {.a[0].b},
// {.metadata.labels.x}, with keys containing dots written a\.b or ['a.b'], and negative indexes
// counting from the end.
type jsonPath []pathElem

// parseJSONPath parses "{.a.b[0]}" (braces optional, a leading "$" allowed).
func parseJSONPath(expr string) (jsonPath, error) {
	s := strings.TrimSpace(expr)
	if strings.HasPrefix(s, "{") {
		if !strings.HasSuffix(s, "}") {
			return nil, fmt.Errorf("jsonpath %q: missing the closing }", expr)
		}
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	s = strings.TrimPrefix(s, "$")
	if s == "" || s == "." {
		return jsonPath{}, nil
	}
	if s[0] != '.' && s[0] != '[' {
		return nil, fmt.Errorf("jsonpath %q: must start with \".\", as in {.status.phase}", expr)
	}
	var p jsonPath
	for i := 0; i < len(s); {
		switch s[i] {
		case '.':
			i++
			var key strings.Builder
			for i < len(s) && s[i] != '.' && s[i] != '[' {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				key.WriteByte(s[i])
				i++
			}
			if key.Len() == 0 {
				return nil, fmt.Errorf("jsonpath %q: empty key", expr)
			}
			p = append(p, pathElem{key: key.String()})
		case '[':
			end := strings.IndexByte(s[i:], ']')
			if end < 0 {
				return nil, fmt.Errorf("jsonpath %q: missing ]", expr)
			}
			inner := strings.TrimSpace(s[i+1 : i+end])
			if len(inner) >= 2 && (inner[0] == '\'' || inner[0] == '"') && inner[len(inner)-1] == inner[0] {
				p = append(p, pathElem{key: inner[1 : len(inner)-1]})
			} else {
				n, err := strconv.Atoi(inner)
				if err != nil {
					return nil, fmt.Errorf("jsonpath %q: [%s] is not an index (only [N] and ['key'] are supported)", expr, inner)
				}
				p = append(p, pathElem{index: n, isIndex: true})
			}
			i += end + 1
		default:
			return nil, fmt.Errorf("jsonpath %q: unexpected %q at %d", expr, s[i], i)
		}
	}
	return p, nil
}

// eval finds the path's value in doc (as decoded by encoding/json); found is false when a key or
// index is missing.
func (p jsonPath) eval(doc any) (v any, found bool) {
	v = doc
	for _, e := range p {
		if e.isIndex {
			l, ok := v.([]any)
			if !ok {
				return nil, false
			}
			i := e.index
			if i < 0 {
				i += len(l)
			}
			if i < 0 || i >= len(l) {
				return nil, false
			}
			v = l[i]
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[e.key]; !ok {
			return nil, false
		}
	}
	return v, true
}

// jsonText renders a JSON value as kubectl's JSONPath prints it: strings bare, numbers and booleans
// as written, null as "", objects and lists as compact JSON.
func jsonText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// decodeDoc decodes a JSON document keeping numbers as written.
func decodeDoc(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// waitCondition is a parsed --for.
type waitCondition struct {
	deleted  bool     // --for=delete
	expr     string   // the JSONPath as written
	path     jsonPath // the parsed JSONPath
	value    string   // the value to compare with, as a string
	hasValue bool     // false: the path only has to exist and be non-empty
}

// parseFor parses kubectl's --for: "delete", or "jsonpath={.a.b}=VALUE" (braces optional; without
// "=VALUE" the field must exist and be non-empty).
func parseFor(s string) (waitCondition, error) {
	switch {
	case s == "delete":
		return waitCondition{deleted: true}, nil
	case strings.HasPrefix(s, "jsonpath="):
		rest := strings.TrimPrefix(s, "jsonpath=")
		var expr, tail string
		if strings.HasPrefix(rest, "{") {
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				return waitCondition{}, fmt.Errorf("--for=%s: missing the closing } of the jsonpath", s)
			}
			expr, tail = rest[:end+1], rest[end+1:]
		} else {
			i := strings.IndexByte(rest, '=')
			if i < 0 {
				expr = rest
			} else {
				expr, tail = rest[:i], rest[i:]
			}
		}
		p, err := parseJSONPath(expr)
		if err != nil {
			return waitCondition{}, err
		}
		c := waitCondition{expr: expr, path: p}
		if tail != "" {
			if tail[0] != '=' {
				return waitCondition{}, fmt.Errorf("--for=%s: expected =VALUE after %s", s, expr)
			}
			c.value, c.hasValue = tail[1:], true
		}
		return c, nil
	case strings.HasPrefix(s, "condition="):
		return waitCondition{}, fmt.Errorf("--for=%s: condition waits are not supported; use --for=jsonpath='{.status.phase}'=Succeeded or --for=delete", s)
	}
	return waitCondition{}, fmt.Errorf("--for=%s: use --for=jsonpath='{.status.phase}'=VALUE or --for=delete", s)
}

// met reports whether doc satisfies the condition, and the current value for messages.
func (c waitCondition) met(doc any) (ok bool, current string) {
	v, found := c.path.eval(doc)
	if !found {
		return false, "<none>"
	}
	current = jsonText(v)
	if !c.hasValue {
		return current != "" && current != "{}" && current != "[]", current
	}
	return current == c.value, current
}
