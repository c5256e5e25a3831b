package fork

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
)

// filesScript: turn 0 writes a.txt, turn 1 reads it back, turn 2 rewrites a.txt and writes
// b.txt, turn 3 answers with the last user text (the input, or a fork's message), turn 4 (a
// message after the answer) answers it.
const filesScript = `
entries:
  - name: files
    match: "Write the files"
    turns:
      - tool_calls:
          - name: write
            input: {path: a.txt, content: "one"}
      - tool_calls:
          - name: read
            input: {path: a.txt}
      - tool_calls:
          - name: write
            input: {path: a.txt, content: "two"}
          - name: write
            input: {path: b.txt, content: "bee"}
      - text: "final: {{last_user}}"
      - text: "again: {{last_user}}"
  - name: slow
    match: "Think slowly"
    turns:
      - text: "thought"
        latency: 60s
`

// onEachStore runs test on SQLite and, when AGENTRUN_TEST_POSTGRES_URL is set, on PostgreSQL:
// ForkRun is each backend's own transaction.
func onEachStore(t *testing.T, test func(t *testing.T, e *Env)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		test(t, NewEnv(t, filesScript))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		url := PGURL(t)
		e := NewEnv(t, filesScript)
		e.Extra = append(e.Extra, "AGENTRUN_STORE_URL="+url)
		test(t, e)
	})
}

func writerAgent(t *testing.T, e *Env) {
	t.Helper()
	if st := e.Do("PUT", "/v2/agents/writer", `{"metadata":{"name":"writer"},"spec":{"tools":["write","read"],"computer":{"kind":"none"}}}`, nil); st != 201 && st != 200 {
		t.Fatalf("create agent: HTTP %d", st)
	}
}

// original runs the files script to its answer and returns the run's name.
func original(t *testing.T, e *Env) string {
	t.Helper()
	writerAgent(t, e)
	if st := e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"orig"},"spec":{"agent":"writer","input":"Write the files"}}`, nil); st != 201 {
		t.Fatalf("create run: HTTP %d", st)
	}
	r := e.WaitPhase("orig", time.Minute, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != "final: Write the files" {
		t.Fatalf("original run: %s %s %+v", r.Status.Phase, r.Status.Message, r.Status.Answer)
	}
	return "orig"
}

// fork forks run at step through the real CLI and returns the new run's name.
func fork(t *testing.T, e *Env, run, step string, args ...string) string {
	t.Helper()
	r := e.MustCLI(0, append([]string{"runs", "fork", run, "--at", step}, args...)...)
	var v struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil || v.RunID == "" {
		t.Fatalf("runs fork printed no run_id: %q %v", r.Stdout, err)
	}
	return v.RunID
}

// file reads one file of a run's folder as the store saved it.
func file(t *testing.T, e *Env, run, path string) (string, int) {
	t.Helper()
	req, _ := http.NewRequest("GET", e.URL+"/v2/agentruns/"+run+"/files/"+path, nil)
	req.Header.Set("Authorization", "Bearer "+e.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("read %s of %s: %v", path, run, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return "", resp.StatusCode
	}
	return string(b), resp.StatusCode
}

func keys(steps []api.Step) string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Key)
	}
	return strings.Join(out, " ")
}

// TestForkAtAToolStepAndALaterOne: two forks of a finished run, made while no runner runs so
// their folders can be read as the fork made them: at t0/tool/0 a.txt is "one" and there is no
// b.txt; at t2/tool/0 a.txt is "two". Each holds the original's completed steps up to its step,
// marked copiedFrom, with a run.forked event; once a runner drives them the scripted model server
// gets no request for a copied turn, the first fork's live read sees "one", each succeeds, costs
// only its own calls (a fork at the answer costs nothing), and the original is unchanged.
func TestForkAtAToolStepAndALaterOne(t *testing.T) {
	t.Parallel()
	onEachStore(t, forkAtAToolStepAndALaterOne)
}

func forkAtAToolStepAndALaterOne(t *testing.T, e *Env) {
	e.Start()
	run := original(t, e)
	origSteps, _ := json.Marshal(e.Steps(run))
	origRun := e.GetRun(run)
	e.Kill()
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--no-runner"})

	early := fork(t, e, run, "t0/tool/0")
	late := fork(t, e, run, "t2/tool/0", "--name", "late", "--max-cost-usd", "0.50")
	atEnd := fork(t, e, run, "t3/model")
	if late != "late" {
		t.Fatalf("--name late made %q", late)
	}
	if got, st := file(t, e, early, "a.txt"); st != 200 || got != "one" {
		t.Errorf("early fork a.txt = %q (HTTP %d), want \"one\" (as t0/tool/0 left it)", got, st)
	}
	if _, st := file(t, e, early, "b.txt"); st != 404 {
		t.Errorf("early fork b.txt: HTTP %d, want 404 (written after t0/tool/0)", st)
	}
	if got, _ := file(t, e, late, "a.txt"); got != "two" {
		t.Errorf("late fork a.txt = %q, want \"two\"", got)
	}
	if _, st := file(t, e, late, "b.txt"); st != 404 {
		t.Errorf("late fork b.txt: HTTP %d, want 404 (t2/tool/1 wrote it)", st)
	}
	for name, want := range map[string]string{early: "t0/model t0/tool/0", late: "t0/model t0/tool/0 t1/model t1/tool/0 t2/model t2/tool/0"} {
		steps := e.Steps(name)
		got := keys(steps)
		if i := strings.Index(got, "t0/model"); i > 0 {
			got = got[i:] // the routing step, when the agent is routed, comes first
		}
		if got != want {
			t.Errorf("fork %s steps = %s, want %s", name, keys(steps), want)
		}
		for _, s := range steps {
			if s.CopiedFrom != run || s.State != api.StepCompleted {
				t.Errorf("fork %s step %s: copiedFrom %q state %s, want copied from %s", name, s.Key, s.CopiedFrom, s.State, run)
			}
		}
		if !HasEvent(e.Events(name), api.EventRunForked, "forked from run "+run) {
			t.Errorf("fork %s has no run.forked event naming %s", name, run)
		}
	}
	if r := e.GetRun(late); r.Spec.MaxCostUSD != "0.50" || r.Status.Cost == nil || r.Status.Cost.LimitUSD != cost.Micros(500000).String() {
		t.Errorf("late fork cap: spec.maxCostUSD %q, status.cost %+v; want its own cap of $0.50", r.Spec.MaxCostUSD, r.Status.Cost)
	}

	e.Kill()
	e.Start()
	for _, name := range []string{early, late, atEnd} {
		r := e.WaitPhase(name, time.Minute, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
		if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != "final: Write the files" {
			t.Errorf("fork %s: %s %s %+v", name, r.Status.Phase, r.Status.Message, r.Status.Answer)
		}
	}
	// Turn n of the conversation reached the model once for the original, and once more for each
	// fork that did not copy it.
	for turn, want := range []int{1, 2, 2, 3} {
		if n := e.Model.CountTurn("files", turn); n != want {
			t.Errorf("scripted turn %d reached the model server %d times, want %d", turn, n, want)
		}
	}
	if got := e.ToolResults(early)["t1/tool/0"].Content; !strings.Contains(got, "one") {
		t.Errorf("the early fork's live read of a.txt = %q, want the folder as of t0/tool/0 (\"one\")", got)
	}
	if got, _ := file(t, e, early, "b.txt"); got != "bee" {
		t.Errorf("early fork b.txt after its own turn 2 = %q", got)
	}
	// Copied calls are not billed again: the fork at the answer made no call and cost nothing;
	// the others cost what their own calls did, less than the original.
	total := func(name string) cost.Micros {
		c := e.GetRun(name).Status.Cost
		if c == nil {
			t.Fatalf("run %s has no cost", name)
		}
		m, err := cost.ParseUSD(c.TotalUSD)
		if err != nil {
			t.Fatalf("run %s cost %q: %v", name, c.TotalUSD, err)
		}
		return m
	}
	if c := total(atEnd); c != 0 {
		t.Errorf("fork at the answer cost %v, want 0 (every call copied)", c)
	}
	if o, l := total(run), total(late); !(l > 0 && l < o) {
		t.Errorf("late fork cost %v, original %v: want its own call only", l, o)
	}
	// The original is as it was.
	if after, _ := json.Marshal(e.Steps(run)); string(after) != string(origSteps) {
		t.Errorf("original's steps changed:\n%s\nwant\n%s", after, origSteps)
	}
	if r := e.GetRun(run); r.Metadata.ResourceVersion != origRun.Metadata.ResourceVersion || r.Status.Phase != api.PhaseSucceeded {
		t.Errorf("original changed: resourceVersion %s -> %s, phase %s", origRun.Metadata.ResourceVersion, r.Metadata.ResourceVersion, r.Status.Phase)
	}
	if got, _ := file(t, e, run, "a.txt"); got != "two" {
		t.Errorf("original a.txt = %q, want \"two\"", got)
	}
}

// TestForkWithMessage: --message is a user message at the fork point. Forked mid-turn (after
// the last tool call), the next model call reads it (the answer quotes it); forked at the answer,
// it starts a new turn. Each fork's message is its own, and a drive after a restart replays it.
func TestForkWithMessage(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, filesScript)
	e.Start()
	run := original(t, e)
	mid := fork(t, e, run, "t2/tool/1", "--message", "say it in French")
	end := fork(t, e, run, "t3/model", "--message", "one more thing")
	for name, want := range map[string]string{mid: "final: say it in French", end: "again: one more thing"} {
		r := e.WaitPhase(name, time.Minute, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
		if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != want {
			t.Errorf("fork %s: %s %s %+v, want the answer %q", name, r.Status.Phase, r.Status.Message, r.Status.Answer, want)
		}
	}
	if s := e.Steps(mid); !strings.Contains(keys(s), "t3/message t3/model") {
		t.Errorf("mid-turn fork steps = %s, want the message taken as t3/message before t3/model", keys(s))
	}
	if r := e.GetRun(run); r.Status.Answer == nil || r.Status.Answer.Preview != "final: Write the files" {
		t.Errorf("original's answer changed: %+v", r.Status.Answer)
	}
	var msgs struct{ Items []api.Message }
	e.Do("GET", "/v2/agentruns/"+run+"/messages", nil, &msgs)
	if len(msgs.Items) != 0 {
		t.Errorf("the original got messages: %+v", msgs.Items)
	}
}

// TestForkRefusals: a step that is not completed (StepNotCompleted), a key the run has no step
// for (StepNotFound), a run that does not exist, no atStep (Required) and a run whose payloads
// retention purged (RunPurged) are refused with their codes, and none leaves a run behind.
func TestForkRefusals(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, filesScript)
	clock := filepath.Join(t.TempDir(), "clock")
	e.Start("AGENTRUN_DEV_CLOCK_FILE=" + clock)
	run := original(t, e)
	if st := e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"slow"},"spec":{"agent":"writer","input":"Think slowly"}}`, nil); st != 201 {
		t.Fatalf("create slow run: HTTP %d", st)
	}
	started := ""
	for deadline := time.Now().Add(time.Minute); started == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, s := range e.Steps("slow") {
			if s.Kind == "model" && s.State == api.StepStarted {
				started = s.Key
			}
		}
	}
	if started == "" {
		t.Fatal("the slow run's model call never started")
	}
	before := len(ListRuns(e))
	for _, c := range []struct {
		run, body string
		status    int
		code      api.Code
	}{
		{"slow", `{"atStep": "` + started + `"}`, 409, api.CodeStepNotCompleted},
		{run, `{"atStep": "t9/tool/0"}`, 404, api.CodeStepNotFound},
		{"nope", `{"atStep": "t0/model"}`, 404, api.CodeNotFound},
		{run, `{}`, 422, api.CodeRequired},
		{run, `{"atStep": "t0/model", "name": "Not A Name"}`, 422, api.CodeInvalid},
		{run, `{"atStep": "t0/model", "colour": "red"}`, 422, api.CodeUnknownField},
	} {
		var apiErr api.Error
		if st := e.Do("POST", "/v2/agentruns/"+c.run+"/fork", c.body, &apiErr); st != c.status || apiErr.Code != c.code {
			t.Errorf("fork %s %s: HTTP %d %s (%s), want %d %s", c.run, c.body, st, apiErr.Code, apiErr.Message, c.status, c.code)
		}
	}
	// The CLI says the same with its exit code.
	if r := e.CLI(t.TempDir(), "runs", "fork", run, "--at", "t9/tool/0"); r.Code == 0 || !strings.Contains(r.Stderr, "StepNotFound") {
		t.Errorf("runs fork at an unknown step: exit %d %s", r.Code, r.Stderr)
	}
	if after := len(ListRuns(e)); after != before {
		t.Errorf("refused forks left runs behind: %d runs, were %d", after, before)
	}
	e.Do("POST", "/v2/agentruns/slow/cancel", nil, nil)

	// Retention purges the finished run's payloads a month later: it cannot be forked.
	writeClock(t, clock, time.Now().Add(31*24*time.Hour))
	for deadline := time.Now().Add(30 * time.Second); e.GetRun(run).Status.PayloadsPurgedAt == nil; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("retention did not purge the original")
		}
	}
	var apiErr api.Error
	if st := e.Do("POST", "/v2/agentruns/"+run+"/fork", `{"atStep": "t0/model"}`, &apiErr); st != 409 || apiErr.Code != api.CodeRunPurged {
		t.Errorf("fork of a purged run: HTTP %d %s (%s), want 409 RunPurged", st, apiErr.Code, apiErr.Message)
	}
}

// TestForkKilledMidwayLeavesNoRun: the server killed (SIGKILL) while a fork's transaction is
// open leaves no fork behind, not even part of one: after a restart the name is free, the
// original whole, and the same fork made again is complete.
func TestForkKilledMidwayLeavesNoRun(t *testing.T) {
	t.Parallel()
	onEachStore(t, forkKilledMidway)
}

func forkKilledMidway(t *testing.T, e *Env) {
	e.Start()
	run := original(t, e)
	e.Kill()
	e.Start("AGENTRUN_DEV_PAUSE_AT=in-fork")
	go e.CLI(t.TempDir(), "runs", "fork", run, "--at", "t2/tool/0", "--name", "half")
	e.WaitStderr("AGENTRUN_DEV_PAUSED in-fork "+run, 30*time.Second)
	e.Kill()
	e.Start()
	if st := e.Do("GET", "/v2/agentruns/half", nil, nil); st != 404 {
		t.Fatalf("the killed fork's run: HTTP %d, want 404", st)
	}
	var steps struct{ Items []api.Step }
	if st := e.Do("GET", "/v2/agentruns/half/steps", nil, &steps); st != 404 || len(steps.Items) != 0 {
		t.Errorf("the killed fork's steps: HTTP %d %d steps", st, len(steps.Items))
	}
	if _, st := file(t, e, "half", "a.txt"); st != 404 {
		t.Errorf("the killed fork's a.txt: HTTP %d, want 404", st)
	}
	name := fork(t, e, run, "t2/tool/0", "--name", "half")
	r := e.WaitPhase(name, time.Minute, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("fork made again: %s %s", r.Status.Phase, r.Status.Message)
	}
	if n := len(e.Steps(name)); n < 7 {
		t.Errorf("fork made again has %d steps: %s", n, keys(e.Steps(name)))
	}
}

// writeClock moves the server's clock (the test hooks' clock file) to now.
func writeClock(t *testing.T, path string, now time.Time) {
	t.Helper()
	WriteFile(t, filepath.Dir(path), filepath.Base(path), now.UTC().Format(time.RFC3339Nano))
}
