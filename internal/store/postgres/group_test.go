package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// TestGroupCommitFencesEachMember sends runs' writes as one batch (commitGroup, as the committer
// does with writes waiting together): a write under a stale lease with a live one, then a write
// that fails a check (a step completed that was never started) with a live one. The stale one is
// refused alone, the failing one fails alone, and the live ones apply in full.
func TestGroupCommitFencesEachMember(t *testing.T) {
	base, admin := testDB(t)
	s := mustOpen(t, freshSchema(t, base, admin))
	defer s.Close()
	ctx := context.Background()
	newRun := func(name string) {
		t.Helper()
		r := &api.AgentRun{Metadata: api.ObjectMeta{Name: name}, Spec: api.AgentRunSpec{Agent: "a"}, Status: api.AgentRunStatus{Phase: api.PhaseQueued}}
		if err := s.CreateRun(ctx, r); err != nil {
			t.Fatalf("CreateRun %s: %v", name, err)
		}
	}
	claim := func(owner, run string, ttl time.Duration) store.Lease {
		t.Helper()
		ls, err := s.ClaimRuns(ctx, owner, 10, ttl)
		if err != nil {
			t.Fatalf("ClaimRuns: %v", err)
		}
		for _, l := range ls {
			if l.Run == run {
				return l
			}
		}
		t.Fatalf("ClaimRuns(%s) = %v, want %s among them", owner, ls, run)
		return store.Lease{}
	}

	newRun("stale")
	old := claim("old", "stale", time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	claim("new", "stale", time.Hour) // bumps the generation: old is stale now
	newRun("bad")
	bad := claim("bad-owner", "bad", time.Hour)
	newRun("live")
	live := claim("live-owner", "live", time.Hour)

	now := time.Now().UTC()
	step := func(key string, state api.StepState) api.Step {
		st := api.Step{Key: key, Kind: "tool", State: state, Attempt: 1, StartedAt: now}
		if state != api.StepStarted {
			st.CompletedAt = &now
			st.Result = []byte(`{"ok":true}`)
		}
		return st
	}
	write := func(key string) store.Write {
		return store.Write{
			Steps:  []api.Step{step(key, api.StepStarted)},
			Events: []api.Event{{Time: now, Type: "Note", Message: key}},
			Status: &api.AgentRunStatus{Phase: api.PhaseRunning, Message: key},
			Files:  []store.FileWrite{{Path: key, Content: []byte(key), Mode: 0o644}},
		}
	}
	// One batch: the stale write and the live one.
	first := []*commitReq{{ctx: ctx, l: old, w: write("s1")}, {ctx: ctx, l: live, w: write("l1")}}
	s.commitGroup(first)
	if !errors.Is(first[0].err, store.ErrFenced) {
		t.Errorf("stale member: err = %v, want ErrFenced", first[0].err)
	}
	if first[1].err != nil || first[1].phase != string(api.PhaseRunning) {
		t.Errorf("live member: err = %v, phase %q; want nil, Running", first[1].err, first[1].phase)
	}

	// A second batch: a write that fails a check, and a live one.
	badWrite := write("b1")
	badWrite.Steps = append(badWrite.Steps, step("never-started", api.StepCompleted))
	second := []*commitReq{{ctx: ctx, l: bad, w: badWrite}, {ctx: ctx, l: live, w: write("l2")}}
	s.commitGroup(second)
	if !isCode(second[0].err, errStepCode) {
		t.Errorf("failing member: err = %v, want the step check's error", second[0].err)
	}
	if second[1].err != nil {
		t.Errorf("live member of the second batch: err = %v, want nil", second[1].err)
	}

	counts := func(run string) (steps, events, files int, msg string) {
		t.Helper()
		st, err := s.ListSteps(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := s.ListEvents(ctx, run, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		fs, err := s.ListFiles(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.GetRun(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		return len(st), len(evs), len(fs), r.Status.Message
	}
	for _, c := range []struct {
		run                  string
		steps, events, files int
		msg                  string
	}{{"stale", 0, 0, 0, ""}, {"bad", 0, 0, 0, ""}, {"live", 2, 2, 2, "l2"}} {
		steps, events, files, msg := counts(c.run)
		if steps != c.steps || events != c.events || files != c.files || msg != c.msg {
			t.Errorf("%s after the batch: %d steps, %d events, %d files, status message %q; want %d, %d, %d, %q",
				c.run, steps, events, files, msg, c.steps, c.events, c.files, c.msg)
		}
	}
}
