package server

import (
	"encoding/json"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/api"
)

// TestPatchReplacesWorkflow: a merge patch that sets spec.workflow replaces the document as
// written (workflows run FILE --agent A patches A's workflow): the old document's nodes do not
// mix into the new one, and a null inside it stays; other spec fields merge as RFC 7396 says.
func TestPatchReplacesWorkflow(t *testing.T) {
	spec := map[string]any{"tools": []any{"ls"}, "workflow": map[string]any{"v": 2, "root": map[string]any{"node": "chain", "steps": []any{}}}}
	body := `{"spec": {"workflow": {"v": 2, "root": {"node": "escalate", "when": {"predicate": "field_equals", "path": "x", "value": null}}}}}`
	out, err := patchedDoc([]byte(body), api.ObjectMeta{Name: "a"}, spec)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Spec struct {
			Tools    []string        `json:"tools"`
			Workflow json.RawMessage `json:"workflow"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	wf := string(doc.Spec.Workflow)
	if strings.Contains(wf, "steps") || !strings.Contains(wf, `"value":null`) || len(doc.Spec.Tools) != 1 {
		t.Errorf("patched: %s", out)
	}
}
