package store

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"agentrun.dev/agentrun/internal/api"
)

// Triggers is the part of the store that keeps Triggers and their fires (docs/architecture.md,
// "Groups, triggers and learning").
//
// A fire is one row, unique per trigger and key (a schedule slot's time, a webhook's id, a
// GitHub delivery id), and the run it starts is inserted in the same transaction: whichever
// server sees a slot or a delivery first records it, every other one finds the row and starts
// nothing. The concurrency policy is decided in that transaction too, from the previous fire's
// run (PlanFire).
type Triggers interface {
	// CreateTrigger stores a new trigger (uid, resourceVersion, generation, creationTimestamp).
	// ErrAlreadyExists if the name is taken.
	CreateTrigger(ctx context.Context, t *api.Trigger) error
	// UpdateTrigger replaces spec and labels; a non-empty resourceVersion must match (ErrConflict).
	UpdateTrigger(ctx context.Context, t *api.Trigger) error
	GetTrigger(ctx context.Context, name string) (*api.Trigger, error)
	ListTriggers(ctx context.Context) ([]*api.Trigger, error)
	// DeleteTrigger removes the trigger and its fire records; the runs it started stay.
	DeleteTrigger(ctx context.Context, name string) error
	// RecordFire records f once per (f.Trigger, f.Key). A key already recorded returns the first
	// record and created=false, starting nothing. Otherwise, when run is not nil, PlanFire
	// decides from the trigger's concurrency and the last fire's run whether the run is created
	// (in the same transaction, as CreateRuns would: a group member when spec.group is set), and
	// whether that last run is asked to cancel (Replace); the record says what happened.
	RecordFire(ctx context.Context, f api.TriggerFire, concurrency api.Concurrency, run *api.AgentRun) (rec api.TriggerFire, created bool, err error)
	// ListFires returns the trigger's fires, newest first, at most limit (0: all).
	ListFires(ctx context.Context, trigger string, limit int) ([]api.TriggerFire, error)
	// LastSlot returns the latest schedule slot recorded for the trigger (ok=false: none).
	LastSlot(ctx context.Context, trigger string) (slot time.Time, ok bool, err error)
}

// FireDecision is what PlanFire decides for a new fire.
type FireDecision struct {
	// Start: create the run. CancelPrevious: ask the last fire's run to cancel.
	Start          bool
	CancelPrevious bool
	Outcome        string
	Message        string
}

// PlanFire decides a new fire's outcome from the concurrency policy and the last fire's run
// (prevRun "" if there is none; prevPhase its phase, "" if it was deleted). It is pure, so both
// backends share it.
func PlanFire(concurrency api.Concurrency, prevRun, prevPhase string) FireDecision {
	unfinished := prevRun != "" && prevPhase != "" && !api.Finished(prevPhase)
	switch {
	case unfinished && concurrency == api.ConcurrencyForbid:
		return FireDecision{Outcome: api.FireSkipped, Message: fmt.Sprintf("concurrency Forbid: the last fire's run %s is %s", prevRun, prevPhase)}
	case unfinished && concurrency == api.ConcurrencyReplace:
		return FireDecision{Start: true, CancelPrevious: true, Outcome: api.FireReplaced, Message: fmt.Sprintf("concurrency Replace: asked the last fire's run %s to cancel", prevRun)}
	}
	return FireDecision{Start: true, Outcome: api.FireStarted}
}

// CheckTriggerUpdate is UpdateTrigger's rule: the resourceVersion check, and the versions to
// write (generation moves with the spec).
func CheckTriggerUpdate(cur, next *api.Trigger) (Versions, error) {
	if err := CheckVersion("trigger", cur.Metadata.Name, cur.Metadata.ResourceVersion, next.Metadata.ResourceVersion); err != nil {
		return Versions{}, err
	}
	return nextVersions(cur.Metadata, !sameSpec(cur.Spec, next.Spec)), nil
}

func sameSpec(a, b api.TriggerSpec) bool { return reflect.DeepEqual(asJSON(a), asJSON(b)) }

// FillFireRun sets a fire's RunPhase and CostUSD from its run's phase column and status JSON
// (both empty when the run was deleted or there is none).
func FillFireRun(f *api.TriggerFire, phase string, status []byte) {
	f.RunPhase = phase
	if len(status) == 0 {
		return
	}
	var st api.AgentRunStatus
	if json.Unmarshal(status, &st) == nil && st.Cost != nil {
		f.CostUSD = st.Cost.TotalUSD
	}
}
