package eval

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/api"
)

// TestJSONGraderSchemaKeywords: answers the old hand-written subset (type, required, properties,
// enum, items) passed although the schema forbids them now fail, with evidence naming the value's
// path and the keyword; the answers the schema allows still pass.
func TestJSONGraderSchemaKeywords(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, schema, answer string
		pass                 bool
		evidence             string // a part of the evidence on failure
	}{
		{"minimum", `{"type":"object","properties":{"n":{"type":"integer","minimum":0}}}`, `{"n": -3}`, false, "$.n"},
		{"minimum ok", `{"type":"object","properties":{"n":{"type":"integer","minimum":0}}}`, `{"n": 3}`, true, ""},
		{"maximum", `{"properties":{"p":{"type":"number","exclusiveMaximum":1}}}`, `{"p": 1}`, false, "$.p"},
		{"pattern", `{"properties":{"id":{"type":"string","pattern":"^[A-Z]{3}-[0-9]+$"}}}`, `{"id": "abc-1"}`, false, "$.id"},
		{"pattern ok", `{"properties":{"id":{"type":"string","pattern":"^[A-Z]{3}-[0-9]+$"}}}`, `{"id": "ABC-12"}`, true, ""},
		{"additionalProperties", `{"type":"object","properties":{"city":{"type":"string"}},"additionalProperties":false}`, `{"city": "Paris", "extra": 1}`, false, "extra"},
		{"additionalProperties ok", `{"type":"object","properties":{"city":{"type":"string"}},"additionalProperties":false}`, `{"city": "Paris"}`, true, ""},
		{"anyOf", `{"properties":{"v":{"anyOf":[{"type":"integer"},{"type":"string","enum":["none"]}]}}}`, `{"v": "some"}`, false, "$.v"},
		{"anyOf ok", `{"properties":{"v":{"anyOf":[{"type":"integer"},{"type":"string","enum":["none"]}]}}}`, `{"v": "none"}`, true, ""},
		{"items nested", `{"type":"array","items":{"type":"object","required":["n"],"properties":{"n":{"minimum":1}}}}`, `[{"n": 1}, {"n": 0}]`, false, "$[1].n"},
		{"minItems", `{"type":"array","minItems":2}`, `[1]`, false, "$"},
		{"format", `{"properties":{"at":{"type":"string","format":"date"}}}`, `{"at": "yesterday"}`, false, "$.at"},
		{"$defs ref", `{"$defs":{"pos":{"type":"integer","minimum":1}},"properties":{"n":{"$ref":"#/$defs/pos"}}}`, `{"n": 0}`, false, "$.n"},
		{"big integer keeps precision", `{"properties":{"n":{"maximum":9007199254740992}}}`, `{"n": 9007199254740993}`, false, "$.n"},
		{"embedded block", `{"required":["n"],"properties":{"n":{"minimum":5}}}`, "Here it is: {\"n\": 4} done", false, "$.n"},
	}
	for _, c := range cases {
		g := api.GraderSpec{Kind: "json", Schema: json.RawMessage(c.schema)}
		v, err := Grade(ctx, g, task(`{}`), c.answer, nil)
		if err != nil {
			t.Errorf("%s: grader error %v", c.name, err)
			continue
		}
		if v.Pass != c.pass || (!c.pass && !strings.Contains(v.Evidence, c.evidence)) {
			t.Errorf("%s: %+v; want pass=%v with evidence naming %q", c.name, v, c.pass, c.evidence)
		}
	}
}

// TestEnvironmentSchemaRefused: a schema that does not compile, refers outside itself, or is
// given to a grader that does not use one is refused when the environment is validated (at load),
// naming spec.grader.schema.
func TestEnvironmentSchemaRefused(t *testing.T) {
	for _, c := range []struct{ name, kind, schema, says string }{
		{"not JSON", "json", `{"type":`, "not JSON"},
		{"not an object", "json", `[1,2]`, "object"},
		{"bad type", "json", `{"type":"integr"}`, "type"},
		{"bad pattern", "json", `{"pattern":"("}`, "pattern"},
		{"remote ref", "json", `{"$ref":"https://example.com/schema.json"}`, "no remote or file references"},
		{"file ref", "json", `{"$ref":"file:///etc/passwd"}`, "no remote or file references"},
		{"not a json grader", "exact", `{"type":"object"}`, "only a json grader"},
	} {
		e := writeFile()
		e.Spec.Grader = api.GraderSpec{Kind: c.kind, Schema: json.RawMessage(c.schema)}
		err := api.ValidateEnvironment(e)
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Field != "spec.grader.schema" || !strings.Contains(ae.Message, c.says) {
			t.Errorf("%s: %v; want an error on spec.grader.schema saying %q", c.name, err, c.says)
		}
	}
	e := writeFile()
	e.Spec.Grader = api.GraderSpec{Kind: "json", Schema: json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"n":{"minimum":0}}}`)}
	if err := api.ValidateEnvironment(e); err != nil {
		t.Errorf("draft-07 schema (its metaschema is built in, nothing fetched): %v", err)
	}
}
