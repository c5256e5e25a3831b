package model

import (
	"encoding/json"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/cost"
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
		if got := FallbackFamily(c.allowed); got != c.want {
			t.Errorf("FallbackFamily(%v) = %s, want %s", c.allowed, got, c.want)
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
		if got, _ := RulesFamily(c.prompt, c.tools, c.allowed); got != c.want {
			t.Errorf("RulesFamily(%.20q, %d, %v) = %s, want %s", c.prompt, c.tools, c.allowed, got, c.want)
		}
	}
}

func TestFamilyModelForOpenRouter(t *testing.T) {
	t.Parallel()
	tab := cost.Default()
	if id, _ := FamilyModel(tab, "anthropic", "sonnet"); id != "claude-sonnet-4-5" {
		t.Errorf("anthropic sonnet = %s", id)
	}
	if id, _ := FamilyModel(tab, "openrouter", "sonnet"); id != "anthropic/claude-sonnet-4.5" {
		t.Errorf("openrouter sonnet = %s", id)
	}
	// Every family's model is priced, spelled either way.
	for _, f := range cost.Families {
		for _, p := range []string{"anthropic", "openrouter"} {
			id, ok := FamilyModel(tab, p, f)
			if _, priced := tab.Lookup(id); !ok || !priced {
				t.Errorf("%s on %s: %q priced=%v", f, p, id, priced)
			}
		}
	}
}

func TestRouterAnswer(t *testing.T) {
	t.Parallel()
	allowed := []string{"haiku", "sonnet"}
	if fam, conf, why := RouterAnswer(json.RawMessage(`{"family":"sonnet","confidence":0.8}`), allowed); fam != "sonnet" || conf != 0.8 || why != "" {
		t.Errorf("a good answer = %q, %v, %q", fam, conf, why)
	}
	if fam, _, why := RouterAnswer(json.RawMessage(`{"family":"opus","confidence":0.9}`), allowed); fam != "" || why != `router chose "opus", outside the allowed families [haiku sonnet]` {
		t.Errorf("a family not allowed = %q, %q; want the fallback", fam, why)
	}
	// What the schema refuses never reaches RouterAnswer: Structured retries, then fails.
	for text, want := range map[string]string{
		`{"family":"haiku"}`:                  "$: missing property 'confidence'",
		`{"family":"haiku","confidence":1.5}`: "$.confidence: maximum: got 1.5, want 1",
		`{"family":"gpt","confidence":0.5}`:   "$.family: value must be one of",
	} {
		if err := RouteSchema.Validate(json.RawMessage(text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("RouteSchema.Validate(%s) = %v; want %q", text, err, want)
		}
	}
}

// The router sees at most routePromptLimit bytes of the request, cut at a character's start.
func TestRouterRequestClipsThePrompt(t *testing.T) {
	t.Parallel()
	req := RouterRequest("claude-haiku-4-5", cost.Families, strings.Repeat("é", routePromptLimit))
	text := req.Messages[0].Content[0].Text
	if !strings.HasPrefix(text, RouterPrefix+": ") || !strings.HasSuffix(text, "…") || len(text) > len(RouterPrefix)+2+routePromptLimit+len("…") {
		t.Errorf("router message is %d bytes, starting %.30q", len(text), text)
	}
	if !strings.Contains(req.System, "Allowed families: haiku, sonnet, opus, fable.") || req.MaxTokens != routerMaxTokens || !strings.Contains(req.System, "calling the tool route") {
		t.Errorf("router request: system %q, maxTokens %d", req.System, req.MaxTokens)
	}
}
