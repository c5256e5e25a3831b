package store

import (
	"context"
	"fmt"
	"time"

	"agentrun.dev/agentrun/internal/api"
)

// DefaultRetention is how long a finished run's recorded payloads are kept (the Nodus seed: "A
// run's recorded payloads are kept 30 days after it ends").
const DefaultRetention = 30 * 24 * time.Hour

// FinishedPhases are the phases a run never leaves, the only ones retention touches.
var FinishedPhases = []api.Phase{api.PhaseSucceeded, api.PhaseFailed, api.PhaseCancelled}

// Retention purges what a finished run recorded once it is old enough.
type Retention interface {
	// PurgePayloads purges, for at most max runs that finished before `before` and were not
	// purged yet, the journal's payloads (each step's arguments, result and resolution result;
	// a model call's request and reply are these), the events' data and the run-folder snapshot (and its history),
	// and sets status.payloadsPurgedAt to now. It keeps the run, its status (cost, turns, the
	// answer's preview), its messages, and its step list (keys, kinds, states, titles, costs,
	// times, errors). Whether a run may be purged is PurgeDue, checked again inside the
	// transaction that purges it, so a run that is not finished is never touched. It answers the
	// names purged.
	PurgePayloads(ctx context.Context, before, now time.Time, max int) ([]string, error)
}

// PurgeDue reports whether a run in phase with status st may have its payloads purged, for a
// cut-off of before: it finished (a phase it never leaves) before the cut-off and was not purged
// already. A finished run with no finishing time is kept: its age is not known.
func PurgeDue(phase api.Phase, st api.AgentRunStatus, before time.Time) bool {
	return api.Finished(phase) && api.Finished(st.Phase) && st.PayloadsPurgedAt == nil &&
		st.FinishedAt != nil && st.FinishedAt.Before(before)
}

// Purged is st marked as purged at now.
func Purged(st api.AgentRunStatus, now time.Time) api.AgentRunStatus {
	t := now.UTC().Truncate(time.Millisecond)
	st.PayloadsPurgedAt = &t
	return st
}

// PurgePage is how many candidates one read of a purge looks at.
const PurgePage = 200

// PurgeCandidate is a finished, unpurged run a backend read as a candidate for a purge.
type PurgeCandidate struct {
	Name   string
	Phase  api.Phase
	Status api.AgentRunStatus
}

// PurgeWalk is the purge's walk, the same on every backend (which keep only its SQL): next
// reads the next page of at most PurgePage candidates, oldest first, advancing its own cursor;
// purge purges one run in a transaction of its own, checking PurgeDue again on the row it reads
// there, and says whether it did. The walk purges at most max runs and answers their names.
func PurgeWalk(ctx context.Context, before time.Time, max int, next func(context.Context) ([]PurgeCandidate, error), purge func(ctx context.Context, name string) (bool, error)) ([]string, error) {
	var out []string
	for len(out) < max {
		page, err := next(ctx)
		if err != nil {
			return out, fmt.Errorf("purge payloads: list candidates: %w", err)
		}
		for _, c := range page {
			if len(out) == max {
				break
			}
			if !PurgeDue(c.Phase, c.Status, before) {
				continue
			}
			ok, err := purge(ctx, c.Name)
			if err != nil {
				return out, err
			}
			if ok {
				out = append(out, c.Name)
			}
		}
		if len(page) < PurgePage {
			break
		}
	}
	return out, nil
}
