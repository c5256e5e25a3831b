package api

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
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

func TestPathJoinAndErrorUnder(t *testing.T) {
	item := NewPath("items").Index(2)
	for _, c := range []struct{ got, want string }{
		{item.Join("spec.input"), "items[2].spec.input"},
		{item.Join(""), "items[2]"},
		{item.Join(`["x"]`), `items[2]["x"]`},
		{Path{}.Join("spec.input"), "spec.input"},
	} {
		if c.got != c.want {
			t.Errorf("joined %q, want %q", c.got, c.want)
		}
	}
	var l ErrorList
	l.Add(Invalid("metadata.name", "bad name"))
	l.Add(E(CodeRequired, "", "no spec"))
	e, _ := AsError(l.Err())
	u := e.Under(NewPath("skills").Index(1))
	if u.Field != "skills[1].metadata.name" || u.Code != CodeInvalid || u.Message != "bad name" || u.Status != 422 {
		t.Errorf("Under: %+v", u)
	}
	if len(u.Errors) != 2 || u.Errors[0].Field != "skills[1].metadata.name" || u.Errors[1].Field != "skills[1]" || u.Errors[1].Code != CodeRequired {
		t.Errorf("Under's list: %+v", u.Errors)
	}
	if e.Field != "metadata.name" || e.Errors[0].Field != "metadata.name" {
		t.Errorf("Under changed the error it nests: %+v", e)
	}
}

// Each kind's validation tells three mistakes at once, at their paths and with their codes.
func TestEveryKindThreeMistakes(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		what string
		err  error
		want []FieldError
	}{
		{"run", DefaultAndValidateRun(&AgentRun{Metadata: ObjectMeta{Name: "Bad"}, Spec: AgentRunSpec{Agent: "a", MaxCostUSD: " 1", Deadline: "soon"}}, now),
			[]FieldError{{Code: CodeInvalid, Field: "metadata.name"}, {Code: CodeRequired, Field: "spec.input"}, {Code: CodeInvalid, Field: "spec.maxCostUSD"}, {Code: CodeInvalid, Field: "spec.deadline"}}},
		{"run of a group", DefaultAndValidateRun(&AgentRun{Spec: AgentRunSpec{Agent: "a", Input: "x", Group: "g", TaskKey: "t", DependsOn: []string{"t", "B", "u", "u"}}}, now),
			[]FieldError{{Code: CodeInvalid, Field: "spec.dependsOn[0]"}, {Code: CodeInvalid, Field: "spec.dependsOn[1]"}, {Code: CodeInvalid, Field: "spec.dependsOn[3]"}}},
		{"group", DefaultAndValidateGroup(&AgentGroup{Metadata: ObjectMeta{Name: "g"}, Spec: AgentGroupSpec{Agent: "A", Limits: GroupLimits{MaxActive: 5000}, Evaluation: &EvaluationSpec{Environment: "env", Timeout: "1s"}}}),
			[]FieldError{{Code: CodeInvalid, Field: "spec.agent"}, {Code: CodeInvalid, Field: "spec.limits.maxActive"}, {Code: CodeInvalid, Field: "spec.evaluation.environment"}, {Code: CodeInvalid, Field: "spec.evaluation.timeout"}}},
		{"group update", ValidateGroupUpdate(&AgentGroupSpec{Agent: "a", Sealed: true, Limits: GroupLimits{MaxCostUSD: "5.00"}}, &AgentGroupSpec{Agent: "b", Limits: GroupLimits{MaxCostUSD: "1.00"}}),
			[]FieldError{{Code: CodeInvalid, Field: "spec.agent"}, {Code: CodeInvalid, Field: "spec.sealed"}, {Code: CodeInvalid, Field: "spec.limits.maxCostUSD"}}},
		{"webhook", DefaultAndValidateWebhook(&Webhook{Metadata: ObjectMeta{Name: "w"}, Spec: WebhookSpec{URL: "https://x.example/in", Events: []string{"nope", "nope"}, Agents: []string{"A"}}}),
			[]FieldError{{Code: CodeUnknownWebhookEvent, Field: "spec.events[0]"}, {Code: CodeUnknownWebhookEvent, Field: "spec.events[1]"}, {Code: CodeInvalid, Field: "spec.agents[0]"}, {Code: CodeRequired, Field: "spec.secretRef"}}},
		{"skill", DefaultAndValidateSkill(&Skill{Metadata: ObjectMeta{Labels: map[string]string{"../x": ""}}, Spec: SkillSpec{Version: 3, Files: []SkillFile{{Path: "/abs"}, {Path: "b", Content: "!", Base64: true}}}}),
			[]FieldError{{Code: CodeInvalid, Field: "spec.version"}, {Code: CodeInvalid, Field: "spec.files[0].path"}, {Code: CodeInvalid, Field: "spec.files[1].content"}, {Code: CodeInvalidLabel, Field: `metadata.labels["../x"]`}}},
	} {
		e, ok := AsError(c.err)
		if !ok {
			t.Errorf("%s: %v is not an API error", c.what, c.err)
			continue
		}
		if e.Field != c.want[0].Field || e.Code != c.want[0].Code || len(e.Errors) != len(c.want) {
			t.Errorf("%s: %v, want %d errors, the first %s at %s", c.what, e, len(c.want), c.want[0].Code, c.want[0].Field)
			continue
		}
		for i, w := range c.want {
			if g := e.Errors[i]; g.Code != w.Code || g.Field != w.Field {
				t.Errorf("%s: error %d is %s at %s, want %s at %s", c.what, i, g.Code, g.Field, w.Code, w.Field)
			}
		}
	}
}

// Member keeps an empty key (the key that is wrong, not the object that holds it), as the
// concatenated paths did; Child drops it.
func TestPathMember(t *testing.T) {
	for _, c := range []struct {
		p    Path
		want string
	}{
		{NewPath("data").Member("TOKEN"), "data.TOKEN"},
		{NewPath("data").Member(""), "data."},
		{NewPath("").Member("spec"), "spec"},
		{NewPath("spec", "mcpServers").Index(0).Child("env").Member("KEY"), "spec.mcpServers[0].env.KEY"},
	} {
		if got := c.p.String(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}
