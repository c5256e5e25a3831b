package workflow

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
	"github.com/chromedp/chromedp"
)

// TestWorkflowTree: `runs steps` of a workflow run shows its node tree (map items, loop
// iterations, the route's branch taken and the one skipped, the child, the agent node's calls),
// each with its state, a preview of its value and its cost rolled up to the root, which is the
// run's cost; the API answers the same tree; the console's run page shows it in headless
// Chromium; an escalated run's tree shows the escalate node escalated and what follows skipped.
func TestWorkflowTree(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, kindsScript)
	e.Start()
	code := e.SetupCode()
	workflowAgent(e, "ticketer", `,"workflow":`+kindsWorkflow)
	var run api.AgentRun
	if st := e.Do("POST", "/v2/agents/ticketer/runs", `{"input":{"content":"{\"items\": [\"a\", \"b\", \"c\"], \"text\": \"the invoice is wrong\"}"}}`, &run); st != 201 {
		t.Fatalf("start: HTTP %d", st)
	}
	r := e.WaitPhase(run.Metadata.Name, 30*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run ended %s/%s %s", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	out := e.MustCLI(0, "runs", "steps", run.Metadata.Name, "-o", "json")
	var v struct {
		Items []api.Step        `json:"items"`
		Nodes *api.WorkflowNode `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out.Stdout), &v); err != nil || v.Nodes == nil {
		t.Fatalf("runs steps -o json: %v, no nodes in %s", err, out.Stdout)
	}
	root := v.Nodes
	want := map[string]struct{ kind, state, value string }{
		"wf":                    {"workflow", "done", ""},
		"wf/prep":               {"code", "done", ""},
		"wf/each":               {"map", "done", ""},
		"wf/each[1]":            {"item", "done", ""},
		"wf/each[1]/count":      {"call", "done", "counted item-b"},
		"wf/first":              {"pick", "done", `"i0" (confidence 0.80)`},
		"wf/triage":             {"decide", "done", `{"urgent": false} (confidence 0.90)`},
		"wf/queue":              {"route", "done", `"fast" (confidence 0.60) → slow`},
		"wf/queue>slow":         {"branch", "done", ""},
		"wf/queue>fast":         {"branch", "skipped", ""},
		"wf/queue>fast/fastq":   {"code", "skipped", ""},
		"wf/again#2/tick":       {"call", "done", "counted loop-2"},
		"wf/sub/tick":           {"call", "done", "counted child"},
		"wf/both/pcall":         {"call", "done", "counted par-a"},
		"wf/both/pcode":         {"code", "done", ""},
		"wf/research":           {"agent", "done", ""},
		"wf/research/t0/tool/0": {"step", "done", "counted agent-probe"},
		"wf/stop":               {"escalate", "done", ""},
		"wf/final":              {"report", "done", ""},
	}
	for key, w := range want {
		n := FindNode(root, key)
		if n == nil {
			t.Errorf("no node %s in the tree", key)
			continue
		}
		if n.Kind != w.kind || n.State != w.state || !strings.Contains(n.Value, w.value) {
			t.Errorf("node %s: %s %s %q, want %s %s with value %q", key, n.Kind, n.State, n.Value, w.kind, w.state, w.value)
		}
	}
	// Costs roll up: the root's is every step's, which is the run's; a node's is its children's.
	var sum int64
	for _, s := range v.Items {
		if s.CostMicros != nil {
			sum += *s.CostMicros
		}
	}
	if sum == 0 || root.CostMicros != sum || root.Steps != len(v.Items) {
		t.Errorf("root cost %d over %d steps; the steps' costs sum to %d over %d", root.CostMicros, root.Steps, sum, len(v.Items))
	}
	if got := cost.Micros(root.CostMicros).String(); r.Status.Cost == nil || r.Status.Cost.TotalUSD != got {
		t.Errorf("root cost $%s, the run's $%+v", got, r.Status.Cost)
	}
	research := FindNode(root, "wf/research")
	if research.CostMicros == 0 || research.CostMicros != FindNode(root, "wf/research/t0/model").CostMicros+FindNode(root, "wf/research/t1/model").CostMicros {
		t.Errorf("the agent node's cost %d is not its two model calls'", research.CostMicros)
	}
	// The human table: the tree, then the steps.
	table := e.MustCLI(0, "runs", "steps", run.Metadata.Name).Stdout
	for _, s := range []string{"NODE", "  each", "      count", "counted item-b", "skipped", "SEQ"} {
		if !strings.Contains(table, s) {
			t.Errorf("runs steps table has no %q:\n%s", s, table)
		}
	}
	// The API answers the same tree.
	var tree api.WorkflowTree
	if st := e.Do("GET", "/v2/agentruns/"+run.Metadata.Name+"/nodes", "", &tree); st != 200 || tree.Workflow != "kinds" || tree.Root == nil || tree.Root.Steps != root.Steps {
		t.Errorf("GET nodes: HTTP %d %+v", st, tree)
	}

	// An escalated run: the escalate node escalated, the report after it skipped.
	var esc api.AgentRun
	e.Do("POST", "/v2/agents/ticketer/runs", `{"input":{"content":"{\"items\": [\"z\"], \"text\": \"PAGER: checkout is down\"}"}}`, &esc)
	er := e.WaitPhase(esc.Metadata.Name, 30*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if er.Status.Escalation == nil {
		t.Fatalf("no escalation: %s/%s %s", er.Status.Phase, er.Status.Reason, er.Status.Message)
	}
	if w := e.MustCLI(0, "runs", "wait", esc.Metadata.Name); !strings.Contains(w.Stdout+w.Stderr, "escalated at stop (human, stage triage): urgent ticket: PAGER: checkout is down") {
		t.Errorf("runs wait of the escalated run does not say so: %q %q", w.Stdout, w.Stderr)
	}
	if st := e.Do("GET", "/v2/agentruns/"+esc.Metadata.Name+"/nodes", "", &tree); st != 200 {
		t.Fatalf("GET nodes: HTTP %d", st)
	}
	for key, state := range map[string]string{"wf/stop": "escalated", "wf/final": "skipped", "wf/research": "done", "wf": "escalated"} {
		if n := FindNode(tree.Root, key); n == nil || n.State != state {
			t.Errorf("escalated run: node %s %+v, want %s", key, n, state)
		}
	}

	// A run without a workflow has no tree, and runs steps prints its steps alone.
	workflowAgent(e, "plain", "")
	if st := e.Do("GET", "/v2/agentruns/"+run.Metadata.Name+"x/nodes", "", nil); st != 404 {
		t.Errorf("nodes of no run: HTTP %d, want 404", st)
	}

	// The console's run page, in headless Chromium.
	ctx := NewBrowser(t, 60*time.Second)
	var page, rows string
	err := SignInBrowser(ctx, e.URL+"/runs/"+esc.Metadata.Name, code, `table#workflow-tree`)
	if err == nil {
		page, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	}
	if err == nil {
		rows, err = chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('#workflow-tree tr[data-key]')].map(r => r.dataset.key+'='+r.dataset.state).join(' ')`))
	}
	if err != nil {
		t.Fatalf("browser: %v\n%s", err, page)
	}
	for _, s := range []string{"wf/stop=escalated", "wf/final=skipped", "wf/each[0]/count=done", "wf/triage=done"} {
		if !strings.Contains(rows, s) {
			t.Errorf("the console's tree has no %s: %s", s, rows)
		}
	}
	if !strings.Contains(page, "Escalated at stop (human, stage triage): urgent ticket: PAGER: checkout is down") {
		t.Errorf("the run page does not show the escalation:\n%s", page)
	}
}
