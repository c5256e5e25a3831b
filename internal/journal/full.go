package journal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// spaceRetry is how often a run waiting for store space tries its write again.
const spaceRetry = 2 * time.Second

// waitForSpace is a commit that failed because the store's disk is full. Nothing of w was
// written, and the drive still holds everything w records, so failing the run (or giving it up
// to replay an intent with no completion) would lose work for a condition an operator fixes. The
// run shows Waiting/StoreFull (a small write, which often fits where w did not) and w is tried
// again until it goes through, then the status before the wait is written back with it. It ends
// only with ctx (the runner stopping or its lease lost: the next owner replays) or another error.
func (j *Journal) waitForSpace(ctx context.Context, w store.Write) (store.Signals, error) {
	base := j.last
	if base == nil {
		r, err := j.st.GetRun(ctx, j.lease.Run)
		if err != nil {
			return store.Signals{}, fmt.Errorf("store full, and reading run %s failed: %w", j.lease.Run, err)
		}
		base = &r.Status
	}
	waiting := *base
	waiting.Phase, waiting.Reason = api.PhaseWaiting, api.ReasonStoreFull
	waiting.Message = "the store's disk is full: the run waits and goes on by itself once space is freed"
	waiting.WaitingOn = &api.WaitingOn{Kind: "storage", Detail: "free space on the store's disk"}
	shown := false
	show := func() {
		ev := api.Event{Type: api.EventStoreFull, Message: waiting.Message}
		if _, err := j.st.Commit(ctx, j.lease, store.Write{Status: &waiting, Events: []api.Event{ev}}); err == nil {
			shown = true
		}
	}
	show()
	t := time.NewTicker(spaceRetry)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return store.Signals{}, fmt.Errorf("waiting for store space: %w", ctx.Err())
		case <-t.C:
		}
		if !shown {
			show()
		}
		again := w
		if shown {
			// The wait is over with this write: say so and show the status from before it.
			again.Events = append(append([]api.Event(nil), w.Events...), api.Event{Type: api.EventStoreSpace, Message: "the store has space again; the run goes on"})
			if again.Status == nil {
				again.Status = base
			}
		}
		sig, err := j.st.Commit(ctx, j.lease, again)
		if err == nil {
			return sig, nil
		}
		if !errors.Is(err, store.ErrStoreFull) {
			return sig, err
		}
	}
}
