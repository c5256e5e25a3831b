package workflow

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// moreWorkflow uses the kinds built on the others: a sift (one question over three results, keep
// on yes), a call via executor whose body calls dev_count for each kept item, an agent node
// whose verify rejects its first answer, a shell call polled until it has run three times (it
// produces report.csv), and a csv artifact of that file.
const moreWorkflow = `{
  "v": 2, "name": "more",
  "schemas": {
    "In": {"type": "object", "required": ["results"], "properties": {"results": {"type": "array", "items": {"type": "string"}}}},
    "Rel": {"type": "object", "required": ["relevant"], "properties": {"relevant": {"type": "boolean", "description": "Does this result concern billing?"}}},
    "Ex": {"type": "object", "required": ["n", "out"]},
    "Notes": {"type": "object", "required": ["summary"]},
    "Check": {"type": "object", "properties": {"cites": {"type": "boolean", "description": "Does the summary cite a ticket?"}}},
    "Out": {"type": "object", "required": ["artifact", "ranked", "counted", "notes", "job"]}
  },
  "input": {"schemaId": "In"},
  "output": {"schemaId": "Out"},
  "root": {"node": "chain", "steps": [
    {"node": "sift", "label": "rank", "itemsPath": "results", "describe": "result {item}", "out": "Rel", "as": "ranked", "keep": {"path": "relevant"}},
    {"node": "call", "label": "count", "via": "executor", "input": {"kept": "{ranked.items}"}, "out": "Ex", "as": "counted", "deadline_s": 60,
     "code": "const out = []; for (const r of input.kept) { out.push((await tools.dev_count({label: 'ex-' + r})).content); } return { n: out.length, out };"},
    {"node": "agent", "label": "research", "instructions": "Summarize the billing results", "out": "Notes", "as": "notes", "tools": [],
     "verify": {"out": "Check", "maxDrives": 2}},
    {"node": "call", "label": "job", "via": "shell", "command": "echo tick >> ticks; wc -l < ticks > report.csv; cat report.csv", "as": "job", "deadline_s": 60,
     "produces": ["report.csv"], "poll": {"until": {"predicate": "field_equals", "path": "stdout", "value": "3"}, "interval_s": 0.5, "deadline_s": 120}},
    {"node": "artifact", "label": "deliver", "type": "csv", "path": "report.csv"}
  ]}
}`

// The scripted answers: the sift keeps a and c; the agent's first answer does not cite a ticket,
// the reviewer says so, and the agent answers again in the same conversation, citing them. Entries match the first user message, the specific ones first.
const moreScript = `
entries:
  - name: sift
    match: "about one item of items"
    turns:
      - text: '{"answer": {"0.relevant": {"answer": true, "confidence": 0.9}, "1.relevant": {"answer": false, "confidence": 0.8}, "2.relevant": {"answer": true, "confidence": 0.7}}, "confidence": 0.8}'
  - name: verify-accept
    match: "ticket a"
    turns:
      - text: '{"answer": {"cites": {"answer": true, "confidence": 0.9}}, "confidence": 0.9}'
  - name: verify-reject
    match: "Review the submission"
    turns:
      - text: '{"answer": {"cites": {"answer": false, "confidence": 0.9}}, "confidence": 0.9}'
  - name: research
    match: "Summarize the billing results"
    turns:
      - text: '{"summary": "two billing results"}'
      - text: '{"summary": "two billing results (ticket a, ticket c)"}'
`

func checkMore(e *Env, t *testing.T, run api.AgentRun) {
	t.Helper()
	if run.Status.Phase != api.PhaseSucceeded || run.Status.Answer == nil {
		t.Fatalf("run ended %s/%s %s", run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	var out struct {
		Ranked struct {
			Items  []string         `json:"items"`
			Kept   []int            `json:"kept"`
			Values []map[string]any `json:"values"`
		} `json:"ranked"`
		Counted struct {
			N   int      `json:"n"`
			Out []string `json:"out"`
		} `json:"counted"`
		Notes    map[string]any `json:"notes"`
		Job      map[string]any `json:"job"`
		Artifact map[string]any `json:"artifact"`
		Verify   any            `json:"notes$verify"`
	}
	if err := json.Unmarshal([]byte(run.Status.Answer.Preview), &out); err != nil {
		t.Fatalf("answer is not the output JSON: %v %q", err, run.Status.Answer.Preview)
	}
	if strings.Join(out.Ranked.Items, ",") != "a,c" || fmt.Sprint(out.Ranked.Kept) != "[0 2]" || len(out.Ranked.Values) != 3 || out.Ranked.Values[1]["relevant"] != false {
		t.Errorf("sift %+v: want a and c kept of three", out.Ranked)
	}
	if out.Counted.N != 2 || strings.Join(out.Counted.Out, ",") != "counted ex-a,counted ex-c" {
		t.Errorf("executor %+v", out.Counted)
	}
	if out.Notes["summary"] != "two billing results (ticket a, ticket c)" || out.Verify != nil {
		t.Errorf("verify: notes %v (the second answer), notes$verify %v (not in the output)", out.Notes, out.Verify)
	}
	if out.Job["stdout"] != "3" {
		t.Errorf("poll: %v, want the third run's stdout", out.Job)
	}
	if out.Artifact["path"] != "report.csv" || out.Artifact["type"] != "csv" || out.Artifact["bytes"] != 2.0 {
		t.Errorf("artifact %v", out.Artifact)
	}
	got := e.Counted()
	sort.Strings(got)
	if strings.Join(got, ",") != "ex-a,ex-c" {
		t.Errorf("side effects %v: each executor tool call exactly once", got)
	}
	calls := completedCalls(e)
	for entry, want := range map[string]int{"sift": 1, "research": 2, "verify-reject": 1, "verify-accept": 1} {
		if calls[entry] != want {
			t.Errorf("completed model calls of %s: %d, want %d (all: %v)", entry, calls[entry], want, calls)
		}
	}
	keys := map[string]api.Step{}
	for _, s := range e.Steps(run.Metadata.Name) {
		keys[s.Key] = s
	}
	for _, k := range []string{"wf/rank", "wf/count/tool#0", "wf/count/tool#1", "wf/research/t0/model", "wf/research/$verify#1",
		"wf/research/t1/model", "wf/research/$verify#2", "wf/job/$poll", "wf/job", "wf/job/$poll#1/wait", "wf/job/$poll#1", "wf/job/$poll#2"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("no step %s", k)
		}
	}
	// The rejected answer was answered again in the same conversation, not in a second drive.
	if _, ok := keys["wf/research/drive#2/t0/model"]; ok {
		t.Errorf("verify started a second drive instead of continuing the conversation")
	}
	// Polled until the third run: the issue and two polls, never a fourth (a re-issue would add one).
	if _, ok := keys["wf/job/$poll#3"]; ok {
		t.Errorf("a fourth run of the polled call: %v", keys)
	}
	if !HasEvent(e.Events(run.Metadata.Name), api.EventRunWaiting, `for poll 2 of "job"`) {
		t.Errorf("the timeline does not say what the wait before poll 2 waits on")
	}
}

// TestWorkflowMoreKinds runs moreWorkflow through the real binary against the scripted model
// server: sift, executor, verify (the rejected answer answered again in the same conversation), a
// polled shell call and a file artifact, each effect once.
func TestWorkflowMoreKinds(t *testing.T) {
	t.Parallel()
	NeedBwrap(t)
	e := NewEnv(t, moreScript)
	e.Start()
	workflowAgent(e, "more", `,"computer":{"kind":"sandbox"}`)
	dir := t.TempDir()
	wf := WriteFile(t, dir, "more.json", moreWorkflow)
	r := e.MustCLI(0, "workflows", "run", wf, "--agent", "more", "--input", `{"results": ["a", "b", "c"]}`, "--wait")
	checkMore(e, t, cliRun(e, r))
}

// TestWorkflowMoreCrash: SIGKILL inside a sift (its call recorded), inside the executor's body
// (after its first tool call), inside verify's second drive, between a polled call's issue and
// its first poll, and between two polls; after the restart the run ends with every completed step made once, and the
// polled call is polled again, never issued again.
func TestWorkflowMoreCrash(t *testing.T) {
	t.Parallel()
	NeedBwrap(t)
	for _, c := range []struct{ name, pause string }{
		{"sift", "after-result:wf/rank"},
		{"executor", "after-result:wf/count/tool#0"},
		{"verify-drive", "after-result:wf/research/t1/model"},
		{"poll-issue", "after-result:wf/job"},
		// After the first poll's result: the restart waits (what is left of) the second wait.
		{"poll-poll", "after-result:wf/job/$poll#1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := NewEnv(t, moreScript)
			e.Start("AGENTRUN_DEV_PAUSE_AT=" + c.pause)
			workflowAgent(e, "more", `,"computer":{"kind":"sandbox"},"workflow":`+moreWorkflow)
			var run api.AgentRun
			if st := e.Do("POST", "/v2/agents/more/runs", `{"input":{"content":"{\"results\": [\"a\", \"b\", \"c\"]}"}}`, &run); st != 201 {
				t.Fatalf("start: HTTP %d", st)
			}
			e.WaitStderr("AGENTRUN_DEV_PAUSED "+strings.Replace(c.pause, ":", " ", 1), 60*time.Second)
			e.Kill()
			e.Start()
			r := e.WaitPhase(run.Metadata.Name, 90*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
			checkMore(e, t, r)
			if !HasEvent(e.Events(run.Metadata.Name), "run.resumed", "replaying") {
				t.Errorf("the timeline does not show the restart")
			}
		})
	}
}

// TestWorkflowExecutorApprovals: a tool call inside an executor body is a tool call the agent's
// approvals decide: an ask parks the run on that call (KEY/tool#N/approval) before it runs; a
// person approves, the run is driven again, the body runs again from the start, the calls done
// are answered from the journal, and each side effect happens once.
func TestWorkflowExecutorApprovals(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, "entries:\n  - name: unused\n    match: \"never asked\"\n    turns:\n      - text: unused\n")
	e.Start()
	doc := `{"v": 2, "name": "ex", "schemas": {"In": {"type": "object"}, "R": {"type": "object", "required": ["got"]}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "R", "path": "r"},
  "root": {"node": "call", "label": "ex", "via": "executor", "input": {}, "out": "R", "as": "r", "deadline_s": 60,
    "code": "const a = await tools.dev_count({label: 'ex-a'}); const b = await tools.dev_count({label: 'ex-b'}); return { got: [a.content, b.content] };"}}`
	workflowAgent(e, "careful", `,"approvals":{"default":"allow","rules":[{"match":"dev_count","action":"ask"}]},"workflow":`+doc)
	var run api.AgentRun
	if st := e.Do("POST", "/v2/agents/careful/runs", `{"input":{"content":"{}"}}`, &run); st != 201 {
		t.Fatalf("start: HTTP %d", st)
	}
	code := e.SetupCode()
	if r := e.CLIIn(e.Dir, "correct horse battery\n", "login", "--setup-code", code, "--password-stdin"); r.Code != 0 {
		t.Fatalf("login: exit %d %q %q", r.Code, r.Stdout, r.Stderr)
	}
	for i, label := range []string{"ex-a", "ex-b"} {
		r := e.WaitPhase(run.Metadata.Name, 20*time.Second, api.PhaseWaiting, api.PhaseFailed, api.PhaseSucceeded)
		want := fmt.Sprintf("wf/ex/tool#%d/approval", i)
		if r.Status.Reason != api.ReasonApproval || r.Status.WaitingOn == nil || r.Status.WaitingOn.StepKey != want || !strings.Contains(r.Status.WaitingOn.Detail, label) {
			t.Fatalf("call %d: %s/%s waiting on %+v, want the approval %s", i, r.Status.Phase, r.Status.Reason, r.Status.WaitingOn, want)
		}
		if got := e.Counted(); len(got) != i {
			t.Fatalf("before approving %s the side effects are %v", label, got)
		}
		var list struct {
			Items []struct {
				ID    int64
				State string
			}
		}
		if err := json.Unmarshal([]byte(e.MustCLI(0, "runs", "approvals", run.Metadata.Name, "-o", "json").Stdout), &list); err != nil {
			t.Fatal(err)
		}
		id := ""
		for _, a := range list.Items {
			if a.State == "pending" {
				id = JSONNumber(a.ID)
			}
		}
		e.MustCLI(0, "runs", "approve", run.Metadata.Name, id)
	}
	r := e.WaitPhase(run.Metadata.Name, 20*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || !strings.Contains(r.Status.Answer.Preview, `"counted ex-a","counted ex-b"`) {
		t.Fatalf("run %s/%s %s %+v", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.Answer)
	}
	if got := strings.Join(e.Counted(), ","); got != "ex-a,ex-b" {
		t.Errorf("side effects %s: each once", got)
	}
}
