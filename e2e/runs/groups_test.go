package runs

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

const groupScript = `
entries:
  - name: france
    match: "capital of France"
    turns:
      - text: "Paris."
        latency: 300ms
  - name: japan
    match: "capital of Japan"
    turns:
      - text: "Tokyo."
        latency: 300ms
  - name: both
    match: "both questions"
    turns:
      - text: "Both questions have been answered."
  - name: slow
    match: "slow-"
    turns:
      - text: "done"
        latency: 20s
  - name: quick
    match: "quick-"
    turns:
      - text: "ok"
        latency: 50ms
`

// The seed's whole "Run agents in parallel" flow, with the CLI, as the seed writes it.
func TestSeedParallelAgents(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, groupScript)
	e.Start()
	e.MustCLI(0, "apply", "-f", WriteFile(t, e.Dir, "agent.yaml", SeedGroupAgentYAML))
	if r := e.MustCLI(0, "apply", "-f", WriteFile(t, e.Dir, "group.yaml", SeedGroupYAML)); !strings.Contains(r.Stdout, "agentgroup/parallel-agents created") {
		t.Errorf("apply group printed %q", r.Stdout)
	}
	r := e.MustCLI(0, "apply", "-f", WriteFile(t, e.Dir, "runs.yaml", SeedRunsYAML))
	for _, want := range []string{"agentrun/parallel-agents-a created", "agentrun/parallel-agents-c created"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("apply runs printed %q, want %q", r.Stdout, want)
		}
	}
	// Before sealing, the group runs but does not finish.
	c := e.GetRun("parallel-agents-c")
	if c.Status.Phase != api.PhaseQueued || c.Status.Reason != api.ReasonDependencyWait {
		t.Errorf("c before its dependencies finished: %s/%s", c.Status.Phase, c.Status.Reason)
	}
	e.MustCLI(0, "patch", "ag/parallel-agents", "--patch", `{"spec":{"sealed":true}}`)
	r = e.MustCLI(0, "wait", "ag/parallel-agents", "--for=jsonpath={.status.phase}=Succeeded", "--timeout=2m")
	if !strings.Contains(r.Stdout, "condition met") {
		t.Errorf("wait printed %q", r.Stdout)
	}
	r = e.MustCLI(0, "get", "ag")
	if !strings.Contains(r.Stdout, "parallel-agents") || !strings.Contains(r.Stdout, "Succeeded") || !strings.Contains(r.Stdout, "3/3") {
		t.Errorf("get ag:\n%s", r.Stdout)
	}
	r = e.MustCLI(0, "get", "ar", "--field-selector", "spec.group=parallel-agents")
	for _, n := range []string{"parallel-agents-a", "parallel-agents-b", "parallel-agents-c"} {
		if !strings.Contains(r.Stdout, n) {
			t.Errorf("get ar --field-selector lacks %s:\n%s", n, r.Stdout)
		}
	}
	if r := e.MustCLI(0, "get", "ar", "--field-selector", "spec.group=other"); strings.Contains(r.Stdout, "parallel-agents") {
		t.Errorf("another group's selector listed these runs:\n%s", r.Stdout)
	}
	if r := e.MustCLI(0, "agentrun", "answer", "parallel-agents-c"); strings.TrimSpace(r.Stdout) != "Both questions have been answered." {
		t.Errorf("answer = %q", r.Stdout)
	}
	// c started only after both dependencies had succeeded.
	a, b := e.GetRun("parallel-agents-a"), e.GetRun("parallel-agents-b")
	c = e.GetRun("parallel-agents-c")
	if c.Status.StartedAt == nil || a.Status.FinishedAt == nil || b.Status.FinishedAt == nil ||
		c.Status.StartedAt.Before(*a.Status.FinishedAt) || c.Status.StartedAt.Before(*b.Status.FinishedAt) {
		t.Errorf("c started %v; a finished %v, b finished %v", c.Status.StartedAt, a.Status.FinishedAt, b.Status.FinishedAt)
	}
	g := e.GetGroup("parallel-agents")
	if g.Status.Counts != (api.GroupCounts{Succeeded: 3}) || g.Status.Cost == nil || g.Status.Cost.LimitUSD != "0.60" {
		t.Errorf("group status: %+v cost %+v", g.Status.Counts, g.Status.Cost)
	}
	// Sealed: a new run is refused with a conflict; sealing cannot be undone.
	if r := e.CLI(e.Dir, "create", "agentrun", "--agent", "parallel-agents-worker", "--group", "parallel-agents", "--task-key", "d", "--prompt", "quick-d"); r.Code == 0 || !strings.Contains(r.Stderr, "GroupSealed") {
		t.Errorf("run in a sealed group: exit %d, %q", r.Code, r.Stderr)
	}
	if st := e.Do("PATCH", "/v2/agentgroups/parallel-agents", `{"spec":{"sealed":false}}`, nil); st != 422 {
		t.Errorf("unseal: HTTP %d, want 422", st)
	}
	// Applying the same files again changes nothing.
	if r := e.MustCLI(0, "apply", "-f", WriteFile(t, e.Dir, "group.yaml", SeedGroupYAML)); !strings.Contains(r.Stdout, "configured") && !strings.Contains(r.Stdout, "unchanged") {
		t.Logf("re-apply group: %q", r.Stdout)
	}
	e.MustCLI(0, "delete", "ag/parallel-agents")
	if r := e.CLI(e.Dir, "get", "ar/parallel-agents-a"); r.Code == 0 {
		t.Errorf("a run of a deleted group is still there")
	}
}

// Limits, the cost cap, live changes, dependency failures, cancel, batches and idempotency.
func TestGroupLimitsAndBatches(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, groupScript)
	e.Start()
	e.MustCLI(0, "apply", "-f", WriteFile(t, e.Dir, "agent.yaml", SeedGroupAgentYAML))
	r := e.MustCLI(0, "create", "agentgroup", "g", "--agent", "parallel-agents-worker", "--max-active", "2", "--max-cost", "0.60")
	if !strings.Contains(r.Stdout, "agentgroup/g created") {
		t.Errorf("create agentgroup printed %q", r.Stdout)
	}
	if st := e.Do("POST", "/v2/agentgroups", `{"kind":"AgentGroup","metadata":{"name":"bad"},"spec":{"agent":"parallel-agents-worker","limits":{"maxActive":1001}}}`, nil); st != 422 {
		t.Errorf("maxActive 1001: HTTP %d", st)
	}
	// A batch of 8 slow runs: two go at once.
	var items []string
	for i := range 8 {
		items = append(items, fmt.Sprintf(`{"kind":"AgentRun","spec":{"agent":"parallel-agents-worker","group":"g","taskKey":"t%d","input":"slow-%d"}}`, i, i))
	}
	batch := `{"apiVersion":"agentrun.dev/v1","kind":"AgentRunList","items":[` + strings.Join(items, ",") + `]}`
	st, body := e.Post("/v2/agentruns", batch, map[string]string{"Idempotency-Key": "batch-1"})
	if st != 201 {
		t.Fatalf("batch: HTTP %d %s", st, body)
	}
	var first api.List[api.AgentRun]
	json.Unmarshal(body, &first)
	if len(first.Items) != 8 || first.Items[3].Metadata.Name != "g-t3" {
		t.Fatalf("batch created %d runs", len(first.Items))
	}
	st, body = e.Post("/v2/agentruns", batch, map[string]string{"Idempotency-Key": "batch-1"})
	var again api.List[api.AgentRun]
	json.Unmarshal(body, &again)
	if st != 200 || len(again.Items) != 8 || again.Items[0].Metadata.UID != first.Items[0].Metadata.UID {
		t.Errorf("repeated batch: HTTP %d, %d items", st, len(again.Items))
	}
	// All or nothing, list order: a run listed before its dependency is refused.
	bad := `{"kind":"AgentRunList","items":[` +
		`{"spec":{"agent":"parallel-agents-worker","group":"g","taskKey":"x1","input":"quick-x1"}},` +
		`{"spec":{"agent":"parallel-agents-worker","group":"g","taskKey":"x2","dependsOn":["x3"],"input":"quick-x2"}},` +
		`{"spec":{"agent":"parallel-agents-worker","group":"g","taskKey":"x3","input":"quick-x3"}}]}`
	st, body = e.Post("/v2/agentruns", bad, nil)
	if st != 422 || !strings.Contains(string(body), "items[1]") {
		t.Errorf("dependency listed after: HTTP %d %s", st, body)
	}
	if e.Do("GET", "/v2/agentruns/g-x1", nil, nil) != 404 {
		t.Errorf("a refused batch created g-x1")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		g := e.GetGroup("g")
		if g.Status.Counts.Active == 2 && g.Status.Counts.Queued == 6 {
			if g.Status.BlockedReasons[api.ReasonMaxActiveReached] != 6 {
				t.Errorf("blockedReasons %v", g.Status.BlockedReasons)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("group never had 2 active and 6 queued: %+v", g.Status.Counts)
		}
		time.Sleep(50 * time.Millisecond)
	}
	q := e.GetRun("g-t5")
	if q.Status.Reason != api.ReasonGroupWait || !strings.Contains(q.Status.Message, "MaxActiveReached") {
		t.Errorf("queued run: %s / %s", q.Status.Reason, q.Status.Message)
	}
	// Raise maxActive live: the cost cap (0.60 / 0.10) now bounds it at 6.
	e.MustCLI(0, "patch", "ag/g", "--patch", `{"spec":{"limits":{"maxActive":10}}}`)
	deadline = time.Now().Add(10 * time.Second)
	for {
		g := e.GetGroup("g")
		if g.Status.Counts.Active == 6 && g.Status.BlockedReasons[api.ReasonMaxCostReached] == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after raising maxActive: %+v %v", g.Status.Counts, g.Status.BlockedReasons)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st := e.Do("PATCH", "/v2/agentgroups/g", `{"spec":{"limits":{"maxCostUSD":"0.50"}}}`, nil); st != 422 {
		t.Errorf("lowering the cost cap: HTTP %d, want 422", st)
	}
	// Cancel: unfinished runs end, the group goes through Cancelling to Cancelled.
	r = e.MustCLI(0, "cancel", "ag/g")
	if !strings.Contains(r.Stdout, "agentgroup/g") {
		t.Errorf("cancel printed %q", r.Stdout)
	}
	e.MustCLI(0, "wait", "ag/g", "--for=jsonpath={.status.phase}=Cancelled", "--timeout=30s")
	g := e.GetGroup("g")
	if g.Status.Counts.Cancelled != 8 {
		t.Errorf("after cancel: %+v", g.Status.Counts)
	}
	if st, _ := e.Post("/v2/agentruns", `{"spec":{"agent":"parallel-agents-worker","group":"g","taskKey":"late","input":"quick-late"}}`, nil); st != 409 {
		t.Errorf("run in a cancelled group: HTTP %d", st)
	}

	// A failed dependency cancels its dependants, transitively; the group fails.
	e.MustCLI(0, "create", "agentgroup", "f", "--agent", "parallel-agents-worker")
	runs := `{"kind":"AgentRunList","items":[` +
		`{"spec":{"agent":"parallel-agents-worker","group":"f","taskKey":"a","input":"quick-a","deadline":"1ms"}},` +
		`{"spec":{"agent":"parallel-agents-worker","group":"f","taskKey":"b","dependsOn":["a"],"input":"quick-b"}},` +
		`{"spec":{"agent":"parallel-agents-worker","group":"f","taskKey":"c","dependsOn":["b"],"input":"quick-c"}}]}`
	if st, body := e.Post("/v2/agentruns", runs, nil); st != 201 {
		t.Fatalf("batch f: HTTP %d %s", st, body)
	}
	e.MustCLI(0, "patch", "ag/f", "--patch", `{"spec":{"sealed":true}}`)
	if r := e.CLI(e.Dir, "wait", "ag/f", "--for=jsonpath={.status.phase}=Succeeded", "--timeout=30s"); r.Code != 1 || !strings.Contains(r.Stderr, "RunsFailed") {
		t.Errorf("wait on a failing group: exit %d %q", r.Code, r.Stderr)
	}
	if b := e.GetRun("f-b"); b.Status.Phase != api.PhaseCancelled || b.Status.Reason != api.ReasonDependencyFailed {
		t.Errorf("f-b: %s/%s", b.Status.Phase, b.Status.Reason)
	}
	if c := e.GetRun("f-c"); c.Status.Phase != api.PhaseCancelled || c.Status.Reason != api.ReasonDependencyCancelled {
		t.Errorf("f-c: %s/%s", c.Status.Phase, c.Status.Reason)
	}
	// A sealed group with no runs succeeds.
	if st := e.Do("POST", "/v2/agentgroups", `{"kind":"AgentGroup","metadata":{"name":"empty"},"spec":{"agent":"parallel-agents-worker","sealed":true}}`, nil); st != 201 {
		t.Fatalf("create empty group: HTTP %d", st)
	}
	if g := e.GetGroup("empty"); g.Status.Phase != api.GroupSucceeded {
		t.Errorf("sealed empty group: %s", g.Status.Phase)
	}
}

// A server SIGKILLed while a group runs: after the restart the group carries on from the store,
// never with more than maxActive runs at once, and finishes.
func TestGroupSurvivesServerRestart(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, `
entries:
  - name: work
    match: "restart-"
    turns:
      - text: "done"
        latency: 800ms
`)
	e.Start()
	e.MustCLI(0, "apply", "-f", WriteFile(t, e.Dir, "agent.yaml", SeedGroupAgentYAML))
	e.MustCLI(0, "create", "agentgroup", "rg", "--agent", "parallel-agents-worker", "--max-active", "2")
	var items []string
	for i := range 8 {
		dep := ""
		if i >= 6 {
			dep = fmt.Sprintf(`,"dependsOn":["t%d"]`, i-6)
		}
		items = append(items, fmt.Sprintf(`{"spec":{"agent":"parallel-agents-worker","group":"rg","taskKey":"t%d","input":"restart-%d"%s}}`, i, i, dep))
	}
	if st, b := e.Post("/v2/agentruns", `{"kind":"AgentRunList","items":[`+strings.Join(items, ",")+`]}`, nil); st != 201 {
		t.Fatalf("batch: HTTP %d %s", st, b)
	}
	e.MustCLI(0, "patch", "ag/rg", "--patch", `{"spec":{"sealed":true}}`)
	deadline := time.Now().Add(30 * time.Second)
	for e.GetGroup("rg").Status.Counts.Succeeded < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("no progress before the restart: %+v", e.GetGroup("rg").Status.Counts)
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.Kill()
	e.Start()
	e.MustCLI(0, "wait", "ag/rg", "--for=jsonpath={.status.phase}=Succeeded", "--timeout=1m")
	if m := MaxConcurrentRuns(MemberCalls(e.Model, "restart-", 800*time.Millisecond)); m > 2 {
		t.Errorf("%d runs called the model at once across the restart; maxActive is 2", m)
	}
	for i := 6; i < 8; i++ {
		r, d := e.GetRun(fmt.Sprintf("rg-t%d", i)), e.GetRun(fmt.Sprintf("rg-t%d", i-6))
		if r.Status.StartedAt == nil || d.Status.FinishedAt == nil || r.Status.StartedAt.Before(*d.Status.FinishedAt) {
			t.Errorf("rg-t%d started %v before its dependency finished %v", i, r.Status.StartedAt, d.Status.FinishedAt)
		}
	}
}
