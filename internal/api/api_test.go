package api

import (
	"strings"
	"testing"
	"time"
)

func TestDecodeStrictNamesTheField(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body string
		code       Code
		field      string
	}{
		{"ok", `{"metadata":{"name":"a"},"spec":{"agent":"x","input":"hi"}}`, "", ""},
		{"unknown top", `{"metadata":{"name":"a"},"spex":{}}`, CodeUnknownField, "spex"},
		{"unknown nested", `{"metadata":{"name":"a","lables":{}},"spec":{}}`, CodeUnknownField, "metadata.lables"},
		{"wrong type bool", `{"spec":{"keepAlive":"true"}}`, CodeWrongType, "spec.keepAlive"},
		{"wrong type list item", `{"spec":{"dependsOn":["a",1]}}`, CodeWrongType, "spec.dependsOn[1]"},
		{"wrong type object", `{"spec":[]}`, CodeWrongType, "spec"},
		{"label value", `{"metadata":{"labels":{"team":3}}}`, CodeWrongType, "metadata.labels.team"},
		{"not json", `{"spec":`, CodeInvalid, ""},
		{"two values", `{} {}`, CodeInvalid, ""},
		{"time", `{"metadata":{"creationTimestamp":5}}`, CodeWrongType, "metadata.creationTimestamp"},
	}
	for _, c := range cases {
		var r AgentRun
		err := DecodeStrict([]byte(c.body), &r)
		if c.code == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		e, ok := AsError(err)
		if !ok || e.Code != c.code || e.Field != c.field || e.Message == "" {
			t.Errorf("%s: got %v, want %s at %q", c.name, err, c.code, c.field)
		}
	}
}

func TestSplitYAML(t *testing.T) {
	t.Parallel()
	docs, lines := SplitYAML([]byte("# leading comment\n---\na: 1\n---\n# only a comment\n---\nb: 2\nc: |\n  ---not a separator\n"))
	if len(docs) != 2 || lines[0] != 3 || lines[1] != 7 {
		t.Fatalf("docs %q at lines %v", docs, lines)
	}
	j, err := YAMLToJSON(docs[1])
	if err != nil || !strings.Contains(string(j), `"c":"---not a separator\n"`) {
		t.Errorf("second doc = %s, %v", j, err)
	}
	if _, err := YAMLToJSON([]byte("a: [1\n")); err == nil {
		t.Error("bad YAML accepted")
	}
}

func TestAgentDefaultsAndValidation(t *testing.T) {
	t.Parallel()
	a := &Agent{Metadata: ObjectMeta{Name: "hello-agent"}, Spec: AgentSpec{Model: ModelSpec{Access: "Nodus"}}}
	if err := DefaultAndValidateAgent(a, nil); err != nil {
		t.Fatal(err)
	}
	s := a.Spec
	if s.Model.Access != "Server" || s.MaxTokens != DefaultMaxTokens || s.MaxToolCalls != 50 || s.PerRunMaxCostUSD != "1.00" || s.Harness != "builtin" || a.APIVersion != APIVersion || a.Kind != "Agent" {
		t.Errorf("defaults = %+v", a)
	}
	bad := []struct {
		spec  AgentSpec
		name  string
		field string
	}{
		{AgentSpec{}, "Bad_Name", "metadata.name"},
		{AgentSpec{Model: ModelSpec{Access: "Free"}}, "a", "spec.model.access"},
		{AgentSpec{Model: ModelSpec{Access: "BYOK", Name: "m"}}, "a", "spec.model.apiKeySecret"},
		{AgentSpec{Model: ModelSpec{Families: []string{"haiku", "gpt"}}}, "a", "spec.model.families[1]"},
		{AgentSpec{Tools: []string{"write", "write"}}, "a", "spec.tools[1]"},
		{AgentSpec{PerRunMaxCostUSD: "-1"}, "a", "spec.perRunMaxCostUSD"},
		{AgentSpec{State: "Paused"}, "a", "spec.state"},
		{AgentSpec{Computer: &ComputerSpec{Kind: "mainframe"}}, "a", "spec.computer.kind"},
	}
	for _, b := range bad {
		a := &Agent{Metadata: ObjectMeta{Name: b.name}, Spec: b.spec}
		e, ok := AsError(DefaultAndValidateAgent(a, nil))
		if !ok || e.Field != b.field {
			t.Errorf("%+v: got %v, want an error at %s", b.spec, e, b.field)
		}
	}
}

func TestRunValidation(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	d, err := ResolveDeadline("90s", now)
	if err != nil || !d.Equal(now.Add(90*time.Second)) {
		t.Errorf("relative deadline = %v, %v", d, err)
	}
	if d, err := ResolveDeadline("2026-12-01T00:00:00Z", now); err != nil || d.Day() != 1 {
		t.Errorf("absolute deadline = %v, %v", d, err)
	}
	r := &AgentRun{Metadata: ObjectMeta{Name: "r"}, Spec: AgentRunSpec{Agent: "a", Input: strings.Repeat("x", MaxInputBytes+1)}}
	if e, _ := AsError(DefaultAndValidateRun(r, now)); e == nil || e.Code != CodeTooLarge || e.Status != 413 {
		t.Errorf("oversized input: %v", e)
	}
	r.Spec.Input = strings.Repeat("x", MaxInputBytes)
	if err := DefaultAndValidateRun(r, now); err != nil {
		t.Errorf("input of exactly 256 KiB: %v", err)
	}
	r.Spec.Input = ""
	r.Spec.KeepAlive = true
	if err := DefaultAndValidateRun(r, now); err != nil {
		t.Errorf("keep-alive run without input: %v", err)
	}
	if !WaitingOnPerson(PhaseWaiting, ReasonQuestion) || WaitingOnPerson(PhaseWaiting, ReasonMessage) || !WaitingOnPerson(PhaseNeedsResolution, "") {
		t.Error("WaitingOnPerson")
	}
}

func TestApprovalsForms(t *testing.T) {
	t.Parallel()
	var a Agent
	if err := DecodeStrict([]byte(`{"metadata":{"name":"a"},"spec":{"approvals":"never-ask"}}`), &a); err != nil || a.Spec.Approvals == nil || !a.Spec.Approvals.NeverAsk {
		t.Errorf("never-ask: %+v, %v", a.Spec.Approvals, err)
	}
	a = Agent{}
	if err := DecodeStrict([]byte(`{"metadata":{"name":"a"},"spec":{"approvals":{"default":"ask","rules":[{"match":"bash(go test *)","action":"allow"}]}}}`), &a); err != nil || a.Spec.Approvals.Default != "ask" || len(a.Spec.Approvals.Rules) != 1 {
		t.Errorf("object form: %+v, %v", a.Spec.Approvals, err)
	}
	for _, bad := range []string{`"always"`, `{"defualt":"ask"}`, `3`} {
		a = Agent{}
		err := DecodeStrict([]byte(`{"metadata":{"name":"a"},"spec":{"approvals":`+bad+`}}`), &a)
		if e, ok := AsError(err); !ok || e.Field != "spec.approvals" {
			t.Errorf("approvals %s: %v, want an error at spec.approvals", bad, err)
		}
	}
}
