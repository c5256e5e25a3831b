package workflow

import (
	. "agentrun.dev/agentrun/e2e/e2etest"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
)

// auditAgent makes an agent that runs workflows (extra: more spec fields, e.g. a computer).
func auditAgent(e *Env, name, extra string) {
	e.T.Helper()
	if st := e.Do("PUT", "/v2/agents/"+name, fmt.Sprintf(`{"metadata":{"name":%q},"spec":{"tools":["dev_count"]%s}}`, name, extra), nil); st != 201 && st != 200 {
		e.T.Fatalf("create agent %s: HTTP %d", name, st)
	}
}

// auditRun starts a workflow run (not waiting) and returns its name.
func auditRun(e *Env, doc, agent, input string) string {
	e.T.Helper()
	wf := WriteFile(e.T, e.T.TempDir(), "wf.json", doc)
	r := e.MustCLI(0, "workflows", "run", wf, "--agent", agent, "--input", input)
	var v struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil || v.RunID == "" {
		e.T.Fatalf("no run_id in %q: %v", r.Stdout, err)
	}
	return v.RunID
}

// serverUp fails the test when the server process has exited or does not answer.
func serverUp(e *Env, when string) {
	e.T.Helper()
	select {
	case <-e.Exited:
		e.T.Fatalf("%s: the server exited:\n%s", when, QuietLog(e.Stderr.String()))
	default:
	}
	resp, err := http.Get(e.URL + "/healthz")
	if err != nil {
		e.T.Fatalf("%s: the server does not answer: %v", when, err)
	}
	resp.Body.Close()
}

const auditCodeDoc = `{"v": 2, "name": "boom", "schemas": {"Out": {"type": "object"}}, "output": {"schemaId": "Out"},
  "root": {"node": "chain", "steps": [{"node": "code", "label": "boom", "code": %q}]}}`

// TestAuditWorkflowCodeMemory: a code node that asks for a terabyte ("a".repeat(2 ** 40), new
// ArrayBuffer(2 ** 40)) ended the server with "fatal error: runtime: out of memory", and the
// run, resumed at every restart, ended it again. Now the node fails code_memory, the run fails,
// the server goes on (another workflow runs), and after a restart the run is still failed and
// the server still up.
func TestAuditWorkflowCodeMemory(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, "entries:\n  - name: unused\n    match: \"never asked\"\n    turns:\n      - text: unused\n")
	e.Start()
	auditAgent(e, "coder", "")
	var runs []string
	for _, src := range []string{`(s) => ({ n: "a".repeat(2 ** 40).length })`, `(s) => ({ n: new ArrayBuffer(2 ** 40).byteLength })`} {
		name := auditRun(e, fmt.Sprintf(auditCodeDoc, src), "coder", `{}`)
		run := e.WaitPhase(name, 90*time.Second, api.PhaseFailed, api.PhaseSucceeded)
		if run.Status.Phase != api.PhaseFailed || run.Status.Reason != api.ReasonWorkflowFailed || !strings.Contains(run.Status.Message, "code_memory") || run.Status.FailedNode != "wf/boom" {
			t.Errorf("%s: run %s/%s %q (node %q), want Failed WorkflowFailed code_memory at wf/boom", src, run.Status.Phase, run.Status.Reason, run.Status.Message, run.Status.FailedNode)
		}
		serverUp(e, src)
		runs = append(runs, name)
	}
	ok := auditRun(e, fmt.Sprintf(auditCodeDoc, `(s) => ({ n: 41 + 1 })`), "coder", `{}`)
	if run := e.WaitPhase(ok, 90*time.Second, api.PhaseFailed, api.PhaseSucceeded); run.Status.Phase != api.PhaseSucceeded || run.Status.Answer == nil || !strings.Contains(run.Status.Answer.Preview, "42") {
		t.Errorf("a code node after them: %s/%s %q", run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	e.Kill()
	e.Start()
	for _, name := range runs {
		if run := e.GetRun(name); run.Status.Phase != api.PhaseFailed {
			t.Errorf("after a restart run %s is %s, want Failed", name, run.Status.Phase)
		}
	}
	serverUp(e, "after the restart")
}

// TestAuditWorkflowMapBounds: the audit's document of 30 nested maps with maxConcurrency 1e6
// validated, then grew the server 750 MB every 5 s until it died; it is refused now, naming the
// map that nests too deep and the maxConcurrency over its bound.
func TestAuditWorkflowMapBounds(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, "entries:\n  - name: unused\n    match: \"never asked\"\n    turns:\n      - text: unused\n")
	e.Start()
	auditAgent(e, "mapper", "")
	body := `{"node": "call", "label": "leaf", "via": "tool", "tool": "dev_count", "args": {}, "out": "R", "as": "r", "deadline_s": 30}`
	for i := 29; i >= 0; i-- {
		body = fmt.Sprintf(`{"node": "map", "label": "m%d", "itemsPath": "items", "as": "out%d", "maxConcurrency": 1000000, "body": %s}`, i, i, body)
	}
	doc := `{"v": 2, "name": "nest", "schemas": {"Out": {"type": "object"}, "R": {"type": "object"}}, "output": {"schemaId": "Out"}, "root": ` + body + `}`
	wf := WriteFile(t, t.TempDir(), "nest.json", doc)
	r := e.CLI(e.Dir, "workflows", "run", wf, "--agent", "mapper", "--input", `{"items": [1, 2]}`)
	deep := "/root" + strings.Repeat("/body", 8)
	if r.Code == 0 || !strings.Contains(r.Stdout+r.Stderr, "nesting_too_deep") || !strings.Contains(r.Stdout+r.Stderr, deep) || !strings.Contains(r.Stdout+r.Stderr, "/root/maxConcurrency") {
		t.Errorf("30 nested maps of 1e6: exit %d\nstdout %s\nstderr %s\nwant refused with nesting_too_deep at %s and /root/maxConcurrency", r.Code, r.Stdout, r.Stderr, deep)
	}
	serverUp(e, "after the refusal")
}

// TestAuditWorkflowShellStderrLine: a shell node whose stdout holds a line "--- stderr ---" came
// back split there (stdout "first", stderr "last\n--- stderr ---\nreal error"): the host read
// the model's text back. Its value is the command's own stdout and stderr now.
func TestAuditWorkflowShellStderrLine(t *testing.T) {
	t.Parallel()
	NeedBwrap(t)
	e := NewEnv(t, "entries:\n  - name: unused\n    match: \"never asked\"\n    turns:\n      - text: unused\n")
	e.Start()
	auditAgent(e, "sheller", `,"computer":{"kind":"sandbox"}`)
	doc := `{"v": 2, "name": "sh", "schemas": {"R": {"type": "object"}}, "output": {"schemaId": "R", "path": "out"},
  "root": {"node": "chain", "steps": [
    {"node": "call", "label": "split", "via": "shell", "command": "printf 'first\\n--- stderr ---\\nlast\\n'; printf 'real error\\n' >&2", "as": "out", "deadline_s": 60}]}}`
	name := auditRun(e, doc, "sheller", `{}`)
	run := e.WaitPhase(name, 120*time.Second, api.PhaseFailed, api.PhaseSucceeded)
	var res struct {
		Code   int    `json:"code"`
		Stdout string `json:"stdout"`
		Stderr string `json:"stderr"`
	}
	if run.Status.Answer == nil || json.Unmarshal([]byte(run.Status.Answer.Preview), &res) != nil {
		t.Fatalf("run %s/%s %q answer %+v", run.Status.Phase, run.Status.Reason, run.Status.Message, run.Status.Answer)
	}
	if res.Code != 0 || res.Stdout != "first\n--- stderr ---\nlast" || res.Stderr != "real error" {
		t.Errorf("shell value code %d stdout %q stderr %q, want 0, %q, %q", res.Code, res.Stdout, res.Stderr, "first\n--- stderr ---\nlast", "real error")
	}
}

// TestWorkflowShellValueReachesNextNode: what the node after a shell node reads of its value is
// the command's own stdout and stderr, a stdout line "--- stderr ---" included (reading the bash
// tool's text back split there: stdout "first", stderr "last\n--- stderr ---\nreal error").
func TestWorkflowShellValueReachesNextNode(t *testing.T) {
	t.Parallel()
	NeedBwrap(t)
	e := NewEnv(t, "entries:\n  - name: unused\n    match: \"never asked\"\n    turns:\n      - text: unused\n")
	e.Start()
	auditAgent(e, "sheller2", `,"computer":{"kind":"sandbox"}`)
	doc := `{"v": 2, "name": "sh2", "schemas": {"R": {"type": "object"}}, "output": {"schemaId": "R", "path": "seen"},
  "root": {"node": "chain", "steps": [
    {"node": "call", "label": "split", "via": "shell", "command": "printf 'first\\n--- stderr ---\\nlast\\n'; printf 'real error\\n' >&2", "as": "out", "deadline_s": 60},
    {"node": "code", "label": "next", "code": "(s) => ({ seen: { code: s.out.code, stdout: s.out.stdout, stderr: s.out.stderr, lines: s.out.stdout.split('\\n').length } })"}]}}`
	name := auditRun(e, doc, "sheller2", `{}`)
	run := e.WaitPhase(name, 120*time.Second, api.PhaseFailed, api.PhaseSucceeded)
	var seen struct {
		Code   int    `json:"code"`
		Stdout string `json:"stdout"`
		Stderr string `json:"stderr"`
		Lines  int    `json:"lines"`
	}
	if run.Status.Phase != api.PhaseSucceeded || run.Status.Answer == nil || json.Unmarshal([]byte(run.Status.Answer.Preview), &seen) != nil {
		t.Fatalf("run %s/%s %q answer %+v", run.Status.Phase, run.Status.Reason, run.Status.Message, run.Status.Answer)
	}
	want := "first\n--- stderr ---\nlast"
	if seen.Code != 0 || seen.Stdout != want || seen.Stderr != "real error" || seen.Lines != 3 {
		t.Errorf("the next node saw code %d stdout %q (%d lines) stderr %q, want 0, %q (3 lines), %q", seen.Code, seen.Stdout, seen.Lines, seen.Stderr, want, "real error")
	}
}
