package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

type fieldType string

const (
	typeString  fieldType = "string"
	typeInteger fieldType = "integer"
	typeBoolean fieldType = "boolean"
)

// field is one property of a tool's input object.
type field struct {
	name     string
	typ      fieldType
	desc     string
	required bool
	min      *int64 // for integers
}

func minimum(n int64) *int64 { return &n }

// inputSpec declares a tool's input object. The JSON Schema offered to the
// model and the validation of each call come from the same declaration.
type inputSpec struct {
	fields []field
}

func (s inputSpec) schema() json.RawMessage {
	type prop struct {
		Type        fieldType `json:"type"`
		Description string    `json:"description,omitempty"`
		Minimum     *int64    `json:"minimum,omitempty"`
	}
	type object struct {
		Type                 string          `json:"type"`
		Properties           map[string]prop `json:"properties"`
		Required             []string        `json:"required"`
		AdditionalProperties bool            `json:"additionalProperties"`
	}
	o := object{Type: "object", Properties: map[string]prop{}, Required: []string{}}
	for _, f := range s.fields {
		o.Properties[f.name] = prop{Type: f.typ, Description: f.desc, Minimum: f.min}
		if f.required {
			o.Required = append(o.Required, f.name)
		}
	}
	b, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	return b
}

func (s inputSpec) names() string {
	n := make([]string, len(s.fields))
	for i, f := range s.fields {
		n[i] = f.name
	}
	return strings.Join(n, ", ")
}

// args is a validated input object.
type args map[string]any

func (a args) str(name string) (string, bool) {
	v, ok := a[name].(string)
	return v, ok
}

func (a args) integer(name string) (int64, bool) {
	v, ok := a[name].(int64)
	return v, ok
}

func (a args) boolean(name string) bool {
	v, _ := a[name].(bool)
	return v
}

// decode validates input against the spec. The message, when not empty,
// says what is wrong with the input and goes back to the model.
// Empty input and null count as {}; null for an optional field counts as absent.
func (s inputSpec) decode(input json.RawMessage) (args, string) {
	trimmed := bytes.TrimSpace(input)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		trimmed = []byte("{}")
	}
	if !json.Valid(trimmed) {
		var v any
		err := json.Unmarshal(trimmed, &v)
		return nil, fmt.Sprintf("input is not valid JSON: %v", err)
	}
	if trimmed[0] != '{' {
		return nil, "input must be a JSON object with fields: " + s.names()
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		return nil, fmt.Sprintf("input is not a valid JSON object: %v", err)
	}
	byName := make(map[string]field, len(s.fields))
	for _, f := range s.fields {
		byName[f.name] = f
	}
	for name := range raw {
		if _, ok := byName[name]; !ok {
			return nil, fmt.Sprintf("unknown field %q; allowed fields: %s", name, s.names())
		}
	}
	out := args{}
	for _, f := range s.fields {
		v, present := raw[f.name]
		if present && string(bytes.TrimSpace(v)) == "null" {
			present = false
		}
		if !present {
			if f.required {
				return nil, fmt.Sprintf("missing required field %q (%s)", f.name, f.typ)
			}
			continue
		}
		val, msg := f.parse(v)
		if msg != "" {
			return nil, msg
		}
		out[f.name] = val
	}
	return out, ""
}

func (f field) parse(v json.RawMessage) (any, string) {
	switch f.typ {
	case typeString:
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, fmt.Sprintf("field %q must be a string, got %s", f.name, kind(v))
		}
		return s, ""
	case typeBoolean:
		var b bool
		if err := json.Unmarshal(v, &b); err != nil {
			return nil, fmt.Sprintf("field %q must be a boolean (true or false), got %s", f.name, kind(v))
		}
		return b, ""
	case typeInteger:
		var n json.Number
		if kind(v) != "a number" {
			return nil, fmt.Sprintf("field %q must be an integer, got %s", f.name, kind(v))
		}
		if err := json.Unmarshal(v, &n); err != nil {
			return nil, fmt.Sprintf("field %q must be an integer, got %s", f.name, kind(v))
		}
		i, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil {
			// Accept integral floats such as 10.0 or 1e3.
			fl, ferr := strconv.ParseFloat(n.String(), 64)
			if ferr != nil || fl != math.Trunc(fl) || math.Abs(fl) > 1<<53 {
				return nil, fmt.Sprintf("field %q must be an integer, got %s", f.name, n)
			}
			i = int64(fl)
		}
		if f.min != nil && i < *f.min {
			return nil, fmt.Sprintf("field %q must be at least %d, got %d", f.name, *f.min, i)
		}
		return i, ""
	}
	panic("unknown field type " + string(f.typ))
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
