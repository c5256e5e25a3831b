package templates

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/eval"
	"agentrun.dev/agentrun/internal/template"
	"agentrun.dev/agentrun/internal/trigger"
)

// script answers each template's eval case (matched on the case's input) and the runs the tests
// start, in the shapes the templates' instructions ask for.
const script = `
entries:
  - name: router
    match: "Route this request"
    turns:
      - text: '{"family": "sonnet", "confidence": 0.9}'
  - name: code-review
    match: "Review this diff"
    turns:
      - text: "I'll check the loop bound against a real repository."
        tool_calls:
          - name: bash
            input:
              command: "mkdir -p repo && cd repo && git init -q && printf 'package sum\\n\\nfunc Sum(xs []int) int {\\n\\tt := 0\\n\\tfor i := 0; i < len(xs)-1; i++ {\\n\\t\\tt += xs[i]\\n\\t}\\n\\treturn t\\n}\\n' > sum.go && git add sum.go && git -c user.email=r@example.com -c user.name=r commit -qm sum && git rev-parse --is-inside-work-tree >/dev/null && grep -n 'len(xs)-1' sum.go | cut -d: -f1"
      - text: '{"summary": "Sum changes its loop bound", "findings": [{"file": "sum.go", "line": 5, "severity": "high", "title": "Sum skips the last element", "detail": "the loop stops at len(xs)-1", "evidence": "grep -n len(xs)-1 sum.go in the repository"}]}'
  - name: kyb-verify
    match: "Review the submission"
    turns:
      - text: '{"answer": {"cited": {"answer": true, "confidence": 0.9}}, "confidence": 0.9}'
  - name: kyb
    match: "Research the company for due diligence"
    turns:
      - text: '{"company": "Example Widgets Ltd", "verdict": "review", "claims": [{"claim": "Incorporated in 1998, active", "source": "https://find-and-update.company-information.service.gov.uk/company/01234567", "date": "2026-03-02"}], "gaps": ["beneficial owners not published"]}'
  - name: market-monitor
    match: "digest for Acme Corp"
    turns:
      - text: "## Acme Corp\n- 2026-03-02 Acme cuts prices of its Pro plan by 20% (https://acme.example/news/pricing)\n"
      - text: "Nothing to keep."
      - text: "Nothing to keep."
  - name: inbound-lead
    match: "Score this lead"
    turns:
      - text: '{"score": 82, "company": "Example Analytics", "reasons": ["B2B analytics software, about 120 people (https://example.com/about)"], "next": "book a call"}'
  - name: hooked-lead
    match: "Hookline Analytics"
    turns:
      - text: '{"score": 64, "company": "Hookline Analytics", "reasons": ["B2B software, 40 people: under the profile''s size (https://hookline.example)"], "next": "nurture"}'
  - name: release-notes
    match: "Write release notes from these merged"
    turns:
      - text: "## Release notes\n\n### Features\n- CSV export (#101)\n\n### Fixes\n- Logging in on Safari no longer loops (#102)\n\nAnd 1 maintenance change. No draft was made (no GitHub access).\n"
`

func needsSandbox(name string) bool { return name == "code-review" || name == "release-notes" }

// Each template applies on a fresh server (agent, skills, triggers, suspended until their
// secrets exist) and `template eval` passes its cases against the scripted model server.
func TestEachTemplateAppliesAndPassesItsCases(t *testing.T) {
	for _, name := range template.Names() {
		t.Run(name, func(t *testing.T) {
			if needsSandbox(name) {
				NeedNetworkSandbox(t)
			}
			e := NewEnv(t, script)
			e.Start()
			res := e.MustCLI(0, "template", "apply", name)
			f, _ := template.Embedded(name)
			tp, err := template.Load(f, template.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var a api.Agent
			if st := e.Do("GET", "/v2/agents/"+name, nil, &a); st != 200 || a.Metadata.Labels[api.TemplateLabel] != name || a.Spec.System != tp.Apply.Agent.Spec.System {
				t.Fatalf("agent after apply: HTTP %d labels %v", st, a.Metadata.Labels)
			}
			if len(a.Spec.Skills) != len(tp.Apply.Skills) {
				t.Errorf("agent skills %v, template has %d", a.Spec.Skills, len(tp.Apply.Skills))
			}
			for _, sk := range a.Spec.Skills {
				if !strings.Contains(sk, "@") {
					t.Errorf("skill %q not pinned", sk)
				}
			}
			for _, tr := range tp.Apply.Triggers {
				var got api.Trigger
				if st := e.Do("GET", "/v2/triggers/"+tr.Metadata.Name, nil, &got); st != 200 {
					t.Fatalf("trigger %s: HTTP %d", tr.Metadata.Name, st)
				}
				signed := got.Spec.Webhook != nil || got.Spec.GitHub != nil
				if signed != got.Spec.Suspend {
					t.Errorf("trigger %s suspended %v, signed %v (no secret exists yet)", got.Metadata.Name, got.Spec.Suspend, signed)
				}
				if signed && !strings.Contains(res.Stdout, "trigger/"+got.Metadata.Name+" created, suspended until its signing secret") {
					t.Errorf("apply does not say %s waits on its secret:\n%s", got.Metadata.Name, res.Stdout)
				}
				if got.Spec.Schedule != nil && got.Spec.Schedule.TimeZone == "" {
					t.Errorf("schedule of %s has no time zone", got.Metadata.Name)
				}
			}
			signed := false
			for _, tr := range tp.Apply.Triggers {
				signed = signed || tr.Spec.Webhook != nil || tr.Spec.GitHub != nil
			}
			if signed && !strings.Contains(res.Stdout, "What it needs from you:") {
				t.Errorf("apply lists no needs:\n%s", res.Stdout)
			}
			ev := e.CLI(e.Dir, "template", "eval", name)
			if ev.Code != 0 || !strings.Contains(ev.Stdout, "pass rate ") || strings.Contains(ev.Stdout, " fail ") {
				t.Fatalf("template eval %s: exit %d\nstdout: %s\nstderr: %s", name, ev.Code, ev.Stdout, ev.Stderr)
			}
			for _, c := range tp.Cases {
				if !strings.Contains(ev.Stdout, c.Name) {
					t.Errorf("eval table has no row for %s:\n%s", c.Name, ev.Stdout)
				}
			}
			if !strings.Contains(ev.Stderr, "throwaway server stopped") {
				t.Errorf("eval's progress:\n%s", ev.Stderr)
			}
		})
	}
}

func copyTemplate(t *testing.T, name string) string {
	t.Helper()
	f, _ := template.Embedded(name)
	dir := t.TempDir()
	tp, err := template.Load(f, template.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range tp.Files {
		b, _ := fsRead(f, p)
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		WriteFile(t, dir, p, string(b))
	}
	return dir
}

// A folder with an error is refused naming the file and field, and nothing is made: one the CLI
// finds (an unknown tool), one only the server can (a trigger naming a group that does not exist,
// after the agent's checks passed), and one whose trigger name is taken.
func TestBrokenTemplateMakesNothing(t *testing.T) {
	e := NewEnv(t, script)
	e.Start()
	dir := copyTemplate(t, "inbound-lead")
	WriteFile(t, dir, "template.yaml", strings.Replace(mustRead(t, filepath.Join(dir, "template.yaml")), "tools: [web_fetch]", "tools: [web_fetch, teleport]", 1))
	r := e.MustCLI(1, "template", "apply", dir, "--name", "lead1")
	if !strings.Contains(r.Stderr, "template.yaml: agent.tools[1]") || !strings.Contains(r.Stderr, "(Invalid)") {
		t.Errorf("unknown tool: %s", r.Stderr)
	}

	dir = copyTemplate(t, "inbound-lead")
	WriteFile(t, dir, "triggers/webhook.yaml", mustRead(t, filepath.Join(dir, "triggers/webhook.yaml"))+"  group: no-such-group\n")
	r = e.MustCLI(1, "template", "apply", dir, "--name", "lead2")
	if !strings.Contains(r.Stderr, "triggers/webhook.yaml: spec.group") || !strings.Contains(r.Stderr, "GroupNotFound") {
		t.Errorf("missing group: %s", r.Stderr)
	}
	if st := e.Do("GET", "/v2/agents/lead2", nil, nil); st != 404 {
		t.Errorf("the agent of a refused template exists: HTTP %d", st)
	}

	// The trigger's name is taken by another agent's trigger: refused, the agent not made.
	e.MustCLI(0, "agents", "create", "--body", `{"metadata": {"name": "other"}, "spec": {"computer": {"kind": "none"}}}`)
	if st := e.Do("POST", "/v2/triggers", `{"metadata": {"name": "lead3-webhook"}, "spec": {"agent": "other", "schedule": {"cron": "0 3 * * *"}}}`, nil); st != 201 {
		t.Fatalf("make the clashing trigger: HTTP %d", st)
	}
	r = e.MustCLI(1, "template", "apply", "inbound-lead", "--name", "lead3")
	if !strings.Contains(r.Stderr, "triggers/webhook.yaml") || !strings.Contains(r.Stderr, "AlreadyExists") {
		t.Errorf("taken trigger name: %s", r.Stderr)
	}
	if st := e.Do("GET", "/v2/agents/lead3", nil, nil); st != 404 {
		t.Errorf("the agent of a refused template exists: HTTP %d", st)
	}
	var trs api.List[api.Trigger]
	e.Do("GET", "/v2/triggers", nil, &trs)
	if len(trs.Items) != 1 {
		t.Errorf("%d triggers after refused applies, want the one made by hand", len(trs.Items))
	}
}

// inbound-lead's webhook trigger, once a person sets its secret and resumes it, fires from a
// signed Standard Webhooks delivery, and the run's answer validates against the case's schema.
func TestInboundLeadFiresFromSignedDelivery(t *testing.T) {
	e := NewEnv(t, script)
	e.Start()
	e.MustCLI(0, "template", "apply", "inbound-lead")
	now := time.Now().Unix()
	body := []byte(`{"email": "bo@hookline.example", "company": "Hookline Analytics"}`)
	// Suspended until the secret exists: a signed delivery starts nothing.
	st, _ := e.Hook("inbound-lead-webhook", StandardHeaders("msg_0", now, trigger.SignStandard(VecSecret, "msg_0", now, body)), body)
	if st == 201 {
		t.Fatal("a suspended trigger without its secret started a run")
	}
	session := e.PersonSession()
	if st := e.DoAs(session, "PUT", "/v2/secrets/inbound-lead-hook", `{"data":{"WEBHOOK_SECRET":"`+VecSecret+`"}}`, nil); st != 200 {
		t.Fatalf("set the signing secret: HTTP %d", st)
	}
	e.MustCLI(0, "triggers", "resume", "inbound-lead-webhook")
	st, b := e.Hook("inbound-lead-webhook", StandardHeaders("msg_1", now, trigger.SignStandard(VecSecret, "msg_1", now, body)), body)
	var fa FireAnswer
	json.Unmarshal(b, &fa)
	if st != 201 || fa.Fire.Outcome != api.FireStarted || fa.Fire.Run == "" {
		t.Fatalf("a signed delivery: HTTP %d %s", st, b)
	}
	run := e.WaitPhase(fa.Fire.Run, 60*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if run.Status.Phase != api.PhaseSucceeded || run.Status.Answer == nil {
		t.Fatalf("the fire's run: %s %s %s", run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	f, _ := template.Embedded("inbound-lead")
	tp, _ := template.Load(f, template.Options{})
	v, err := eval.Grade(context.Background(), tp.Cases[0].Grader, api.Task{ID: "hook"}, run.Status.Answer.Preview, nil)
	if err != nil || !v.Pass {
		t.Fatalf("the run's answer against the template's schema: %+v %v\nanswer: %s", v, err, run.Status.Answer.Preview)
	}
	if !strings.Contains(run.Spec.Input, "Hookline Analytics") {
		t.Errorf("the run's input does not carry the lead: %q", run.Spec.Input)
	}
}

// code-review's run works in its sandbox on a real git repository: the bash step's result is the
// exit and the line grep found in the committed file (git refuses to commit outside a work tree,
// so the line is there only if git ran), and the findings JSON validates against the schema.
func TestCodeReviewOnGitRepositoryInSandbox(t *testing.T) {
	NeedNetworkSandbox(t)
	e := NewEnv(t, script)
	e.Start()
	e.MustCLI(0, "template", "apply", "code-review")
	f, _ := template.Embedded("code-review")
	tp, _ := template.Load(f, template.Options{})
	name := "review-1"
	if st := e.Do("POST", "/v2/agentruns", map[string]any{"metadata": map[string]string{"name": name}, "spec": map[string]string{"agent": "code-review", "input": tp.Cases[0].Input}}, nil); st != 201 {
		t.Fatalf("start the review: HTTP %d", st)
	}
	run := e.WaitPhase(name, 120*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if run.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run: %s %s %s", run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	found := false
	for key, res := range e.ToolResults(name) {
		if strings.Contains(key, "tool") && strings.TrimSpace(res.Content) == "exit code 0\n5" && !res.IsError {
			found = true
		}
	}
	if !found {
		t.Errorf("no bash step answered the committed file's line 5: %+v", e.ToolResults(name))
	}
	v, err := eval.Grade(context.Background(), tp.Cases[0].Grader, api.Task{ID: "r"}, run.Status.Answer.Preview, nil)
	if err != nil || !v.Pass || !strings.Contains(run.Status.Answer.Preview, `"line": 5`) {
		t.Fatalf("findings: %+v %v\n%s", v, err, run.Status.Answer.Preview)
	}
}

// template eval exits 1 when a case fails, and says so in its table.
func TestTemplateEvalFailsAFailingCase(t *testing.T) {
	e := NewEnv(t, script)
	dir := copyTemplate(t, "inbound-lead")
	WriteFile(t, dir, "eval/cases/never.yaml", "input: 'Score this lead: {\"email\": \"x@example.com\"}'\ngrader: {kind: regex, pattern: \"^NEVER THIS$\"}\n")
	r := e.CLI(e.Dir, "template", "eval", dir, "--runs", "2")
	if r.Code != 1 || !strings.Contains(r.Stdout, "never#1") || !strings.Contains(r.Stdout, "fail") || !strings.Contains(r.Stdout, "pass rate 2/4") || !strings.Contains(r.Stdout, "pass@2") {
		t.Fatalf("eval with a failing case: exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
	}
	if _, err := os.Stat(strings.TrimSpace(between(r.Stderr, "throwaway server starting in ", "\n"))); !os.IsNotExist(err) {
		t.Errorf("the throwaway data folder is still there: %v", err)
	}
}

func between(s, a, b string) string {
	_, rest, _ := strings.Cut(s, a)
	v, _, _ := strings.Cut(rest, b)
	return v
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// kyb is a workflow: its agent node's report goes through the verify step before it is the
// run's answer, and the answer is the report the case's schema wants.
func TestKYBWorkflowVerifiesItsReport(t *testing.T) {
	e := NewEnv(t, script)
	e.Start()
	e.MustCLI(0, "template", "apply", "kyb")
	f, _ := template.Embedded("kyb")
	tp, _ := template.Load(f, template.Options{})
	if st := e.Do("POST", "/v2/agentruns", map[string]any{"metadata": map[string]string{"name": "kyb-1"}, "spec": map[string]string{"agent": "kyb", "input": tp.Cases[0].Input}}, nil); st != 201 {
		t.Fatalf("start: HTTP %d", st)
	}
	run := e.WaitPhase("kyb-1", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if run.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("run: %s %s %s", run.Status.Phase, run.Status.Reason, run.Status.Message)
	}
	keys := map[string]bool{}
	for _, s := range e.Steps("kyb-1") {
		keys[s.Key] = true
	}
	if !keys["wf/research/t0/model"] || !keys["wf/research/$verify#1"] {
		t.Errorf("steps %v: want the research node's model call and its verify", keys)
	}
	v, err := eval.Grade(context.Background(), tp.Cases[0].Grader, api.Task{ID: "k"}, run.Status.Answer.Preview, nil)
	if err != nil || !v.Pass {
		t.Fatalf("answer against the case's schema: %+v %v\n%s", v, err, run.Status.Answer.Preview)
	}
}
