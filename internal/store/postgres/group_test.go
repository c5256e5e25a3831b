package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

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

	// A third batch: each member ends its lease with the files it saved (in its fence
	// statement); the stale one's release ends nothing.
	wake := now.Add(time.Hour)
	release := func(key string) store.Write {
		return store.Write{Release: true, WakeAt: &wake, Status: &api.AgentRunStatus{Phase: api.PhaseWaiting, Message: key},
			Files: []store.FileWrite{{Path: key, Content: []byte(key), Mode: 0o644}}}
	}
	third := []*commitReq{{ctx: ctx, l: old, w: release("s3")}, {ctx: ctx, l: live, w: release("l3")}}
	s.commitGroup(third)
	if !errors.Is(third[0].err, store.ErrFenced) || third[1].err != nil {
		t.Errorf("release batch: stale err = %v, live err = %v; want ErrFenced, nil", third[0].err, third[1].err)
	}
	leaseOf := func(run string) (owner *string, claimable *time.Time) {
		t.Helper()
		if err := s.pool.QueryRow(ctx, `SELECT lease_owner, claimable_at FROM runs WHERE name = $1`, run).Scan(&owner, &claimable); err != nil {
			t.Fatal(err)
		}
		return owner, claimable
	}
	if owner, _ := leaseOf("stale"); owner == nil || *owner != "new" {
		t.Errorf("stale run's lease after the stale release: owner %v, want still new", owner)
	}
	if owner, claimable := leaseOf("live"); owner != nil || claimable == nil || !claimable.Equal(wake.Truncate(time.Microsecond)) {
		t.Errorf("live run after its release: owner %v, claimable at %v; want no owner, claimable at %v", owner, claimable, wake)
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
	}{{"stale", 0, 0, 0, ""}, {"bad", 0, 0, 0, ""}, {"live", 2, 2, 3, "l3"}} {
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
	h := newHeldStore(t)
	s, ctx := h.s, context.Background()
	newRun := func(name string) *api.AgentRun {
		return &api.AgentRun{Metadata: api.ObjectMeta{Name: name}, Spec: api.AgentRunSpec{Agent: "a"}, Status: api.AgentRunStatus{Phase: api.PhaseQueued}}
	}
	for _, name := range []string{"ev-0", "ev-1", "ev-2", "ev-3", "ev-4", "ev-5", "ev-6", "ev-7", "leased"} {
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

	h.hold()
	var wg sync.WaitGroup
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
	batches := h.release(func() { wg.Wait() })
	t.Logf("%d writes queued behind %d held committers went out in %d batches", queued, committers, batches)
	if batches > committers {
		t.Errorf("%d queued writes took %d batches; want them grouped, at most %d (one per committer)", queued, batches, committers)
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

// heldStore is a store whose committers a test can hold: hold has each of them wait, inside its
// batch, on the row of the run "held", which the test has locked; the writes made meanwhile
// queue up, and release lets them all go.
type heldStore struct {
	t       *testing.T
	s       *Store
	admin   *pgxpool.Pool
	schema  string
	app     string
	tx      pgx.Tx
	pending sync.WaitGroup
	errs    []error
}

func newHeldStore(t *testing.T) *heldStore {
	t.Helper()
	base, admin := testDB(t)
	var b [4]byte
	rand.Read(b[:])
	h := &heldStore{t: t, admin: admin, app: "agentrun_group_" + hex.EncodeToString(b[:])}
	u := freshSchema(t, base, admin)
	h.schema = schemaOfURL(t, u)
	u = strings.Replace(u, "pool_max_conns=2", "pool_max_conns=4", 1) + "&application_name=" + h.app
	h.s = mustOpen(t, u)
	t.Cleanup(func() { h.s.Close() })
	r := &api.AgentRun{Metadata: api.ObjectMeta{Name: "held"}, Spec: api.AgentRunSpec{Agent: "a"}, Status: api.AgentRunStatus{Phase: api.PhaseQueued}}
	if err := h.s.CreateRun(context.Background(), r); err != nil {
		t.Fatalf("CreateRun held: %v", err)
	}
	return h
}

// hold locks the row of "held" and returns once every committer waits on it with an append.
func (h *heldStore) hold() {
	t, ctx := h.t, context.Background()
	t.Helper()
	tx, err := h.admin.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(context.Background()) })
	if _, err := tx.Exec(ctx, `SELECT 1 FROM `+pgx.Identifier{h.schema, "runs"}.Sanitize()+` WHERE name = 'held' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	h.tx = tx
	h.errs = make([]error, committers)
	for i := range committers {
		h.pending.Add(1)
		go func() {
			defer h.pending.Done()
			h.errs[i] = h.s.AppendEvents(ctx, "held", []api.Event{{Type: "Held"}})
		}()
	}
	waitFor(t, "every committer waiting on the locked row", func() bool {
		var n int
		err := h.admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, h.app+" (commits)").Scan(&n)
		return err == nil && n == committers
	})
}

// release unlocks the row, waits for the held appends and for wait (the test's writes), and
// returns how many batches were sent after the hold's own.
func (h *heldStore) release(wait func()) int64 {
	t := h.t
	t.Helper()
	before := h.s.batches.Load()
	if err := h.tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.pending.Wait()
	wait()
	for i, err := range h.errs {
		if err != nil {
			t.Errorf("append to the held run %d: %v", i, err)
		}
	}
	return h.s.batches.Load() - before
}

// TestGroupCommitMessages holds every committer, sends messages from many goroutines (to six
// runs, each two unkeyed and two under one key with different payloads; two to a run parked
// waiting on a message; one to a run deleted while its message waits for a committer; and some
// answered without a write: a key used before, a run that does not exist, a finished run), then
// lets go. The queued messages share a few batches and each gets its own outcome: one message
// per key, seqs without gaps, the parked run queued again, the deleted run's message refused
// alone.
func TestGroupCommitMessages(t *testing.T) {
	h := newHeldStore(t)
	s, ctx := h.s, context.Background()
	create := func(name string, st api.AgentRunStatus) {
		t.Helper()
		if err := s.CreateRun(ctx, &api.AgentRun{Metadata: api.ObjectMeta{Name: name}, Spec: api.AgentRunSpec{Agent: "a"}, Status: st}); err != nil {
			t.Fatalf("CreateRun %s: %v", name, err)
		}
	}
	const chats = 6
	for i := range chats {
		create(fmt.Sprintf("chat-%d", i), api.AgentRunStatus{Phase: api.PhaseQueued})
	}
	create("parked", api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: api.ReasonMessage, Message: "waiting for a message"})
	create("doomed", api.AgentRunStatus{Phase: api.PhaseQueued})
	create("done", api.AgentRunStatus{Phase: api.PhaseSucceeded})
	first, created, err := s.AddMessage(ctx, "chat-0", "used", "first")
	if err != nil || !created {
		t.Fatalf("AddMessage before the hold: created %v, err %v", created, err)
	}

	h.hold()
	type result struct {
		run, key, payload string
		msg               api.Message
		created           bool
		err               error
	}
	var sends []*result
	for i := range chats {
		run := fmt.Sprintf("chat-%d", i)
		sends = append(sends, &result{run: run, payload: "u1"}, &result{run: run, payload: "u2"},
			&result{run: run, key: "dup", payload: "d1"}, &result{run: run, key: "dup", payload: "d2"})
	}
	sends = append(sends, &result{run: "parked", payload: "p1"}, &result{run: "parked", payload: "p2"}, &result{run: "doomed", payload: "x"})
	queued := len(sends)
	sends = append(sends, &result{run: "chat-0", key: "used", payload: "again"}, &result{run: "no-such-run", payload: "x"}, &result{run: "done", payload: "x"})
	var wg sync.WaitGroup
	send := func(r *result) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.msg, r.created, r.err = s.AddMessage(ctx, r.run, r.key, r.payload)
		}()
	}
	for _, r := range sends[:queued] {
		send(r)
	}
	waitFor(t, "the messages queued for a committer", func() bool { return s.waiting.Load() == int64(queued) })
	// The messages that need no write are answered while every committer is held.
	for _, r := range sends[queued:] {
		r.msg, r.created, r.err = s.AddMessage(ctx, r.run, r.key, r.payload)
	}
	// doomed's message has read its run and waits for a committer: delete the run under it.
	if err := s.DeleteRun(ctx, "doomed"); err != nil {
		t.Fatal(err)
	}
	batches := h.release(wg.Wait)
	t.Logf("%d messages queued behind %d held committers went out in %d batches", queued, committers, batches)
	// One more batch than committers: of the two messages to the parked run, the one that comes
	// second finds the run no longer waiting (the first queued it again) and writes again.
	if batches > committers+1 {
		t.Errorf("%d queued messages took %d batches; want them grouped, at most %d", queued, batches, committers+1)
	}

	byRun := map[string][]*result{}
	for _, r := range sends {
		byRun[r.run] = append(byRun[r.run], r)
	}
	for run, rs := range byRun {
		switch run {
		case "no-such-run", "doomed":
			if !errors.Is(rs[0].err, store.ErrNotFound) {
				t.Errorf("message to %s: %v, want ErrNotFound", run, rs[0].err)
			}
			continue
		case "done":
			if !errors.Is(rs[0].err, store.ErrFinished) {
				t.Errorf("message to the finished run: %v, want ErrFinished", rs[0].err)
			}
			continue
		}
		stored, err := s.ListMessages(ctx, run, 0)
		if err != nil {
			t.Fatal(err)
		}
		bySeq := map[int64]api.Message{}
		for i, m := range stored {
			if m.Seq != int64(i+1) {
				t.Errorf("%s: message %d has seq %d, want %d", run, i, m.Seq, i+1)
			}
			bySeq[m.Seq] = m
		}
		var dups []*result
		for _, r := range rs {
			if r.err != nil {
				t.Errorf("message %q to %s: %v", r.payload, run, r.err)
				continue
			}
			if got := bySeq[r.msg.Seq]; got.Payload != r.msg.Payload || got.Key != r.key {
				t.Errorf("message %q to %s answered seq %d %q (key %q); stored there: %q (key %q)", r.payload, run, r.msg.Seq, r.msg.Payload, r.key, got.Payload, got.Key)
			}
			switch {
			case r.key == "dup":
				dups = append(dups, r)
			case r.key == "used":
				if r.created || r.msg.Seq != first.Seq || r.msg.Payload != "first" {
					t.Errorf("message under a used key: created %v, seq %d, payload %q; want the first (seq %d, %q), not created", r.created, r.msg.Seq, r.msg.Payload, first.Seq, "first")
				}
			case !r.created || r.msg.Payload != r.payload:
				t.Errorf("message %q to %s: created %v, payload %q; want a new message with its own payload", r.payload, run, r.created, r.msg.Payload)
			}
		}
		if len(dups) == 2 && (dups[0].created == dups[1].created || dups[0].msg.Seq != dups[1].msg.Seq) {
			t.Errorf("%s: two messages under one key: created %v and %v, seqs %d and %d; want one created, both answered with it",
				run, dups[0].created, dups[1].created, dups[0].msg.Seq, dups[1].msg.Seq)
		}
		// One message per key (on chat-0 the used key's, stored before the hold, stands for the
		// one answered with it).
		want := len(rs) - len(dups)/2
		if len(stored) != want {
			t.Errorf("%s has %d messages, want %d", run, len(stored), want)
		}
	}
	r, err := s.GetRun(ctx, "parked")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status.Phase != api.PhaseQueued || r.Status.Reason != "" {
		t.Errorf("the parked run after its messages: phase %s, reason %q; want Queued, no reason", r.Status.Phase, r.Status.Reason)
	}
}

// TestAddMessageLocked writes messages the way AddMessage does once the run kept changing under
// its grouped writes (addMessageLocked): the parked run is queued again, a key is stored once.
func TestAddMessageLocked(t *testing.T) {
	base, admin := testDB(t)
	s := mustOpen(t, freshSchema(t, base, admin))
	defer s.Close()
	ctx := context.Background()
	r := &api.AgentRun{Metadata: api.ObjectMeta{Name: "parked"}, Spec: api.AgentRunSpec{Agent: "a"},
		Status: api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: api.ReasonQuestion}}
	if err := s.CreateRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	for i, payload := range []string{"yes", "no"} {
		m := &messageWrite{run: "parked", key: "answer", payload: payload}
		if err := s.addMessageLocked(ctx, m); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if m.created != (i == 0) || m.msg.Seq != 1 || m.msg.Payload != "yes" {
			t.Errorf("message %d: created %v, seq %d, payload %q; want created only the first time, seq 1, %q", i, m.created, m.msg.Seq, m.msg.Payload, "yes")
		}
	}
	if err := s.addMessageLocked(ctx, &messageWrite{run: "missing"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("message to a missing run: %v, want ErrNotFound", err)
	}
	got, err := s.GetRun(ctx, "parked")
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != api.PhaseQueued {
		t.Errorf("parked run after the message: phase %s, want Queued", got.Status.Phase)
	}
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
