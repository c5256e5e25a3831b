// Package store owns durable state: the Store interface every backend implements, the errors it
// returns and the lease/fencing contract (docs/architecture.md, "The store contract" and "Leases
// and fencing"). Backends live in sqlite/ and postgres/; storetest/ is the conformance suite both
// must pass. Every write a runner makes for a run goes through Commit, which applies it only under
// the lease generation the runner claimed with, so a stale runner can never overwrite the new
// owner's work.
package store

import (
	"context"
	"errors"
	"time"

	"agentrun.dev/agentrun/internal/api"
)

// Errors every backend returns (wrapped with context).
var (
	ErrNotFound      = errors.New("not found")
	ErrAlreadyExists = errors.New("already exists")
	// ErrConflict: the resourceVersion given is not the current one (optimistic concurrency).
	ErrConflict = errors.New("resource version conflict")
	// ErrFenced: the lease generation is stale; another runner owns the run now.
	ErrFenced = errors.New("lease lost: run is owned by another runner")
	// ErrDriveAgain: a driver (wrapping it) gives its run back to be claimed again at once and
	// driven from the journal, as after a restart; the runner logs no error for it.
	ErrDriveAgain = errors.New("drive the run again from its journal")
	// ErrFinished: the run has ended and takes no more messages or resolutions.
	ErrFinished = errors.New("run finished")
	// ErrNotWaiting: a resolution was sent to a step that does not need one.
	ErrNotWaiting = errors.New("step does not need resolution")
	// ErrUnavailable: the store could not be reached (connection lost, server restarting). The
	// operation may be tried again later; a commit it interrupted may or may not have happened.
	ErrUnavailable = errors.New("store unavailable")
	// ErrStoreFull: the store's disk is full; nothing was written. It goes away when space is freed.
	ErrStoreFull = errors.New("store is full (no space left on its disk)")
)

// Lease is a runner's claim on a run. Generation increases with every claim; writes carry it.
type Lease struct {
	Run        string
	Owner      string
	Generation int64
	// PokeSeq is the run's poke counter when it was claimed (see Write.Release).
	PokeSeq int64
	// ExpiresAt is when the lease runs out unless renewed (store clock).
	ExpiresAt time.Time
}

// RunFilter selects runs to list.
type RunFilter struct {
	Agent string
	Phase api.Phase
	// Group selects the members of one AgentGroup (spec.group).
	Group string
	Limit int
	// Newest lists newest first (created_at, then name, descending: the exact reverse of the
	// default order); Offset skips that many runs first (the console's runs list pages with them).
	Newest bool
	Offset int
}

// Write is everything a runner records for a run in one fenced transaction.
type Write struct {
	// Steps are journal rows. State Started inserts the step (or, for a step already present,
	// restarts it with the given Attempt); Completed and Interrupted update the existing row.
	Steps []api.Step
	// Events are appended to the timeline; their Seq is assigned by the store.
	Events []api.Event
	// Status, when set, replaces the run's status (the phase column follows status.phase).
	Status *api.AgentRunStatus
	// Release gives the lease up after the write. The run becomes claimable again at WakeAt (nil:
	// only when poked), or at once if it was poked after the lease was claimed.
	Release bool
	WakeAt  *time.Time
	// Files are changes to the run folder made by the step being completed, saved in the same
	// transaction so another runner can restore the folder without a shared disk
	// (docs/architecture.md, "Run folders"). They are also kept in the folder's history, tagged
	// with HistoryTag, so a fork finds the folder as of any step (fork.go).
	Files []FileWrite
	// Charges settle credit reservations of this run: each one whose step holds a reservation is
	// written to the credits ledger (once per step key, whatever happens) and the reservation is
	// removed, in the same transaction as the step's completion. A charge with no reservation (no
	// credits were ever added, so credits are not enforced) is not recorded. Release (parking or
	// finishing the run) removes every reservation the run still holds.
	Charges []Charge
}

// Then is w followed by next as one write, for one transaction: next's steps, events, files and
// charges after w's, next's status when it has one (it is the later), and next's release. A
// write that releases the lease ends its drive's writes, so w itself never releases.
func (w Write) Then(next Write) Write {
	out := Write{
		Steps:   append(w.Steps[:len(w.Steps):len(w.Steps)], next.Steps...),
		Events:  append(w.Events[:len(w.Events):len(w.Events)], next.Events...),
		Status:  w.Status,
		Release: next.Release,
		WakeAt:  next.WakeAt,
		Files:   append(w.Files[:len(w.Files):len(w.Files)], next.Files...),
		Charges: append(w.Charges[:len(w.Charges):len(w.Charges)], next.Charges...),
	}
	if next.Status != nil {
		out.Status = next.Status
	}
	return out
}

// Pipeliner is a store whose fenced commits can go ahead without their caller waiting for them
// (PostgreSQL's group committer): a drive hands over a step's end and does local work (a read of
// its folder) while the write waits for a committer, and the drive's next write, if it comes
// before a committer took the first, goes in the same transaction.
type Pipeliner interface {
	CommitAhead(ctx context.Context, l Lease, w Write) Pending
}

// Pending is a write CommitAhead handed over.
type Pending interface {
	// Join puts next after the pending write, in its transaction, and reports true while no
	// committer has taken the pending write; false: it has gone to the database, and next must
	// wait for it (Wait) and be committed on its own.
	Join(next Write) bool
	// Wait blocks until the write (and what joined it) committed or failed, and returns its
	// outcome as Commit does.
	Wait() (Signals, error)
}

// Charge is the settled cost of one billed step. Amount nil: the call could not be priced.
type Charge struct {
	StepKey string
	Amount  *int64
	Note    string
}

// Reservation holds credits for a call about to be made: the worst case of the call, tied to the
// run, the step key and the step's attempt, so a replay after a crash finds and replaces it.
type Reservation struct {
	Run     string    `json:"run"`
	StepKey string    `json:"stepKey"`
	Attempt int       `json:"attempt"`
	Amount  int64     `json:"amountMicros"`
	Time    time.Time `json:"time"`
}

// ReserveResult is the outcome of ReserveCredits.
type ReserveResult struct {
	// Enforced is false while no credits were ever added: nothing is reserved or charged.
	Enforced bool
	// OK: the reservation was made.
	OK bool
	// Available is the balance minus every other reservation, before this one.
	Available int64
	// ReservedByOthers is what other calls hold; when it is not zero, waiting may be enough.
	ReservedByOthers int64
}

// CreditEntry is one line of the credits ledger.
type CreditEntry struct {
	Seq  int64     `json:"seq"`
	Time time.Time `json:"time"`
	// Kind is "add" or "charge".
	Kind string `json:"kind"`
	// Amount is in micro-dollars; nil for a charge that could not be priced.
	Amount  *int64 `json:"amountMicros"`
	Run     string `json:"run,omitempty"`
	StepKey string `json:"stepKey,omitempty"`
	Note    string `json:"note,omitempty"`
}

// CreditBalance sums the ledger.
type CreditBalance struct {
	// Enforced: credits were added at least once, so server-access calls are limited by them.
	Enforced bool
	Added    int64
	// Charged is the sum of the priced charges; UnknownCharges counts those that could not be.
	Charged        int64
	UnknownCharges int64
	// Reserved is what calls in flight hold.
	Reserved int64
}

// SecretInfo describes a stored secret without its value (the API's shape).
type SecretInfo = api.SecretInfo

// FileWrite is one change to a run folder: a file's new content, or its deletion.
type FileWrite struct {
	Path    string // slash-separated, relative to the run folder
	Content []byte
	Mode    uint32 // permission bits
	Deleted bool
}

// File is a run folder file as saved in the store.
type File struct {
	Path      string
	Content   []byte
	Mode      uint32
	Size      int64
	UpdatedAt time.Time
}

// RunnerInfo is a runner's registration and heartbeat.
type RunnerInfo struct {
	Name        string    `json:"name"`
	Version     string    `json:"version"`
	Host        string    `json:"host"`
	PID         int       `json:"pid"`
	StartedAt   time.Time `json:"startedAt"`
	HeartbeatAt time.Time `json:"heartbeatAt"`
	// RunsHeld is how many runs the runner drove at its last heartbeat.
	RunsHeld int `json:"runsHeld"`
}

// RunnerGoneAfter is how long after its last heartbeat a runner counts as gone: a lease's
// length, after which its runs are other runners' to take.
const RunnerGoneAfter = 30 * time.Second

// Live reports whether the runner sent a heartbeat within RunnerGoneAfter of now.
func (ri RunnerInfo) Live(now time.Time) bool { return now.Sub(ri.HeartbeatAt) < RunnerGoneAfter }

// Signals is what a runner learns from a commit.
type Signals struct {
	CancelRequested bool
	PokeSeq         int64
}

// AwaitsResolution reports whether a run's status waits on a person's decision on stepKey: an
// interrupted step (NeedsResolution) or a tool call asking for approval (Waiting/Approval).
func AwaitsResolution(st api.AgentRunStatus, stepKey string) bool {
	if st.WaitingOn == nil || st.WaitingOn.StepKey != stepKey {
		return false
	}
	return st.Phase == api.PhaseNeedsResolution || (st.Phase == api.PhaseWaiting && st.Reason == api.ReasonApproval)
}

// WaitsOnMessage reports whether a parked run's status waits for a message (a keep-alive run
// between turns, or a question to the person).
func WaitsOnMessage(st api.AgentRunStatus) bool {
	return st.Phase == api.PhaseWaiting && (st.Reason == api.ReasonMessage || st.Reason == api.ReasonQuestion)
}

// WaitsOnCredits reports whether a parked run waits for credits to be added.
func WaitsOnCredits(st api.AgentRunStatus) bool {
	return st.Phase == api.PhaseWaiting && st.Reason == api.ReasonCredits
}

// WaitsOnCap reports whether a parked run waits for its cap to be raised.
func WaitsOnCap(st api.AgentRunStatus) bool {
	return st.Phase == api.PhaseWaiting && st.Reason == api.ReasonMaxCostReached
}

// Store is the durable state of agentrun.
type Store interface {
	// Backend names the backend ("sqlite", "postgres").
	Backend() string
	Close() error
	// Ping checks cheaply that the store answers (GET /healthz).
	Ping(ctx context.Context) error
	// SchemaVersion reads the store's schema version beside what this binary knows (GET /readyz,
	// and a runner's check before it claims).
	SchemaVersion(ctx context.Context) (Schema, error)

	// Groups keeps AgentGroups, batch creation and admission (groups.go).
	Groups
	// Skills keeps skills, immutable per version (skills.go).
	Skills
	// Triggers keeps Triggers and records their fires once (triggers.go).
	Triggers
	// Webhooks keeps outbound webhooks and their outbox of deliveries (webhooks.go).
	Webhooks
	// Retention purges finished runs' payloads once they are old enough (retention.go).
	Retention
	// Learning keeps learning agents' git repositories (learning.go).
	Learning
	// Forks makes a run that goes on from another's step (fork.go).
	Forks

	// CreateAgent stores a new agent as revision 1 (sets uid, resourceVersion, generation 1,
	// creationTimestamp, status.revision 1). ErrAlreadyExists if the name is taken.
	CreateAgent(ctx context.Context, a *api.Agent) error
	// UpdateAgent replaces an agent's spec and labels. A non-empty metadata.resourceVersion must
	// match (else ErrConflict). A changed spec makes a new immutable revision and bumps generation.
	// On success a is updated to what was stored.
	UpdateAgent(ctx context.Context, a *api.Agent) error
	GetAgent(ctx context.Context, name string) (*api.Agent, error)
	ListAgents(ctx context.Context) ([]*api.Agent, error)
	// DeleteAgent removes the agent; its revisions stay for the runs pinned to them.
	DeleteAgent(ctx context.Context, name string) error
	// GetAgentRevision returns the spec of one revision.
	GetAgentRevision(ctx context.Context, name string, revision int64) (*api.AgentSpec, error)

	// CreateRun stores a new run, claimable at once (unless its status.phase is terminal), with
	// first as the first events of its timeline (seq 1, 2, ...), in the same commit: a reader
	// never sees the run without them, nor them before anything its runner adds. It sets uid,
	// resourceVersion, creationTimestamp. ErrAlreadyExists if the name is taken (first is then
	// not added to the run that has it).
	CreateRun(ctx context.Context, r *api.AgentRun, first ...api.Event) error
	GetRun(ctx context.Context, name string) (*api.AgentRun, error)
	ListRuns(ctx context.Context, f RunFilter) ([]*api.AgentRun, error)
	// CountRuns returns the number of runs in each phase (phases with none are absent).
	CountRuns(ctx context.Context) (map[string]int, error)
	// DeleteRun removes a run with its steps, events and messages.
	DeleteRun(ctx context.Context, name string) error
	// RequestCancel marks a run for cancellation and pokes it (the lease holder, or the next
	// claimer, finishes it as Cancelled). ErrFinished if it has already ended.
	RequestCancel(ctx context.Context, name string) (*api.AgentRun, error)

	// AddMessage appends a message to a run and pokes it. A non-empty key already used on this
	// run returns the first message and created=false. ErrFinished if the run has ended. A run
	// parked (no lease holder) waiting on a message or a question (see WaitsOnMessage) moves to
	// Queued in the same transaction; ResolveStep does the same for NeedsResolution.
	AddMessage(ctx context.Context, run, key, payload string) (msg api.Message, created bool, err error)
	// AddMessageIfBusy is AddMessage with what the message does when the run is busy
	// (MessageRunIfBusy): a reject to a busy run is refused (RuleError RunBusy) and nothing is
	// stored; any other mode is stored with the message (msg.IfBusy) when the run was busy.
	AddMessageIfBusy(ctx context.Context, run, key, payload string, ifBusy api.IfBusy) (msg api.Message, created bool, err error)
	// Steered returns, for each of the given runs that has one, the seq of its latest message
	// that stops a turn (ifBusy interrupt or rollback), so a runner in another process can stop
	// the turn in flight at once rather than at its end.
	Steered(ctx context.Context, runs []string) (map[string]int64, error)
	// ListMessages returns the run's messages with seq > afterSeq, in order.
	ListMessages(ctx context.Context, run string, afterSeq int64) ([]api.Message, error)
	// ResolveStep records a person's resolution ("retry", "skip", "complete" with result; or
	// "approve"/"deny" for an approval) on a step and pokes the run, once. ErrNotWaiting unless
	// the run waits on that step (AwaitsResolution) and the step has no resolution yet.
	ResolveStep(ctx context.Context, run, stepKey string, resolution api.Resolution, result []byte) error

	// ClaimRuns leases up to max claimable runs to owner for ttl: runs with no owner whose
	// claimable time has come, and runs whose lease has expired. Each claim bumps the generation.
	ClaimRuns(ctx context.Context, owner string, max int, ttl time.Duration) ([]Lease, error)
	// ExpireLeases ends every lease held by owner (a runner starting again under the same name,
	// whose previous process is gone), so its runs are claimable at once. It returns how many.
	ExpireLeases(ctx context.Context, owner string) (int, error)
	// RenewLeases extends the given leases, in the order given (a caller that cannot wait for all
	// puts the most urgent first), and returns those it extended and those no longer held
	// (fenced). Both are sure even when err is not nil: a renewal cut short (ctx ended, the store
	// failing part way) still reports what it did before, and the leases in neither list are
	// unknown (not reached, or their last statement's outcome lost with the error).
	RenewLeases(ctx context.Context, leases []Lease, ttl time.Duration) (renewed, lost []Lease, err error)
	// CancelRequested returns which of the given runs a user asked to cancel (so a runner in
	// another process can stop a long step at once rather than at its next commit).
	CancelRequested(ctx context.Context, runs []string) ([]string, error)
	// Commit applies w under the lease, atomically, or returns ErrFenced and applies nothing.
	Commit(ctx context.Context, l Lease, w Write) (Signals, error)
	// AppendEvents adds timeline events from outside a runner (the server); seqs are assigned.
	AppendEvents(ctx context.Context, run string, evs []api.Event) error

	ListSteps(ctx context.Context, run string) ([]api.Step, error)
	// ListFiles returns the run folder as saved (deleted files excluded), ordered by path.
	ListFiles(ctx context.Context, run string) ([]File, error)
	// ListFileInfos is ListFiles without the contents (Content nil): for listings, which should
	// not read a run's every byte.
	ListFileInfos(ctx context.Context, run string) ([]File, error)
	// GetFile returns one saved file; ErrNotFound if it was never saved or was deleted.
	GetFile(ctx context.Context, run, path string) (File, error)

	// Heartbeat registers a runner or refreshes its entry (HeartbeatAt is set by the store).
	Heartbeat(ctx context.Context, r RunnerInfo) error
	// ListRunners returns every registered runner, ordered by name.
	ListRunners(ctx context.Context) ([]RunnerInfo, error)
	// ListEvents returns events with seq > afterSeq, at most limit (0: all).
	ListEvents(ctx context.Context, run string, afterSeq int64, limit int) ([]api.Event, error)

	// AddCredits appends an add to the credits ledger and, in the same transaction, moves every
	// parked run waiting on credits back to Queued and pokes it.
	AddCredits(ctx context.Context, amount int64, note string) (CreditEntry, error)
	// Credits returns the balance and the last limit ledger entries, newest first (0: all).
	Credits(ctx context.Context, limit int) (CreditBalance, []CreditEntry, error)
	// ReserveCredits reserves r.Amount for a call of the lease's run, replacing any reservation
	// the run already holds for r.StepKey (an earlier attempt cut off by a crash), if the balance
	// minus every other reservation covers it. Fenced like Commit. Nothing is reserved while
	// credits are not enforced.
	ReserveCredits(ctx context.Context, l Lease, r Reservation) (ReserveResult, error)
	// ListReservations returns the reservations held now, ordered by run and step key.
	ListReservations(ctx context.Context) ([]Reservation, error)
	// RaiseRunCap sets a run's spec.maxCostUSD (and status.cost.limitUSD) in one transaction after
	// check has accepted the run as it is; a parked run waiting on MaxCostReached moves to Queued
	// and is poked.
	RaiseRunCap(ctx context.Context, name, maxCostUSD string, check func(cur *api.AgentRun) error) (*api.AgentRun, error)

	// PutSecret stores a sealed secret (creating or replacing it) with the names of its keys.
	PutSecret(ctx context.Context, name string, sealed []byte, keys []string) error
	// GetSecret returns a sealed secret; ErrNotFound if there is none.
	GetSecret(ctx context.Context, name string) ([]byte, error)
	ListSecrets(ctx context.Context) ([]SecretInfo, error)
	DeleteSecret(ctx context.Context, name string) error
	// PokeWaiting makes every unleased run Waiting with the given reason claimable now (a runner
	// looks at it again at once rather than at its retry time) and returns how many it poked.
	// The console pokes the runs waiting ModelKeyMissing when a person pastes a model key.
	PokeWaiting(ctx context.Context, reason api.Reason) (int, error)

	// WaitWork blocks until runs may have become claimable (a create or a poke in this process, or
	// a notification from the database), or until ctx ends or d passes.
	WaitWork(ctx context.Context, d time.Duration)
	// WaitEvents blocks until a timeline event may have been appended, or ctx ends, or d passes.
	WaitEvents(ctx context.Context, d time.Duration)
}

// TextRelay is implemented by a backend whose stores span processes (PostgreSQL): it carries the
// model's live text (internal/livetext) from a runner's process to the server's, over the
// database's notifications. Lossy and never stored: SendText may drop, and OnText's function is
// handed each payload another process (or this one) sent.
type TextRelay interface {
	SendText(payload []byte)
	OnText(fn func(payload []byte))
}
