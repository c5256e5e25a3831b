package agent

import (
	"encoding/json"
	"testing"

	"agentrun.dev/agentrun/internal/workflow"
)

// A typed question's answer schema may be written as the workflow language defines schemas (JSON
// Schema draft 7, referring to the document's other schemas as #/definitions/ID): the forced
// tool's schema compiles, and answers are checked against it. (Compiled as draft 2020-12 without
// the definitions, a validated workflow's question failed its run before any model call.)
func TestQuestionSchemaTakesTheDocumentsSchemas(t *testing.T) {
	defs := map[string]json.RawMessage{
		"Item": json.RawMessage(`{"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}`),
	}
	cases := []struct {
		name      string
		schema    string
		good, bad string
	}{
		{"ref", `{"type": "array", "items": {"$ref": "#/definitions/Item"}}`, `[{"name": "a"}]`, `[{"nom": "a"}]`},
		{"draft-7 tuple", `{"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}`, `["a", 1]`, `["a", "b"]`},
	}
	for _, c := range cases {
		s, err := questionSchema(workflow.Question{Schema: json.RawMessage(c.schema), Definitions: defs})
		if err != nil {
			t.Fatalf("%s: the question's schema does not compile: %v", c.name, err)
		}
		if err := s.Validate(json.RawMessage(`{"answer": ` + c.good + `, "confidence": 0.9}`)); err != nil {
			t.Errorf("%s: a right answer is refused: %v", c.name, err)
		}
		if err := s.Validate(json.RawMessage(`{"answer": ` + c.bad + `, "confidence": 0.9}`)); err == nil {
			t.Errorf("%s: a wrong answer %s passes", c.name, c.bad)
		}
	}
}
