package cluster

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/model/fake"
)

// completedTurns counts, per conversation (first user message) and turn, the model calls that
// completed at the scripted model server.
func completedTurns(m *fake.Server) map[string]int {
	out := map[string]int{}
	for _, c := range m.Calls() {
		if c.Completed && c.Status == 200 {
			out[fmt.Sprintf("%s#%d", c.FirstUser, c.Turn)]++
		}
	}
	return out
}

const clusterScript = `
entries:
  - name: task
    match: "task-"
    turns:
      - tool_calls:
          - name: dev_count
            input: {label: "{{last_user}}"}
        latency: 40ms
      - tool_calls:
          - name: write
            input: {path: "out.txt", content: "done {{last_user}}"}
        latency: 40ms
      - text: "finished"
        latency: 40ms
`

func createTaskRuns(t *testing.T, e *Env, n int) []string {
	t.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("task-%03d", i)
		body := fmt.Sprintf(`{"kind":"AgentRun","metadata":{"name":%q},"spec":{"agent":"worker","input":%q}}`, names[i], names[i])
		if st := e.Do("POST", "/v2/agentruns", body, nil); st != 201 {
			t.Fatalf("create %s: HTTP %d", names[i], st)
		}
	}
	return names
}

// checkNoDoubleWork asserts what every fault test asserts: each counting side effect happened at
// most once per run, and each model turn of each conversation completed at most once... unless
// the journal repeated it safely, which the per-run step attempts say.
func checkNoDoubleWork(t *testing.T, c *Cluster, names []string, wantAllCounted bool) {
	t.Helper()
	counts := map[string]int{}
	for _, l := range c.Counted() {
		counts[l]++
	}
	for _, n := range names {
		if counts[n] > 1 {
			t.Errorf("%s: side effect happened %d times", n, counts[n])
		}
		if wantAllCounted && counts[n] != 1 {
			t.Errorf("%s: side effect happened %d times, want 1", n, counts[n])
		}
	}
	for _, n := range names {
		for _, s := range c.Steps(n) {
			if s.State != api.StepCompleted && s.State != api.StepInterrupted {
				t.Errorf("%s: step %s is %s", n, s.Key, s.State)
			}
		}
	}
}

func waitAllDone(t *testing.T, c *Cluster, n int, d time.Duration, progress func()) map[api.Phase][]api.AgentRun {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		by := c.RunsByPhase()
		done := len(by[api.PhaseSucceeded]) + len(by[api.PhaseNeedsResolution]) + len(by[api.PhaseFailed]) + len(by[api.PhaseCancelled])
		if done == n {
			return by
		}
		if time.Now().After(deadline) {
			var left []string
			for p, rs := range by {
				left = append(left, fmt.Sprintf("%s=%d", p, len(rs)))
			}
			t.Fatalf("after %v: %d of %d runs ended (%s)", d, done, n, strings.Join(left, " "))
		}
		if progress != nil {
			progress()
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func resolveAll(t *testing.T, c *Cluster, by map[api.Phase][]api.AgentRun) {
	t.Helper()
	for _, r := range by[api.PhaseNeedsResolution] {
		if w := r.Status.WaitingOn; w != nil {
			t.Logf("%s needs resolution: step %s %s", r.Metadata.Name, w.StepKey, w.Detail)
		}
		if st := c.Do("POST", "/v2/agentruns/"+r.Metadata.Name+"/resolve", `{"action":"skip"}`, nil); st != 200 {
			t.Errorf("resolve %s: HTTP %d", r.Metadata.Name, st)
		}
	}
}

// writeSkipped reports whether a run's write tool step was interrupted and then skipped by a person.
func writeSkipped(steps []api.Step) bool {
	for _, s := range steps {
		if s.Kind == "tool" && strings.HasPrefix(s.Title, "write") && s.Resolution == "skip" {
			return true
		}
	}
	return false
}

// Three runners, 300 runs with model latency, a random runner SIGKILLed every few seconds and
// restarted: every run ends, nothing completed is done twice, nothing is lost.
func TestPGKillRunnersUnderLoad(t *testing.T) {
	t.Parallel()
	// Each turn takes the model 600 ms and each runner drives at most 30 runs at once, so the
	// backlog drains over several seconds while runners die under it.
	c := NewCluster(t, strings.ReplaceAll(clusterScript, "latency: 40ms", "latency: 600ms"))
	c.StartServer()
	CreateCounterAgent(t, c.Env, `["dev_count","write"]`)
	names := createTaskRuns(t, c.Env, 300)
	for _, n := range []string{"r1", "r2", "r3"} {
		c.StartRunner(n, "--max-runs", "30")
	}
	kills := 0
	lastKill := time.Now()
	by := waitAllDone(t, c, len(names), 4*time.Minute, func() {
		if time.Since(lastKill) > 1500*time.Millisecond {
			victim := []string{"r1", "r2", "r3"}[rand.IntN(3)]
			c.Runners[victim].Kill()
			c.StartRunner(victim, "--max-runs", "30")
			kills++
			lastKill = time.Now()
		}
	})
	if kills < 3 {
		t.Errorf("only %d runners were killed while the runs went on; the test did not test much", kills)
	}
	t.Logf("%d kills; %d succeeded, %d need resolution", kills, len(by[api.PhaseSucceeded]), len(by[api.PhaseNeedsResolution]))
	if len(by[api.PhaseFailed])+len(by[api.PhaseCancelled]) > 0 {
		t.Fatalf("runs failed or were cancelled: %+v", by[api.PhaseFailed])
	}
	// A run cut off in the middle of its counting tool waits for a person; skip them all. A
	// runner that self-fenced while its store was slow (a loaded machine) cuts off another one
	// after that, which waits as well: skip again, a few rounds at most.
	for round := 0; round < 4 && len(by[api.PhaseSucceeded]) < len(names); round++ {
		resolveAll(t, c, by)
		by = waitAllDone(t, c, len(names), time.Minute, nil)
	}
	if len(by[api.PhaseSucceeded]) != len(names) {
		t.Fatalf("%d of %d succeeded after resolution", len(by[api.PhaseSucceeded]), len(names))
	}
	checkNoDoubleWork(t, c, names, false)
	// Every run's file was saved to the store, whichever runner wrote it... except where a runner
	// died inside the write itself and a person skipped it above: that write never completed.
	checked := 0
	for _, n := range names {
		if checked == 20 {
			break
		}
		if writeSkipped(c.Steps(n)) {
			t.Logf("%s: its write was cut off and skipped; no out.txt expected", n)
			continue
		}
		checked++
		if r := c.MustCLI(0, "runs", "read-file", n, "out.txt"); r.Stdout != "done "+n {
			t.Errorf("%s: out.txt = %q", n, r.Stdout)
		}
	}
	// A model step done in one attempt was asked of the model server once: a completed step is
	// never repeated after a takeover. (A step with more attempts was interrupted mid-call and,
	// being on the server's key, safely asked again; its attempts show it.)
	done := completedTurns(c.Model)
	repeated := 0
	for _, n := range names {
		for _, s := range c.Steps(n) {
			if s.Kind != "model" {
				continue
			}
			turn := strings.TrimSuffix(strings.TrimPrefix(s.Key, "t"), "/model")
			if s.Attempt == 1 && done[n+"#"+turn] != 1 {
				t.Errorf("%s %s: one attempt, but the model server completed it %d times", n, s.Key, done[n+"#"+turn])
			}
			if s.Attempt > 1 {
				repeated++
			}
		}
	}
	t.Logf("model steps repeated after an interruption: %d", repeated)
}

// Many runners racing for one backlog: never two live leases on one run, so every side effect
// happens exactly once and every turn completes exactly once.
func TestPGClaimRace(t *testing.T) {
	t.Parallel()
	c := NewCluster(t, strings.ReplaceAll(clusterScript, "latency: 40ms", "latency: 0s"))
	// This test is about claiming, not about losing leases: a long lease keeps a loaded machine
	// (other tests run beside it) from fencing a runner and parking a run for a person.
	c.LeaseTTL = "20s"
	c.StartServer()
	CreateCounterAgent(t, c.Env, `["dev_count","write"]`)
	names := createTaskRuns(t, c.Env, 200)
	for i := 1; i <= 6; i++ {
		c.StartRunner(fmt.Sprintf("racer%d", i))
	}
	by := waitAllDone(t, c, len(names), 2*time.Minute, nil)
	if len(by[api.PhaseSucceeded]) != len(names) {
		t.Fatalf("%d of %d succeeded", len(by[api.PhaseSucceeded]), len(names))
	}
	checkNoDoubleWork(t, c, names, true)
	for key, n := range completedTurns(c.Model) {
		if n != 1 {
			t.Errorf("model turn %s completed %d times", key, n)
		}
	}
	var runners struct {
		Items []map[string]any `json:"items"`
	}
	c.Do("GET", "/v2/runners", nil, &runners)
	if len(runners.Items) != 6 {
		t.Errorf("runners listed = %d, want 6", len(runners.Items))
	}
}

// A runner paused (SIGSTOP) past its lease: another takes the run over; resumed (SIGCONT), the
// first runner's late writes are refused and the journal shows only the new owner's work.
func TestPGPausedRunnerIsFenced(t *testing.T) {
	t.Parallel()
	c := NewCluster(t, `
entries:
  - name: slow
    match: "pause me"
    turns:
      - tool_calls:
          - name: write
            input: {path: "a.txt", content: "from turn 0"}
      - text: "done"
        latency: 2s
`)
	c.StartServer()
	CreateCounterAgent(t, c.Env, `["write"]`)
	a := c.StartRunner("a")
	c.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"victim"},"spec":{"agent":"worker","input":"pause me"}}`, nil)
	// Wait until runner a is inside the slow model call of turn 1.
	deadline := time.Now().Add(20 * time.Second)
	for c.Model.CountTurn("slow", 1) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("turn 1 never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	a.Signal(syscall.SIGSTOP)
	b := c.StartRunner("b")
	// b takes over after a's lease (3s) runs out and finishes the run.
	r := c.WaitPhase("victim", 30*time.Second, api.PhaseSucceeded)
	a.Signal(syscall.SIGCONT)
	time.Sleep(3 * time.Second) // let a wake up and try its late writes
	if r.Status.Runner != "b" {
		t.Errorf("the run finished on %q, want b", r.Status.Runner)
	}
	steps := c.Steps("victim")
	var keys []string
	for _, s := range steps {
		keys = append(keys, fmt.Sprintf("%s:%s:%d", s.Key, s.State, s.Attempt))
	}
	if strings.Join(keys, " ") != "t0/route:Completed:1 t0/model:Completed:1 t0/tool/0:Completed:1 t1/model:Completed:2" {
		t.Errorf("journal = %v", keys)
	}
	// Once b took over, nothing a did reached the timeline.
	evs := c.Events("victim")
	takeover := -1
	for i, ev := range evs {
		if ev.Type == "run.resumed" && strings.Contains(ev.Message, "runner b") {
			takeover = i
		}
	}
	if takeover < 0 {
		t.Fatalf("no takeover by b in the timeline")
	}
	for _, ev := range evs[takeover:] {
		if strings.Contains(ev.Message, "runner a") {
			t.Errorf("event from a after the takeover: %+v", ev)
		}
	}
	if r := c.GetRun("victim"); r.Status.Phase != api.PhaseSucceeded || r.Status.Runner != "b" {
		t.Errorf("after a resumed: %s on %s", r.Status.Phase, r.Status.Runner)
	}
	out := a.Stderr.String() + b.Stderr.String()
	if !strings.Contains(out, "lease") {
		t.Errorf("runner a did not report losing its lease:\n%s", Tail(a.Stderr.String(), 3000))
	}
}

// A takeover on a runner with a different data folder continues the run with its files intact.
func TestPGTakeoverRestoresFiles(t *testing.T) {
	t.Parallel()
	c := NewCluster(t, `
entries:
  - name: files
    match: "files please"
    turns:
      - tool_calls:
          - name: write
            input: {path: "notes/plan.md", content: "step one"}
      - tool_calls:
          - name: read
            input: {path: "notes/plan.md"}
        latency: 30s
      - text: "read back: {{last_tool_result}}"
`)
	c.StartServer()
	CreateCounterAgent(t, c.Env, `["write","read"]`)
	a := c.StartRunner("a")
	c.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"mover"},"spec":{"agent":"worker","input":"files please"}}`, nil)
	deadline := time.Now().Add(20 * time.Second)
	for c.Model.CountTurn("files", 1) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("turn 1 never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	a.Kill()
	sc, _ := fake.ParseScript([]byte(`
entries:
  - name: files
    match: "files please"
    turns:
      - tool_calls:
          - name: write
            input: {path: "notes/plan.md", content: "step one"}
      - tool_calls:
          - name: read
            input: {path: "notes/plan.md"}
      - text: "read back: {{last_tool_result}}"
`))
	c.Model.SetScript(sc)
	c.StartRunner("b")
	r := c.WaitPhase("mover", 30*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseNeedsResolution)
	if r.Status.Phase != api.PhaseSucceeded || !strings.Contains(r.Status.Answer.Preview, "step one") {
		t.Fatalf("run ended %s with %+v", r.Status.Phase, r.Status.Answer)
	}
	if _, err := os.Stat(filepath.Join(c.Dir, "runner-b", "runs", "mover", "notes", "plan.md")); err != nil {
		t.Errorf("runner b's folder lacks the restored file: %v", err)
	}
	var restored bool
	for _, ev := range c.Events("mover") {
		if ev.Type == "folder.restored" {
			restored = true
		}
	}
	if !restored {
		t.Errorf("timeline does not say the folder was restored")
	}
	_ = json.Marshal
}

// A cancel reaches a runner in another process while it waits on a long model call.
func TestPGCancelReachesRemoteRunner(t *testing.T) {
	t.Parallel()
	c := NewCluster(t, `
entries:
  - name: long
    match: "long call"
    turns:
      - text: "never seen"
        latency: 60s
`)
	c.StartServer()
	CreateCounterAgent(t, c.Env, `["write"]`)
	c.StartRunner("far")
	c.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"longcall"},"spec":{"agent":"worker","input":"long call"}}`, nil)
	deadline := time.Now().Add(20 * time.Second)
	for c.Model.CountTurn("long", 0) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the model call never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.MustCLI(0, "cancel", "agentrun/longcall")
	r := c.WaitPhase("longcall", 20*time.Second, api.PhaseCancelled)
	if r.Status.Reason != api.ReasonUserCancelled {
		t.Errorf("reason %s", r.Status.Reason)
	}
}
