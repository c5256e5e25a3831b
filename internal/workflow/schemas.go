package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaBase names a document's schemas inside its own compiler; nothing is fetched from it.
const schemaBase = "mem://agentrun/workflow-schemas.json"

// schemaSet is a document's schemas compiled, by id.
type schemaSet struct {
	byID map[string]*jsonschema.Schema
}

// noLoader refuses every reference outside the document: a schema refers only to
// #/definitions/<id>, another schema of the same document.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("$ref %q: a workflow's schemas refer only to each other as #/definitions/<id>", url)
}

// compileSchemas compiles every schema of a document; errors are added to d with the schema's
// position. All schemas live in one resource {"definitions": schemas}, so #/definitions/<id>
// resolves to another schema of the document.
func compileSchemas(d *doc, s *value, ptr string) *schemaSet {
	set := &schemaSet{byID: map[string]*jsonschema.Schema{}}
	ok := true
	for _, m := range s.mem {
		mptr := ptr + "/" + escapePtr(m.key)
		if m.val.kind != 'o' && m.val.kind != 'b' {
			d.sh.add(m.val.off, mptr, CodeSchemaInvalid, "schema %q is a JSON Schema object (or true/false), not %s", m.key, m.val.typeName())
			ok = false
			continue
		}
		if !checkRefs(d, m.val, mptr) {
			ok = false
		}
	}
	if !ok {
		return set
	}
	defs := map[string]any{}
	for _, m := range s.mem {
		defs[m.key] = jsonAny(m.val)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	c.DefaultDraft(jsonschema.Draft7)
	if err := c.AddResource(schemaBase, map[string]any{"definitions": defs}); err != nil {
		d.sh.add(s.off, ptr, CodeSchemaInvalid, "schemas: %v", err)
		return set
	}
	for _, m := range s.mem {
		sch, err := c.Compile(schemaBase + "#/definitions/" + escapePtr(m.key))
		if err != nil {
			if metaschemaErrors(d, s, ptr, err) {
				// The one resource holding every schema failed the metaschema: each place that
				// failed is reported once, at its own schema, and the other schemas are not blamed.
				return set
			}
			d.sh.add(m.val.off, ptr+"/"+escapePtr(m.key), CodeSchemaInvalid, "schema %q does not compile: %s", m.key, firstLine(err.Error()))
			continue
		}
		set.byID[m.key] = sch
	}
	return set
}

// metaschemaErrors reports a failure of the schemas against the JSON Schema metaschema at each
// value that failed (/schemas/<id>/<keyword>...), with the library's reason for it; it says false
// when err is not such a failure.
func metaschemaErrors(d *doc, s *value, ptr string, err error) bool {
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if !errors.As(err, &sve) || !errors.As(sve.Err, &ve) {
		return false
	}
	n := 0
	for _, e := range leafErrors(ve) {
		loc := e.InstanceLocation
		if len(loc) < 2 || loc[0] != "definitions" {
			continue
		}
		id := loc[1]
		at, v := ptr+"/"+escapePtr(id), s.get(id)
		for _, tok := range loc[2:] {
			at += "/" + escapePtr(tok)
			if next := v.child(tok); next != nil {
				v = next
			}
		}
		if v == nil {
			continue
		}
		n++
		where := strings.TrimPrefix(at, ptr+"/"+escapePtr(id))
		if where == "" {
			where = "/"
		}
		d.sh.add(v.off, at, CodeSchemaInvalid, "schema %q is not valid JSON Schema (draft 7) at %s: %s", id, where, leafReason(e))
	}
	return n > 0
}

// checkRefs refuses a $ref that is not #/definitions/<id of this document>.
func checkRefs(d *doc, v *value, ptr string) bool {
	ok := true
	switch v.kind {
	case 'o':
		for _, m := range v.mem {
			mptr := ptr + "/" + escapePtr(m.key)
			if m.key == "$ref" {
				id, isDef := strings.CutPrefix(m.val.str, "#/definitions/")
				if m.val.kind != 's' || !isDef || d.schemas[id] == nil {
					d.sh.add(m.val.off, mptr, CodeSchemaRef, "a schema refers to another only as {\"$ref\": \"#/definitions/<id>\"} naming one of this document's schemas (%s)", idList(d.schemas))
					ok = false
				}
				continue
			}
			if !checkRefs(d, m.val, mptr) {
				ok = false
			}
		}
	case 'a':
		for i, e := range v.elems {
			if !checkRefs(d, e, fmt.Sprintf("%s/%d", ptr, i)) {
				ok = false
			}
		}
	}
	return ok
}

// child is the member key of an object or the element at index key of an array; nil when absent.
func (v *value) child(key string) *value {
	if v != nil && v.kind == 'a' {
		i, err := strconv.Atoi(key)
		if err != nil || i < 0 || i >= len(v.elems) {
			return nil
		}
		return v.elems[i]
	}
	return v.get(key)
}

// jsonAny is the value as the schema library wants it (numbers as json.Number).
func jsonAny(v *value) any { return v.toAny() }

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// check validates a JSON value against schema id; the error says what is wrong.
func (s *schemaSet) check(id string, v any) error {
	sch := s.byID[id]
	if sch == nil {
		return fmt.Errorf("no schema %q", id)
	}
	// The library wants numbers as json.Number or float64 and objects as map[string]any.
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	if err != nil {
		return err
	}
	if err := sch.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if ok := asVE(err, &ve); ok {
			// Each place that fails with its reason ("at /website: got number, want string"),
			// without the library's preamble naming the document's internal schema URL.
			var reasons []string
			for _, l := range leafErrors(ve) {
				at := "/" + strings.Join(l.InstanceLocation, "/")
				reasons = append(reasons, "at "+at+": "+leafReason(l))
			}
			if len(reasons) > 0 {
				return fmt.Errorf("%s", strings.Join(reasons, "; "))
			}
			return fmt.Errorf("%s", strings.Join(strings.Fields(ve.Error()), " "))
		}
		return err
	}
	return nil
}

// leafErrors are the failures at the bottom of a validation error's tree, one per place (an
// anyOf's alternatives fail at one place: its first reason is kept).
func leafErrors(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	var out []*jsonschema.ValidationError
	seen := map[string]bool{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		at := strings.Join(e.InstanceLocation, "/")
		if !seen[at] {
			seen[at] = true
			out = append(out, e)
		}
	}
	walk(ve)
	return out
}

// leafReason is what a leaf failure says, in the library's words.
func leafReason(e *jsonschema.ValidationError) string {
	if u := e.BasicOutput(); u.Error != nil {
		return u.Error.String()
	}
	return "it does not match the schema"
}

func asVE(err error, ve **jsonschema.ValidationError) bool {
	v, ok := err.(*jsonschema.ValidationError)
	if ok {
		*ve = v
	}
	return ok
}
