// Package journal owns durable execution (docs/architecture.md, "The journal"): a run is a sequence
// of keyed steps; before a step with effects starts its intent is recorded under the runner's lease
// generation, on completion its result is recorded, and a completed step is never run again — after
// a restart the run replays, each completed step answering with its recorded result. A step found
// started but not completed is interrupted: repeated if it is safe, otherwise the run parks for a
// person to resolve.
package journal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/metrics"
	"agentrun.dev/agentrun/internal/store"
)

// Errors that end a drive of the run.
var (
	// ErrCancelled: a user asked to cancel the run (seen at a commit).
	ErrCancelled = errors.New("run cancellation requested")
	// ErrNondeterminism: replay reached a completed step with different arguments.
	ErrNondeterminism = errors.New("journal replay diverged")
	// ErrReleased: the drive gave its lease back (it parked) while other effects were in flight
	// (Gate); a step asked for after that does not start.
	ErrReleased = errors.New("the drive released its lease; no new step starts")
	// ErrStopped: an effect was stopped on purpose while the process lives (a message with ifBusy
	// interrupt or rollback cancelled the model call in flight). Do records the step Interrupted,
	// not Failed, and returns the error: the caller moves on without it, so the step is never
	// repeated and no person needs to resolve it.
	ErrStopped = errors.New("stopped by a message to the run")
)

// NeedsResolution is returned when an interrupted step with an uncertain outcome blocks the run.
type NeedsResolution struct {
	Step  api.Step
	Cause string
}

func (e *NeedsResolution) Error() string {
	return fmt.Sprintf("step %s was interrupted and its outcome is uncertain", e.Step.Key)
}

// Interrupted is returned by a step's effect that was cut off part way by something other than a
// crash (the computer a command ran on died under it): its outcome is uncertain, so Do records the
// step as interrupted and the run waits for a person (NeedsResolution), as after a crash.
type Interrupted struct{ Err error }

func (e *Interrupted) Error() string { return "interrupted: " + e.Err.Error() }
func (e *Interrupted) Unwrap() error { return e.Err }

// Spec describes a step.
type Spec struct {
	Key   string
	Kind  api.StepKind
	Title string
	// Args are recorded with the step; their hash must match on replay.
	Args any
	// HashOf, when set, is hashed instead of Args (for arguments too big to store, such as a whole
	// model request) while Args stays the summary shown to people.
	HashOf any
	// Safe steps are repeated when found interrupted (read-only tools, billed-to-server model calls).
	Safe bool
	// Brief, with Safe, is a step whose effect is local and quick (a read-only folder tool): its
	// intent is not committed on its own but in one write with its outcome, so it costs one commit
	// instead of two. Killed during its effect, it leaves nothing recorded and runs again (as a
	// Safe step found interrupted does, from attempt 1); its started event goes out with its end.
	// With a status staged (Stage), its intent is committed first as any step's is.
	Brief bool
	// Held, with Brief, has the step's record (intent and outcome, completed or failed) wait for
	// the drive's next commit instead of making one of its own. It is for a caller whose next
	// step commits at once, with no effect outside the run folder in between: the built-in
	// loop, where a read's result goes into the next model call's request, whose intent commit
	// then carries the read too, so nothing outside the run sees the result before the store
	// has it. Killed before that commit, the step is not recorded and runs again, as a Brief
	// step killed during its effect does; its events reach the timeline with that commit.
	Held bool
	// Ahead has the step's completion go to the store without the drive waiting for it, when
	// the store can (store.Pipeliner): the write is queued at the moment it would have been
	// committed, the drive goes on at once, and its next commit joins that write while no
	// committer has taken it (one transaction for both), or else waits for it first. It is for a
	// caller whose work until its next commit touches nothing outside the run folder: the
	// built-in loop after a model reply, whose tool calls each commit their intent before
	// their effect or are folder reads, and whose next call commits its intent before the
	// request leaves. The reply is durable when it would have been; what changes is that the
	// drive reads its folder and encodes its next request meanwhile. An end carrying files, a
	// charge or a status staged for later, and any end under a gate, is committed as usual.
	Ahead bool
	// Files, when set, is called after the effect and returns the run folder changes to save with
	// the step's completion, in the same transaction.
	Files func() ([]store.FileWrite, error)
	// Bill settles the step's credit reservation with its completion: the cost fn returns is
	// charged to the credits ledger in the same transaction (nil: charged as unknown), once.
	Bill bool
	// Status, when set, is called with the result and cost fn returned, before the completion is
	// committed; the status it returns (nil: none) is written in that same commit, so a status
	// that follows from the result (a model call's tokens and cost) costs no commit of its own.
	// It is not called for a replayed step or one a person resolved.
	Status func(result json.RawMessage, cost *int64) (*api.AgentRunStatus, error)
	// Concurrent: fn may run without the gate (Gate), at the same time as other steps' effects;
	// what it touches of the caller's state, it touches under Locked. Without a gate it means
	// nothing.
	Concurrent bool
}

// Outcome is how a step ended.
type Outcome struct {
	Result   json.RawMessage
	Replayed bool
	// Skipped is true when a person resolved the interrupted step with "skip": it did not complete
	// and the caller must say so to the agent.
	Skipped    bool
	CostMicros *int64
	// Copied is true for a step a fork copied from another run (api.Step.CopiedFrom): replayed,
	// and costing this run nothing (its recorded cost is zero; a caller reading a cost out of
	// the result, such as a list price, counts it as zero too).
	Copied bool
}

// Journal is one drive's view of a run's journal, under one lease.
type Journal struct {
	st    Store
	lease store.Lease
	steps map[string]*api.Step
	order []string
	// pending events go out with the next commit.
	pending []api.Event
	// held are the records of Held steps that ended since the last commit: the next one carries
	// them, before its own.
	held []api.Step
	// staged is a status to write with the next commit that carries none of its own (Stage).
	staged *api.AgentRunStatus
	// ahead is a step's end handed to the store without waiting (Spec.Ahead), as aheadW; the
	// next commit joins or waits for it, and so do Settle and a dev pause.
	ahead  store.Pending
	aheadW store.Write
	// aheadErr is how a write sent ahead failed: every later commit of this journal fails with
	// it, since what the drive did after that write depended on it.
	aheadErr error
	// life is the context the journal was opened with (the drive's: its lease and its runner),
	// which bounds a write sent ahead (not the step's, whose deadline would also fail the writes
	// that join it).
	life  context.Context
	now   func() time.Time
	pause pausePoint
	// last is the status most recently written (the drive's own, live, or the copy a write sent
	// ahead carries): what a run waiting for store space shows again once the write goes through.
	last *api.AgentRunStatus
	// gate, when set (Gate), is the lock every caller holds: Do lets it go while the effect runs,
	// so effects of several goroutines overlap while the journal's and the caller's bookkeeping
	// stay one goroutine's at a time. inflight counts effects running; idle is signalled when it
	// drops; released is set once a commit gave the lease back.
	gate     *sync.Mutex
	idle     *sync.Cond
	inflight int
	released bool
	// obs, when set (Observe), is told of live effects and events (tracing).
	obs Observer
	// frozen is set at a dev pause point (with a gate): no new step starts, so the process is
	// killed with every effect in flight recorded.
	frozen bool
}

// Gate makes the journal usable from several goroutines that all hold mu when they call it
// (nil: one goroutine, the default). Do unlocks mu while a Concurrent effect runs and locks it again
// before recording the result, so effects overlap and every step stays its own. A commit that
// releases the lease (a park) first waits for the effects in flight to record their results,
// and after it no new step starts (ErrReleased): a parked run leaves no step it started behind
// without its outcome.
func (j *Journal) Gate(mu *sync.Mutex) {
	j.gate = mu
	j.idle = nil
	if mu != nil {
		j.idle = sync.NewCond(mu)
	}
}

// Open loads the run's journal for a drive under lease.
func Open(ctx context.Context, st Store, lease store.Lease) (*Journal, error) {
	steps, err := st.ListSteps(ctx, lease.Run)
	if err != nil {
		return nil, fmt.Errorf("open journal of %s: %w", lease.Run, err)
	}
	j := &Journal{st: st, lease: lease, steps: map[string]*api.Step{}, now: time.Now, pause: devPause(), life: ctx}
	for i := range steps {
		j.steps[steps[i].Key] = kept(steps[i])
		j.order = append(j.order, steps[i].Key)
	}
	return j, nil
}

// Lease is the lease this journal writes under.
func (j *Journal) Lease() store.Lease { return j.lease }

// Steps returns the number of steps recorded so far.
func (j *Journal) Steps() int { return len(j.order) }

// Keys returns the recorded steps' keys in the order they were first recorded.
func (j *Journal) Keys() []string { return append([]string(nil), j.order...) }

// Forked reports whether the run is a fork: its journal starts with steps copied from another run.
func (j *Journal) Forked() bool {
	if len(j.order) == 0 {
		return false
	}
	return j.steps[j.order[0]].CopiedFrom != ""
}

// Lookup returns a recorded step as the journal keeps it (kept): what replay and the drive read
// of it, not the whole record, which the store keeps for people.
func (j *Journal) Lookup(key string) (*api.Step, bool) {
	s, ok := j.steps[key]
	return s, ok
}

// Emit queues a timeline event for the next commit.
func (j *Journal) Emit(ev api.Event) {
	if ev.Time.IsZero() {
		ev.Time = j.now()
	}
	j.pending = append(j.pending, ev)
	if j.obs != nil {
		j.obs.Event(ev)
	}
}

// Commit writes queued events, optional status and release in one fenced transaction.
func (j *Journal) Commit(ctx context.Context, status *api.AgentRunStatus, release bool, wakeAt *time.Time) (store.Signals, error) {
	return j.commit(ctx, store.Write{Status: status, Release: release, WakeAt: wakeAt})
}

// CommitFiles is Commit with run-folder changes saved in the same transaction: a run parking to
// be resolved saves what its interrupted step left on disk, so a person can inspect it.
func (j *Journal) CommitFiles(ctx context.Context, status *api.AgentRunStatus, release bool, wakeAt *time.Time, files []store.FileWrite) (store.Signals, error) {
	return j.commit(ctx, store.Write{Status: status, Release: release, WakeAt: wakeAt, Files: files})
}

// Stage has status (as it is when written) go out with the next commit, like queued events, when
// that commit carries no status of its own. It is for a status change that nothing depends on
// before the next commit, which the caller makes next with no effect in between (a fresh run's
// Running status rides with its first step's intent); the signals of that commit (a cancellation
// asked for) are acted on there.
func (j *Journal) Stage(status *api.AgentRunStatus) { j.staged = status }

// prepare adds to w what the next commit carries besides its own: the queued events, the held
// steps' records (before its own steps) and a staged status when it has none.
func (j *Journal) prepare(w store.Write) store.Write {
	w.Events = append(w.Events, j.pending...)
	if len(j.held) > 0 {
		w.Steps = append(j.held[:len(j.held):len(j.held)], w.Steps...)
	}
	if w.Status == nil {
		w.Status = j.staged
	}
	return w
}

// written is the journal's bookkeeping once w is written (or handed to the store ahead).
func (j *Journal) written(w store.Write) {
	if w.Status != nil {
		j.last = w.Status
	}
	if w.Release {
		j.released = true
	}
	j.pending = nil
	j.staged = nil
	j.held = nil
	j.remember(w.Steps)
}

// goesAhead reports whether a step's end, written as w, is handed to the store without waiting
// (Spec.Ahead).
func (j *Journal) goesAhead(spec Spec, w store.Write) bool {
	_, ok := j.st.(store.Pipeliner)
	return spec.Ahead && ok && j.gate == nil && len(w.Files) == 0 && len(w.Charges) == 0 && !w.Release && j.staged == nil
}

// commitAhead hands w, with what the next commit would carry, to the store without waiting for
// it (Spec.Ahead). A write still ahead is joined, or waited for first.
func (j *Journal) commitAhead(ctx context.Context, w store.Write) error {
	if j.aheadErr != nil {
		return j.aheadErr
	}
	w = j.prepare(w)
	if w.Status != nil {
		// The committer encodes the write later, while the drive goes on changing its status.
		w.Status = w.Status.Clone()
	}
	if j.ahead != nil {
		if j.ahead.Join(w) {
			j.aheadW = j.aheadW.Then(w)
			j.written(w)
			return nil
		}
		if err := j.settleAhead(ctx); err != nil {
			return err
		}
	}
	// The write ends with the drive (its lease lost, its runner stopping), not with the step's
	// context (a run's deadline), which would also fail the writes that join it (the run's
	// finish, which must go out); and the step's context, which carries the model request for a
	// trace, is not kept while the write waits for a committer.
	j.ahead, j.aheadW = j.st.(store.Pipeliner).CommitAhead(j.life, j.lease, w), w
	j.written(w)
	return nil
}

// settleAhead waits for the write ahead, if any (waitAhead).
func (j *Journal) settleAhead(ctx context.Context) error {
	p, w := j.ahead, j.aheadW
	if p == nil {
		return nil
	}
	j.ahead, j.aheadW = nil, store.Write{}
	_, err := j.waitAhead(ctx, p, w)
	return err
}

// waitAhead waits for the write ahead p, written as w (with what joined it): one refused for a
// full disk waits for space as any commit does (waitForSpace), and one that failed drops what
// came after it (dropAfterAhead).
func (j *Journal) waitAhead(ctx context.Context, p store.Pending, w store.Write) (store.Signals, error) {
	start := time.Now()
	sig, err := p.Wait()
	metrics.JournalSeconds.Since(start)
	if errors.Is(err, store.ErrStoreFull) {
		sig, err = j.waitForSpace(ctx, w)
	}
	if err != nil {
		j.dropAfterAhead(err)
	}
	return sig, err
}

// Settle waits for a step's end still on its way to the store (Spec.Ahead): a drive calls it
// before it ends, so that no write of its lands after it, and before an effect outside the run
// folder that no intent commit comes before (making the run's computer).
func (j *Journal) Settle(ctx context.Context) error {
	if j.aheadErr != nil {
		return j.aheadErr
	}
	return j.settleAhead(ctx)
}

func (j *Journal) commit(ctx context.Context, w store.Write) (store.Signals, error) {
	if j.gate != nil && w.Release {
		// The events queued for this commit (a park's run.waiting) stay out of the commits of
		// the effects it waits for: a wait's webhook needs its event and its status in one
		// write (store.RunOutbox), and the timeline has the wait after those results.
		parked := j.pending
		j.pending = nil
		for j.inflight > 0 {
			j.idle.Wait()
		}
		j.pending = append(j.pending, parked...)
	}
	if j.aheadErr != nil {
		return store.Signals{}, j.aheadErr
	}
	if p := j.ahead; p != nil {
		// A commit whose caller has given up is not joined to the write ahead (which goes out
		// anyway, with the drive's context): an intent written then would stand for an effect
		// that never starts.
		if err := ctx.Err(); err != nil {
			return store.Signals{}, err
		}
		if full := j.prepare(w); p.Join(full) {
			// One transaction for the end ahead and this write: its outcome is both's.
			both := j.aheadW.Then(full)
			j.ahead, j.aheadW = nil, store.Write{}
			sig, err := j.waitAhead(ctx, p, both)
			if err != nil {
				return sig, err
			}
			j.written(both)
			return sig, nil
		}
		if err := j.settleAhead(ctx); err != nil {
			return store.Signals{}, err
		}
	}
	w = j.prepare(w)
	start := time.Now()
	sig, err := j.st.Commit(ctx, j.lease, w)
	metrics.JournalSeconds.Since(start)
	if errors.Is(err, store.ErrStoreFull) {
		sig, err = j.waitForSpace(ctx, w)
	}
	if err != nil {
		return sig, err
	}
	j.written(w)
	return sig, nil
}

// dropAfterAhead forgets what the drive recorded after a write sent ahead that failed with err:
// the held steps' records and the events queued since came after the step whose end was lost,
// and would have stopped the drive before they happened had that end been waited for. No later
// commit of this journal writes anything (aheadErr): the next drive replays from the store.
func (j *Journal) dropAfterAhead(err error) {
	j.held, j.pending = nil, nil
	j.aheadErr = fmt.Errorf("a step's end sent ahead was not written: %w", err)
}

// remember puts steps written (or held for the next write) in the journal's view of the run.
func (j *Journal) remember(steps []api.Step) {
	for _, s := range steps {
		if _, ok := j.steps[s.Key]; !ok {
			j.order = append(j.order, s.Key)
		}
		j.steps[s.Key] = kept(s)
	}
}

// kept is the copy of a step the journal holds in memory, for replay and the drive: without its
// Args (replay needs only their hash), and once completed without its title and times (only a
// step not completed is shown to a person from here, as NeedsResolution). A run waiting on the
// model held every step's arguments, and every completed step's title and completion time.
func kept(s api.Step) *api.Step {
	s.Args = nil
	if s.State == api.StepCompleted {
		s.Title, s.StartedAt, s.CompletedAt = "", time.Time{}, nil
	}
	return &s
}

// hold keeps a Held step's record for the next commit (Spec.Held); the drive sees the step
// recorded at once, as after its own commit.
func (j *Journal) hold(steps []api.Step) {
	j.held = append(j.held, steps...)
	j.remember(steps)
}

// holds reports whether a step's record, which carries nothing that must be written at once
// (files, a charge, a status), waits for the next commit (Spec.Held).
func holds(spec Spec, w store.Write) bool {
	return spec.Held && brief(spec) && len(w.Files) == 0 && len(w.Charges) == 0 && w.Status == nil
}

// Encoded is a value already encoded with json.Marshal: Hash hashes its bytes as they are (the
// same hash as the value's), so a caller that needs the encoding anyway encodes only once.
type Encoded []byte

// Hashed is a hash Hash already returned, given as a step's HashOf: the caller hashed the
// arguments up front (a model call's encoded request), so they need not live through the call.
type Hashed string

// Hash is the hash recorded for a step's arguments.
func Hash(v any) string {
	if h, ok := v.(Hashed); ok {
		return string(h)
	}
	b, ok := v.(Encoded)
	if !ok {
		b, _ = json.Marshal(v)
	}
	sum := sha256.Sum256(b)
	return hashOfSum(sum)
}

// hashOfSum is the one rule for what a hash recorded for a step's arguments is: the first 8
// bytes of the SHA-256 of their encoding, in hex.
func hashOfSum(sum [sha256.Size]byte) string { return hex.EncodeToString(sum[:8]) }

// Hasher hashes an encoding written to it in parts: Hashed is then Hash(Encoded(what was
// written)), and Len its length, without the parts ever being joined.
type Hasher struct {
	h hash.Hash
	n int64
}

// NewHasher returns an empty Hasher.
func NewHasher() *Hasher { return &Hasher{h: sha256.New()} }

func (h *Hasher) Write(p []byte) (int, error) {
	h.n += int64(len(p))
	return h.h.Write(p)
}

// Hashed is the hash of what was written.
func (h *Hasher) Hashed() Hashed {
	var sum [sha256.Size]byte
	h.h.Sum(sum[:0])
	return Hashed(hashOfSum(sum))
}

// Len is how many bytes were written.
func (h *Hasher) Len() int64 { return h.n }

// NextAttempt is the attempt number Do will record for key if it runs the step now (1 for a new
// step; the recorded attempt + 1 for one that was interrupted).
func (j *Journal) NextAttempt(key string) int {
	if prev, ok := j.steps[key]; ok && (prev.State == api.StepStarted || prev.State == api.StepInterrupted) {
		return prev.Attempt + 1
	}
	return 1
}

// Completed reports whether key is recorded as completed (a replay answers it).
func (j *Journal) Completed(key string) bool {
	prev, ok := j.steps[key]
	return ok && prev.State == api.StepCompleted
}

// Observer is told of what a drive does live, for tracing: each step whose effect runs now (never
// one answered from the journal) and each event emitted. Step returns the context the effect runs
// in and a func called with the effect's outcome.
type Observer interface {
	Step(ctx context.Context, spec Spec, attempt int) (context.Context, func(result any, cost *int64, err error))
	Event(ev api.Event)
}

// Observe sets the journal's observer (nil: none).
func (j *Journal) Observe(o Observer) { j.obs = o }

// Do runs a step at most once to completion. fn performs the effect and returns the result to
// record and its cost (nil: none or unknown — the caller decides what the result says).
//
// A step already in the journal is answered from it, finished as a person resolved it, or run
// again when that is safe (resume). Otherwise the intent is committed (begin), the effect runs
// (run), and its outcome is committed: a failure or interruption (recordFailure) or the result
// (complete).
func (j *Journal) Do(ctx context.Context, spec Spec, fn func(ctx context.Context) (any, *int64, error)) (Outcome, error) {
	hash := argsHash(&spec)
	attempt := 1
	if prev, ok := j.steps[spec.Key]; ok {
		next, out, err := j.resume(ctx, spec, prev, hash)
		if next == 0 {
			return out, err
		}
		attempt = next
	}
	if spec.Brief && j.staged != nil {
		// A staged status (a fresh run's Running) goes out before the effect, with its signals
		// (a cancellation) acted on there: this step's intent is committed on its own.
		spec.Brief = false
	}
	started, err := j.begin(ctx, spec, attempt, hash)
	if err != nil {
		return Outcome{}, err
	}
	res, cost, err := j.run(ctx, spec, attempt, fn)
	if err != nil {
		return Outcome{}, j.recordFailure(ctx, spec, started, err)
	}
	return j.complete(ctx, spec, started, res, cost)
}

// argsHash is the hash of the step's arguments (HashOf when set, else Args) that must match on
// replay. It drops HashOf: the hashed value (a model call's whole encoded request) is not needed
// past here, and dropped it is not kept alive for the whole call (a run waiting on the model held
// it).
func argsHash(spec *Spec) string {
	hashOf := spec.HashOf
	if hashOf == nil {
		hashOf = spec.Args
	}
	spec.HashOf = nil
	return Hash(hashOf)
}

// resume handles a step the journal already holds. next is the attempt whose effect is to run
// now, or 0 when the step is answered without running it (out or err is the answer). A completed
// step replays; one a person resolved finishes as they said; an interrupted one runs again when
// it is safe to repeat, and waits for a person when it is not.
func (j *Journal) resume(ctx context.Context, spec Spec, prev *api.Step, hash string) (next int, out Outcome, err error) {
	if prev.ArgsHash != hash {
		return 0, Outcome{}, fmt.Errorf("step %s: recorded arguments hash %s, replay has %s: %w", spec.Key, prev.ArgsHash, hash, ErrNondeterminism)
	}
	switch prev.State {
	case api.StepCompleted:
		metrics.StepsReplayed.Inc()
		return 0, Outcome{Result: prev.Result, Replayed: true, CostMicros: prev.CostMicros, Skipped: isSkipped(prev.Result), Copied: prev.CopiedFrom != ""}, nil
	case api.StepStarted, api.StepInterrupted:
		switch prev.Resolution {
		case api.ResolveComplete:
			out, err := j.finishResolved(ctx, prev, prev.ResolutionResult, false)
			return 0, out, err
		case api.ResolveSkip:
			out, err := j.finishResolved(ctx, prev, json.RawMessage(`{"skipped":true}`), true)
			return 0, out, err
		case api.ResolveRetry:
			j.Emit(api.Event{Type: api.EventStepRetried, StepKey: spec.Key, Message: "retrying " + spec.Key + " as a person asked"})
		default:
			if !spec.Safe {
				return 0, Outcome{}, j.awaitPerson(ctx, spec, prev)
			}
			metrics.StepsInterrupts.Inc("repeated")
			j.Emit(api.Event{Type: api.EventStepInterrupted, StepKey: spec.Key, Message: fmt.Sprintf("%s was interrupted by a crash; it is safe to repeat, so it runs again", spec.Key)})
		}
		return prev.Attempt + 1, Outcome{}, nil
	}
	return 1, Outcome{}, nil // a failed step runs again as a first attempt
}

// awaitPerson marks a step a crash interrupted, whose effect is not safe to repeat, Interrupted
// (once) and returns the NeedsResolution that stops the drive until a person resolves it.
func (j *Journal) awaitPerson(ctx context.Context, spec Spec, prev *api.Step) error {
	if prev.State != api.StepInterrupted {
		st := *prev
		st.State = api.StepInterrupted
		j.Emit(api.Event{Type: api.EventStepInterrupted, StepKey: spec.Key, Message: fmt.Sprintf("%s was interrupted by a crash; its outcome is uncertain, so it is not repeated without a person", spec.Key)})
		if _, err := j.commit(ctx, store.Write{Steps: []api.Step{st}}); err != nil {
			return err
		}
	}
	metrics.StepsInterrupts.Inc("needs-resolution")
	return &NeedsResolution{Step: *j.steps[spec.Key], Cause: "interrupted"}
}

// begin commits the step's intent (Started, with its arguments) and returns it, once nothing
// stops the effect from starting: a released or frozen drive, the lease's deadline, a
// cancellation.
func (j *Journal) begin(ctx context.Context, spec Spec, attempt int, hash string) (api.Step, error) {
	if j.gate != nil && j.released {
		return api.Step{}, fmt.Errorf("step %s: %w", spec.Key, ErrReleased)
	}
	for j.gate != nil && j.frozen {
		j.idle.Wait() // a dev pause: the process is about to be killed
	}
	j.pauseAt("before-intent", spec.Key)
	// Past the runner's self-fence deadline no step starts (store.CheckLease): checked before the
	// intent, so a late drive leaves no Started step behind, and again after it, right before
	// the effect, since the commit itself may have taken the drive past the deadline.
	if err := store.CheckLease(ctx); err != nil {
		return api.Step{}, fmt.Errorf("step %s: %w", spec.Key, err)
	}
	argsJSON, _ := json.Marshal(spec.Args)
	started := api.Step{Key: spec.Key, Kind: spec.Kind, Title: spec.Title, State: api.StepStarted, Attempt: attempt, ArgsHash: hash, Args: argsJSON, StartedAt: j.now()}
	if brief(spec) {
		// The intent and its event ride with the outcome (ended): queued now, a sibling's
		// commit (Gate), or the next one after a drive ended with nothing recorded, would
		// carry a start of a step the journal does not have.
		j.pauseAt("after-intent", spec.Key)
		return started, nil
	}
	j.Emit(api.Event{Type: api.EventStepStarted, StepKey: spec.Key, Message: spec.Title})
	sig, err := j.commit(ctx, store.Write{Steps: []api.Step{started}})
	if err != nil {
		return api.Step{}, err
	}
	if sig.CancelRequested {
		return api.Step{}, ErrCancelled
	}
	if err := ctx.Err(); err != nil {
		return api.Step{}, err
	}
	if err := store.CheckLease(ctx); err != nil {
		return api.Step{}, fmt.Errorf("step %s: %w", spec.Key, err)
	}
	j.pauseAt("after-intent", spec.Key)
	return started, nil
}

// brief reports whether spec's intent is written with its outcome rather than on its own.
func brief(spec Spec) bool { return spec.Brief && spec.Safe }

// ended is the steps a write recording a step's end carries: the end, after the intent when the
// intent was not committed on its own (brief), whose started event it queues then: it is called
// before the end's own event is.
func (j *Journal) ended(spec Spec, started, end api.Step) []api.Step {
	if brief(spec) {
		j.Emit(api.Event{Type: api.EventStepStarted, StepKey: spec.Key, Message: spec.Title})
		return []api.Step{started, end}
	}
	return []api.Step{end}
}

// run performs the step's effect, told to the observer and timed.
func (j *Journal) run(ctx context.Context, spec Spec, attempt int, fn func(ctx context.Context) (any, *int64, error)) (any, *int64, error) {
	effectStart := time.Now()
	ectx, observed := ctx, func(any, *int64, error) {}
	if j.obs != nil {
		ectx, observed = j.obs.Step(ctx, spec, attempt)
	}
	res, cost, err := j.effect(ectx, spec.Concurrent, fn)
	observed(res, cost, err)
	metrics.StepSeconds.Since(effectStart, string(spec.Kind))
	return res, cost, err
}

// recordFailure commits what an effect's error means for the started step and returns the error
// Do returns: a stop (ErrStopped) leaves it Interrupted; an interruption (Interrupted) leaves it
// Interrupted for a person to resolve; any other failure is recorded as Failed. When ctx is done,
// nothing is recorded (the drive is going away; the step stays Started).
func (j *Journal) recordFailure(ctx context.Context, spec Spec, started api.Step, err error) error {
	if ctx.Err() != nil {
		return err
	}
	if errors.Is(err, ErrStopped) {
		st := started
		st.State, st.Error = api.StepInterrupted, err.Error()
		steps := j.ended(spec, started, st)
		j.Emit(api.Event{Type: api.EventStepInterrupted, StepKey: spec.Key, Message: fmt.Sprintf("%s was stopped: %v", spec.Key, err)})
		if _, cerr := j.commit(ctx, store.Write{Steps: steps}); cerr != nil {
			return errors.Join(err, cerr)
		}
		return err
	}
	var cut *Interrupted
	if errors.As(err, &cut) {
		st := started
		st.State, st.Error = api.StepInterrupted, err.Error()
		steps := j.ended(spec, started, st)
		j.Emit(api.Event{Type: api.EventStepInterrupted, StepKey: spec.Key, Message: fmt.Sprintf("%s was interrupted (%v); its outcome is uncertain, so it is not repeated without a person", spec.Key, cut.Err)})
		if _, cerr := j.commit(ctx, store.Write{Steps: steps}); cerr != nil {
			return errors.Join(err, cerr)
		}
		metrics.StepsInterrupts.Inc("needs-resolution")
		return &NeedsResolution{Step: *j.steps[spec.Key], Cause: err.Error()}
	}
	// A definite failure (not an interruption): record it so the journal says what happened.
	failed := started
	failed.State, failed.Error = api.StepFailed, err.Error()
	t := j.now()
	failed.CompletedAt = &t
	steps := j.ended(spec, started, failed)
	j.Emit(api.Event{Type: api.EventStepFailed, StepKey: spec.Key, Message: err.Error()})
	if w := (store.Write{Steps: steps}); holds(spec, w) {
		j.hold(steps)
	} else if _, cerr := j.commit(ctx, w); cerr != nil {
		return errors.Join(err, cerr)
	}
	return err
}

// complete commits the step's result with what goes in the same transaction: the run folder's
// changes (Files), the charge (Bill) and the status that follows from the result (Status).
func (j *Journal) complete(ctx context.Context, spec Spec, started api.Step, res any, cost *int64) (Outcome, error) {
	out, err := json.Marshal(res)
	if err != nil {
		return Outcome{}, fmt.Errorf("step %s: encode result: %w", spec.Key, err)
	}
	done := started
	done.State = api.StepCompleted
	done.Result = out
	done.CostMicros = cost
	t := j.now()
	done.CompletedAt = &t
	steps := j.ended(spec, started, done)
	j.Emit(api.Event{Type: api.EventStepCompleted, StepKey: spec.Key, Message: spec.Title})
	var files []store.FileWrite
	if spec.Files != nil {
		if files, err = spec.Files(); err != nil {
			return Outcome{}, fmt.Errorf("step %s: save run folder: %w", spec.Key, err)
		}
	}
	var charges []store.Charge
	if spec.Bill {
		charges = []store.Charge{{StepKey: spec.Key, Amount: cost, Note: spec.Title}}
	}
	var status *api.AgentRunStatus
	if spec.Status != nil {
		if status, err = spec.Status(out, cost); err != nil {
			return Outcome{}, fmt.Errorf("step %s: %w", spec.Key, err)
		}
	}
	if w := (store.Write{Steps: steps, Files: files, Charges: charges, Status: status}); holds(spec, w) {
		j.hold(steps)
	} else if j.goesAhead(spec, w) {
		if err := j.commitAhead(ctx, w); err != nil {
			return Outcome{}, err
		}
	} else if _, err := j.commit(ctx, w); err != nil {
		return Outcome{}, err
	}
	j.pauseAt("after-result", spec.Key)
	return Outcome{Result: out, CostMicros: cost}, nil
}

// Locked runs f holding the gate, from inside an effect (which runs without it): for an effect
// that must touch what the gate guards (the drive making its computer again). Without a gate it
// just runs f.
func (j *Journal) Locked(f func()) {
	if j.gate != nil {
		j.gate.Lock()
		defer j.gate.Unlock()
	}
	f()
}

// Outside runs f without the gate, from a caller holding it (a step that waits for its
// siblings' effects to finish): it reports false, and does not run f, when there is no gate,
// since then nothing else can run meanwhile.
func (j *Journal) Outside(f func()) bool {
	if j.gate == nil {
		return false
	}
	j.gate.Unlock()
	defer j.gate.Lock()
	f()
	return true
}

// effect runs fn, outside the gate when there is one.
func (j *Journal) effect(ctx context.Context, concurrent bool, fn func(ctx context.Context) (any, *int64, error)) (any, *int64, error) {
	if j.gate == nil || !concurrent {
		return fn(ctx)
	}
	j.inflight++
	j.gate.Unlock()
	defer func() {
		j.gate.Lock()
		j.inflight--
		if j.inflight == 0 {
			j.idle.Broadcast()
		}
	}()
	return fn(ctx)
}

func isSkipped(r json.RawMessage) bool {
	return string(r) == `{"skipped":true}`
}

func (j *Journal) finishResolved(ctx context.Context, prev *api.Step, result json.RawMessage, skipped bool) (Outcome, error) {
	done := *prev
	done.State = api.StepCompleted
	done.Result = result
	t := j.now()
	done.CompletedAt = &t
	what := "completed with a result a person supplied"
	if skipped {
		what = "skipped by a person; the agent is told it was interrupted"
	}
	j.Emit(api.Event{Type: api.EventStepResolved, StepKey: prev.Key, Message: prev.Key + " " + what})
	if _, err := j.commit(ctx, store.Write{Steps: []api.Step{done}}); err != nil {
		return Outcome{}, err
	}
	return Outcome{Result: result, Skipped: skipped}, nil
}

// Record writes a step that has no effect of its own (a message received, an answer to a question)
// as started and completed in one commit, so it is replayed like any other step. spec.Files, when
// set, is saved in that commit.
func (j *Journal) Record(ctx context.Context, spec Spec, result any) (json.RawMessage, error) {
	if prev, ok := j.steps[spec.Key]; ok && prev.State == api.StepCompleted {
		return prev.Result, nil
	}
	argsJSON, _ := json.Marshal(spec.Args)
	out, err := json.Marshal(result)
	if err != nil {
		return nil, fmt.Errorf("step %s: encode result: %w", spec.Key, err)
	}
	t := j.now()
	st := api.Step{Key: spec.Key, Kind: spec.Kind, Title: spec.Title, State: api.StepStarted, Attempt: 1, ArgsHash: Hash(spec.Args), Args: argsJSON, StartedAt: t}
	done := st
	done.State, done.Result, done.CompletedAt = api.StepCompleted, out, &t
	j.Emit(api.Event{Type: api.EventStepCompleted, StepKey: spec.Key, Message: spec.Title})
	var files []store.FileWrite
	if spec.Files != nil {
		// A step with no effect of its own that still changes the folder (a rollback restoring
		// it) saves the change with its record, atomically.
		if files, err = spec.Files(); err != nil {
			return nil, fmt.Errorf("step %s: save run folder: %w", spec.Key, err)
		}
	}
	if _, err := j.commit(ctx, store.Write{Steps: []api.Step{st, done}, Files: files}); err != nil {
		return nil, err
	}
	return out, nil
}

// pausePoint lets crash tests stop the process at an exact point: "after-intent:t1/tool/0" prints
// a marker to stderr and blocks, so the test can SIGKILL it there. It is a dev hook: only the
// binary's explicit dev flag sets one (SetDevPause, from AGENTRUN_DEV_PAUSE_AT), never a library
// reading the environment by itself.
type pausePoint struct{ point, key string }

var devPausePoint atomic.Pointer[pausePoint]

// SetDevPause sets the pause point every journal opened afterwards honours ("" for none); spec is
// POINT:STEPKEY with POINT before-intent, after-intent or after-result.
func SetDevPause(spec string) error {
	if spec == "" {
		devPausePoint.Store(nil)
		return nil
	}
	p, k, ok := strings.Cut(spec, ":")
	switch {
	case !ok || k == "":
		return fmt.Errorf("pause point %q: want POINT:STEPKEY", spec)
	case p != "before-intent" && p != "after-intent" && p != "after-result":
		return fmt.Errorf("pause point %q: POINT is before-intent, after-intent or after-result", spec)
	}
	devPausePoint.Store(&pausePoint{p, k})
	return nil
}

func devPause() pausePoint {
	if p := devPausePoint.Load(); p != nil {
		return *p
	}
	return pausePoint{}
}

// pauseAt is the dev pause at point for key. With a gate it first lets the effects in flight
// (other goroutines') record their results and stops new steps from starting, so the kill comes
// at exactly that point: the crash matrix's cases say what was recorded when the process died.
func (j *Journal) pauseAt(point, key string) {
	if !j.pause.is(point, key) {
		return
	}
	// A step's end on its way to the store (Spec.Ahead) lands first, so that a point names what
	// the store holds as it did when every end was waited for.
	if err := j.settleAhead(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "AGENTRUN_DEV_PAUSE %s %s: the write ahead failed: %v\n", point, key, err)
	}
	if j.gate != nil {
		j.frozen = true
		for j.inflight > 0 {
			j.idle.Wait()
		}
	}
	j.pause.at(point, key)
}

func (p pausePoint) is(point, key string) bool {
	return p.point != "" && p.point == point && p.key == key
}

func (p pausePoint) at(point, key string) {
	if !p.is(point, key) {
		return
	}
	fmt.Fprintf(os.Stderr, "AGENTRUN_DEV_PAUSED %s %s\n", point, key)
	select {} // block until the test kills the process
}

// Await is a step that waits on a person (an approval). The first time, it records the step as
// Started and returns done=false: the caller parks the run. Once a person has answered (the store's
// ResolveStep puts their decision on the step), it completes the step with
// {"decision": resolution, ...the person's result} and returns it; after that it replays.
func (j *Journal) Await(ctx context.Context, spec Spec) (json.RawMessage, bool, error) {
	hash := Hash(spec.Args)
	if prev, ok := j.steps[spec.Key]; ok {
		if prev.ArgsHash != hash {
			return nil, false, fmt.Errorf("step %s: recorded arguments hash %s, replay has %s: %w", spec.Key, prev.ArgsHash, hash, ErrNondeterminism)
		}
		switch {
		case prev.State == api.StepCompleted:
			return prev.Result, true, nil
		case prev.Resolution == "":
			return nil, false, nil
		}
		result := map[string]any{}
		if len(prev.ResolutionResult) > 0 {
			if err := json.Unmarshal(prev.ResolutionResult, &result); err != nil {
				return nil, false, fmt.Errorf("step %s: decode the person's decision: %w", spec.Key, err)
			}
		}
		result["decision"] = prev.Resolution
		out, _ := json.Marshal(result)
		done := *prev
		done.State, done.Result = api.StepCompleted, out
		t := j.now()
		done.CompletedAt = &t
		j.Emit(api.Event{Type: api.EventStepCompleted, StepKey: spec.Key, Message: spec.Title + ": " + string(prev.Resolution)})
		if _, err := j.commit(ctx, store.Write{Steps: []api.Step{done}}); err != nil {
			return nil, false, err
		}
		return out, true, nil
	}
	argsJSON, _ := json.Marshal(spec.Args)
	st := api.Step{Key: spec.Key, Kind: spec.Kind, Title: spec.Title, State: api.StepStarted, Attempt: 1, ArgsHash: hash, Args: argsJSON, StartedAt: j.now()}
	j.Emit(api.Event{Type: api.EventStepStarted, StepKey: spec.Key, Message: spec.Title})
	if _, err := j.commit(ctx, store.Write{Steps: []api.Step{st}}); err != nil {
		return nil, false, err
	}
	return nil, false, nil
}
