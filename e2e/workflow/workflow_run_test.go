package workflow

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// kindsWorkflow uses every kind the engine runs but call via shell (TestWorkflowShell): code,
// map of tool calls (dev_count, a real side effect), pick, decide, a child workflow, parallel, route (a question whose answer is
// below unsure's threshold), loop, agent (the built-in loop calls dev_count), escalate (when the
// decision says urgent) and report.
const kindsWorkflow = `{
  "v": 2, "name": "kinds",
  "schemas": {
    "In": {"type": "object", "required": ["items", "text"], "properties": {"items": {"type": "array", "items": {"type": "string"}}, "text": {"type": "string"}}},
    "Counted": {"type": "object", "required": ["ok", "content"]},
    "Verdict": {"type": "object", "required": ["urgent"], "properties": {"urgent": {"type": "boolean"}}},
    "Out": {"type": "object", "required": ["report_markdown", "counted", "tries", "queue"]}
  },
  "input": {"schemaId": "In"},
  "output": {"schemaId": "Out"},
  "root": {"node": "chain", "steps": [
    {"node": "code", "label": "prep", "code": "(s) => ({ n: s.items.length, tries: 0 })"},
    {"node": "map", "label": "each", "itemsPath": "items", "as": "counted", "maxConcurrency": 2,
     "body": {"node": "call", "label": "count", "via": "tool", "tool": "dev_count", "args": {"label": "item-{item}"}, "out": "Counted", "as": "c", "deadline_s": 30}},
    {"node": "pick", "label": "first", "itemsPath": "items", "describe": "ticket {item}", "instructions": "Choose the item to look at", "as": "chosen"},
    {"node": "decide", "label": "triage", "instructions": "Triage the ticket", "out": "Verdict", "as": "verdict"},
    {"node": "route", "label": "queue", "instructions": "Pick the queue", "as": "routed", "state": {"ticket": "{text}", "verdict": "{verdict}"},
     "branches": {
       "fast": {"body": {"node": "code", "label": "fastq", "code": "(s) => ({ queue: 'fast' })"}},
       "slow": {"body": {"node": "code", "label": "slowq", "code": "(s) => ({ queue: 'slow' })"}}},
     "unsure": {"branch": "slow", "gte": 0.95}},
    {"node": "loop", "label": "again", "maxIters": 5, "until": {"predicate": "gte", "path": "tries", "n": 3},
     "body": {"node": "chain", "steps": [
       {"node": "call", "label": "tick", "via": "tool", "tool": "dev_count", "args": {"label": "loop-{tries}"}, "out": "Counted", "as": "ticked", "deadline_s": 30},
       {"node": "code", "label": "bump", "code": "(s) => ({ tries: s.tries + 1 })"}]}},
    {"node": "workflow", "label": "sub", "input": {"t": "{text}"}, "out": "Counted", "as": "child",
     "workflow": {"v": 2, "name": "child", "schemas": {"CI": {"type": "object", "required": ["t"]}, "C": {"type": "object"}},
       "input": {"schemaId": "CI"}, "output": {"schemaId": "C", "path": "ran"},
       "root": {"node": "chain", "steps": [{"node": "call", "label": "tick", "via": "tool", "tool": "dev_count", "args": {"label": "child"}, "out": "C", "as": "ran", "deadline_s": 30}]}}},
    {"node": "parallel", "label": "both", "branches": [
      {"node": "call", "label": "pcall", "via": "tool", "tool": "dev_count", "args": {"label": "par-a"}, "out": "Counted", "as": "pa", "deadline_s": 30},
      {"node": "code", "label": "pcode", "code": "(s) => ({ pb: s.tries })"}]},
    {"node": "agent", "label": "research", "instructions": "Research the ticket", "as": "notes"},
    {"node": "escalate", "label": "stop", "when": {"predicate": "field_true", "path": "verdict.urgent"},
     "kind": "human", "stage": "triage", "summary": "urgent ticket: {text}"},
    {"node": "report", "label": "final", "instructions": "Write the report"}
  ]}
}`

// The scripted answers: a typed question answers {"answer", "confidence"}; the agent node calls
// dev_count once, then answers. Entries match the first user message (the node's instructions
// and then the state), so the entry matching the ticket's text comes after the other nodes'.
const kindsScript = `
entries:
  - name: queue
    match: "Pick the queue"
    turns:
      - text: '{"answer": "fast", "confidence": 0.6}'
  - name: research
    match: "Research the ticket"
    turns:
      - tool_calls:
          - name: dev_count
            input: {label: "agent-probe"}
      - text: "The ticket is about billing ({{last_tool_result}})."
  - name: report
    match: "Write the report"
    turns:
      - text: "# Report\n\nThe ticket went to the slow queue after three tries of the loop."
  - name: choose
    match: "Choose the item"
    turns:
      - text: '{"answer": "i0", "confidence": 0.8}'
  - name: triage-urgent
    match: "PAGER"
    turns:
      - text: '{"answer": {"urgent": true}, "confidence": 0.97}'
  - name: triage
    match: "Triage the ticket"
    turns:
      - text: '{"answer": {"urgent": false}, "confidence": 0.9}'
`

// cliRun reads the run a CLI command printed (its run_id) from the API.
func cliRun(e *Env, r Result) api.AgentRun {
	e.T.Helper()
	var v struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil || v.RunID == "" {
		e.T.Fatalf("no run_id in %q: %v", r.Stdout, err)
	}
	return e.GetRun(v.RunID)
}

func workflowAgent(e *Env, name, extra string) {
	e.T.Helper()
	if st := e.Do("PUT", "/v2/agents/"+name, fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"tools":["dev_count"]%s}}`, name, extra), nil); st != 201 && st != 200 {
		e.T.Fatalf("create agent %s: HTTP %d", name, st)
	}
}

// completedCalls counts the scripted server's completed calls per entry.
func completedCalls(e *Env) map[string]int {
	out := map[string]int{}
	for _, c := range e.Model.Calls() {
		if c.Completed {
			out[c.Entry]++
		}
	}
	return out
}

// TestWorkflowKinds runs kindsWorkflow through the real binary's `workflows run --wait` against
// the scripted model server: each kind's effect happens once, in the journal under its execution
// path, and the output is the final state.
func TestWorkflowKinds(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, kindsScript)
	e.Start()
	workflowAgent(e, "ticketer", "")
	dir := t.TempDir()
	wf := WriteFile(t, dir, "kinds.json", kindsWorkflow)
	in := WriteFile(t, dir, "in.json", `{"items": ["a", "b", "c"], "text": "the invoice is wrong"}`)
	r := e.MustCLI(0, "workflows", "run", wf, "--agent", "ticketer", "--input", "@"+in, "--wait")
	run := cliRun(e, r)
	if run.Status.Phase != api.PhaseSucceeded || run.Status.Answer == nil {
		t.Fatalf("run ended %s/%s %s", run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(run.Status.Answer.Preview), &out); err != nil {
		t.Fatalf("answer is not the output JSON: %v %q", err, run.Status.Answer.Preview)
	}
	if out["tries"] != 3.0 || out["pb"] != 3.0 || out["queue"] != "slow" || !strings.HasPrefix(fmt.Sprint(out["report_markdown"]), "# Report") ||
		!strings.Contains(fmt.Sprint(out["notes"]), "counted agent-probe") {
		t.Errorf("output %v: want tries 3 (loop), queue slow (route unsure at 0.6 < 0.95), the report and the agent's notes", out)
	}
	counted, _ := out["counted"].([]any)
	if len(counted) != 3 || !strings.Contains(fmt.Sprint(counted[1]), "counted item-b") {
		t.Errorf("map results %v: want three in item order", counted)
	}
	if chosen, _ := out["chosen"].(map[string]any); chosen["item"] != "a" || chosen["option"] != "ticket a" || chosen["index"] != 0.0 {
		t.Errorf("pick record %v", out["chosen"])
	}
	if routed, _ := out["routed"].(map[string]any); routed["answer"] != "fast" || routed["unsure"] != true {
		t.Errorf("route record %v", out["routed"])
	}
	got := e.Counted()
	sort.Strings(got)
	if strings.Join(got, ",") != "agent-probe,child,item-a,item-b,item-c,loop-0,loop-1,loop-2,par-a" {
		t.Errorf("side effects %v", got)
	}
	calls := completedCalls(e)
	for entry, want := range map[string]int{"choose": 1, "triage": 1, "queue": 1, "research": 2, "report": 1, "triage-urgent": 0} {
		if calls[entry] != want {
			t.Errorf("model calls of %s: %d, want %d (all: %v)", entry, calls[entry], want, calls)
		}
	}
	keys := map[string]bool{}
	for _, s := range e.Steps(run.Metadata.Name) {
		keys[s.Key] = true
	}
	for _, k := range []string{"wf/each[0]/count", "wf/each[2]/count", "wf/again#2/tick", "wf/sub/tick", "wf/both/pcall", "wf/triage", "wf/queue", "wf/research/t0/model", "wf/research/t0/tool/0", "wf/research/t1/model", "wf/final/t0/model"} {
		if !keys[k] {
			t.Errorf("no step %s among %v", k, keys)
		}
	}
	if run.Status.Cost == nil || run.Status.Cost.TotalUSD == "" {
		t.Errorf("no cost on the run: %+v", run.Status.Cost)
	}

	// The same agent on an urgent ticket: the decision says urgent, escalate stops the run
	// before the report, Succeeded with status.escalation.
	in2 := WriteFile(t, dir, "in2.json", `{"items": ["z"], "text": "PAGER: checkout is down"}`)
	r = e.MustCLI(0, "workflows", "run", wf, "--agent", "ticketer", "--input", "@"+in2, "--wait")
	run = cliRun(e, r)
	if run.Status.Phase != api.PhaseSucceeded || run.Status.Reason != api.ReasonEscalated || run.Status.Escalation == nil ||
		run.Status.Escalation.Summary != "urgent ticket: PAGER: checkout is down" || run.Status.Escalation.StepKey != "wf/stop" {
		t.Errorf("escalated run: %s/%s %+v", run.Status.Phase, run.Status.Reason, run.Status.Escalation)
	}
	if c := completedCalls(e); c["report"] != 1 || c["triage-urgent"] != 1 {
		t.Errorf("after the escalation: %v (the report must not have run again)", c)
	}

	// An input the workflow's schema refuses fails the run before any node, naming it.
	workflowAgent(e, "strict", `,"workflow":`+kindsWorkflow)
	var bad api.AgentRun
	if st := e.Do("POST", "/v2/agents/strict/runs", `{"input":{"content":"{\"items\": 3}"}}`, &bad); st != 201 {
		t.Fatalf("start: HTTP %d", st)
	}
	if b := e.WaitPhase(bad.Metadata.Name, 20*time.Second, api.PhaseFailed, api.PhaseSucceeded); b.Status.Reason != api.ReasonWorkflowFailed || !strings.Contains(b.Status.Message, "input_invalid") {
		t.Errorf("bad input: %s/%s %s", b.Status.Phase, b.Status.Reason, b.Status.Message)
	}

	// spec.workflow is checked at create: every error under spec.workflow, the first as the field.
	var apiErr api.Error
	broken := strings.Replace(kindsWorkflow, `item-{item}`, `item-{nothing}`, 1)
	if st := e.Do("PUT", "/v2/agents/broken", `{"metadata":{"name":"broken"},"spec":{"workflow":`+broken+`}}`, &apiErr); st != 422 ||
		apiErr.Field != "spec.workflow/root/steps/1/body/args/label" || !strings.Contains(apiErr.Message, "path_unwritten") {
		t.Errorf("broken workflow: HTTP %d %+v", st, apiErr)
	}
	if st := e.Do("PUT", "/v2/agents/sop", `{"metadata":{"name":"sop"},"spec":{"workflow":`+sopWorkflow+`}}`, &apiErr); st != 422 || !strings.Contains(apiErr.Message, "kind_not_runnable") || apiErr.Field != "spec.workflow/root/steps/0/sopSection" {
		t.Errorf("sopSection workflow: HTTP %d %+v", st, apiErr)
	}
}

// TestWorkflowReadSite runs the seed's read-site example as written: web_fetch of a local page
// the server is allowed to fetch (--fetch-allow), its output the Page.
func TestWorkflowReadSite(t *testing.T) {
	t.Parallel()
	s := NewSite(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><html><head><title>Home</title></head><body><h1>Welcome home</h1><p>The site's front page.</p></body></html>`)
	}))
	e := NewEnv(t, "entries:\n  - name: unused\n    match: \"never asked\"\n    turns:\n      - text: unused\n")
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--fetch-allow", s.HostPort()})
	if st := e.Do("PUT", "/v2/agents/reader", `{"metadata":{"name":"reader"},"spec":{"tools":["web_fetch"],"computer":{"kind":"none","network":true},"approvals":"never-ask"}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	dir := t.TempDir()
	wf := WriteFile(t, dir, "read-site.json", seedWorkflow)
	r := e.MustCLI(0, "workflows", "run", wf, "--agent", "reader", "--input", fmt.Sprintf(`{"website": %q}`, s.URL+"/"), "--wait")
	run := cliRun(e, r)
	var page struct {
		OK      bool   `json:"ok"`
		Content string `json:"content"`
	}
	if run.Status.Answer == nil || json.Unmarshal([]byte(run.Status.Answer.Preview), &page) != nil || !page.OK || !strings.Contains(page.Content, "Welcome home") {
		t.Fatalf("run %s/%s %s answer %+v", run.Status.Phase, run.Status.Reason, run.Status.Message, run.Status.Answer)
	}
	if n := s.Count("/"); n != 1 {
		t.Errorf("the page was fetched %d times, want 1", n)
	}
	if len(e.Model.Calls()) != 0 {
		t.Errorf("a workflow of one call asked the model %d times", len(e.Model.Calls()))
	}
}

// TestWorkflowShell: a call via shell runs bash in the agent's sandbox with its env, and its
// value is {code, stdout, stderr}; a non-zero exit fails the node.
func TestWorkflowShell(t *testing.T) {
	t.Parallel()
	NeedBwrap(t)
	e := NewEnv(t, "entries:\n  - name: unused\n    match: \"never asked\"\n    turns:\n      - text: unused\n")
	e.Start()
	workflowAgent(e, "sheller", `,"computer":{"kind":"sandbox"}`)
	doc := `{"v": 2, "name": "sh", "schemas": {"In": {"type": "object", "required": ["who"]}, "R": {"type": "object", "required": ["code", "stdout"]}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "R", "path": "greet"},
  "root": {"node": "chain", "steps": [
    {"node": "call", "label": "greet", "via": "shell", "command": "echo \"hello $WHO\"; echo warn >&2", "env": {"WHO": "{who}"}, "as": "greet", "deadline_s": 30}]}}`
	dir := t.TempDir()
	wf := WriteFile(t, dir, "sh.json", doc)
	r := e.MustCLI(0, "workflows", "run", wf, "--agent", "sheller", "--input", `{"who": "it's me"}`, "--wait")
	var run api.AgentRun
	run = cliRun(e, r)
	var res struct {
		Code   int    `json:"code"`
		Stdout string `json:"stdout"`
		Stderr string `json:"stderr"`
	}
	if run.Status.Answer == nil || json.Unmarshal([]byte(run.Status.Answer.Preview), &res) != nil || res.Code != 0 || res.Stdout != "hello it's me" || !strings.Contains(res.Stderr, "warn") {
		t.Fatalf("run %s/%s %s answer %+v", run.Status.Phase, run.Status.Reason, run.Status.Message, run.Status.Answer)
	}
	fail := WriteFile(t, dir, "fail.json", strings.Replace(doc, `echo warn >&2`, `exit 3`, 1))
	r = e.MustCLI(1, "workflows", "run", fail, "--agent", "sheller", "--input", `{"who": "x"}`, "--wait")
	run = cliRun(e, r)
	if run.Status.Reason != api.ReasonWorkflowFailed || !strings.Contains(run.Status.Message, "effect_exit") || !strings.Contains(run.Status.Message, "code 3") {
		t.Errorf("failed shell: %s/%s %s", run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
}

// TestWorkflowCrash: SIGKILL inside a map (after an item's tool call is recorded) and inside a
// question (after its model call is recorded); after the restart the run ends with every
// side effect and every completed model call made once.
func TestWorkflowCrash(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, pause, resolve string }{
		{"map", "after-result:wf/each[1]/count", ""},
		{"loop", "after-result:wf/again#1/tick", ""},
		{"child", "after-result:wf/sub/tick", ""},
		{"parallel", "after-result:wf/both/pcall", ""},
		{"question", "after-result:wf/triage", ""},
		// The question's call had not been made: a model call on the server's key is made again.
		{"question-intent", "after-intent:wf/triage", ""},
		{"agent-tool", "after-result:wf/research/t0/tool/0", ""},
		// A side effect whose intent is recorded but not its result may or may not have happened:
		// the run parks naming the node's step, and a person retries it.
		{"map-intent", "after-intent:wf/each[1]/count", "wf/each[1]/count"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := NewEnv(t, kindsScript)
			e.Start("AGENTRUN_DEV_PAUSE_AT=" + c.pause)
			workflowAgent(e, "ticketer", `,"workflow":`+kindsWorkflow)
			var run api.AgentRun
			if st := e.Do("POST", "/v2/agents/ticketer/runs", `{"input":{"content":"{\"items\": [\"a\", \"b\", \"c\", \"d\"], \"text\": \"the invoice is wrong\"}"}}`, &run); st != 201 {
				t.Fatalf("start: HTTP %d", st)
			}
			e.WaitStderr("AGENTRUN_DEV_PAUSED "+strings.Replace(c.pause, ":", " ", 1), 20*time.Second)
			e.Kill()
			before := completedCalls(e)
			e.Start()
			r := e.WaitPhase(run.Metadata.Name, 30*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
			if c.resolve != "" {
				if r.Status.Phase != api.PhaseNeedsResolution || r.Status.WaitingOn == nil || r.Status.WaitingOn.StepKey != c.resolve {
					t.Fatalf("run %s/%s waiting on %+v, want NeedsResolution on %s", r.Status.Phase, r.Status.Reason, r.Status.WaitingOn, c.resolve)
				}
				for _, l := range e.Counted() {
					if l == "item-b" {
						t.Fatalf("the interrupted call ran before the resolution")
					}
				}
				// The node tree shows the interrupted call waiting on a person, what came before done.
				var tree api.WorkflowTree
				e.Do("GET", "/v2/agentruns/"+run.Metadata.Name+"/nodes", "", &tree)
				for key, state := range map[string]string{c.resolve: "waiting", "wf/each": "waiting", "wf/prep": "done", "wf/final": "pending"} {
					if n := FindNode(tree.Root, key); n == nil || n.State != state {
						t.Errorf("node %s: %+v, want %s", key, n, state)
					}
				}
				e.RetryAsPerson(run.Metadata.Name)
				r = e.WaitPhase(run.Metadata.Name, 30*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
			}
			if r.Status.Phase != api.PhaseSucceeded {
				t.Fatalf("run ended %s/%s %s", r.Status.Phase, r.Status.Reason, r.Status.Message)
			}
			got := e.Counted()
			sort.Strings(got)
			if strings.Join(got, ",") != "agent-probe,child,item-a,item-b,item-c,item-d,loop-0,loop-1,loop-2,par-a" {
				t.Errorf("side effects %v: each exactly once", got)
			}
			after := completedCalls(e)
			for entry, want := range map[string]int{"triage": 1, "queue": 1, "research": 2, "report": 1} {
				if after[entry] != want {
					t.Errorf("completed model calls of %s: %d, want %d (before the kill %v, after %v)", entry, after[entry], want, before, after)
				}
			}
			if !HasEvent(e.Events(run.Metadata.Name), "run.resumed", "replaying") {
				t.Errorf("the timeline does not show the restart")
			}
		})
	}
}

// TestWorkflowApprovals: a call via tool is a tool call the agent's approvals decide: denied, it
// does not run and the node fails naming the rule.
func TestWorkflowApprovals(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, kindsScript)
	e.Start()
	workflowAgent(e, "denied", `,"approvals":{"default":"allow","rules":[{"match":"dev_count","action":"deny"}]},"workflow":`+kindsWorkflow)
	var run api.AgentRun
	if st := e.Do("POST", "/v2/agents/denied/runs", `{"input":{"content":"{\"items\": [\"a\"], \"text\": \"t\"}"}}`, &run); st != 201 {
		t.Fatalf("start: HTTP %d", st)
	}
	r := e.WaitPhase(run.Metadata.Name, 20*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Reason != api.ReasonWorkflowFailed || !strings.Contains(r.Status.Message, "wf/each[0]/count") || !strings.Contains(r.Status.Message, "did not run") {
		t.Errorf("run %s/%s %s", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	if got := e.Counted(); len(got) != 0 {
		t.Errorf("the denied tool ran: %v", got)
	}
	found := false
	for _, s := range e.Steps(run.Metadata.Name) {
		found = found || s.Key == "wf/each[0]/count/approval"
	}
	if !found {
		t.Errorf("no approval step for the denied call")
	}
}
