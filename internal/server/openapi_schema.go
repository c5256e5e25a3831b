package server

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
)

// schemaGen makes JSON Schemas (draft 2020-12, OpenAPI 3.1's dialect) from Go types by reflection
// over their json tags, the way encoding/json reads and writes them, so that the document and
// the handlers share one definition. Named structs become components/schemas entries.
//
// A type is described twice when it is both read and written: as written (output: a field
// without omitempty is always there, so it is required) and as read (input, "NameInput": every
// field optional, since a handler defaults what is left out, and no field but those listed,
// since DecodeStrict refuses unknown ones).
type schemaGen struct {
	defs map[string]any
	// names maps a type (and mode) to its component name, so one name never means two types.
	names map[schemaKey]string
	taken map[string]reflect.Type
	errs  []error
}

type schemaKey struct {
	t     reflect.Type
	input bool
}

func newSchemaGen() *schemaGen {
	// "Error" is the API's error body (errorSchema): another package's Error is named after
	// its package.
	return &schemaGen{defs: map[string]any{}, names: map[schemaKey]string{}, taken: map[string]reflect.Type{"Error": reflect.TypeFor[api.Error]()}}
}

var (
	timeType       = reflect.TypeFor[time.Time]()
	durationType   = reflect.TypeFor[time.Duration]()
	rawMessageType = reflect.TypeFor[json.RawMessage]()
)

// customJSON describes types whose UnmarshalJSON or MarshalJSON changes their shape from what
// reflection sees: each gets its schema here (as read; as written they are their plain
// struct). TestOpenAPITypesCovered fails when a type the document reaches has a JSON method and
// no entry, so a new one is not described wrongly without anyone noticing.
var customJSON = map[reflect.Type]func(g *schemaGen, plain any, input bool) any{
	// "never-ask", or the object.
	reflect.TypeFor[api.Approvals](): func(g *schemaGen, plain any, input bool) any {
		if !input {
			return plain
		}
		return map[string]any{"anyOf": []any{map[string]any{"const": "never-ask"}, plain}}
	},
	// a bare string, or {"content": string}.
	reflect.TypeFor[api.SeedInput](): func(g *schemaGen, plain any, input bool) any {
		if !input {
			return plain
		}
		return map[string]any{"anyOf": []any{map[string]any{"type": "string"}, plain}}
	},
	// strict decoding of the same shape; only the defaults differ.
	reflect.TypeFor[api.GroupLimits](): func(g *schemaGen, plain any, input bool) any { return plain },
}

// enums are the string types whose values are listed in package api.
var enums = map[reflect.Type][]string{
	reflect.TypeFor[api.Phase](): func() []string {
		var out []string
		for _, p := range api.Phases {
			out = append(out, string(p))
		}
		return out
	}(),
	reflect.TypeFor[api.IfBusy](): func() []string {
		var out []string
		for _, m := range api.IfBusyModes {
			out = append(out, string(m))
		}
		return out
	}(),
	// Every timeline event type the server writes (a new one not listed there fails the e2e
	// check of the SSE stream).
	reflect.TypeFor[api.EventType](): func() []string {
		var out []string
		for _, e := range api.EventTypes {
			out = append(out, string(e.Type))
		}
		return out
	}(),
}

var (
	jsonMarshaler   = reflect.TypeFor[json.Marshaler]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textMarshaler   = reflect.TypeFor[encoding.TextMarshaler]()
)

// hasJSONMethods reports whether t (or *t) reads or writes itself.
func hasJSONMethods(t reflect.Type) bool {
	for _, x := range []reflect.Type{t, reflect.PointerTo(t)} {
		if x.Implements(jsonMarshaler) || x.Implements(jsonUnmarshaler) || x.Implements(textMarshaler) {
			return true
		}
	}
	return false
}

// ref returns a schema for t: a $ref for named structs, inline otherwise.
func (g *schemaGen) ref(t reflect.Type, input bool) any {
	return g.schema(t, input, false)
}

// schema describes t. nullable says the value may be JSON null (a nil pointer, slice or map that
// is not left out).
func (g *schemaGen) schema(t reflect.Type, input, nullable bool) any {
	s := g.schemaOf(t, input)
	if nullable {
		return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
	}
	return s
}

func (g *schemaGen) schemaOf(t reflect.Type, input bool) any {
	switch t {
	case timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case durationType:
		return map[string]any{"type": "integer", "description": "nanoseconds"}
	case rawMessageType:
		return map[string]any{} // any JSON value
	}
	if vals, ok := enums[t]; ok {
		return map[string]any{"type": "string", "enum": vals}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.schema(t.Elem(), input, true)
	case reflect.Interface:
		return map[string]any{}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}
		}
		// A nil slice is written as null unless omitempty leaves it out.
		return map[string]any{"type": "array", "items": g.schema(t.Elem(), input, !input && t.Elem().Kind() == reflect.Pointer)}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.schemaOf(t.Elem(), input)}
	case reflect.Struct:
		if t.Name() == "" {
			return g.structSchema(t, input)
		}
		return g.named(t, input)
	}
	g.errs = append(g.errs, fmt.Errorf("openapi: no JSON Schema for Go type %s (kind %s)", t, t.Kind()))
	return map[string]any{}
}

var genericArgs = regexp.MustCompile(`\[([^\]]*)\]`)

// componentName is t's name in components/schemas: the Go name, generics spelled out
// (api.List[api.Agent] is ListOfAgent), "Input" after it for the type as read.
func componentName(t reflect.Type, input bool) string {
	n := t.Name()
	n = genericArgs.ReplaceAllStringFunc(n, func(m string) string {
		arg := m[1 : len(m)-1]
		if i := strings.LastIndex(arg, "."); i >= 0 {
			arg = arg[i+1:]
		}
		return "Of" + strings.ToUpper(arg[:1]) + arg[1:]
	})
	n = strings.Map(func(r rune) rune {
		if r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return -1
	}, n)
	n = strings.ToUpper(n[:1]) + n[1:]
	if input {
		n += "Input"
	}
	return n
}

func (g *schemaGen) named(t reflect.Type, input bool) any {
	key := schemaKey{t, input}
	if n, ok := g.names[key]; ok {
		return map[string]any{"$ref": "#/components/schemas/" + n}
	}
	n := componentName(t, input)
	if pkg := t.PkgPath()[strings.LastIndex(t.PkgPath(), "/")+1:]; g.taken[n] != nil && g.taken[n] != t && pkg != "" {
		n = strings.ToUpper(pkg[:1]) + pkg[1:] + n
	}
	base := n
	for i := 2; g.taken[n] != nil && g.taken[n] != t; i++ {
		n = fmt.Sprintf("%s%d", base, i)
	}
	g.taken[n] = t
	g.names[key] = n
	g.defs[n] = map[string]any{} // placeholder: a recursive type refers to itself
	var s any = g.structSchema(t, input)
	if f, ok := customJSON[t]; ok {
		s = f(g, s, input)
	} else if hasJSONMethods(t) {
		g.errs = append(g.errs, fmt.Errorf("openapi: %s reads or writes its own JSON: give it a schema in customJSON", t))
	}
	g.defs[n] = s
	return map[string]any{"$ref": "#/components/schemas/" + n}
}

// structSchema lists t's fields as encoding/json sees them, embedded structs' fields promoted.
func (g *schemaGen) structSchema(t reflect.Type, input bool) map[string]any {
	props := map[string]any{}
	var required []string
	g.fields(t, input, props, &required)
	s := map[string]any{"type": "object", "properties": props}
	if input {
		s["additionalProperties"] = false
	} else if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func (g *schemaGen) fields(t reflect.Type, input bool, props map[string]any, required *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				g.fields(et, input, props, required)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		omit := strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
		var s any
		if strings.Contains(","+opts+",", ",string,") {
			s = map[string]any{"type": "string"}
		} else {
			// Written without omitempty, a nil pointer, slice or map is null.
			k := ft.Kind()
			nullable := !input && !omit && (k == reflect.Slice && ft != rawMessageType || k == reflect.Map)
			s = g.schema(ft, input, nullable)
			if input && ft.Kind() != reflect.Pointer && (k == reflect.Slice || k == reflect.Map) {
				// encoding/json takes null for a slice or a map (and leaves it empty).
				s = map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
			}
		}
		props[name] = s
		if !omit && !input {
			*required = append(*required, name)
		}
	}
}
