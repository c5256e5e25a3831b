// Package group schedules AgentGroups: it derives a group's status from its members and runs the
// admission loop that lets queued members start (internal/store.Groups.AdmitGroup does the
// admitting, in one store transaction per group, so the loop is safe to run in every server at
// once and keeps no state of its own: after a restart it carries on from the store).
package group

import (
	"context"
	"log/slog"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/store"
)

// Status derives a group's status from its members (in creation order) and its stored status
// (cancel request, pinned revision, deadline, evaluation).
func Status(g *api.AgentGroup, members []store.Member) api.AgentGroupStatus {
	st := g.Status
	st.Counts = api.GroupCounts{}
	st.BlockedReasons = map[api.Reason]int{}
	var spent cost.Micros
	unfinished, failed := 0, false
	for _, m := range members {
		spent += spentOf(m)
		switch m.Phase {
		case api.PhaseSucceeded:
			st.Counts.Succeeded++
		case api.PhaseFailed:
			st.Counts.Failed++
			failed = true
		case api.PhaseCancelled:
			st.Counts.Cancelled++
			if m.Reason == api.ReasonDependencyFailed {
				failed = true
			}
		case api.PhaseWaiting, api.PhaseNeedsResolution:
			st.Counts.Waiting++
			unfinished++
		default: // Queued or Running
			unfinished++
			if m.Admitted {
				st.Counts.Active++
			} else {
				st.Counts.Queued++
				if m.Wait != "" {
					st.BlockedReasons[m.Wait]++
				}
			}
		}
	}
	if len(st.BlockedReasons) == 0 {
		st.BlockedReasons = nil
	}
	st.Cost = &api.RunCost{TotalUSD: spent.String(), LimitUSD: g.Spec.Limits.MaxCostUSD}
	st.Reason, st.Message = "", ""
	switch {
	case g.Status.CancelRequested && unfinished > 0:
		st.Phase, st.Message = api.GroupCancelling, "cancelling the runs that have not finished"
	case g.Status.CancelRequested:
		st.Phase, st.Reason = api.GroupCancelled, api.ReasonUserCancelled
	case g.Spec.Sealed && unfinished == 0 && !evalPending(g):
		if e := g.Status.Evaluation; e != nil && e.Error != "" {
			st.Phase, st.Reason, st.Message = api.GroupFailed, "EvaluationFailed", e.Error
		} else if failed {
			st.Phase, st.Reason, st.Message = api.GroupFailed, api.ReasonRunsFailed, "a run failed or was cancelled because a dependency failed"
		} else {
			st.Phase = api.GroupSucceeded
		}
	default:
		st.Phase = api.GroupRunning
		if !g.Spec.Sealed {
			st.Message = "takes new runs until sealed (spec.sealed: true)"
		}
	}
	return st
}

// evalPending: an evaluation group is not finished while cases wait to be graded.
func evalPending(g *api.AgentGroup) bool {
	e := g.Status.Evaluation
	return g.Spec.Evaluation != nil && (e == nil || e.Pending > 0)
}

func spentOf(m store.Member) cost.Micros {
	// Member.SpentMicros counts an unpriced call as the run's whole cap (for admission); the
	// group's reported spend is the same conservative figure.
	return m.SpentMicros
}

// Store is the part of the store the controller uses: which groups wait, admission, and the
// store's wake-ups.
type Store interface {
	GroupsToAdmit(ctx context.Context) ([]string, error)
	AdmitGroup(ctx context.Context, group string, now time.Time) (admitted int, err error)
	WaitWork(ctx context.Context, d time.Duration)
}

// Controller runs admission for every group with members waiting, whenever the store says runs
// may have changed and at least every Interval.
type Controller struct {
	Store    Store
	Log      *slog.Logger
	Interval time.Duration
	// Hook, if set, runs after each pass (evaluation grading).
	Hook func(ctx context.Context)
	kick chan struct{}
}

// New makes a controller.
func New(st Store, log *slog.Logger) *Controller {
	return &Controller{Store: st, Log: log, Interval: 500 * time.Millisecond, kick: make(chan struct{}, 1)}
}

// Kick asks for a pass soon (after creating members, changing limits, a run finishing).
func (c *Controller) Kick() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Run admits until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	for ctx.Err() == nil {
		c.Pass(ctx)
		if c.Hook != nil {
			c.Hook(ctx)
		}
		wctx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-c.kick:
				cancel()
			case <-wctx.Done():
			}
		}()
		c.Store.WaitWork(wctx, c.Interval)
		cancel()
		// Bound the rate: a busy store wakes waiters constantly.
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Pass runs admission once for every group with members waiting.
func (c *Controller) Pass(ctx context.Context) {
	names, err := c.Store.GroupsToAdmit(ctx)
	if err != nil {
		if ctx.Err() == nil {
			c.Log.Warn("groups to admit", "err", err)
		}
		return
	}
	for _, n := range names {
		if _, err := c.Store.AdmitGroup(ctx, n, time.Now()); err != nil && ctx.Err() == nil {
			c.Log.Warn("admit group", "group", n, "err", err)
		}
	}
}
