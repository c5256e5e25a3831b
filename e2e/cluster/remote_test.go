package cluster

import (
	"strings"
	"testing"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// computerLine returns a provider's line of `agentrun server capabilities`.
func computerLine(t *testing.T, e *Env, provider string) map[string]any {
	t.Helper()
	var caps struct {
		Computers []map[string]any `json:"computers"`
	}
	if st := e.Do("GET", "/v2/capabilities", nil, &caps); st != 200 {
		t.Fatalf("capabilities: HTTP %d", st)
	}
	for _, c := range caps.Computers {
		if c["provider"] == provider {
			return c
		}
	}
	t.Fatalf("no %s provider in %+v", provider, caps.Computers)
	return nil
}

// The remote vendors are listed with what they make; their keys are sealed secrets written by a
// person, and the listing says whether one is set; none is available here (no client is built
// in), and an agent naming one is refused at once, saying why.
func TestRemoteComputerVendors(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, QuickstartScript)
	e.Start()
	for _, v := range []struct{ name, kind, set string }{
		{"daytona", "sandbox", "agentrun secrets set daytona DAYTONA_API_KEY"},
		{"modal", "sandbox", "agentrun secrets set modal MODAL_TOKEN_ID MODAL_TOKEN_SECRET"},
		{"e2b", "sandbox", "agentrun secrets set e2b E2B_API_KEY"},
		{"browserbase", "browser", "agentrun secrets set browserbase BROWSERBASE_API_KEY BROWSERBASE_PROJECT_ID"},
		{"kernel", "browser", "agentrun secrets set kernel KERNEL_API_KEY"},
		{"orgo", "desktop", "agentrun secrets set orgo ORGO_API_KEY"},
	} {
		c := computerLine(t, e, v.name)
		why, _ := c["why"].(string)
		kinds, _ := c["kinds"].([]any)
		if c["available"] != false || len(kinds) != 1 || kinds[0] != v.kind || !strings.Contains(why, "no key") || !strings.Contains(why, v.set) {
			t.Errorf("%s before its key: %v", v.name, c)
		}
	}
	session := e.PersonSession()
	if st := e.DoAs(session, "PUT", "/v2/secrets/daytona", `{"data":{"DAYTONA_API_KEY":"dtn-test-do-not-leak"}}`, nil); st != 200 {
		t.Fatalf("a person setting the Daytona key: HTTP %d", st)
	}
	c := computerLine(t, e, "daytona")
	why, _ := c["why"].(string)
	if c["available"] != false || !strings.Contains(why, "key set (secret daytona, sealed)") || !strings.Contains(why, "no Daytona client") ||
		strings.Contains(why, "dtn-test") {
		t.Errorf("daytona with its key: %v", c)
	}
	var apiErr api.Error
	st := e.Do("PUT", "/v2/agents/remote", `{"metadata":{"name":"remote"},"spec":{"computer":{"kind":"sandbox","provider":"daytona"}}}`, &apiErr)
	if st != 422 || !strings.Contains(apiErr.Message, "daytona") || !strings.Contains(apiErr.Message, "no Daytona client") {
		t.Errorf("an agent on daytona: HTTP %d %+v", st, apiErr)
	}
}
