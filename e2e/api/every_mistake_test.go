package api

import (
	"strings"
	"testing"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// TestEveryMistake: a run, a group, a group's PATCH and a webhook, each with three mistakes, are
// told all three at once over HTTP, each with its field path and code, the first as the error's
// own code, field and message; so are a batch's items and a template's parts, under their
// prefixes. Nothing is stored or changed.
func TestEveryMistake(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, QuickstartScript)
	e.Start()
	createHelloAgent(t, e)
	if st := e.Do("POST", "/v2/agentgroups", `{"kind":"AgentGroup","metadata":{"name":"capped"},
	  "spec":{"agent":"hello-agent","sealed":true,"limits":{"maxCostUSD":"5"}}}`, nil); st != 201 {
		t.Fatalf("create group capped: HTTP %d", st)
	}
	for _, c := range []struct {
		what, method, path, body string
		status                   int
		want                     []api.FieldError
	}{
		{"run create", "POST", "/v2/agentruns",
			`{"kind":"AgentRun","metadata":{"name":"Bad Run"},"spec":{"agent":"hello-agent","input":"hi","maxCostUSD":" 1","deadline":"soon"}}`,
			422, []api.FieldError{
				{Code: api.CodeInvalid, Field: "metadata.name"},
				{Code: api.CodeInvalid, Field: "spec.maxCostUSD"},
				{Code: api.CodeInvalid, Field: "spec.deadline"},
			}},
		{"group create", "POST", "/v2/agentgroups",
			`{"kind":"AgentGroup","metadata":{"name":"Bad Group"},"spec":{"agent":"hello-agent","limits":{"maxActive":5000,"maxCostUSD":"lots"}}}`,
			422, []api.FieldError{
				{Code: api.CodeInvalid, Field: "metadata.name"},
				{Code: api.CodeInvalid, Field: "spec.limits.maxActive"},
				{Code: api.CodeInvalid, Field: "spec.limits.maxCostUSD"},
			}},
		{"group PATCH", "PATCH", "/v2/agentgroups/capped",
			`{"spec":{"agent":"other-agent","sealed":false,"limits":{"maxCostUSD":"1"}}}`,
			422, []api.FieldError{
				{Code: api.CodeInvalid, Field: "spec.agent"},
				{Code: api.CodeInvalid, Field: "spec.sealed"},
				{Code: api.CodeInvalid, Field: "spec.limits.maxCostUSD"},
			}},
		{"webhook create", "POST", "/v2/webhooks",
			`{"kind":"Webhook","metadata":{"name":"hook"},"spec":{"url":"ftp://example.com/in","events":["no.such.event"],"secretRef":"Bad Secret"}}`,
			422, []api.FieldError{
				{Code: api.CodeInvalid, Field: "spec.url"},
				{Code: api.CodeUnknownWebhookEvent, Field: "spec.events[0]"},
				{Code: api.CodeInvalid, Field: "spec.secretRef"},
			}},
		// Parts of a larger document are told under their prefix, every part's at once.
		{"batch of runs", "POST", "/v2/agentruns",
			`{"kind":"AgentRunList","items":[{"metadata":{"name":"Bad Run"},"spec":{"agent":"hello-agent","input":"hi"}},
			  {"metadata":{"name":"ok-run"},"spec":{"agent":"hello-agent","input":"hi","maxCostUSD":" 1","deadline":"soon"}}]}`,
			422, []api.FieldError{
				{Code: api.CodeInvalid, Field: "items[0].metadata.name"},
				{Code: api.CodeInvalid, Field: "items[1].spec.maxCostUSD"},
				{Code: api.CodeInvalid, Field: "items[1].spec.deadline"},
			}},
		{"template apply", "POST", "/v2/templates/apply",
			`{"template":"mine","agent":{"metadata":{"name":"tpl-agent"},"spec":{"system":"hi","maxTokens":-5}},
			  "skills":[{"spec":{"version":2,"files":[{"path":"/abs","content":"x"}]}}]}`,
			422, []api.FieldError{
				{Code: api.CodeInvalid, Field: "skills[0].spec.version"},
				{Code: api.CodeInvalid, Field: "skills[0].spec.files[0].path"},
				{Code: api.CodeInvalid, Field: "agent.spec.maxTokens"},
			}},
	} {
		var got api.Error
		st := e.Do(c.method, c.path, c.body, &got)
		if st != c.status || got.Code != c.want[0].Code || got.Field != c.want[0].Field || len(got.Errors) != len(c.want) {
			t.Errorf("%s with three mistakes: HTTP %d %+v, want %d %s at %s with %d errors", c.what, st, got, c.status, c.want[0].Code, c.want[0].Field, len(c.want))
			continue
		}
		// A batch's error says which item and that nothing was created around its first item's.
		if !strings.Contains(got.Message, got.Errors[0].Message) {
			t.Errorf("%s: the error's message %q does not say its first item's %q", c.what, got.Message, got.Errors[0].Message)
		}
		for i, w := range c.want {
			if g := got.Errors[i]; g.Code != w.Code || g.Field != w.Field || g.Message == "" {
				t.Errorf("%s: error %d is %+v, want %s at %s with a message", c.what, i, g, w.Code, w.Field)
			}
		}
	}
	var g api.AgentGroup
	if st := e.Do("GET", "/v2/agentgroups/capped", nil, &g); st != 200 || g.Spec.Agent != "hello-agent" || !g.Spec.Sealed || g.Spec.Limits.MaxCostUSD != "5.00" {
		t.Errorf("the refused PATCH changed the group: HTTP %d %+v", st, g.Spec)
	}
	for _, p := range []string{"/v2/agentruns/bad-run", "/v2/agentruns/ok-run", "/v2/agentgroups/bad-group", "/v2/webhooks/hook", "/v2/agents/tpl-agent"} {
		if st := e.Do("GET", p, nil, nil); st != 404 {
			t.Errorf("GET %s after a refused create: HTTP %d, want 404", p, st)
		}
	}
}
