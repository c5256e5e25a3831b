package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
)

// Groups is the part of the store that keeps AgentGroups, creates runs in batches and admits
// group members (docs/architecture.md, "Groups, triggers and learning"; the Nodus seed's "Run
// agents in parallel").
//
// A member run (spec.group set) is created not admitted: no runner can claim it (ClaimRuns skips
// it whatever its claimable time) until AdmitGroup admits it, in a transaction that holds the
// group (PostgreSQL: the group's row locked FOR UPDATE; SQLite: the single writer), reads every
// member in one statement, and admits in creation order while every dependency has succeeded,
// fewer than limits.maxActive members are admitted and unfinished, and the run's own cap fits under
// the group cap minus the spend of finished members minus max(cap, spend) of admitted unfinished
// ones. Admission is therefore safe with any number of servers running it, and its state is all in
// the store.
type Groups interface {
	Environments

	// CreateGroup stores a new group (sets uid, resourceVersion, generation, creationTimestamp).
	// ErrAlreadyExists if the name is taken. status.agentRevision and status.deadline are kept.
	CreateGroup(ctx context.Context, g *api.AgentGroup) error
	// GetGroup returns the group with its stored status (the rest of status is derived from the
	// members: see GroupMembers).
	GetGroup(ctx context.Context, name string) (*api.AgentGroup, error)
	ListGroups(ctx context.Context) ([]*api.AgentGroup, error)
	// UpdateGroup replaces spec and labels; a non-empty resourceVersion must match (ErrConflict).
	// check, if set, runs inside the transaction with the stored group and may refuse the change.
	UpdateGroup(ctx context.Context, g *api.AgentGroup, check func(old *api.AgentGroup) error) error
	// SetGroupStatus replaces the stored status (evaluation results, pinned revision); a
	// non-empty resourceVersion must match (ErrConflict). It returns the new resourceVersion.
	SetGroupStatus(ctx context.Context, name, resourceVersion string, st api.AgentGroupStatus) (string, error)
	// CancelGroup marks the group cancelled: members not admitted end Cancelled (UserCancelled)
	// at once; admitted unfinished ones get a cancel request (their names are returned, for the
	// local runner to interrupt). Finished members stay as they are.
	CancelGroup(ctx context.Context, name string) (requested []string, err error)
	// DeleteGroup removes the group with all its runs (and their journals, events, messages and
	// files) and its evaluation results; it returns the runs' names.
	DeleteGroup(ctx context.Context, name string) (runs []string, err error)
	// GroupMembers returns every member of the group in creation order.
	GroupMembers(ctx context.Context, group string) ([]Member, error)
	// CreateRuns creates runs atomically, in order (a member's dependencies must be in its group
	// already, earlier in the batch included), checking members against their groups (exists, not
	// sealed or cancelled, same agent, maxPending). A non-empty key makes the batch idempotent: a
	// key already used returns the first batch's runs and replayed=true (with a different hash,
	// an *api.Error IdempotencyKeyReused). Errors about one item are *ItemError.
	CreateRuns(ctx context.Context, runs []*api.AgentRun, key, hash string) (created []*api.AgentRun, replayed bool, err error)
	// AdmitGroup runs admission for one group (see Groups) and finishes members that can never
	// start: dependencies failed or cancelled, the group cancelled, the run cancelled, or its
	// deadline passed before admission. It returns how many runs it admitted.
	AdmitGroup(ctx context.Context, group string, now time.Time) (admitted int, err error)
	// GroupsToAdmit names the groups that have members waiting for admission.
	GroupsToAdmit(ctx context.Context) ([]string, error)
}

// Member is a group member as admission and the group's status see it.
type Member struct {
	Name      string
	TaskKey   string
	Seq       int64
	Phase     api.Phase
	Reason    api.Reason
	Admitted  bool
	Leased    bool
	DependsOn []string
	// Wait is why a queued member waits: DependencyWait, MaxActiveReached or MaxCostReached.
	Wait            api.Reason
	CapMicros       cost.Micros
	SpentMicros     cost.Micros
	CancelRequested bool
	// Status is the full status of members not admitted (AdmitGroup rewrites it); nil otherwise.
	Status *api.AgentRunStatus
}

// ItemError is an error about one item of a batch.
type ItemError struct {
	Index int
	Err   error
}

func (e *ItemError) Error() string { return fmt.Sprintf("items[%d]: %v", e.Index, e.Err) }
func (e *ItemError) Unwrap() error { return e.Err }

// MemberUpdate is one change AdmitGroup makes to a member.
type MemberUpdate struct {
	Name string
	// Admit makes the run claimable.
	Admit bool
	// Status is the member's new status (admitted, waiting with a reason, or finished).
	Status api.AgentRunStatus
	// Wait is the new wait kind (empty when admitted or finished).
	Wait api.Reason
	// Event is added to the member's timeline.
	Event api.Event
}

// groupCapMicros is the group's cost cap, if it has one.
func groupCapMicros(g *api.AgentGroup) (cost.Micros, bool) {
	if g.Spec.Limits.MaxCostUSD == "" {
		return 0, false
	}
	m, err := cost.ParseUSD(g.Spec.Limits.MaxCostUSD)
	if err != nil {
		return 0, false
	}
	return m, true
}

// PlanAdmission decides, from the group and all its members (in creation order), what AdmitGroup
// changes. It is pure, so both backends share it and it is tested once.
func PlanAdmission(g *api.AgentGroup, members []Member, now time.Time) []MemberUpdate {
	maxActive := g.Spec.Limits.MaxActive
	if maxActive <= 0 {
		maxActive = api.DefaultMaxActive
	}
	capM, hasCap := groupCapMicros(g)
	byKey := map[string]*Member{}
	active := 0
	var committed cost.Micros
	for i := range members {
		m := &members[i]
		byKey[m.TaskKey] = m
		if !m.Admitted {
			continue
		}
		if api.Finished(m.Phase) {
			committed += m.SpentMicros
		} else {
			active++
			committed += max(m.CapMicros, m.SpentMicros)
		}
	}
	cancelled := g.Status.CancelRequested
	var out []MemberUpdate
	var blocked api.Reason // once a run waits for the group, later ones wait too (first come, first served)
	for i := range members {
		m := &members[i]
		if m.Admitted || m.Phase != api.PhaseQueued || m.Status == nil {
			continue
		}
		st := *m.Status
		finish := func(phase api.Phase, reason api.Reason, msg string) {
			t := now.UTC()
			st.Phase, st.Reason, st.Message, st.WaitingOn, st.FinishedAt, st.CancelRequested = phase, reason, msg, nil, &t, false
			out = append(out, MemberUpdate{Name: m.Name, Status: st, Event: api.Event{Time: now, Type: api.FinishEvent(phase), Message: msg}})
			m.Phase, m.Reason = phase, reason
		}
		if cancelled || m.CancelRequested {
			finish(api.PhaseCancelled, api.ReasonUserCancelled, "cancelled by a user before it started")
			continue
		}
		if st.Deadline != nil && !now.Before(*st.Deadline) {
			finish(api.PhaseFailed, api.ReasonDeadlineExceeded, "the run's deadline passed at "+st.Deadline.Format(time.RFC3339)+" before it could start")
			continue
		}
		var depEnd api.Reason
		depWait := ""
		for _, k := range m.DependsOn {
			d := byKey[k]
			switch {
			case d == nil:
				depEnd, depWait = api.ReasonDependencyCancelled, "dependency "+k+" was deleted"
			case d.Phase == api.PhaseFailed:
				depEnd, depWait = api.ReasonDependencyFailed, "dependency "+k+" failed"
			case d.Phase == api.PhaseCancelled && depEnd == "":
				depEnd, depWait = api.ReasonDependencyCancelled, "dependency "+k+" was cancelled"
			case d.Phase != api.PhaseSucceeded && depWait == "":
				depWait = "waiting for dependency " + k + " to succeed"
			}
			if depEnd == api.ReasonDependencyFailed {
				break
			}
		}
		if depEnd != "" {
			finish(api.PhaseCancelled, depEnd, depWait)
			continue
		}
		var wait, reason api.Reason
		msg := ""
		switch {
		case depWait != "":
			wait, reason, msg = api.ReasonDependencyWait, api.ReasonDependencyWait, depWait
		case blocked != "":
			wait, reason = blocked, api.ReasonGroupWait
		case active >= maxActive:
			wait, reason = api.ReasonMaxActiveReached, api.ReasonGroupWait
		case hasCap && committed+m.CapMicros > capM:
			wait, reason = api.ReasonMaxCostReached, api.ReasonGroupWait
		}
		if reason == api.ReasonGroupWait {
			blocked = wait
			// Messages stay the same while the wait does, so a pass rewrites only members whose
			// wait changed (a big group's queue is not rewritten whenever one run ends).
			if wait == api.ReasonMaxActiveReached {
				msg = fmt.Sprintf("%s: group %s runs at most %d at once; waiting for a slot", wait, g.Metadata.Name, maxActive)
			} else {
				msg = fmt.Sprintf("%s: waiting until the run's cap ($%s) fits under what is left of group %s's cap ($%s)", wait, m.CapMicros, g.Metadata.Name, capM)
			}
		}
		if reason != "" {
			if st.Reason != reason || st.Message != msg || m.Wait != wait {
				st.Reason, st.Message = reason, msg
				out = append(out, MemberUpdate{Name: m.Name, Status: st, Wait: wait})
			}
			continue
		}
		active++
		committed += m.CapMicros
		st.Reason, st.Message = "", "admitted by group "+g.Metadata.Name+"; waiting for a runner"
		out = append(out, MemberUpdate{Name: m.Name, Admit: true, Status: st,
			Event: api.Event{Time: now, Type: api.EventRunAdmitted, Message: fmt.Sprintf("admitted by group %s (%d of %d active)", g.Metadata.Name, active, maxActive)}})
	}
	return out
}

// CheckMember checks a new member run against its group and the members already there (in the
// same transaction as its insertion). unfinished is the number of unfinished members; keys are
// the task keys present. A refusal is a *RuleError.
func CheckMember(g *api.AgentGroup, r *api.AgentRun, unfinished int, keys map[string]bool) error {
	if g.Status.CancelRequested {
		return refuse(RefusedState, api.CodeGroupCancelled, "spec.group", "group %q is cancelled and takes no new runs", g.Metadata.Name)
	}
	evalCase := g.Spec.Evaluation != nil && r.Metadata.Labels[api.EvalLabel] != ""
	if g.Spec.Sealed && !evalCase { // an evaluation group is sealed from the start; it adds its own cases
		return refuse(RefusedState, api.CodeGroupSealed, "spec.group", "group %q is sealed and takes no new runs", g.Metadata.Name)
	}
	if r.Spec.Agent != g.Spec.Agent {
		return refuse(RefusedInvalid, api.CodeInvalid, "spec.agent", "group %q runs agent %q; a member's spec.agent must match it (got %q)", g.Metadata.Name, g.Spec.Agent, r.Spec.Agent)
	}
	maxPending := g.Spec.Limits.MaxPending
	if maxPending <= 0 {
		maxPending = api.DefaultMaxPending
	}
	if unfinished >= maxPending {
		return refuse(RefusedState, api.CodeMaxPendingReached, "spec.group", "group %q already has %d unfinished runs (limits.maxPending %d)", g.Metadata.Name, unfinished, maxPending)
	}
	if keys[r.Spec.TaskKey] {
		return refuse(RefusedState, api.CodeAlreadyExists, "spec.taskKey", "group %q already has a run with task key %q", g.Metadata.Name, r.Spec.TaskKey)
	}
	for i, d := range r.Spec.DependsOn {
		if !keys[d] {
			return refuse(RefusedInvalid, api.CodeInvalid, api.NewPath("spec", "dependsOn").Index(i).String(), "task %q is not in group %q yet: create the runs a run depends on first (earlier in the same file or batch works)", d, g.Metadata.Name)
		}
	}
	return nil
}

// GroupNotFound is CreateRuns' refusal of a member whose group does not exist.
func GroupNotFound(name string) error {
	return refuse(RefusedMissing, api.CodeGroupNotFound, "spec.group", "group %q does not exist", name)
}

// CheckBatchKey is CreateRuns' rule for a batch key already used: the same batch (hash) again
// is a replay; another one is refused.
func CheckBatchKey(key, storedHash, hash string) error {
	if storedHash != hash {
		return refuse(RefusedInvalid, api.CodeIdempotencyReused, "Idempotency-Key", "Idempotency-Key %q was used for a different batch", key)
	}
	return nil
}

// BatchItemError is how CreateRuns reports that item i of a batch of n failed: a rule's refusal,
// or anything in a batch of more than one, names the item (*ItemError).
func BatchItemError(i, n int, err error) error {
	if _, ok := AsRuleError(err); ok || n > 1 {
		return &ItemError{Index: i, Err: err}
	}
	if _, ok := api.AsError(err); ok {
		return &ItemError{Index: i, Err: err}
	}
	return err
}

// BatchGroup is what CreateRuns knows of one group during a batch: the group as stored (read
// under its lock), how many members are unfinished and the last member's seq.
type BatchGroup struct {
	Group      *api.AgentGroup
	Unfinished int
	Seq        int64
}

// NewMember is the row a member run is inserted with: never claimable until admitted.
type NewMember struct {
	Group, TaskKey string
	Seq            int64
	// Wait is the initial wait kind (DependencyWait or none).
	Wait      api.Reason
	DependsOn []string // never nil
	CapMicros cost.Micros
}

// AddMember checks r against the group (CheckMember, with keys the task keys of its
// dependencies found in the group), pins the group's agent revision, sets r's initial status and
// counts it in the batch. It returns the member's row.
func (bg *BatchGroup) AddMember(r *api.AgentRun, keys map[string]bool) (NewMember, error) {
	if err := CheckMember(bg.Group, r, bg.Unfinished, keys); err != nil {
		return NewMember{}, err
	}
	if bg.Group.Status.AgentRevision != 0 {
		r.Status.AgentRevision = bg.Group.Status.AgentRevision
	}
	wait := InitialMemberStatus(r)
	bg.Seq++
	bg.Unfinished++
	deps := r.Spec.DependsOn
	if deps == nil {
		deps = []string{}
	}
	return NewMember{Group: r.Spec.Group, TaskKey: r.Spec.TaskKey, Seq: bg.Seq, Wait: wait, DependsOn: deps, CapMicros: RunCapMicros(r)}, nil
}

// InitialMemberStatus sets a new member's waiting reason before its first admission pass.
func InitialMemberStatus(r *api.AgentRun) (wait api.Reason) {
	if len(r.Spec.DependsOn) > 0 {
		r.Status.Reason, r.Status.Message = api.ReasonDependencyWait, "waiting for dependencies "+fmt.Sprint(r.Spec.DependsOn)
		return api.ReasonDependencyWait
	}
	r.Status.Reason, r.Status.Message = api.ReasonGroupWait, "waiting for admission by group "+r.Spec.Group
	return ""
}

// RunCapMicros is a run's own cap (spec.maxCostUSD), 0 if it has none.
func RunCapMicros(r *api.AgentRun) cost.Micros {
	m, err := cost.ParseUSD(r.Spec.MaxCostUSD)
	if err != nil {
		return 0
	}
	return m
}

// SpentMicros reads a run's status.cost.totalUSD for admission: "unknown" (a call that could not
// be priced) counts as the whole cap, "at least X" as the larger of X and the cap.
func SpentMicros(total string, capM cost.Micros) cost.Micros {
	if total == "" {
		return 0
	}
	if m, err := cost.ParseUSD(total); err == nil {
		return m
	}
	if rest, ok := strings.CutPrefix(total, "at least "); ok {
		if m, err := cost.ParseUSD(rest); err == nil {
			return max(m, capM)
		}
	}
	return capM
}
