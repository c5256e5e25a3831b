package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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

// TestGroupCommitServerWrites holds every committer on a locked run row, queues 60 writes from
// many goroutines (runs created, one under a name taken, events appended, one to a run that does
// not exist, and a runner's fenced commit), then lets go: they go out in a few batches, not one
// transaction each, and each write gets its own outcome.
func TestGroupCommitServerWrites(t *testing.T) {
	base, admin := testDB(t)
	var b [4]byte
	rand.Read(b[:])
	app := "agentrun_group_" + hex.EncodeToString(b[:])
	u := freshSchema(t, base, admin)
	schema := schemaOf(t, u)
	u = strings.Replace(u, "pool_max_conns=2", "pool_max_conns=4", 1) + "&application_name=" + app
	s := mustOpen(t, u)
	defer s.Close()
	ctx := context.Background()
	newRun := func(name string) *api.AgentRun {
		return &api.AgentRun{Metadata: api.ObjectMeta{Name: name}, Spec: api.AgentRunSpec{Agent: "a"}, Status: api.AgentRunStatus{Phase: api.PhaseQueued}}
	}
	for _, name := range []string{"held", "ev-0", "ev-1", "ev-2", "ev-3", "ev-4", "ev-5", "ev-6", "ev-7", "leased"} {
		if err := s.CreateRun(ctx, newRun(name)); err != nil {
			t.Fatalf("CreateRun %s: %v", name, err)
		}
	}
	ls, err := s.ClaimRuns(ctx, "r", 64, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var lease store.Lease
	for _, l := range ls {
		if l.Run == "leased" {
			lease = l
		}
	}

	// Hold the row of "held": the committers' batches appending to it wait on the lock.
	tx, err := admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+pgx.Identifier{schema, "runs"}.Sanitize()+` WHERE name = 'held' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	heldErrs := make([]error, committers)
	for i := range committers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			heldErrs[i] = s.AppendEvents(ctx, "held", []api.Event{{Type: "Held"}})
		}()
	}
	waitFor(t, "every committer waiting on the locked row", func() bool {
		var n int
		err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, app+" (commits)").Scan(&n)
		return err == nil && n == committers
	})

	const creates = 50
	createErrs := make([]error, creates+1)
	for i := range creates + 1 {
		name := fmt.Sprintf("new-%02d", i)
		if i == creates {
			name = "ev-0" // taken
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			createErrs[i] = s.CreateRun(ctx, newRun(name))
		}()
	}
	eventErrs := make([]error, 9)
	for i := range 9 {
		run := fmt.Sprintf("ev-%d", i)
		if i == 8 {
			run = "no-such-run"
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			eventErrs[i] = s.AppendEvents(ctx, run, []api.Event{{Type: "Note", Message: run}})
		}()
	}
	var commitErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, commitErr = s.Commit(ctx, lease, store.Write{Events: []api.Event{{Type: "Mine"}}})
	}()
	const queued = creates + 1 + 9 + 1
	waitFor(t, "the writes queued for a committer", func() bool { return s.waiting.Load() == queued })
	before := s.batches.Load()
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	batches := s.batches.Load() - before
	t.Logf("%d writes queued behind %d held committers went out in %d batches", queued, committers, batches)
	if batches > committers {
		t.Errorf("%d queued writes took %d batches; want them grouped, at most %d (one per committer)", queued, batches, committers)
	}

	for i, err := range heldErrs {
		if err != nil {
			t.Errorf("append to the held run %d: %v", i, err)
		}
	}
	for i, err := range createErrs {
		if i == creates {
			if !errors.Is(err, store.ErrAlreadyExists) {
				t.Errorf("create under a taken name: %v, want ErrAlreadyExists", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("create new-%02d: %v", i, err)
		}
	}
	for i, err := range eventErrs {
		if i == 8 {
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("append to a run that does not exist: %v, want ErrNotFound", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("append to ev-%d: %v", i, err)
		}
	}
	if commitErr != nil {
		t.Errorf("fenced commit in the batch: %v", commitErr)
	}
	// Everything applied once: the new runs are claimable, each events run has its event, the held
	// run its four.
	got, err := s.ClaimRuns(ctx, "r2", 200, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != creates {
		t.Errorf("claimable after the batch: %d runs, want the %d created", len(got), creates)
	}
	for run, want := range map[string]int{"held": committers, "ev-3": 1, "leased": 1} {
		evs, err := s.ListEvents(ctx, run, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != want {
			t.Errorf("%s has %d events, want %d", run, len(evs), want)
		}
		for i, e := range evs {
			if e.Seq != int64(i+1) {
				t.Errorf("%s event %d has seq %d, want %d", run, i, e.Seq, i+1)
			}
		}
	}
}

func schemaOf(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return p.Query().Get("search_path")
}

// waitFor polls cond every 10 ms for up to 30 s, naming what it waits on if it never holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
