package server

import (
	"encoding/json"
	"net/http"
	"testing"

	"agentrun.dev/agentrun/internal/api"
)

// TestGeneratedNameCollision: a run created without a name whose generated name another run
// already has gets another generated name (201), not the other run's 409; a name the client gave
// is still refused when taken.
func TestGeneratedNameCollision(t *testing.T) {
	ts, _ := newTestServer(t)
	if r := do(t, ts, "POST", "/v2/agents", testToken, []byte(agentJSON)); r.status != http.StatusCreated {
		t.Fatalf("create agent: HTTP %d %s", r.status, r.body)
	}
	if r := do(t, ts, "POST", "/v2/agentruns", testToken, []byte(`{"metadata":{"name":"notes-taken"},"spec":{"agent":"notes","input":"x"}}`)); r.status != http.StatusCreated {
		t.Fatalf("create notes-taken: HTTP %d %s", r.status, r.body)
	}
	orig := generateName
	t.Cleanup(func() { generateName = orig })
	names := []string{"notes-taken", "notes-taken", "notes-fresh", "notes-taken", "notes-fresh2"}
	generateName = func(string) string {
		n := names[0]
		names = names[1:]
		return n
	}
	for _, c := range []struct{ path, body, want string }{
		{"/v2/agents/notes/runs", `{"input":{"content":"hi"}}`, "notes-fresh"},
		{"/v2/agentruns", `{"spec":{"agent":"notes","input":"hi"}}`, "notes-fresh2"},
	} {
		r := do(t, ts, "POST", c.path, testToken, []byte(c.body))
		if r.status != http.StatusCreated {
			t.Fatalf("POST %s with a colliding generated name: HTTP %d %s, want 201", c.path, r.status, r.body)
		}
		var run api.AgentRun
		if err := json.Unmarshal(r.body, &run); err != nil {
			t.Fatal(err)
		}
		if run.Metadata.Name != c.want {
			t.Errorf("POST %s: run named %q, want %q (generated again after the collision)", c.path, run.Metadata.Name, c.want)
		}
	}
	if r := do(t, ts, "POST", "/v2/agentruns", testToken, []byte(`{"metadata":{"name":"notes-taken"},"spec":{"agent":"notes","input":"x"}}`)); r.status != http.StatusConflict {
		t.Errorf("a taken name the client chose: HTTP %d %s, want 409", r.status, r.body)
	}
}
