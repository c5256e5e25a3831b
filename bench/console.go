package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/auth"
	"agentrun.dev/agentrun/internal/console"
	"agentrun.dev/agentrun/internal/store/sqlite"
)

// ConsoleResult is the console's server-side render time with many runs: each page requested
// Requests times (after a few unmeasured) from a signed-in client, over HTTP on loopback, with
// the console in this process on a SQLite store holding Runs runs of Agents agents.
type ConsoleResult struct {
	Runs     int             `json:"runs"`
	Agents   int             `json:"agents"`
	Requests int             `json:"requests"`
	Pages    map[string]Dist `json:"pages"`
	Bytes    map[string]int  `json:"bytes"`
}

// consolePages are the pages measured: Mission Control, the runs list (first page, a deep page, a
// filter, a search), one run's page, the Agents page, an agent's page, a revision diff, New
// agent, Templates and a template's page.
var consolePages = []string{"/", "/runs", "/runs?page=15", "/runs?agent=agent-2&phase=Succeeded", "/runs?q=run-0999", "/runs/run-0500",
	"/agents", "/agents/agent-2", "/agents/agent-2/revisions/1..1", "/agents/new", "/templates", "/templates/code-review"}

func runConsole(c config, root string) (*ConsoleResult, error) {
	const runs, agents, requests = 1000, 5, 30
	dir := filepath.Join(root, "console")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	st, err := sqlite.Open(filepath.Join(dir, "agentrun.db"))
	if err != nil {
		return nil, err
	}
	defer st.Close()
	ctx := context.Background()
	for i := 0; i < agents; i++ {
		a := &api.Agent{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Agent"}, Metadata: api.ObjectMeta{Name: fmt.Sprintf("agent-%d", i)},
			Spec: api.AgentSpec{Model: api.ModelSpec{Access: "Server", Provider: "anthropic", Name: "claude-sonnet-4-5"}, Harness: "builtin",
				MaxTokens: api.DefaultMaxTokens, MaxToolCalls: api.DefaultMaxToolCalls, PerRunMaxCostUSD: api.DefaultPerRunMaxCostUSD}}
		if err := st.CreateAgent(ctx, a); err != nil {
			return nil, err
		}
	}
	phases := []api.Phase{api.PhaseSucceeded, api.PhaseSucceeded, api.PhaseFailed, api.PhaseRunning, api.PhaseWaiting, api.PhaseCancelled}
	costs := []string{"0.0123", "0.5", "unknown", "at least 0.01", "1.25"}
	for i := 0; i < runs; i++ {
		r := &api.AgentRun{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "AgentRun"}, Metadata: api.ObjectMeta{Name: fmt.Sprintf("run-%04d", i)},
			Spec: api.AgentRunSpec{Agent: fmt.Sprintf("agent-%d", i%agents), Input: "a bench run"},
			Status: api.AgentRunStatus{Phase: phases[i%len(phases)], AgentRevision: 1,
				Cost: &api.RunCost{TotalUSD: costs[i%len(costs)], LimitUSD: "2.00"}}}
		if err := st.CreateRun(ctx, r); err != nil {
			return nil, fmt.Errorf("create run %d: %w", i, err)
		}
	}
	acc, err := auth.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := acc.Setup(acc.SetupCode(), "admin", "correct horse battery"); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	(&console.Console{Store: st, Accounts: acc, Name: "bench"}).Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	session := acc.NewSession("admin", time.Now())
	get := func(path string) (int, error) {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.AddCookie(&http.Cookie{Name: "agentrun_session", Value: session})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		n, _ := io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 200 {
			return 0, fmt.Errorf("GET %s: HTTP %d", path, resp.StatusCode)
		}
		return int(n), nil
	}
	res := &ConsoleResult{Runs: runs, Agents: agents, Requests: requests, Pages: map[string]Dist{}, Bytes: map[string]int{}}
	for _, p := range consolePages {
		for i := 0; i < 3; i++ {
			if _, err := get(p); err != nil {
				return nil, err
			}
		}
		var ds []time.Duration
		for i := 0; i < requests; i++ {
			t0 := time.Now()
			n, err := get(p)
			if err != nil {
				return nil, err
			}
			ds = append(ds, time.Since(t0))
			res.Bytes[p] = n
		}
		res.Pages[p] = dist(ds)
	}
	return res, nil
}

func printConsole(r *ConsoleResult) {
	fmt.Printf("\nconsole: %d runs of %d agents on SQLite, %d requests a page (server render + loopback HTTP)\n", r.Runs, r.Agents, r.Requests)
	fmt.Printf("  %-40s %8s %8s %8s %8s %9s\n", "page", "p50 ms", "p90 ms", "p99 ms", "max ms", "bytes")
	for _, p := range consolePages {
		d := r.Pages[p]
		fmt.Printf("  %-40s %8.2f %8.2f %8.2f %8.2f %9d\n", p, d.P50, d.P90, d.P99, d.Max, r.Bytes[p])
	}
}
