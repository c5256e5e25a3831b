package console

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/auth"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/store/sqlite"
)

// seedAgents stores agents a0..a(n-1) with runs runs between them, each run finished with a
// turn and a cost, and a second revision of a0.
func seedAgents(tb testing.TB, tc *pagesConsole, agents, runs int) {
	ctx := context.Background()
	for i := 0; i < agents; i++ {
		a := &api.Agent{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Agent"}, Metadata: api.ObjectMeta{Name: fmt.Sprintf("a%d", i)},
			Spec: api.AgentSpec{System: "Say hello.\nBe brief.", PerRunMaxCostUSD: "0.50"}}
		if err := tc.st.CreateAgent(ctx, a); err != nil {
			tb.Fatal(err)
		}
	}
	a0, _ := tc.st.GetAgent(ctx, "a0")
	a0.Spec.System = "Say hello.\nBe warm."
	if err := tc.st.UpdateAgent(ctx, a0); err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < runs; i++ {
		r := &api.AgentRun{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "AgentRun"}, Metadata: api.ObjectMeta{Name: fmt.Sprintf("r%04d", i)},
			Spec: api.AgentRunSpec{Agent: fmt.Sprintf("a%d", i%agents), Input: "hi"},
			Status: api.AgentRunStatus{Phase: api.PhaseSucceeded, AgentRevision: 1, Turns: []api.Turn{{Index: 1, Model: "claude-sonnet-4-5"}},
				Cost: &api.RunCost{TotalUSD: "0.0042", LimitUSD: "0.50"}}}
		if err := tc.st.CreateRun(ctx, r); err != nil {
			tb.Fatal(err)
		}
	}
}

// pagesConsole is a console on a fresh SQLite store, signed in as session.
type pagesConsole struct {
	st      store.Store
	srv     *httptest.Server
	session string
}

func newPagesConsole(tb testing.TB) *pagesConsole {
	dir := tb.TempDir()
	acc, err := auth.Open(dir)
	if err != nil {
		tb.Fatal(err)
	}
	if err := acc.Setup(acc.SetupCode(), "admin", "correct horse battery"); err != nil {
		tb.Fatal(err)
	}
	st, err := sqlite.Open(filepath.Join(dir, "agentrun.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	mux := http.NewServeMux()
	(&Console{Store: st, Accounts: acc}).Register(mux)
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	return &pagesConsole{st: st, srv: srv, session: acc.NewSession("admin", time.Now())}
}

func getPage(tb testing.TB, tc *pagesConsole, path string) string {
	req, _ := http.NewRequest("GET", tc.srv.URL+path, nil)
	req.AddCookie(&http.Cookie{Name: cookieName, Value: tc.session})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		tb.Fatalf("GET %s: HTTP %d\n%s", path, resp.StatusCode, b)
	}
	return string(b)
}

// The Agents page shows each agent's newest runs with model and cost; an agent's page its
// revisions linked to their diffs and its runs; the diff the changed line.
func TestAgentPages(t *testing.T) {
	tc := newPagesConsole(t)
	seedAgents(t, tc, 3, 12)
	list := getPage(t, tc, "/agents")
	for _, want := range []string{`href="/runs/r0009"`, `href="/runs/r0006"`, `href="/runs/r0003"`, "claude-sonnet-4-5", "$0.0042"} {
		if !strings.Contains(list, want) {
			t.Errorf("the Agents page lacks %s", want)
		}
	}
	if strings.Contains(list, `href="/runs/r0000"`) {
		t.Error("the Agents page shows a fourth run of a0 (it shows the newest three)")
	}
	page := getPage(t, tc, "/agents/a0")
	if !strings.Contains(page, `href="/agents/a0/revisions/1..2"`) || !strings.Contains(page, "Be warm.") {
		t.Errorf("the agent's page lacks the revision diff link or the current instructions:\n%s", page)
	}
	diff := getPage(t, tc, "/agents/a0/revisions/1..2")
	if !strings.Contains(diff, "<del>−   Be brief.</del>") || !strings.Contains(diff, "<ins>+   Be warm.</ins>") {
		t.Errorf("the diff:\n%s", diff)
	}
}

// BenchmarkAgentPages: the Agents page, an agent's page and a diff with 1,000 runs in the store
// (10 agents).
func BenchmarkAgentPages(b *testing.B) {
	tc := newPagesConsole(b)
	seedAgents(b, tc, 10, 1000)
	for _, p := range []string{"/agents", "/agents/a0", "/agents/a0/revisions/1..2", "/agents/new", "/templates", "/templates/code-review"} {
		b.Run(strings.ReplaceAll(p, "/", "_"), func(b *testing.B) {
			for b.Loop() {
				getPage(b, tc, p)
			}
		})
	}
}
