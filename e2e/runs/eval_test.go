package runs

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// The seed's "Evaluate an agent": evaluation.py as a CLI flow, then the API underneath it.
func TestSeedEvaluation(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, EvalScript(t, "test-03", "word-02"))
	e.Start()
	e.MustCLI(0, "apply", "-f", WriteFile(t, e.Dir, "agent.yaml", SeedGroupAgentYAML))
	if r := e.MustCLI(0, "env", "list"); !strings.Contains(r.Stdout, "nodus/arithmetic-v2@2.0.0") || !strings.Contains(r.Stdout, "agentrun/write-file@1.0.0") {
		t.Errorf("env list:\n%s", r.Stdout)
	}
	// evaluation.py: create, wait, print per-case outcomes, delete.
	r := e.MustCLI(0, "eval", "run", "parallel-agents-eval", "--agent", "parallel-agents-worker", "--max-active", "2", "--max-cost", "0.20",
		"--environment", "nodus/arithmetic-v2@2.0.0", "--split", "test", "--tasks", "2", "--repetitions", "1", "--seed", "42", "--timeout", "10m")
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[0], "Succeeded: cases=2, pending=0") || !strings.HasPrefix(lines[1], "pass rate: ") ||
		!strings.HasPrefix(lines[2], "mean reward: ") || lines[5] != "deleted agentgroup/parallel-agents-eval" {
		t.Errorf("eval run printed:\n%s", r.Stdout)
	}
	for _, l := range lines[3:5] {
		if f := strings.Fields(l); len(f) != 3 || !strings.HasPrefix(f[0], "test-") || f[1] != "scored" || (f[2] != "pass" && f[2] != "fail") {
			t.Errorf("case line %q", l)
		}
	}
	if st := e.Do("GET", "/v2/agentgroups/parallel-agents-eval", nil, nil); st != 404 {
		t.Errorf("the evaluation group was not deleted: HTTP %d", st)
	}

	// Underneath: 4 tasks x 2 repetitions; test-03 (if drawn) is answered wrong and scored.
	mk := func(name string, seed int) {
		body := fmt.Sprintf(`{"kind":"AgentGroup","metadata":{"name":%q},"spec":{"agent":"parallel-agents-worker","limits":{"maxActive":3},
			"evaluation":{"environment":"nodus/arithmetic-v2@2.0.0","split":"test","tasks":4,"repetitions":2,"seed":%d,"timeout":"5m"}}}`, name, seed)
		if st := e.Do("POST", "/v2/agentgroups", body, nil); st != 201 {
			t.Fatalf("create %s: HTTP %d", name, st)
		}
	}
	mk("ev-a", 7)
	mk("ev-b", 7)
	ga := e.WaitGroupDone("ev-a", time.Minute)
	e.WaitGroupDone("ev-b", time.Minute)
	if ga.Status.Phase != api.GroupSucceeded || !ga.Spec.Sealed || ga.Status.Evaluation == nil || ga.Status.Evaluation.Results != nil {
		t.Fatalf("ev-a: %s sealed=%v evaluation %+v", ga.Status.Phase, ga.Spec.Sealed, ga.Status.Evaluation)
	}
	ra, rb := e.Results("ev-a"), e.Results("ev-b")
	if len(ra.Items) != 8 {
		t.Fatalf("ev-a has %d cases, want 8", len(ra.Items))
	}
	wrong := 0
	revs := map[int64]bool{}
	for i, c := range ra.Items {
		if c.TaskID != rb.Items[i].TaskID || c.Repetition != rb.Items[i].Repetition {
			t.Errorf("case %d: %s#%d vs %s#%d: the same seed drew other tasks", i, c.TaskID, c.Repetition, rb.Items[i].TaskID, rb.Items[i].Repetition)
		}
		if c.State != api.CaseScored || c.Reward == nil || c.Evidence == "" || c.Run == "" {
			t.Errorf("case %+v", c)
		}
		if want := map[bool]string{true: "fail", false: "pass"}[c.TaskID == "test-03"]; c.Verdict != want {
			t.Errorf("%s#%d: verdict %s, want %s (%s)", c.TaskID, c.Repetition, c.Verdict, want, c.Evidence)
		}
		if c.Verdict == "fail" {
			wrong++
		}
		run := e.GetRun(c.Run)
		revs[run.Status.AgentRevision] = true
		if run.Status.Deadline == nil || ga.Status.Deadline == nil || !run.Status.Deadline.Equal(*ga.Status.Deadline) {
			t.Errorf("%s: deadline %v, group's %v", c.Run, run.Status.Deadline, ga.Status.Deadline)
		}
		if strings.Contains(run.Spec.Input, "12345") {
			t.Errorf("the hidden answer reached the agent")
		}
	}
	if len(revs) != 1 {
		t.Errorf("cases ran on agent revisions %v, want one", revs)
	}
	ev := ra.Evaluation
	if ev.Scored != 8 || ev.Pending != 0 || ev.PassRate == nil || *ev.PassRate != float64(8-wrong)/8 || len(ev.PerTask) != 4 ||
		ev.Environment != "nodus/arithmetic-v2@2.0.0" || ev.Seed != 7 || ev.GraderVersion == "" {
		t.Errorf("evaluation summary %+v", ev)
	}
	for _, pt := range ev.PerTask {
		if pt.PassAtK["1"] != map[bool]float64{true: 0, false: 1}[pt.TaskID == "test-03"] || pt.RewardSpread == nil || *pt.RewardSpread != 0 {
			t.Errorf("per task %+v", pt)
		}
	}
	if r := e.MustCLI(0, "eval", "results", "ev-a"); !strings.Contains(r.Stdout, "pass rate") || strings.Count(r.Stdout, "scored") < 8 {
		t.Errorf("eval results:\n%s", r.Stdout)
	}
	if r := e.MustCLI(0, "eval", "results", "ev-a", "-o", "json"); !strings.Contains(r.Stdout, `"passRate"`) {
		t.Errorf("eval results -o json:\n%s", r.Stdout)
	}
	// An evaluation group takes no runs from outside.
	if st, _ := e.Post("/v2/agentruns", `{"spec":{"agent":"parallel-agents-worker","group":"ev-a","taskKey":"extra","input":"x"}}`, nil); st != 409 {
		t.Errorf("a run added to an evaluation group: HTTP %d", st)
	}
	e.MustCLI(0, "delete", "ag/ev-a")

	// A script grader checks a file the run wrote, in a copy of the run's folder.
	if st := e.Do("PUT", "/v2/agents/writer", `{"metadata":{"name":"writer"},"spec":{"tools":["write"]}}`, nil); st != 201 {
		t.Fatalf("create writer: HTTP %d", st)
	}
	if st := e.Do("POST", "/v2/agentgroups", `{"kind":"AgentGroup","metadata":{"name":"ev-files"},"spec":{"agent":"writer",
		"evaluation":{"environment":"agentrun/write-file@1.0.0","tasks":10,"seed":3,"timeout":"5m"}}}`, nil); st != 201 {
		t.Fatalf("create ev-files: HTTP %d", st)
	}
	e.WaitGroupDone("ev-files", time.Minute)
	for _, c := range e.Results("ev-files").Items {
		want := map[bool]string{true: "fail", false: "pass"}[c.TaskID == "word-02"]
		if c.State != api.CaseScored || c.Verdict != want {
			t.Errorf("write-file %s: %s %s (%s %s)", c.TaskID, c.State, c.Verdict, c.Evidence, c.Detail)
		}
	}

	// Cancelling an evaluation ends its runs and its grading: nothing stays pending.
	mk("ev-c", 9)
	e.MustCLI(0, "cancel", "ag/ev-c")
	if g := e.WaitGroupDone("ev-c", time.Minute); g.Status.Phase != api.GroupCancelled {
		t.Errorf("cancelled evaluation: %s", g.Status.Phase)
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.Results("ev-c").Evaluation.Pending > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	for _, c := range e.Results("ev-c").Items {
		if c.State != api.CaseScored && c.State != api.CaseUnscored {
			t.Errorf("case of a cancelled evaluation: %+v", c)
		}
	}

	// Load an environment from a folder: immutable per version.
	dir := filepath.Join(e.Dir, "colours")
	os.MkdirAll(filepath.Join(dir, "splits"), 0o755)
	WriteFile(t, dir, "environment.yaml", "kind: Environment\nmetadata: {name: acme/colours}\nspec:\n  version: 1.0.0\n  grader: {kind: regex, pattern: '^(red|blue|yellow)\\.?$'}\n")
	WriteFile(t, filepath.Join(dir, "splits"), "test.jsonl", `{"id": "c1", "prompt": "Name a primary colour.", "answer": "red"}`+"\n")
	if r := e.MustCLI(0, "env", "load", dir); !strings.Contains(r.Stdout, "environment/acme/colours@1.0.0 created") {
		t.Errorf("env load printed %q", r.Stdout)
	}
	if r := e.MustCLI(0, "env", "load", dir); !strings.Contains(r.Stdout, "unchanged") {
		t.Errorf("env load again printed %q", r.Stdout)
	}
	WriteFile(t, filepath.Join(dir, "splits"), "test.jsonl", `{"id": "c1", "prompt": "Name a primary colour, please.", "answer": "red"}`+"\n")
	if r := e.CLI(e.Dir, "env", "load", dir); r.Code != 1 || !strings.Contains(r.Stderr, "AlreadyExists") {
		t.Errorf("loading other content under the same version: exit %d %q", r.Code, r.Stderr)
	}
	// kubectl style works too.
	applied := WriteFile(t, e.Dir, "env.yaml", "apiVersion: agentrun.dev/v1\nkind: Environment\nmetadata: {name: acme/applied}\nspec:\n  version: 0.1.0\n  grader: {kind: exact}\n  splits:\n    test:\n      - {id: a, prompt: 'Say A.', answer: A}\n")
	if r := e.MustCLI(0, "apply", "-f", applied); !strings.Contains(r.Stdout, "environment/acme/applied created") {
		t.Errorf("apply an environment printed %q", r.Stdout)
	}
	if r := e.MustCLI(0, "apply", "-f", applied); !strings.Contains(r.Stdout, "unchanged") {
		t.Errorf("apply an environment again printed %q", r.Stdout)
	}
	var got api.Environment
	if st := e.Do("GET", "/v2/environments/acme/colours@1.0.0", nil, &got); st != 200 || len(got.Spec.Splits["test"]) != 1 || got.Spec.Splits["test"][0].Answer != nil {
		t.Errorf("GET environment: HTTP %d %+v (answers must be hidden)", st, got.Spec.Splits)
	}
	if st := e.Do("POST", "/v2/agentgroups", `{"kind":"AgentGroup","metadata":{"name":"ev-col"},"spec":{"agent":"parallel-agents-worker",
		"evaluation":{"environment":"acme/colours@1.0.0","timeout":"2m"}}}`, nil); st != 201 {
		t.Fatalf("create ev-col: HTTP %d", st)
	}
	e.WaitGroupDone("ev-col", time.Minute)
	if c := e.Results("ev-col").Items; len(c) != 1 || c[0].Verdict != "pass" {
		t.Errorf("colours: %+v", c)
	}
	if st := e.Do("POST", "/v2/agentgroups", `{"kind":"AgentGroup","metadata":{"name":"ev-bad"},"spec":{"agent":"parallel-agents-worker",
		"evaluation":{"environment":"acme/colours@9.9.9"}}}`, nil); st != 404 {
		t.Errorf("unknown environment version: HTTP %d", st)
	}
	if st := e.Do("POST", "/v2/agentgroups", `{"kind":"AgentGroup","metadata":{"name":"ev-big"},"spec":{"agent":"parallel-agents-worker",
		"evaluation":{"environment":"nodus/arithmetic-v2@2.0.0","tasks":20,"repetitions":6}}}`, nil); st != 422 {
		t.Errorf("120 cases: HTTP %d", st)
	}
}

const timingScript = `
entries:
  - name: slowrun
    match: "slowrun-"
    turns:
      - text: "late"
        latency: 3m
  - name: others
    match: "answer me"
    turns:
      - text: "ok"
`

// The absolute deadline: a run still working at the deadline fails (unscored), an answer whose
// grading has not finished by then is an evaluation timeout; neither counts in the pass rate. A
// grader that fails before the deadline makes its case unscored, not a timeout.
func TestEvaluationDeadline(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, timingScript)
	e.Start()
	if st := e.Do("PUT", "/v2/agents/timed", `{"metadata":{"name":"timed"},"spec":{}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	env := `{"kind":"Environment","metadata":{"name":"acme/timing"},"spec":{"version":"1.0.0",
		"grader":{"kind":"script","timeoutSeconds":600,"script":"if grep -q slowgrade task.json; then sleep 300; fi\nif grep -q brokengrade task.json; then echo broken >&2; exit 3; fi\necho '{\"pass\": true, \"reward\": 1, \"evidence\": \"ok\"}'\n"},
		"splits":{"test":[{"id":"quick","prompt":"quick-1 answer me"},{"id":"slowgrade","prompt":"slowgrade-1 answer me"},{"id":"slowrun","prompt":"slowrun-1 answer me"},{"id":"brokengrade","prompt":"brokengrade-1 answer me"}]}}}`
	if st := e.Do("POST", "/v2/environments", env, nil); st != 201 {
		t.Fatalf("load environment: HTTP %d", st)
	}
	if st := e.Do("POST", "/v2/agentgroups", `{"kind":"AgentGroup","metadata":{"name":"timing"},"spec":{"agent":"timed",
		"evaluation":{"environment":"acme/timing@1.0.0","timeout":"1m"}}}`, nil); st != 201 {
		t.Fatalf("create group: HTTP %d", st)
	}
	g := e.WaitGroupDone("timing", 2*time.Minute)
	res := e.Results("timing")
	state := map[string]api.EvalCase{}
	for _, c := range res.Items {
		state[c.TaskID] = c
	}
	if c := state["quick"]; c.State != api.CaseScored || c.Verdict != "pass" {
		t.Errorf("quick: %+v", c)
	}
	if c := state["slowgrade"]; c.State != api.CaseTimeout {
		t.Errorf("slowgrade: %+v, want an evaluation timeout", c)
	}
	if c := state["slowrun"]; c.State != api.CaseUnscored || !strings.Contains(c.Detail, "DeadlineExceeded") {
		t.Errorf("slowrun: %+v, want unscored (the run failed at the deadline)", c)
	}
	if c := state["brokengrade"]; c.State != api.CaseUnscored || !strings.Contains(c.Detail, "grader failed") {
		t.Errorf("brokengrade: %+v, want unscored (its grader failed)", c)
	}
	ev := res.Evaluation
	if ev.Scored != 1 || ev.TimedOut != 1 || ev.Unscored != 2 || ev.Pending != 0 || ev.PassRate == nil || *ev.PassRate != 1 || *ev.MeanReward != 1 {
		t.Errorf("summary %+v", ev)
	}
	if g.Status.Phase != api.GroupFailed || g.Status.Reason != api.ReasonRunsFailed {
		t.Errorf("group %s/%s, want Failed/RunsFailed (a run failed)", g.Status.Phase, g.Status.Reason)
	}
}

const rubricScript = `
entries:
  - name: grader
    match: "Grade an answer against a rubric"
    turns:
      - tool_calls: [{name: answer, input: {answer: {pass: true, reward: 0.8, evidence: "it names Paris"}, confidence: 0.9}}]
  - name: answerer
    match: "capital of France (rubric)"
    turns:
      - text: "Paris is the capital of France."
`

// The model rubric grader: an ordinary run of a grader agent, journaled and costed, whose JSON
// verdict scores the case.
func TestRubricGrader(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, rubricScript)
	e.Start()
	if st := e.Do("PUT", "/v2/agents/essayist", `{"metadata":{"name":"essayist"},"spec":{}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	env := `{"kind":"Environment","metadata":{"name":"acme/essay"},"spec":{"version":"1.0.0",
		"grader":{"kind":"rubric","rubric":"Pass if the answer names the right city."},
		"splits":{"test":[{"id":"france","prompt":"Name the capital of France (rubric).","answer":"Paris"}]}}}`
	if st := e.Do("POST", "/v2/environments", env, nil); st != 201 {
		t.Fatalf("load environment: HTTP %d", st)
	}
	if st := e.Do("POST", "/v2/agentgroups", `{"kind":"AgentGroup","metadata":{"name":"essay"},"spec":{"agent":"essayist",
		"evaluation":{"environment":"acme/essay@1.0.0","timeout":"5m"}}}`, nil); st != 201 {
		t.Fatalf("create group: HTTP %d", st)
	}
	if g := e.WaitGroupDone("essay", time.Minute); g.Status.Phase != api.GroupSucceeded {
		t.Errorf("group %s", g.Status.Phase)
	}
	items := e.Results("essay").Items
	if len(items) != 1 || items[0].State != api.CaseScored || items[0].Verdict != "pass" || items[0].Reward == nil || *items[0].Reward != 0.8 ||
		!strings.Contains(items[0].Evidence, "essay-grade-001") {
		t.Fatalf("rubric case: %+v", items)
	}
	grader := e.GetRun("essay-grade-001")
	if grader.Status.Phase != api.PhaseSucceeded || grader.Spec.Group != "" || !strings.Contains(grader.Spec.Input, `"reference":"Paris"`) {
		t.Errorf("grader run: %s group %q", grader.Status.Phase, grader.Spec.Group)
	}
	if steps := e.Steps("essay-grade-001"); len(steps) == 0 {
		t.Errorf("the grader run has no journal")
	}
	if member := e.GetRun("essay-case-001"); strings.Contains(member.Spec.Input, "Paris") {
		t.Errorf("the reference answer reached the answering agent: %q", member.Spec.Input)
	}
	// The console shows the group: scored cases, pass rate, mean reward, each case linked to its run.
	session := e.PersonSession()
	for path, wants := range map[string][]string{
		"/groups":       {"essay", "(evaluation)", "Succeeded"},
		"/groups/essay": {"pass rate 1.000", "mean reward 0.800", `href="/runs/essay-case-001"`, "acme/essay@1.0.0", "grader run essay-grade-001"},
	} {
		req, _ := http.NewRequest("GET", e.URL+path, nil)
		req.AddCookie(&http.Cookie{Name: "agentrun_session", Value: session})
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, w := range wants {
			if resp.StatusCode != 200 || !strings.Contains(string(body), w) {
				t.Errorf("console %s: HTTP %d, lacks %q", path, resp.StatusCode, w)
			}
		}
	}
	e.MustCLI(0, "delete", "ag/essay")
	if st := e.Do("GET", "/v2/agentruns/essay-grade-001", nil, nil); st != 404 {
		t.Errorf("the grader run outlived its group: HTTP %d", st)
	}
}
