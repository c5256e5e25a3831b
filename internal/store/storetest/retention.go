package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// recordRun gives run (the only claimable run) a completed step with arguments and a result, an
// event with data and a run-folder file, then, when phase is set, finishes it at finishedAt.
func recordRun(t *testing.T, s store.Store, run string, phase api.Phase, finishedAt time.Time) {
	t.Helper()
	l := mustClaim(t, s, newOwner("runner"), run, longTTL)
	e := ev(api.EventRunStarted, "started")
	e.Data = json.RawMessage(`{"secret":"payload"}`)
	mustCommit(t, s, l, store.Write{Steps: []api.Step{startedStep("t1/model", 1)}})
	mustCommit(t, s, l, store.Write{Steps: []api.Step{completedStep("t1/model", 1, `{"text":"the reply"}`, 42)},
		Events: []api.Event{e}, Files: []store.FileWrite{{Path: "notes.md", Content: []byte("# notes\n"), Mode: 0o644}}})
	if phase == "" {
		release(t, s, l, nil)
		return
	}
	mustCommit(t, s, l, store.Write{Release: true, Status: &api.AgentRunStatus{Phase: phase, Reason: api.ReasonCompleted, AgentRevision: 1,
		Answer: &api.Answer{Preview: "the answer", Bytes: 10}, Cost: &api.RunCost{TotalUSD: "0.000042"}, FinishedAt: &finishedAt}})
}

// testRetention: PurgePayloads drops a finished run's payloads (steps' arguments and results,
// events' data, the run folder) once it finished before the cut-off, keeps its status, step list
// and events, marks when, and never touches an unfinished run or one finished after the cut-off.
// The clock is the caller's: the cut-off and "now" are arguments, set here a month ahead.
func testRetention(t *testing.T, open opener) {
	t.Parallel()
	s := open(t)
	retention := store.DefaultRetention
	start := time.Now().UTC()
	now := start.Add(retention + 24*time.Hour) // the injected clock: 31 days later
	before := now.Add(-retention)

	mustCreateRun(t, s, "old")
	recordRun(t, s, "old", api.PhaseSucceeded, start)
	mustCreateRun(t, s, "recent")
	// Finished within the retention window (two days after the start, by the injected clock).
	recordRun(t, s, "recent", api.PhaseFailed, start.Add(48*time.Hour))
	mustCreateRun(t, s, "parked")
	recordRun(t, s, "parked", "", time.Time{}) // unfinished: Queued, with payloads

	if got, err := s.PurgePayloads(bg, start.Add(-time.Hour), now, 100); err != nil || len(got) != 0 {
		t.Fatalf("PurgePayloads with a cut-off before every run ended = %v, %v; want nothing purged", got, err)
	}
	got, err := s.PurgePayloads(bg, before, now, 100)
	if err != nil {
		t.Fatalf("PurgePayloads: %v", err)
	}
	if !slices.Equal(got, []string{"old"}) {
		t.Fatalf("PurgePayloads = %v, want [old] (recent finished inside the window, parked is not finished)", got)
	}

	r := mustGetRun(t, s, "old")
	if r.Status.PayloadsPurgedAt == nil || !r.Status.PayloadsPurgedAt.Equal(now.Truncate(time.Millisecond)) {
		t.Errorf("old: payloadsPurgedAt = %v, want the injected now %v", r.Status.PayloadsPurgedAt, now)
	}
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != "the answer" ||
		r.Status.Cost == nil || r.Status.Cost.TotalUSD != "0.000042" || r.Status.FinishedAt == nil {
		t.Errorf("old: status after the purge = %s, want phase, answer preview, cost and finishedAt kept", js(r.Status))
	}
	steps := mustListSteps(t, s, "old")
	if len(steps) != 1 || steps[0].Key != "t1/model" || steps[0].State != api.StepCompleted || steps[0].Title == "" ||
		steps[0].CostMicros == nil || *steps[0].CostMicros != 42 {
		t.Fatalf("old: steps after the purge = %s, want the step list kept", js(steps))
	}
	if len(steps[0].Args) != 0 || len(steps[0].Result) != 0 {
		t.Errorf("old: step args %s, result %s after the purge, want none", steps[0].Args, steps[0].Result)
	}
	evs, err := s.ListEvents(bg, "old", 0, 0)
	if err != nil || len(evs) == 0 {
		t.Fatalf("old: ListEvents = %d, %v; want the events kept", len(evs), err)
	}
	for _, e := range evs {
		if len(e.Data) != 0 {
			t.Errorf("old: event %d %s keeps data %s after the purge", e.Seq, e.Type, e.Data)
		}
	}
	if files, err := s.ListFiles(bg, "old"); err != nil || len(files) != 0 {
		t.Errorf("old: ListFiles after the purge = %d files, %v; want none", len(files), err)
	}

	for _, name := range []string{"recent", "parked"} {
		if r := mustGetRun(t, s, name); r.Status.PayloadsPurgedAt != nil {
			t.Errorf("%s: payloadsPurgedAt = %v, want unset", name, r.Status.PayloadsPurgedAt)
		}
		steps := mustListSteps(t, s, name)
		if len(steps) != 1 || len(steps[0].Args) == 0 || len(steps[0].Result) == 0 {
			t.Errorf("%s: steps = %s, want arguments and result kept", name, js(steps))
		}
		if files, err := s.ListFiles(bg, name); err != nil || len(files) != 1 {
			t.Errorf("%s: ListFiles = %d files, %v; want notes.md kept", name, len(files), err)
		}
		evs, _ := s.ListEvents(bg, name, 0, 0)
		kept := false
		for _, e := range evs {
			kept = kept || len(e.Data) != 0
		}
		if !kept {
			t.Errorf("%s: events lost their data", name)
		}
	}

	// Purged once: a second pass finds nothing; later, recent's turn comes, and max bounds a pass.
	if got, err := s.PurgePayloads(bg, before, now, 100); err != nil || len(got) != 0 {
		t.Errorf("second PurgePayloads = %v, %v; want nothing left to purge", got, err)
	}
	later := now.Add(3 * 24 * time.Hour)
	if got, err := s.PurgePayloads(bg, later.Add(-retention), later, 0); err != nil || len(got) != 0 {
		t.Errorf("PurgePayloads with max 0 = %v, %v; want nothing", got, err)
	}
	if got, err := s.PurgePayloads(bg, later.Add(-retention), later, 100); err != nil || !slices.Equal(got, []string{"recent"}) {
		t.Errorf("PurgePayloads three days later = %v, %v; want [recent]", got, err)
	}
	if r := mustGetRun(t, s, "parked"); r.Status.PayloadsPurgedAt != nil || api.Finished(r.Status.Phase) {
		t.Errorf("parked after every pass: %s, want untouched", js(r.Status))
	}
}
