package store

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"agentrun.dev/agentrun/internal/api"
)

// The run state transitions a person's action (or a credits top-up) makes, as pure functions:
// a backend loads the run's row in its transaction, calls the rule, and writes what it returns.
// The rules and the status texts a reader sees live here once; the backends hold SQL only.

// The messages a parked run shows once it is moved back to Queued.
const (
	msgMessageArrived = "a message arrived; waiting for a runner to continue"
	msgCreditsAdded   = "credits were added; waiting for a runner to continue"
	msgCapRaised      = "the cap was raised; waiting for a runner to continue"
)

// RunRow is what the transitions read of a run's row: its phase column, its status and whether
// a runner holds its lease.
type RunRow struct {
	Phase  api.Phase
	Status api.AgentRunStatus
	Leased bool
}

// requeue moves a parked run (no lease holder) that waits on what just arrived (waits) back to
// Queued with message why, so a reader never sees it still waiting on something already given.
// A held run is left alone (nil): its holder writes the status.
func requeue(r RunRow, why string, waits func(api.AgentRunStatus) bool) *api.AgentRunStatus {
	if r.Leased || !waits(r.Status) {
		return nil
	}
	st := r.Status
	st.Phase, st.Reason, st.Message, st.WaitingOn = api.PhaseQueued, "", why, nil
	return &st
}

// CancelRun is RequestCancel's rule: a finished run cannot be cancelled (ErrFinished). Otherwise
// the backend sets the run's cancel request and pokes it; the holder (or the next claimer)
// finishes it as Cancelled.
func CancelRun(r RunRow) error {
	if api.Finished(r.Phase) {
		return ErrFinished
	}
	return nil
}

// MessageRun is AddMessage's rule for a new message (a key already used is answered before it):
// a finished run takes none (ErrFinished); a parked run waiting on a message or a question gets
// the returned status (nil: leave the status). The backend then stores the message and pokes.
func MessageRun(r RunRow) (*api.AgentRunStatus, error) {
	st, _, err := MessageRunIfBusy(r, "")
	return st, err
}

// MessageRunIfBusy is MessageRun with the message's ifBusy mode (resolved by the caller: the
// message's, else the agent's, else enqueue). A run is busy when a turn is in flight or about to
// start (api.Busy: Queued or Running); then reject refuses the message (RuleError RunBusy) and
// any other mode is returned as the one to store with it. A run that is not busy (waiting on a
// person, a message, its cap or credits) takes the message as always: stored mode "".
func MessageRunIfBusy(r RunRow, mode api.IfBusy) (*api.AgentRunStatus, api.IfBusy, error) {
	if api.Finished(r.Phase) {
		return nil, "", ErrFinished
	}
	if !api.Busy(r.Phase) {
		return requeue(r, msgMessageArrived, WaitsOnMessage), "", nil
	}
	switch mode {
	case api.IfBusyReject:
		return nil, "", refuse(RefusedState, api.CodeRunBusy, "ifBusy", "the run has a turn in flight (phase %s) and the message asked ifBusy reject; nothing was stored", r.Phase)
	case "":
		mode = api.IfBusyEnqueue
	}
	return requeue(r, msgMessageArrived, WaitsOnMessage), mode, nil
}

// ResolveRun is ResolveStep's rule: the run must wait on stepKey (AwaitsResolution), else
// ErrNotWaiting; a parked one gets the returned status. The backend records the resolution on
// the step only if it has none yet (else ErrNotWaiting) and pokes.
func ResolveRun(r RunRow, stepKey string, resolution api.Resolution) (*api.AgentRunStatus, error) {
	waits := func(st api.AgentRunStatus) bool { return AwaitsResolution(st, stepKey) }
	if !waits(r.Status) {
		return nil, ErrNotWaiting
	}
	return requeue(r, "resolved ("+string(resolution)+"); waiting for a runner to continue", waits), nil
}

// CreditsAdded is AddCredits' rule for one run: a parked run waiting on credits gets the
// returned status (and is poked); any other is left alone (nil).
func CreditsAdded(r RunRow) *api.AgentRunStatus {
	return requeue(r, msgCreditsAdded, WaitsOnCredits)
}

// RaiseCap is RaiseRunCap's rule, after the caller's check accepted the run: the spec takes the
// new cap; a parked run's status shows the new limit and, if it waited on its cap, moves to
// Queued (status nil: leave it, as for a held run, whose holder reads the new spec). The backend
// writes both and pokes the run.
func RaiseCap(spec api.AgentRunSpec, r RunRow, maxCostUSD string) (api.AgentRunSpec, *api.AgentRunStatus) {
	spec.MaxCostUSD = maxCostUSD
	if r.Leased {
		return spec, nil
	}
	var out *api.AgentRunStatus
	if r.Status.Cost != nil {
		c := *r.Status.Cost
		c.LimitUSD = maxCostUSD
		r.Status.Cost = &c
		out = &r.Status
	}
	if st := requeue(r, msgCapRaised, WaitsOnCap); st != nil {
		out = st
	}
	return spec, out
}

// ChargeTotals is what a settled charge adds to the credits account: its amount to what was
// charged, or, when it could not be priced, one to the unknown charges (never $0).
func ChargeTotals(c Charge) (charged, unknown int64) {
	if c.Amount == nil {
		return 0, 1
	}
	return *c.Amount, 0
}

// PlanReservation is ReserveCredits' rule once the run's older hold on the step is gone: with
// credits enforced, the call is reserved if the balance (added minus charged) minus what other
// calls hold covers amount.
func PlanReservation(enforced bool, added, charged, reservedByOthers, amount int64) ReserveResult {
	if !enforced {
		return ReserveResult{}
	}
	res := ReserveResult{Enforced: true, ReservedByOthers: reservedByOthers, Available: added - charged - reservedByOthers}
	res.OK = amount <= res.Available
	return res
}

// CheckVersion is the optimistic concurrency rule of updates: a given resourceVersion must be
// the current one (ErrConflict); an empty one always matches.
func CheckVersion(kind, name, current, given string) error {
	if given != "" && given != current {
		return fmt.Errorf("%s %q has resourceVersion %s, not %s: %w", kind, name, current, given, ErrConflict)
	}
	return nil
}

// Versions is what an update of an agent or a group writes besides its spec and labels.
type Versions struct {
	ResourceVersion int64
	Generation      int64
	// Revision is an agent's revision after the update; SpecChanged: a new revision is stored.
	Revision    int64
	SpecChanged bool
}

// String is the resourceVersion as the API shows it.
func (v Versions) String() string { return strconv.FormatInt(v.ResourceVersion, 10) }

func nextVersions(cur api.ObjectMeta, changed bool) Versions {
	rv, _ := strconv.ParseInt(cur.ResourceVersion, 10, 64)
	v := Versions{ResourceVersion: rv + 1, Generation: cur.Generation, SpecChanged: changed}
	if changed {
		v.Generation++
	}
	return v
}

// UpdateAgentVersions is UpdateAgent's rule (cur is the stored agent, next the update; neither is
// changed): the resourceVersion must match (CheckVersion) and always moves on; a changed spec
// (AgentSpecChanged) moves the generation and makes the next revision.
func UpdateAgentVersions(cur, next *api.Agent) (Versions, error) {
	if err := CheckVersion("agent", cur.Metadata.Name, cur.Metadata.ResourceVersion, next.Metadata.ResourceVersion); err != nil {
		return Versions{}, err
	}
	v := nextVersions(cur.Metadata, AgentSpecChanged(cur.Spec, next.Spec))
	v.Revision = cur.Status.Revision
	if v.SpecChanged {
		v.Revision++
	}
	return v, nil
}

// UpdateGroupVersions is UpdateGroup's rule: the resourceVersion must match, check (if set) must
// accept the stored group, and a changed spec moves the generation.
func UpdateGroupVersions(cur, next *api.AgentGroup, check func(old *api.AgentGroup) error) (Versions, error) {
	if err := CheckVersion("group", cur.Metadata.Name, cur.Metadata.ResourceVersion, next.Metadata.ResourceVersion); err != nil {
		return Versions{}, err
	}
	if check != nil {
		if err := check(cur); err != nil {
			return Versions{}, err
		}
	}
	return nextVersions(cur.Metadata, GroupSpecChanged(cur.Spec, next.Spec)), nil
}

// AgentSpecChanged reports whether an update changes an agent's spec, and so makes a new
// revision. Specs compare as JSON, so nil and empty lists are the same.
func AgentSpecChanged(old, new api.AgentSpec) bool {
	return !reflect.DeepEqual(asJSON(old), asJSON(new))
}

// GroupSpecChanged reports whether an update changes a group's spec, and so its generation.
func GroupSpecChanged(old, new api.AgentGroupSpec) bool {
	return !reflect.DeepEqual(asJSON(old), asJSON(new))
}

// ClaimableOnCreate reports whether a run created in a batch is claimable at once: a group's
// member waits for admission, and a run created finished is never claimed.
func ClaimableOnCreate(r *api.AgentRun) bool {
	return r.Spec.Group == "" && !api.Finished(r.Status.Phase)
}

func asJSON(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v // not reached: an AgentSpec always marshals
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return v
	}
	return out
}

// UpdateKind is what a MemberUpdate does to the member's row.
type UpdateKind int

const (
	// UpdateWait rewrites a waiting member's status and wait kind.
	UpdateWait UpdateKind = iota
	// UpdateAdmit admits the member: claimable now, wait cleared, status rewritten.
	UpdateAdmit
	// UpdateFinish ends a member that can never start (phase column too, never claimable).
	UpdateFinish
)

// Kind says which row change the update is.
func (u MemberUpdate) Kind() UpdateKind {
	switch {
	case u.Admit:
		return UpdateAdmit
	case api.Finished(u.Status.Phase):
		return UpdateFinish
	}
	return UpdateWait
}

// AdmissionReader is what NothingToAdmit reads.
type AdmissionReader interface {
	GetGroup(ctx context.Context, name string) (*api.AgentGroup, error)
	GroupMembers(ctx context.Context, group string) ([]Member, error)
}

// NothingToAdmit looks at a group without a transaction: most admission passes change nothing,
// and then need not take the group's lock. An error reads as "something may change".
func NothingToAdmit(ctx context.Context, r AdmissionReader, group string, now time.Time) bool {
	g, err := r.GetGroup(ctx, group)
	if err != nil {
		return false
	}
	ms, err := r.GroupMembers(ctx, group)
	return err == nil && len(PlanAdmission(g, ms, now)) == 0
}
