package api

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestLabelsFollowKubernetesRules(t *testing.T) {
	ok := map[string]string{"app": "web", "app.kubernetes.io/name": "x_y.z-1", "a": "", "A-b_c.D": "V", "team": strings.Repeat("v", 63)}
	if err := ValidLabels("metadata.labels", ok); err != nil {
		t.Fatalf("valid labels refused: %v", err)
	}
	bad := []struct{ key, val, field string }{
		{"", "x", `metadata.labels[""]`},
		{"../x", "v", `metadata.labels["../x"]`},
		{"/x", "v", `metadata.labels["/x"]`},
		{"Bad.Prefix/x", "v", `metadata.labels["Bad.Prefix/x"]`},
		{"-x", "v", `metadata.labels["-x"]`},
		{strings.Repeat("k", 64), "v", `metadata.labels["` + strings.Repeat("k", 64) + `"]`},
		{"k", strings.Repeat("v", 64), `metadata.labels["k"]`},
		{"k", "a b", `metadata.labels["k"]`},
		{"k", "x/", `metadata.labels["k"]`},
	}
	for _, b := range bad {
		err := ValidLabels("metadata.labels", map[string]string{b.key: b.val})
		e, isAPI := AsError(err)
		if !isAPI || e.Code != CodeInvalidLabel || e.Field != b.field || e.Status != 422 {
			t.Errorf("label %q=%q: %v, want 422 InvalidLabel on %s", b.key, b.val, err, b.field)
		}
	}
	many := map[string]string{}
	for i := 0; i <= MaxLabels; i++ {
		many[fmt.Sprintf("l%d", i)] = "v"
	}
	if e, _ := AsError(ValidLabels("metadata.labels", many)); e == nil || e.Code != CodeInvalidLabel || e.Field != "metadata.labels" {
		t.Errorf("%d labels: %v, want InvalidLabel", len(many), e)
	}
	// Through the run validation a user's request meets.
	r := &AgentRun{Metadata: ObjectMeta{Name: "r", Labels: map[string]string{"../x": "v"}}, Spec: AgentRunSpec{Agent: "a", Input: "hi"}}
	if e, _ := AsError(DefaultAndValidateRun(r, time.Now())); e == nil || e.Field != `metadata.labels["../x"]` {
		t.Errorf("run with label ../x: %v", e)
	}
}

func TestDecodeStrictRefusesDuplicateKeys(t *testing.T) {
	cases := []struct{ body, field string }{
		{`{"metadata": {"name": "a", "name": "b"}}`, "metadata.name"},
		{`{"spec": {"agent": "a"}, "spec": {"agent": "b"}}`, "spec"},
		{`{"metadata": {"name": "a", "labels": {"x/y": "1", "x/y": "2"}}}`, `metadata.labels["x/y"]`},
		{`{"items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b", "name": "c"}}]}`, "items[1].metadata.name"},
	}
	for _, c := range cases {
		var v struct {
			Metadata ObjectMeta       `json:"metadata"`
			Spec     AgentRunSpec     `json:"spec"`
			Items    []map[string]any `json:"items"`
		}
		err := DecodeStrict([]byte(c.body), &v)
		e, ok := AsError(err)
		if !ok || e.Code != CodeDuplicateKey || e.Field != c.field {
			t.Errorf("%s: %v, want DuplicateKey on %s", c.body, err, c.field)
		}
	}
	// The same key in different objects is fine.
	var m map[string]any
	if err := DecodeStrict([]byte(`{"a": {"name": 1}, "b": {"name": 2}, "c": [{"name": 3}, {"name": 4}]}`), &m); err != nil {
		t.Errorf("keys repeated across objects refused: %v", err)
	}
	// YAML for apply too.
	if _, err := YAMLToJSON([]byte("metadata:\n  name: a\n  name: b\n")); err == nil {
		t.Error("YAML with a duplicate key accepted")
	}
}

func TestMoneyFieldsAreStrictDecimals(t *testing.T) {
	for _, v := range []string{" 1", "1 ", "$1", "+1", "-1", "1e2", ".5", "1.", "01", "1.1234567", "1,5", "0x10", ""} {
		r := &AgentRun{Metadata: ObjectMeta{Name: "r"}, Spec: AgentRunSpec{Agent: "a", Input: "hi", MaxCostUSD: v}}
		err := DefaultAndValidateRun(r, time.Now())
		if v == "" {
			if err != nil {
				t.Errorf("no maxCostUSD: %v", err)
			}
			continue
		}
		if e, _ := AsError(err); e == nil || e.Field != "spec.maxCostUSD" {
			t.Errorf("maxCostUSD %q: %v, want refused on spec.maxCostUSD", v, err)
		}
	}
	for _, v := range []string{"0", "1", "0.5", "12.345678", "100"} {
		r := &AgentRun{Metadata: ObjectMeta{Name: "r"}, Spec: AgentRunSpec{Agent: "a", Input: "hi", MaxCostUSD: v}}
		if err := DefaultAndValidateRun(r, time.Now()); err != nil {
			t.Errorf("maxCostUSD %q refused: %v", v, err)
		}
	}
}
