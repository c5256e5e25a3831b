package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode"
)

// InputError is a tool input the model got wrong. It goes back to the model as the call's
// result; the run goes on. Key is the input's key at fault, when one is.
type InputError struct {
	Tool string
	Key  string
	Msg  string
}

func (e *InputError) Error() string { return e.Msg }

// ErrUnknownTool is returned by Decode for a name the catalog does not have.
var ErrUnknownTool = errors.New("unknown tool")

// Input is a tool call's input decoded once, strictly: the policy matches it, the journal titles
// the step with it and the tool runs it, so all three see the same values.
type Input struct {
	// Tool is the tool's name.
	Tool string
	// Value is the typed input (*Bash, *Read, ...), or for a tool the catalog does not have
	// (DecodeGeneric) a map[string]any.
	Value any
	// strs holds the string fields given (not null), by exact key.
	strs map[string]string
	// shell marks a call whose "command" is a command line (see Command).
	shell bool
	// path marks a tool whose main argument is a path in the run folder.
	path bool
	// match is the entry's MatchKey.
	match string
}

// matchKeys are, in order, the keys whose value approval patterns match: the command for
// shells, the path for file tools, the URL for fetchers and browsers.
var matchKeys = []string{"command", "path", "url", "pattern", "selector", "text", "label"}

// MatchKeys are the argument names an approval pattern in parentheses is matched against, the
// first a call has (a copy).
func MatchKeys() []string { return append([]string(nil), matchKeys...) }

// titleKeys are, in order, the keys whose value titles a journal step.
var titleKeys = []string{"command", "path", "url", "pattern", "selector", "label", "question"}

// Command returns the command line of a shell call: a call whose input has a "command" string,
// for a tool that is not a file tool.
func (in Input) Command() (string, bool) {
	if !in.shell {
		return "", false
	}
	c, ok := in.strs["command"]
	return c, ok
}

// Arg is the argument an approval pattern is matched against ("" when the input has none).
func (in Input) Arg() string {
	if in.match != "" {
		return in.strs[in.match]
	}
	return first(in.strs, matchKeys)
}

// IsPath reports whether Arg is a path in the run folder (the file tools).
func (in Input) IsPath() bool { return in.path }

// Title is the text that names a call on its journal step ("" when there is none).
func (in Input) Title() string { return first(in.strs, titleKeys) }

func first(m map[string]string, keys []string) string {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v
		}
	}
	return ""
}

// Decode decodes a call of the named tool strictly. The error is an *InputError for the model, or
// wraps ErrUnknownTool.
func Decode(tool string, raw json.RawMessage) (Input, error) {
	e, ok := lookup(tool)
	if _, _, isMCP := SplitMCPName(tool); !ok && isMCP {
		return DecodeGeneric(tool, raw) // the MCP server checks its own arguments
	}
	if !ok {
		return Input{}, fmt.Errorf("decode input: %w %q", ErrUnknownTool, tool)
	}
	return e.Decode(raw)
}

// jsonSpace is the white space JSON allows around a value.
const jsonSpace = " \t\r\n"

// member is one key of an input object, in the order given.
type member struct {
	key   string
	value json.RawMessage
}

// readObject reads an input object key by key. It refuses a key given twice and two keys that
// differ only in case (encoding/json would let the last one win, matching keys without regard to
// case), at every depth. Empty input and null are {}.
func readObject(tool string, raw json.RawMessage, fields func() string) ([]member, error) {
	in := bytes.Trim(raw, jsonSpace) // JSON's white space only: "\v{}" is no JSON
	if len(in) == 0 || string(in) == "null" {
		return nil, nil
	}
	if !json.Valid(in) {
		var v any
		err := json.Unmarshal(in, &v)
		return nil, &InputError{Tool: tool, Msg: fmt.Sprintf("input is not valid JSON: %v", err)}
	}
	if in[0] != '{' {
		return nil, &InputError{Tool: tool, Msg: "input must be a JSON object with fields: " + fields()}
	}
	dec := json.NewDecoder(bytes.NewReader(in))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, &InputError{Tool: tool, Msg: fmt.Sprintf("input is not valid JSON: %v", err)}
	}
	var out []member
	seen := map[string]string{} // folded key -> the key as given
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, &InputError{Tool: tool, Msg: fmt.Sprintf("input is not valid JSON: %v", err)}
		}
		k, _ := t.(string)
		if err := checkKey(tool, seen, k, ""); err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, &InputError{Tool: tool, Key: k, Msg: fmt.Sprintf("input is not valid JSON: %v", err)}
		}
		if err := checkNested(tool, k, v); err != nil {
			return nil, err
		}
		out = append(out, member{k, v})
	}
	return out, nil
}

// checkKey refuses k when seen has it, or a key that differs from it only in case.
func checkKey(tool string, seen map[string]string, k, at string) error {
	f := fold(k)
	if prev, dup := seen[f]; dup {
		if prev == k {
			return &InputError{Tool: tool, Key: k, Msg: fmt.Sprintf("key %q is given twice%s; give each key once", k, at)}
		}
		return &InputError{Tool: tool, Key: k, Msg: fmt.Sprintf("keys %q and %q differ only in case%s; give each key once, spelled exactly", prev, k, at)}
	}
	seen[f] = k
	return nil
}

// checkNested applies checkKey to every object inside v, without recursion (depth is bounded by
// nothing but the input's size).
func checkNested(tool, key string, v json.RawMessage) error {
	if len(v) == 0 || (v[0] != '{' && v[0] != '[') {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	var stack []*frame
	at := fmt.Sprintf(" (in %q)", key)
	for {
		t, err := dec.Token()
		if err != nil {
			break // v is valid JSON (checked before): the end
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if d, ok := t.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				markValue(stack)
				continue
			}
			k, _ := t.(string)
			if err := checkKey(tool, top.seen, k, at); err != nil {
				return err
			}
			top.key = false
			continue
		}
		switch d, _ := t.(json.Delim); d {
		case '{':
			stack = append(stack, &frame{object: true, seen: map[string]string{}, key: true})
		case '[':
			stack = append(stack, &frame{})
		case ']':
			stack = stack[:len(stack)-1]
			markValue(stack)
		default:
			markValue(stack)
		}
	}
	return nil
}

// frame is an array or object checkNested is inside.
type frame struct {
	object bool
	seen   map[string]string
	key    bool // the next token in this object is a key
}

// markValue notes that the object on top of stack has read a value: a key comes next.
func markValue(stack []*frame) {
	if len(stack) > 0 && stack[len(stack)-1].object {
		stack[len(stack)-1].key = true
	}
}

// fold maps a key to what encoding/json treats as the same key: each rune lower-cased then
// upper-cased, as its case-insensitive matching does (so "ſ" is "S" and the Kelvin sign "K").
func fold(k string) string {
	return strings.Map(func(r rune) rune { return unicode.ToUpper(unicode.ToLower(r)) }, k)
}

// Decode decodes a call of this tool strictly: every key must be one of the tool's fields,
// spelled exactly, given once; each value must have the field's type and bounds; required
// fields must be there. null for a field counts as absent.
func (e *Entry) Decode(raw json.RawMessage) (Input, error) { return e.decode(raw, true) }

// DecodeMatch is Decode for matching a call against approval patterns only: as strict on keys
// and values, but a required field may be missing (the tool refuses such a call when it runs;
// what it would match is still decided on the values given).
func DecodeMatch(tool string, raw json.RawMessage) (Input, error) {
	e, ok := lookup(tool)
	if !ok {
		return Input{}, fmt.Errorf("decode input: %w %q", ErrUnknownTool, tool)
	}
	return e.decode(raw, false)
}

func (e *Entry) decode(raw json.RawMessage, required bool) (Input, error) {
	members, err := readObject(e.Name, raw, e.fieldNames)
	if err != nil {
		return Input{}, err
	}
	v := reflect.New(e.input)
	in := Input{Tool: e.Name, Value: v.Interface(), strs: map[string]string{}, path: e.MatchPath, match: e.MatchKey}
	given := map[string]bool{}
	for _, m := range members {
		f, ok := e.field(m.key)
		if !ok {
			for _, f := range e.Fields {
				if strings.EqualFold(f.Name, m.key) || fold(f.Name) == fold(m.key) {
					return Input{}, &InputError{Tool: e.Name, Key: m.key, Msg: fmt.Sprintf("unknown field %q: keys are spelled exactly; did you mean %q?", m.key, f.Name)}
				}
			}
			return Input{}, &InputError{Tool: e.Name, Key: m.key, Msg: fmt.Sprintf("unknown field %q; allowed fields: %s", m.key, e.fieldNames())}
		}
		if string(m.value) == "null" {
			continue
		}
		given[f.Name] = true
		dst := v.Elem().FieldByIndex(e.index[f.Name])
		if err := f.set(e.Name, dst, m.value); err != nil {
			return Input{}, err
		}
		if dst.Kind() == reflect.String || (dst.Kind() == reflect.Pointer && dst.Elem().Kind() == reflect.String) {
			in.strs[f.Name] = reflect.Indirect(dst).String()
		}
	}
	for _, f := range e.Fields {
		if required && f.Required && !given[f.Name] {
			return Input{}, &InputError{Tool: e.Name, Key: f.Name, Msg: fmt.Sprintf("missing required field %q (%s)", f.Name, e.types[f.Name])}
		}
	}
	_, in.shell = in.strs["command"]
	in.shell = in.shell && !e.MatchPath
	return in, nil
}

// DecodeGeneric decodes the input of a tool the catalog does not have (a pattern in a rule may
// name any tool): an object whose keys are given once and not in two cases. A "command" string
// makes it a shell call, as for bash.
func DecodeGeneric(tool string, raw json.RawMessage) (Input, error) {
	members, err := readObject(tool, raw, func() string { return "any" })
	if err != nil {
		return Input{}, err
	}
	m := map[string]any{}
	in := Input{Tool: tool, Value: m, strs: map[string]string{}}
	for _, mb := range members {
		var x any
		if err := json.Unmarshal(mb.value, &x); err != nil {
			return Input{}, &InputError{Tool: tool, Key: mb.key, Msg: fmt.Sprintf("field %q: %v", mb.key, err)}
		}
		m[mb.key] = x
		if s, ok := x.(string); ok {
			in.strs[mb.key] = s
		}
	}
	_, in.shell = in.strs["command"]
	return in, nil
}

// set parses one value into dst (a string, bool or integer field, or a pointer to one).
func (f Field) set(tool string, dst reflect.Value, v json.RawMessage) error {
	if dst.Kind() == reflect.Pointer {
		dst.Set(reflect.New(dst.Type().Elem()))
		dst = dst.Elem()
	}
	bad := func(format string, args ...any) error {
		return &InputError{Tool: tool, Key: f.Name, Msg: fmt.Sprintf(format, args...)}
	}
	switch dst.Kind() {
	case reflect.String:
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return bad("field %q must be a string, got %s", f.Name, kind(v))
		}
		if len(f.Enum) > 0 && !contains(f.Enum, s) {
			return bad("field %q must be one of %s, got %q", f.Name, strings.Join(f.Enum, ", "), s)
		}
		dst.SetString(s)
	case reflect.Bool:
		var b bool
		if err := json.Unmarshal(v, &b); err != nil {
			return bad("field %q must be a boolean (true or false), got %s", f.Name, kind(v))
		}
		dst.SetBool(b)
	case reflect.Int, reflect.Int64:
		if kind(v) != "a number" {
			return bad("field %q must be an integer, got %s", f.Name, kind(v))
		}
		var n json.Number
		if err := json.Unmarshal(v, &n); err != nil {
			return bad("field %q must be an integer, got %s", f.Name, kind(v))
		}
		i, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil {
			// Accept integral floats such as 10.0 or 1e3.
			fl, ferr := strconv.ParseFloat(n.String(), 64)
			if ferr != nil || fl != math.Trunc(fl) || math.Abs(fl) > 1<<53 {
				return bad("field %q must be an integer, got %s", f.Name, n)
			}
			i = int64(fl)
		}
		if f.Min != nil && i < *f.Min {
			return bad("field %q must be at least %d, got %d", f.Name, *f.Min, i)
		}
		if f.Max != nil && i > *f.Max {
			return bad("field %q must be at most %d, got %d", f.Name, *f.Max, i)
		}
		if dst.OverflowInt(i) {
			return bad("field %q is too large: %d", f.Name, i)
		}
		dst.SetInt(i)
	default:
		return fmt.Errorf("catalog: field %q of %s has Go type %s, which inputs do not use", f.Name, tool, dst.Type())
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// kind names the JSON type of a value for error messages.
func kind(v json.RawMessage) string {
	t := bytes.TrimSpace(v)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}
