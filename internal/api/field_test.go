package api

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestPath(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{NewPath("spec").String(), "spec"},
		{NewPath("spec", "model", "name").String(), "spec.model.name"},
		{NewPath("spec").Child("tools").Index(12).String(), "spec.tools[12]"},
		{NewPath("spec", "mcpServers").Index(0).Child("env", "TOKEN").String(), "spec.mcpServers[0].env.TOKEN"},
		{NewPath("metadata", "labels").Key("../x").String(), `metadata.labels["../x"]`},
	} {
		if c.got != c.want {
			t.Errorf("path %q, want %q", c.got, c.want)
		}
	}
}

// An agent with three mistakes is told all three, in the order the checks run, the first being
// the error's own code, field and message (what a client reading one error always read).
func TestAgentThreeMistakes(t *testing.T) {
	a := &Agent{Metadata: ObjectMeta{Name: "Bad Name"}, Spec: AgentSpec{
		Tools: []string{"no_such_tool"}, Harness: "no-such-harness", MaxTokens: -1}}
	err := DefaultAndValidateAgent(a, nil)
	e, ok := AsError(err)
	if !ok {
		t.Fatalf("error %v is not an API error", err)
	}
	want := []string{"metadata.name", "spec.tools[0]", "spec.harness", "spec.maxTokens"}
	if e.Field != want[0] || e.Code != CodeInvalid || len(e.Errors) != len(want) || e.Message != e.Errors[0].Message {
		t.Fatalf("got %+v, want Invalid at %s with %d errors", e, want[0], len(want))
	}
	for i, w := range want {
		if e.Errors[i].Field != w {
			t.Errorf("error %d at %s, want %s", i, e.Errors[i].Field, w)
		}
	}
	if s := e.Error(); !strings.Contains(s, "and 3 more") || !strings.Contains(s, "(spec.maxTokens)") {
		t.Errorf("Error() = %q, want every problem named", s)
	}
	b, _ := json.Marshal(e)
	if !strings.Contains(string(b), `"errors":[{"code":"Invalid"`) {
		t.Errorf("JSON %s has no errors list", b)
	}
	// One mistake: the same single error as before, its list of one.
	one := &Agent{Metadata: ObjectMeta{Name: "ok"}, Spec: AgentSpec{MaxTokens: -1}}
	if e, _ := AsError(DefaultAndValidateAgent(one, nil)); e == nil || e.Field != "spec.maxTokens" || len(e.Errors) != 1 || strings.Contains(e.Error(), "more") {
		t.Errorf("one mistake: %+v", e)
	}
}
