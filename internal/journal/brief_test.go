package journal_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/store"
)

// countingStore counts the journal's commits to the real store under it.
type countingStore struct {
	journal.Store
	commits int
}

func (c *countingStore) Commit(ctx context.Context, l store.Lease, w store.Write) (store.Signals, error) {
	c.commits++
	return c.Store.Commit(ctx, l, w)
}

// replaysUnrun opens the journal under a new lease and checks spec replays with result want,
// without its effect running again.
func (h *harness) replaysUnrun(spec journal.Spec, want string) {
	h.t.Helper()
	j := h.open(h.takeOver())
	again, err := j.Do(bg, spec, func(context.Context) (any, *int64, error) {
		h.t.Errorf("%s, completed, ran again on replay", spec.Key)
		return nil, nil, nil
	})
	if err != nil || !again.Replayed || string(again.Result) != want {
		h.t.Errorf("replay of %s: %+v, %v; want %s replayed", spec.Key, again, err, want)
	}
}

func (h *harness) openCounting(l store.Lease) (*journal.Journal, *countingStore) {
	h.t.Helper()
	cs := &countingStore{Store: h.st}
	j, err := journal.Open(bg, cs, l)
	if err != nil {
		h.t.Fatalf("journal.Open: %v", err)
	}
	cs.commits = 0
	return j, cs
}

// A Brief step (a read-only folder tool) writes its intent in the same commit as its result:
// one commit, not two; the store holds it Completed at attempt 1 and the timeline has both its
// events, started first. Brief without Safe means nothing: the intent is committed before the
// effect runs.
func TestBriefStepCommitsItsIntentWithItsOutcome(t *testing.T) {
	for _, tc := range []struct {
		name        string
		safe, brief bool
		wantCommits int
		wantIntent  bool // the intent is in the store while the effect runs
	}{
		{"brief", true, true, 1, false},
		{"safe, not brief", true, false, 2, true},
		{"brief but not safe", false, true, 2, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			j, cs := h.openCounting(h.lease)
			spec := journal.Spec{Key: "t0/tool/0", Kind: api.StepKindTool, Title: "ls .", Args: map[string]string{"path": "."}, Safe: tc.safe, Brief: tc.brief}
			var intentSeen bool
			out, err := j.Do(bg, spec, func(ctx context.Context) (any, *int64, error) {
				steps, err := h.st.ListSteps(ctx, h.run)
				intentSeen = err == nil && len(steps) == 1 && steps[0].State == api.StepStarted
				return "a.txt", nil, err
			})
			if err != nil || string(out.Result) != `"a.txt"` {
				t.Fatalf("Do: %+v, %v", out, err)
			}
			if cs.commits != tc.wantCommits {
				t.Errorf("%d commits, want %d", cs.commits, tc.wantCommits)
			}
			if intentSeen != tc.wantIntent {
				t.Errorf("intent in the store during the effect: %v, want %v", intentSeen, tc.wantIntent)
			}
			if s := h.step(spec.Key); s.State != api.StepCompleted || s.Attempt != 1 || string(s.Result) != `"a.txt"` || s.ArgsHash == "" {
				t.Errorf("step %s attempt %d result %s hash %q, want Completed attempt 1 with its result and args hash", s.State, s.Attempt, s.Result, s.ArgsHash)
			}
			evs := h.events()
			started, completed := slices.Index(evs, "step.started "+spec.Key), slices.Index(evs, "step.completed "+spec.Key)
			if started < 0 || completed < started {
				t.Errorf("events %v: want step.started then step.completed for %s", evs, spec.Key)
			}
			// Replayed under a new lease, it is not run again.
			h.replaysUnrun(spec, `"a.txt"`)
		})
	}
}

// Killed during its effect, a Brief step leaves nothing in the store: after a takeover it runs
// again from attempt 1, as any safe step found interrupted is repeated.
func TestBriefStepKilledDuringItsEffectRunsAgain(t *testing.T) {
	h := newHarness(t)
	spec := journal.Spec{Key: "t0/tool/0", Kind: api.StepKindTool, Title: "read a.txt", Args: map[string]string{"path": "a.txt"}, Safe: true, Brief: true}
	read := &effect{result: "contents"}
	j := h.open(h.lease)
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	if _, err := j.Do(ctx, spec, read.crashAfter(cancel)); !errors.Is(err, context.Canceled) {
		t.Fatalf("crashing Do: %v, want context.Canceled", err)
	}
	steps, err := h.st.ListSteps(bg, h.run)
	if err != nil || len(steps) != 0 {
		t.Fatalf("after the crash the store holds %v (%v), want no step", steps, err)
	}
	j2 := h.open(h.takeOver())
	out, err := j2.Do(bg, spec, read.fn)
	if err != nil || out.Replayed || string(out.Result) != `"contents"` {
		t.Fatalf("after the takeover: %+v, %v", out, err)
	}
	if read.calls != 2 {
		t.Errorf("the effect ran %d times, want 2 (before the crash and once more)", read.calls)
	}
	if s := h.step(spec.Key); s.State != api.StepCompleted || s.Attempt != 1 {
		t.Errorf("step %s attempt %d, want Completed attempt 1", s.State, s.Attempt)
	}
}

// A Brief step whose effect fails is recorded Failed with its intent, in one commit.
func TestBriefStepFailureIsRecorded(t *testing.T) {
	h := newHarness(t)
	j, cs := h.openCounting(h.lease)
	spec := journal.Spec{Key: "t0/tool/0", Kind: api.StepKindTool, Title: "read b.txt", Args: map[string]string{"path": "b.txt"}, Safe: true, Brief: true}
	boom := errors.New("b.txt: no such file")
	if _, err := j.Do(bg, spec, func(context.Context) (any, *int64, error) { return nil, nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("Do: %v, want %v", err, boom)
	}
	if cs.commits != 1 {
		t.Errorf("%d commits, want 1", cs.commits)
	}
	if s := h.step(spec.Key); s.State != api.StepFailed || s.Error != boom.Error() || s.Attempt != 1 {
		t.Errorf("step %s error %q attempt %d, want Failed %q attempt 1", s.State, s.Error, s.Attempt, boom)
	}
}

// A Brief step whose effect ends with its context (a workflow node's deadline) records nothing,
// and leaves no start on the timeline either: the run's next commit carries no step.started for
// a step the store does not have.
func TestBriefStepCutOffLeavesNoStartOnTheTimeline(t *testing.T) {
	h := newHarness(t)
	j := h.open(h.lease)
	spec := journal.Spec{Key: "wf/grep", Kind: api.StepKindTool, Title: "grep TODO", Args: map[string]string{"pattern": "TODO"}, Safe: true, Brief: true}
	ctx, cancel := context.WithCancel(bg)
	if _, err := j.Do(ctx, spec, func(ctx context.Context) (any, *int64, error) {
		cancel() // the node's deadline passes during the effect
		return nil, nil, ctx.Err()
	}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Do: %v, want context.Canceled", err)
	}
	if _, err := j.Commit(bg, &api.AgentRunStatus{Phase: api.PhaseRunning, AgentRevision: 1}, false, nil); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if steps, err := h.st.ListSteps(bg, h.run); err != nil || len(steps) != 0 {
		t.Errorf("steps %v (%v), want none", steps, err)
	}
	if evs := h.events(); slices.Contains(evs, "step.started "+spec.Key) {
		t.Errorf("events %v carry a start of %s, which the journal does not have", evs, spec.Key)
	}
}

// With a status staged (a fresh run's Running, to go out with the next commit before any
// effect), a Brief step commits its intent first, as any step does: the status is written before
// the effect and that commit's signals are acted on.
func TestBriefStepAfterAStagedStatusCommitsItsIntent(t *testing.T) {
	h := newHarness(t)
	j, cs := h.openCounting(h.lease)
	j.Stage(&api.AgentRunStatus{Phase: api.PhaseRunning, AgentRevision: 1})
	spec := journal.Spec{Key: "t0/tool/0", Kind: api.StepKindTool, Title: "ls .", Args: map[string]string{"path": "."}, Safe: true, Brief: true}
	var phase api.Phase
	if _, err := j.Do(bg, spec, func(ctx context.Context) (any, *int64, error) {
		run, err := h.st.GetRun(ctx, h.run)
		if err == nil {
			phase = run.Status.Phase
		}
		return "a.txt", nil, err
	}); err != nil {
		t.Fatalf("Do: %v", err)
	}
	if phase != api.PhaseRunning {
		t.Errorf("the run was %q during the effect, want Running (the staged status written before it)", phase)
	}
	if cs.commits != 2 {
		t.Errorf("%d commits, want 2 (the intent with the staged status, then the result)", cs.commits)
	}
}
