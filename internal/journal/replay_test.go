package journal_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/store/sqlite"
)

// The replay suite, in the manner of Temporal's replayer tests: a journal is driven over a real
// SQLite store, "crashed" by abandoning the Journal value once its intent is committed (the effect
// ran, its result was never written), and a new Journal opened on the same store replays it. Each
// effect function counts its calls, so "not run again" is measured, not assumed.

var bg = context.Background()

// harness is one run in a fresh SQLite store with a lease on it.
type harness struct {
	t     *testing.T
	st    store.Store
	run   string
	owner string
	lease store.Lease
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "agentrun.db"))
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	run := &api.AgentRun{
		TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "AgentRun"},
		Metadata: api.ObjectMeta{Name: "run-1"},
		Spec:     api.AgentRunSpec{Agent: "agent-a", Input: "hello", MaxCostUSD: "1.00"},
		Status:   api.AgentRunStatus{Phase: api.PhaseQueued, AgentRevision: 1},
	}
	if err := st.CreateRun(bg, run); err != nil {
		t.Fatalf("CreateRun: %v", err)
	}
	h := &harness{t: t, st: st, run: "run-1", owner: "runner-a"}
	h.lease = h.claim()
	return h
}

// claim leases the run (it must be claimable now).
func (h *harness) claim() store.Lease {
	h.t.Helper()
	leases, err := h.st.ClaimRuns(bg, h.owner, 1, 10*time.Minute)
	if err != nil || len(leases) != 1 || leases[0].Run != h.run {
		h.t.Fatalf("ClaimRuns: %v, %v; want a lease on %s", leases, err, h.run)
	}
	return leases[0]
}

// takeOver is a new process after a crash: the old lease is expired and the run claimed again
// under a new generation.
func (h *harness) takeOver() store.Lease {
	h.t.Helper()
	if _, err := h.st.ExpireLeases(bg, h.owner); err != nil {
		h.t.Fatalf("ExpireLeases: %v", err)
	}
	l := h.claim()
	if l.Generation <= h.lease.Generation {
		h.t.Fatalf("takeover generation %d, want above %d", l.Generation, h.lease.Generation)
	}
	h.lease = l
	return l
}

func (h *harness) open(l store.Lease) *journal.Journal {
	h.t.Helper()
	j, err := journal.Open(bg, h.st, l)
	if err != nil {
		h.t.Fatalf("journal.Open: %v", err)
	}
	return j
}

func (h *harness) step(key string) api.Step {
	h.t.Helper()
	steps, err := h.st.ListSteps(bg, h.run)
	if err != nil {
		h.t.Fatalf("ListSteps: %v", err)
	}
	for _, s := range steps {
		if s.Key == key {
			return s
		}
	}
	h.t.Fatalf("no step %s in %v", key, steps)
	return api.Step{}
}

func (h *harness) events() []string {
	h.t.Helper()
	evs, err := h.st.ListEvents(bg, h.run, 0, 0)
	if err != nil {
		h.t.Fatalf("ListEvents: %v", err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, string(e.Type)+" "+e.StepKey)
	}
	return out
}

// park is what the agent does with a NeedsResolution: the run waits on the step, lease released.
func (h *harness) park(j *journal.Journal, key string) {
	h.t.Helper()
	st := &api.AgentRunStatus{Phase: api.PhaseNeedsResolution, Reason: api.ReasonInterrupted,
		WaitingOn: &api.WaitingOn{Kind: "resolution", StepKey: key}, AgentRevision: 1}
	if _, err := j.Commit(bg, st, true, nil); err != nil {
		h.t.Fatalf("park: %v", err)
	}
}

// effect counts its calls and returns result with cost.
type effect struct {
	calls  int
	result any
	cost   *int64
}

func (e *effect) fn(ctx context.Context) (any, *int64, error) {
	e.calls++
	return e.result, e.cost, nil
}

// crashAfter runs the effect and then "dies" before the result is recorded: the context ends, as
// when the process is killed or the lease is lost, so Do records nothing more.
func (e *effect) crashAfter(cancel context.CancelFunc) func(ctx context.Context) (any, *int64, error) {
	return func(ctx context.Context) (any, *int64, error) {
		e.calls++
		cancel()
		return nil, nil, ctx.Err()
	}
}

func ptr[T any](v T) *T { return &v }

// crashInStep drives spec once and abandons the journal after its intent: the step is Started.
func (h *harness) crashInStep(spec journal.Spec, e *effect) {
	h.t.Helper()
	j := h.open(h.lease)
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	if _, err := j.Do(ctx, spec, e.crashAfter(cancel)); !errors.Is(err, context.Canceled) {
		h.t.Fatalf("crashing Do: %v, want context.Canceled", err)
	}
	if s := h.step(spec.Key); s.State != api.StepStarted || s.Attempt != 1 || len(s.Result) != 0 {
		h.t.Fatalf("after the crash step %s is %s attempt %d result %s, want Started attempt 1 with no result", spec.Key, s.State, s.Attempt, s.Result)
	}
}

func toolSpec(cmd string) journal.Spec {
	return journal.Spec{Key: "t1/tool/0", Kind: "tool", Title: "bash " + cmd, Args: map[string]string{"command": cmd}}
}

// A completed step replays its recorded result without calling the effect, in a new Journal
// under a new lease, and Record'ed steps replay too.
func TestReplayCompletedStepsAreNotRunAgain(t *testing.T) {
	h := newHarness(t)
	j := h.open(h.lease)
	tool := &effect{result: map[string]string{"stdout": "hi\n"}}
	out, err := j.Do(bg, toolSpec("echo hi"), tool.fn)
	if err != nil || out.Replayed || tool.calls != 1 {
		t.Fatalf("first Do: %+v, %v, calls %d", out, err, tool.calls)
	}
	if _, err := j.Record(bg, journal.Spec{Key: "t1/message/1", Kind: "message", Args: "m1"}, map[string]string{"text": "go on"}); err != nil {
		t.Fatalf("Record: %v", err)
	}

	for i := range 3 {
		j2 := h.open(h.takeOver())
		if j2.Steps() != 2 || !j2.Completed("t1/tool/0") || !j2.Completed("t1/message/1") {
			t.Fatalf("replay %d: %d steps recorded, want both completed", i, j2.Steps())
		}
		out, err := j2.Do(bg, toolSpec("echo hi"), tool.fn)
		if err != nil || !out.Replayed || string(out.Result) != `{"stdout":"hi\n"}` {
			t.Fatalf("replay %d: %+v, %v; want the recorded result, replayed", i, out, err)
		}
		msg, err := j2.Record(bg, journal.Spec{Key: "t1/message/1", Kind: "message", Args: "m1"}, map[string]string{"text": "something else"})
		if err != nil || string(msg) != `{"text":"go on"}` {
			t.Fatalf("replay %d: Record = %s, %v; want the first message", i, msg, err)
		}
	}
	if tool.calls != 1 {
		t.Errorf("the effect ran %d times over 3 replays, want once", tool.calls)
	}
	if s := h.step("t1/tool/0"); s.Attempt != 1 {
		t.Errorf("step attempt %d after replays, want 1 (a replay writes nothing)", s.Attempt)
	}
}

// A step whose outcome is uncertain (not Safe) found Started after a crash is not run again: it is
// marked Interrupted, once, and the run needs a person.
func TestReplayInterruptedUnsafeStepNeedsResolution(t *testing.T) {
	h := newHarness(t)
	tool := &effect{result: "ok"}
	h.crashInStep(toolSpec("rm -rf build"), tool)

	for i := range 2 {
		j := h.open(h.takeOver())
		_, err := j.Do(bg, toolSpec("rm -rf build"), tool.fn)
		var nr *journal.NeedsResolution
		if !errors.As(err, &nr) || nr.Step.Key != "t1/tool/0" || nr.Step.State != api.StepInterrupted {
			t.Fatalf("replay %d: %v, want NeedsResolution on t1/tool/0 (Interrupted)", i, err)
		}
	}
	if tool.calls != 1 {
		t.Errorf("the uncertain effect ran %d times, want once (before the crash)", tool.calls)
	}
	if s := h.step("t1/tool/0"); s.State != api.StepInterrupted {
		t.Errorf("step state %s, want Interrupted", s.State)
	}
	n := 0
	for _, e := range h.events() {
		if e == "step.interrupted t1/tool/0" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d step.interrupted events over two replays, want 1: %v", n, h.events())
	}
}

// A Safe step (a read, a model call on the server's key) found Started runs again as attempt 2.
func TestReplayInterruptedSafeStepRepeats(t *testing.T) {
	h := newHarness(t)
	spec := journal.Spec{Key: "t1/tool/0", Kind: "tool", Title: "read a.txt", Args: map[string]string{"path": "a.txt"}, Safe: true}
	read := &effect{result: "contents"}
	h.crashInStep(spec, read)
	j := h.open(h.takeOver())
	if j.NextAttempt(spec.Key) != 2 {
		t.Errorf("NextAttempt = %d, want 2", j.NextAttempt(spec.Key))
	}
	out, err := j.Do(bg, spec, read.fn)
	if err != nil || out.Replayed || string(out.Result) != `"contents"` {
		t.Fatalf("repeat: %+v, %v", out, err)
	}
	if s := h.step(spec.Key); s.State != api.StepCompleted || s.Attempt != 2 {
		t.Errorf("step %s attempt %d, want Completed attempt 2", s.State, s.Attempt)
	}
	if read.calls != 2 {
		t.Errorf("the safe effect ran %d times, want 2 (before the crash and once more)", read.calls)
	}
}

// The three resolutions a person can give an interrupted step, each taken up by a new Journal
// after the store requeued the run.
func TestReplayResolutions(t *testing.T) {
	cases := []struct {
		resolution api.Resolution
		supplied   string
		wantResult string
		wantCalls  int // effect calls in all, the one before the crash included
		skipped    bool
		event      string
	}{
		{"retry", "", `"done again"`, 2, false, "step.retried"},
		{"skip", "", `{"skipped":true}`, 1, true, "step.resolved"},
		{"complete", `{"stdout":"it worked"}`, `{"stdout":"it worked"}`, 1, false, "step.resolved"},
	}
	for _, c := range cases {
		t.Run(string(c.resolution), func(t *testing.T) {
			h := newHarness(t)
			spec := toolSpec("make deploy")
			tool := &effect{result: "done again"}
			h.crashInStep(spec, tool)
			j := h.open(h.takeOver())
			var nr *journal.NeedsResolution
			if _, err := j.Do(bg, spec, tool.fn); !errors.As(err, &nr) {
				t.Fatalf("after the crash: %v, want NeedsResolution", err)
			}
			h.park(j, spec.Key)
			var result []byte
			if c.supplied != "" {
				result = []byte(c.supplied)
			}
			if err := h.st.ResolveStep(bg, h.run, spec.Key, c.resolution, result); err != nil {
				t.Fatalf("ResolveStep(%s): %v", c.resolution, err)
			}
			// The resolution requeued the run: it is claimable without expiring anything.
			j = h.open(h.claim())
			out, err := j.Do(bg, spec, tool.fn)
			if err != nil || out.Skipped != c.skipped || string(out.Result) != c.wantResult {
				t.Fatalf("resolved Do: %+v (result %s), %v; want result %s skipped=%v", out, out.Result, err, c.wantResult, c.skipped)
			}
			if tool.calls != c.wantCalls {
				t.Errorf("effect calls %d, want %d", tool.calls, c.wantCalls)
			}
			if s := h.step(spec.Key); s.State != api.StepCompleted {
				t.Errorf("step state %s, want Completed", s.State)
			}
			if !contains(h.events(), c.event+" "+spec.Key) {
				t.Errorf("events %v, want %s", h.events(), c.event)
			}
			// After the resolution the step replays like any completed one.
			j = h.open(h.takeOver())
			again, err := j.Do(bg, spec, tool.fn)
			if err != nil || !again.Replayed || again.Skipped != c.skipped || string(again.Result) != c.wantResult {
				t.Errorf("replay after resolution: %+v, %v", again, err)
			}
			if tool.calls != c.wantCalls {
				t.Errorf("replay after resolution ran the effect (calls %d)", tool.calls)
			}
		})
	}
}

// A replay that asks for a step with other arguments than were recorded diverged: it is refused
// with ErrNondeterminism and the effect is not run, for a completed, an interrupted and an
// awaited step.
func TestReplayChangedRequestDiverges(t *testing.T) {
	h := newHarness(t)
	j := h.open(h.lease)
	tool := &effect{result: "ok"}
	if _, err := j.Do(bg, toolSpec("go test ./..."), tool.fn); err != nil {
		t.Fatal(err)
	}
	model := journal.Spec{Key: "t1/model/1", Kind: "model", Args: map[string]any{"model": "m", "messages": 2}, HashOf: journal.Encoded(`{"messages":["a","b"]}`), Safe: true}
	call := &effect{result: "answer"}
	if _, err := j.Do(bg, model, call.fn); err != nil {
		t.Fatal(err)
	}
	if _, _, err := j.Await(bg, journal.Spec{Key: "t1/approval/2", Kind: "approval", Args: map[string]string{"command": "make deploy"}}); err != nil {
		t.Fatal(err)
	}

	j = h.open(h.takeOver())
	if _, err := j.Do(bg, toolSpec("go test ./... && curl x"), tool.fn); !errors.Is(err, journal.ErrNondeterminism) {
		t.Errorf("changed tool arguments: %v, want ErrNondeterminism", err)
	}
	// The summary (Args) is the same; the hashed request is not.
	changed := model
	changed.HashOf = journal.Encoded(`{"messages":["a","b","c"]}`)
	if _, err := j.Do(bg, changed, call.fn); !errors.Is(err, journal.ErrNondeterminism) {
		t.Errorf("changed model request: %v, want ErrNondeterminism", err)
	}
	if _, _, err := j.Await(bg, journal.Spec{Key: "t1/approval/2", Kind: "approval", Args: map[string]string{"command": "make deploy --force"}}); !errors.Is(err, journal.ErrNondeterminism) {
		t.Errorf("changed approval arguments: %v, want ErrNondeterminism", err)
	}
	if tool.calls != 1 || call.calls != 1 {
		t.Errorf("a diverged replay ran effects: tool %d, model %d calls (want 1 each)", tool.calls, call.calls)
	}
	// Same request, same answer.
	if out, err := j.Do(bg, model, call.fn); err != nil || !out.Replayed {
		t.Errorf("unchanged model request: %+v, %v", out, err)
	}
}

// Replay costs nothing: a billed model step is charged once to the credits ledger; replaying it
// (again and again, under new leases) neither calls the model nor charges again, and reports the
// recorded cost. A billed step interrupted and repeated is charged once, for the attempt that
// completed.
func TestReplayCostsNothing(t *testing.T) {
	h := newHarness(t)
	if _, err := h.st.AddCredits(bg, 1_000_000, "test"); err != nil {
		t.Fatal(err)
	}
	reserve := func(key string, attempt int) {
		t.Helper()
		res, err := h.st.ReserveCredits(bg, h.lease, store.Reservation{Run: h.run, StepKey: key, Attempt: attempt, Amount: 50_000})
		if err != nil || !res.OK || !res.Enforced {
			t.Fatalf("ReserveCredits(%s #%d): %+v, %v", key, attempt, res, err)
		}
	}
	spec := func(key string) journal.Spec {
		return journal.Spec{Key: key, Kind: "model", Title: "model call", Args: map[string]string{"model": "claude-haiku-4-5"}, Safe: true, Bill: true}
	}
	model := &effect{result: map[string]string{"text": "4"}, cost: ptr(int64(1234))}

	j := h.open(h.lease)
	reserve("t1/model/0", 1)
	if out, err := j.Do(bg, spec("t1/model/0"), model.fn); err != nil || *out.CostMicros != 1234 {
		t.Fatalf("model step: %+v, %v", out, err)
	}
	// A second billed step, interrupted after its intent and repeated after a takeover.
	reserve("t1/model/1", 1)
	h.crashInStep(spec("t1/model/1"), model)
	j = h.open(h.takeOver())
	reserve("t1/model/1", 2)
	if out, err := j.Do(bg, spec("t1/model/0"), model.fn); err != nil || !out.Replayed || out.CostMicros == nil || *out.CostMicros != 1234 {
		t.Fatalf("replayed model step: %+v, %v; want replayed with its recorded cost", out, err)
	}
	if out, err := j.Do(bg, spec("t1/model/1"), model.fn); err != nil || out.Replayed {
		t.Fatalf("repeated model step: %+v, %v", out, err)
	}
	if model.calls != 3 {
		t.Fatalf("model calls %d, want 3 (step 0, step 1 before the crash, step 1 repeated)", model.calls)
	}

	for range 3 {
		j = h.open(h.takeOver())
		for _, key := range []string{"t1/model/0", "t1/model/1"} {
			if out, err := j.Do(bg, spec(key), model.fn); err != nil || !out.Replayed {
				t.Fatalf("replay %s: %+v, %v", key, out, err)
			}
		}
	}
	if model.calls != 3 {
		t.Errorf("replays called the model: %d calls, want 3", model.calls)
	}
	bal, ledger, err := h.st.Credits(bg, 0)
	if err != nil {
		t.Fatal(err)
	}
	charges := map[string]int{}
	for _, e := range ledger {
		if e.Kind == "charge" {
			charges[e.StepKey]++
		}
	}
	if bal.Charged != 2*1234 || charges["t1/model/0"] != 1 || charges["t1/model/1"] != 1 {
		t.Errorf("charged %d with charges %v, want 2468: each step once", bal.Charged, charges)
	}
	if bal.Reserved != 0 {
		t.Errorf("%d micro-dollars still reserved, want 0", bal.Reserved)
	}
}

// A journal abandoned by a crashed process cannot write once another took the run over: its
// commit is fenced, and the step it would have completed stays as the new owner left it.
func TestReplayAbandonedJournalIsFenced(t *testing.T) {
	h := newHarness(t)
	old := h.open(h.lease)
	tool := &effect{result: "late"}
	h.takeOver()
	if _, err := old.Do(bg, toolSpec("echo late"), tool.fn); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("old journal after takeover: %v, want ErrFenced", err)
	}
	if tool.calls != 0 {
		t.Errorf("the fenced journal ran the effect %d times (its intent was refused)", tool.calls)
	}
	steps, err := h.st.ListSteps(bg, h.run)
	if err != nil || len(steps) != 0 {
		t.Errorf("steps %v, %v; want none", steps, err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// A drive whose runner says the lease may no longer be worked on (store.CheckLease: the runner's
// self-fence deadline has passed) starts no step: the effect does not run and no intent is left
// Started for the next owner to find interrupted. A completed step still replays (it does nothing).
func TestLeaseCheckStopsStepsBeforeTheirEffect(t *testing.T) {
	h := newHarness(t)
	j := h.open(h.lease)
	tool := &effect{result: map[string]string{"stdout": "hi\n"}}
	if _, err := j.Do(bg, toolSpec("echo hi"), tool.fn); err != nil {
		t.Fatalf("first Do: %v", err)
	}
	fenced := fmt.Errorf("%w: past the self-fence deadline", store.ErrFenced)
	ctx := store.WithLeaseCheck(bg, func() error { return fenced })
	if out, err := j.Do(ctx, toolSpec("echo hi"), tool.fn); err != nil || !out.Replayed {
		t.Fatalf("replaying a completed step under a failed check: %+v, %v; want the recorded result", out, err)
	}
	next := journal.Spec{Key: "t2/tool/0", Kind: "tool", Title: "bash echo again", Args: map[string]string{"command": "echo again"}}
	_, err := j.Do(ctx, next, tool.fn)
	if !errors.Is(err, store.ErrFenced) {
		t.Fatalf("Do under a failed lease check: %v, want store.ErrFenced", err)
	}
	if tool.calls != 1 {
		t.Errorf("the effect ran %d times, want once (not under the failed check)", tool.calls)
	}
	steps, err := h.st.ListSteps(bg, h.run)
	if err != nil {
		t.Fatal(err)
	}
	if len(steps) != 1 {
		t.Errorf("steps after the refused one: %v, want only the first (no intent left Started)", steps)
	}
}
