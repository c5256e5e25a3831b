package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestWorkflowMapEffectsOverlap: a map's effects run at once up to its bound, in the run's real
// sandbox. Each of 4 items' shell calls marks its arrival in the run folder, then waits until all
// 4 have arrived: it can only end if the 4 calls run at the same time (one at a time, the first
// would wait its whole 60 s and fail). Each call is still its own step under its item's path, and
// a second map bounded at 1 never has two of its calls' steps open at once.
func TestWorkflowMapEffectsOverlap(t *testing.T) {
	t.Parallel()
	NeedBwrap(t)
	e := NewEnv(t, "entries:\n  - name: unused\n    match: \"never asked\"\n    turns:\n      - text: unused\n")
	e.Start()
	workflowAgent(e, "overlap", `,"computer":{"kind":"sandbox"}`)
	doc := func(conc int, wait string) string {
		return fmt.Sprintf(`{"v": 2, "name": "overlap", "schemas": {"In": {"type": "object", "required": ["items"]}, "Out": {"type": "object"}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out"},
  "root": {"node": "chain", "steps": [
    {"node": "map", "label": "each", "itemsPath": "items", "as": "all", "maxConcurrency": %d,
     "body": {"node": "call", "label": "meet", "via": "shell", "env": {"ITEM": "{item}"}, "as": "met", "deadline_s": 90,
       "command": %q}}]}}`, conc, `mkdir -p arrived && touch arrived/$ITEM; `+wait)
	}
	meet := `for i in $(seq 600); do [ "$(ls arrived | wc -l)" -ge 4 ] && { echo met; exit 0; }; sleep 0.1; done; echo alone; exit 1`
	var run api.AgentRun
	dir := t.TempDir()
	r := e.MustCLI(0, "workflows", "run", WriteFile(t, dir, "meet.json", doc(4, meet)), "--agent", "overlap", "--input", `{"items": ["a", "b", "c", "d"]}`, "--wait")
	run = cliRun(e, r)
	if run.Status.Phase != api.PhaseSucceeded || run.Status.Answer == nil || strings.Count(run.Status.Answer.Preview, `"stdout":"met"`) != 4 {
		t.Fatalf("run %s/%s %s: %+v", run.Status.Phase, run.Status.Reason, run.Status.Message, run.Status.Answer)
	}
	steps := e.Steps(run.Metadata.Name)
	seen := map[string]int{}
	for _, s := range steps {
		if strings.HasPrefix(s.Key, "wf/each[") {
			seen[s.Key]++
			if s.State != api.StepCompleted {
				t.Errorf("step %s %s", s.Key, s.State)
			}
		}
	}
	for i := range 4 {
		if k := fmt.Sprintf("wf/each[%d]/meet", i); seen[k] != 1 {
			t.Errorf("step %s recorded %d times, want once (all: %v)", k, seen[k], seen)
		}
	}

	// Bounded at 1: the calls' steps never overlap (each starts after the one before it ended).
	r = e.MustCLI(0, "workflows", "run", WriteFile(t, dir, "one.json", doc(1, "echo one")), "--agent", "overlap", "--input", `{"items": ["e", "f", "g"]}`, "--wait")
	run = cliRun(e, r)
	if run.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("bounded run %s/%s %s", run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	var last time.Time
	for _, s := range e.Steps(run.Metadata.Name) {
		if !strings.HasPrefix(s.Key, "wf/each[") {
			continue
		}
		if s.StartedAt.Before(last) || s.CompletedAt == nil {
			b, _ := json.Marshal(s)
			t.Errorf("with maxConcurrency 1, step %s started before the one before it completed: %s", s.Key, b)
		}
		if s.CompletedAt != nil {
			last = *s.CompletedAt
		}
	}
}

// TestWorkflowCrashWithEffectsInFlight: SIGKILL while two of a map's calls are running at once
// (each has counted its side effect and sleeps) and a third has completed. After the restart the
// completed one is answered from the journal, and each call in flight, whose outcome is
// uncertain, parks the run NeedsResolution naming its step, one after the other; a person who
// sees it ran completes it with its result. Every side effect happened exactly once.
func TestWorkflowCrashWithEffectsInFlight(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, "entries:\n  - name: unused\n    match: \"never asked\"\n    turns:\n      - text: unused\n")
	e.Start()
	doc := `{"v": 2, "name": "inflight", "schemas": {"In": {"type": "object", "required": ["items"]}, "Counted": {"type": "object", "required": ["ok", "content"]}, "Out": {"type": "object"}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out"},
  "root": {"node": "chain", "steps": [
    {"node": "map", "label": "each", "itemsPath": "items", "as": "all", "maxConcurrency": 3,
     "body": {"node": "call", "label": "count", "via": "tool", "tool": "dev_count", "args": {"label": "{item.label}", "sleep_ms": "{item.ms}"}, "out": "Counted", "as": "c", "deadline_s": 3600}}]}}`
	workflowAgent(e, "inflight", `,"workflow":`+doc)
	var run api.AgentRun
	in := `{"items": [{"label": "fast", "ms": 0}, {"label": "slow-a", "ms": 600000}, {"label": "slow-b", "ms": 600000}]}`
	b, _ := json.Marshal(map[string]any{"input": map[string]string{"content": in}})
	if st := e.Do("POST", "/v2/agents/inflight/runs", string(b), &run); st != 201 {
		t.Fatalf("start: HTTP %d", st)
	}
	for deadline := time.Now().Add(30 * time.Second); len(e.Counted()) < 3; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the three calls did not all start: counted %v", e.Counted())
		}
	}
	// The fast call's result is committed soon after its count; wait for it in the journal.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		done := false
		for _, s := range e.Steps(run.Metadata.Name) {
			done = done || s.Key == "wf/each[0]/count" && s.State == api.StepCompleted
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fast call never completed: %+v", e.Steps(run.Metadata.Name))
		}
	}
	e.Kill()
	e.Start()
	dir := t.TempDir()
	for _, want := range []string{"wf/each[1]/count", "wf/each[2]/count"} {
		r := e.WaitPhase(run.Metadata.Name, 30*time.Second, api.PhaseNeedsResolution, api.PhaseSucceeded, api.PhaseFailed)
		if r.Status.Phase != api.PhaseNeedsResolution || r.Status.WaitingOn == nil || r.Status.WaitingOn.StepKey != want {
			t.Fatalf("run %s/%s waiting on %+v, want NeedsResolution on %s", r.Status.Phase, r.Status.Reason, r.Status.WaitingOn, want)
		}
		label := map[string]string{"wf/each[1]/count": "slow-a", "wf/each[2]/count": "slow-b"}[want]
		res := WriteFile(t, dir, label+".json", `{"Content": "counted `+label+`", "IsError": false}`)
		e.MustCLI(0, "runs", "resolve", run.Metadata.Name, "--complete", "@"+res)
	}
	r := e.WaitPhase(run.Metadata.Name, 30*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || !strings.Contains(r.Status.Answer.Preview, "counted slow-b") {
		t.Fatalf("run ended %s/%s %s %+v", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.Answer)
	}
	got := e.Counted()
	sort.Strings(got)
	if strings.Join(got, ",") != "fast,slow-a,slow-b" {
		t.Errorf("side effects %v: each exactly once", got)
	}
}

// TestWorkflowMapMCPCallsOverlap: a map's calls of an MCP tool (a streamable-HTTP server built
// with the Go SDK, one session) run at once: the tool answers only when all 3 calls have arrived.
func TestWorkflowMapMCPCallsOverlap(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	arrived := 0
	all := make(chan struct{})
	server := mcp.NewServer(&mcp.Implementation{Name: "meet", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "meet", Description: "Wait for the others."}, func(ctx context.Context, req *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
		mu.Lock()
		arrived++
		if arrived == 3 {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("met %v", in["who"])}}}, nil, nil
		case <-time.After(60 * time.Second):
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "alone"}}}, nil, nil
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	t.Cleanup(ts.Close)
	e := NewEnv(t, "entries:\n  - name: unused\n    match: \"never asked\"\n    turns:\n      - text: unused\n")
	e.Start()
	doc := `{"v": 2, "name": "meet", "schemas": {"In": {"type": "object", "required": ["items"]}, "R": {"type": "object"}, "Out": {"type": "object"}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out"},
  "root": {"node": "chain", "steps": [
    {"node": "map", "label": "each", "itemsPath": "items", "as": "all", "maxConcurrency": 3,
     "body": {"node": "call", "label": "meet", "via": "tool", "tool": "mcp__meet__meet", "args": {"who": "{item}"}, "out": "R", "as": "m", "deadline_s": 90}}]}}`
	agent := fmt.Sprintf(`{"metadata":{"name":"meeter"},"spec":{"computer":{"kind":"none"},"approvals":"never-ask",
  "mcpServers":[{"name":"meet","url":%q,"tools":["meet"]}],"workflow":%s}}`, ts.URL, doc)
	var ae api.Error
	if st := e.Do("PUT", "/v2/agents/meeter", agent, &ae); st != 201 {
		t.Fatalf("create agent: HTTP %d %+v", st, ae)
	}
	var run api.AgentRun
	if st := e.Do("POST", "/v2/agents/meeter/runs", `{"input":{"content":"{\"items\": [\"a\", \"b\", \"c\"]}"}}`, &run); st != 201 {
		t.Fatalf("start: HTTP %d", st)
	}
	r := e.WaitPhase(run.Metadata.Name, 90*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || !strings.Contains(r.Status.Answer.Preview, "met c") {
		t.Fatalf("run ended %s/%s %s %+v", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.Answer)
	}
}

// capScript answers each map item's agent node slowly (1 s), so the items' model calls are in
// flight at once, each for a few tokens.
const capScript = `
entries:
  - name: item
    match: "Sum up the item"
    turns:
      - latency: 1s
        text: "item summed"
        usage: {input_tokens: 100, output_tokens: 10}
`

// TestWorkflowMapCallsShareTheCap: a map of 4 agent nodes at once under a cap that holds two
// calls' worst cases but not four. The calls past the room wait for the ones in flight to settle
// (at a fraction of their worst case) instead of parking the run on a cap it is nowhere near:
// the run succeeds, its timeline says which calls waited and why, and it spends under the cap.
// The same cap too small for a single call still parks the run (MaxCostReached).
func TestWorkflowMapCallsShareTheCap(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, capScript)
	e.Start()
	// One call's worst case: 1,024 output tokens of claude-sonnet-4-5 at $15/M and its input
	// bound at the dearest input rate, with the markup: $0.082; two fit under $0.20, four do not.
	workflowAgent(e, "capmap", `,"maxTokens":1024,"model":{"name":"claude-sonnet-4-5"},"perRunMaxCostUSD":"0.20"`)
	workflowAgent(e, "capsmall", `,"maxTokens":1024,"model":{"name":"claude-sonnet-4-5"},"perRunMaxCostUSD":"0.05"`)
	doc := `{"v": 2, "name": "capmap", "schemas": {"In": {"type": "object", "required": ["items"]}, "Out": {"type": "object"}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out"},
  "root": {"node": "chain", "steps": [
    {"node": "map", "label": "each", "itemsPath": "items", "as": "all", "maxConcurrency": 4,
     "body": {"node": "agent", "label": "sum", "instructions": "Sum up the item", "tools": [], "state": {"item": "{item}"}, "as": "summed"}}]}}`
	dir := t.TempDir()
	r := e.MustCLI(0, "workflows", "run", WriteFile(t, dir, "capmap.json", doc), "--agent", "capmap",
		"--input", `{"items": ["a", "b", "c", "d"]}`, "--wait")
	run := cliRun(e, r)
	if run.Status.Phase != api.PhaseSucceeded || run.Status.Answer == nil || strings.Count(run.Status.Answer.Preview, "item summed") != 4 {
		t.Fatalf("run %s/%s %s: %+v", run.Status.Phase, run.Status.Reason, run.Status.Message, run.Status.Answer)
	}
	if got := USD(t, run.Status.Cost.TotalUSD); got <= 0 || got > USD(t, "0.20") {
		t.Errorf("the run spent $%s under a $0.20 cap", run.Status.Cost.TotalUSD)
	}
	held := 0
	for _, ev := range e.Events(run.Metadata.Name) {
		if ev.Type == api.EventCostHeld {
			held++
			if !strings.Contains(ev.Message, "waits for one of them to settle") || !strings.Contains(ev.Message, "$0.20 cap") {
				t.Errorf("cost.held says: %s", ev.Message)
			}
		}
		if ev.Type == api.EventRunWaiting {
			t.Errorf("the run parked: %s", ev.Message)
		}
	}
	if held == 0 {
		t.Error("no call was held back, so the test did not put the calls in flight at once")
	}
	t.Logf("%d calls waited for the ones in flight", held)

	// A cap under one call's worst case parks the run before any call, as without a map.
	r = e.MustCLI(0, "workflows", "run", WriteFile(t, dir, "capmap.json", doc), "--agent", "capsmall",
		"--input", `{"items": ["a", "b"]}`)
	small := cliRun(e, r)
	w := e.WaitPhase(small.Metadata.Name, 30*time.Second, api.PhaseWaiting, api.PhaseSucceeded, api.PhaseFailed)
	if w.Status.Phase != api.PhaseWaiting || w.Status.Reason != api.ReasonMaxCostReached {
		t.Fatalf("under a cap too small for one call the run is %s/%s, want Waiting/MaxCostReached", w.Status.Phase, w.Status.Reason)
	}
}
