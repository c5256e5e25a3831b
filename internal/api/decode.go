package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"sigs.k8s.io/yaml"
)

// DecodeStrict decodes JSON into v, refusing unknown fields and values of the wrong type with an
// *Error that names the field's path (for example "spec.tools[2]").
func DecodeStrict(data []byte, v any) error {
	// Bounds and duplicate keys in one pass before anything decodes (invalid JSON passes it and
	// is reported by the decoder below).
	if err := CheckDuplicateKeys(data); err != nil {
		return err
	}
	var raw any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return Errorf(statusBadRequest, CodeInvalid, "", "body is not valid JSON: %v", err)
	}
	if dec.More() {
		return Errorf(statusBadRequest, CodeInvalid, "", "body has more than one JSON value")
	}
	if err := checkShape(raw, reflect.TypeOf(v), ""); err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		if e, ok := AsError(err); ok {
			return e // a custom decoder's own error names its field
		}
		return Errorf(statusBadRequest, CodeInvalid, "", "decode: %v", err)
	}
	return nil
}

// YAMLToJSON converts one YAML document to JSON; parse errors name the line. A mapping that
// names a key twice is refused, as in JSON bodies.
func YAMLToJSON(doc []byte) ([]byte, error) {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, Errorf(statusBadRequest, CodeInvalid, "", "YAML: %v", err)
	}
	return j, nil
}

// SplitYAML splits a multi-document YAML stream on "---" lines; it returns each document with the
// line number where it starts, skipping empty documents.
func SplitYAML(data []byte) (docs [][]byte, lines []int) {
	var cur []string
	start := 1
	flush := func() {
		body := strings.Join(cur, "\n")
		if strings.TrimSpace(stripComments(body)) != "" {
			docs = append(docs, []byte(body))
			lines = append(lines, start)
		}
		cur = nil
	}
	for i, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimRight(line, " \t\r"), "---") && strings.TrimSpace(strings.TrimPrefix(strings.TrimRight(line, " \t\r"), "---")) == "" {
			flush()
			start = i + 2
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return docs, lines
}

func stripComments(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			b.WriteString(l)
		}
	}
	return b.String()
}

var rawMessageType = reflect.TypeOf(json.RawMessage(nil))

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func wrongType(path, want string, v any) error {
	return E(CodeWrongType, path, "%s must be %s, not %s", orRoot(path), want, jsonKind(v))
}

func orRoot(path string) string {
	if path == "" {
		return "the body"
	}
	return path
}

// join is the path of key name of the object at path (an empty key kept: Path.Member).
func join(path, name string) string { return NewPath(path).Member(name).String() }

// checkShape walks a decoded JSON value against a Go type.
func checkShape(v any, t reflect.Type, path string) error {
	if v == nil {
		return nil // null leaves the zero value
	}
	if t == rawMessageType {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == reflect.TypeOf(json.RawMessage{}) || t.Kind() == reflect.Interface {
		return nil
	}
	if t.Implements(reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()) || reflect.PointerTo(t).Implements(reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()) {
		if t.String() != "time.Time" {
			return nil // custom decoders check themselves
		}
		if _, ok := v.(string); !ok {
			return wrongType(path, "an RFC 3339 time string", v)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.String:
		if _, ok := v.(string); !ok {
			return wrongType(path, "a string", v)
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return wrongType(path, "a boolean", v)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if !ok {
			return wrongType(path, "an integer", v)
		}
		if _, err := n.Int64(); err != nil {
			return wrongType(path, "an integer", v)
		}
	case reflect.Float32, reflect.Float64:
		if _, ok := v.(json.Number); !ok {
			return wrongType(path, "a number", v)
		}
	case reflect.Slice, reflect.Array:
		arr, ok := v.([]any)
		if !ok {
			return wrongType(path, "a list", v)
		}
		for i, e := range arr {
			if err := checkShape(e, t.Elem(), NewPath(path).Index(i).String()); err != nil {
				return err
			}
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return wrongType(path, "an object", v)
		}
		for k, e := range obj {
			if err := checkShape(e, t.Elem(), join(path, k)); err != nil {
				return err
			}
		}
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			return wrongType(path, "an object", v)
		}
		fields := map[string]reflect.Type{}
		collectFields(t, fields)
		for k, e := range obj {
			ft, ok := fields[k]
			if !ok {
				return E(CodeUnknownField, join(path, k), "unknown field %q in %s", k, orRoot(path))
			}
			if err := checkShape(e, ft, join(path, k)); err != nil {
				return err
			}
		}
	}
	return nil
}

func collectFields(t reflect.Type, out map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && (name == "" || strings.Contains(opts, "inline")) {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			collectFields(ft, out)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
}
