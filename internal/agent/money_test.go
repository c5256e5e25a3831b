package agent

import (
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/model"
)

func TestFallbackFamily(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		allowed []string
		want    string
	}{
		{cost.Families, "sonnet"},
		{[]string{"haiku", "sonnet"}, "sonnet"},
		{[]string{"haiku"}, "haiku"},
		{[]string{"opus", "fable"}, "opus"},
		{[]string{"fable"}, "fable"},
		{[]string{"haiku", "opus"}, "haiku"}, // a tie: the cheaper
	} {
		if got := fallbackFamily(c.allowed); got != c.want {
			t.Errorf("fallbackFamily(%v) = %s, want %s", c.allowed, got, c.want)
		}
	}
}

func TestRulesFamily(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a plain sentence. ", 300)
	for _, c := range []struct {
		prompt  string
		tools   int
		allowed []string
		want    string
	}{
		{"What is the capital of France?", 0, cost.Families, "haiku"},
		{"What is the capital of France?", 5, cost.Families, "sonnet"},
		{"Please fix this:\n```go\nfunc main() {}\n```", 0, cost.Families, "sonnet"},
		{long, 0, cost.Families, "opus"},
		{long, 0, []string{"haiku", "sonnet"}, "sonnet"},
		{"hi", 0, []string{"opus", "fable"}, "opus"},
	} {
		if got, _ := rulesFamily(c.prompt, c.tools, c.allowed); got != c.want {
			t.Errorf("rulesFamily(%.20q, %d, %v) = %s, want %s", c.prompt, c.tools, c.allowed, got, c.want)
		}
	}
}

func TestFamilyModelForOpenRouter(t *testing.T) {
	t.Parallel()
	tab := cost.Default()
	if id, _ := familyModel(tab, "anthropic", "sonnet"); id != "claude-sonnet-4-5" {
		t.Errorf("anthropic sonnet = %s", id)
	}
	if id, _ := familyModel(tab, "openrouter", "sonnet"); id != "anthropic/claude-sonnet-4.5" {
		t.Errorf("openrouter sonnet = %s", id)
	}
	// Every family's model is priced, spelled either way.
	for _, f := range cost.Families {
		for _, p := range []string{"anthropic", "openrouter"} {
			id, ok := familyModel(tab, p, f)
			if _, priced := tab.Lookup(id); !ok || !priced {
				t.Errorf("%s on %s: %q priced=%v", f, p, id, priced)
			}
		}
	}
}

// The input bound never falls below the request's bytes: a token is at least a byte.
func TestInputBound(t *testing.T) {
	t.Parallel()
	req := &model.Request{Model: "m", System: strings.Repeat("s", 5000), Messages: []model.Message{userText(strings.Repeat("é", 1000))}}
	if b := inputBound(req); b < 5000+2000+inputOverhead {
		t.Errorf("inputBound = %d, below the bytes of the request", b)
	}
}
