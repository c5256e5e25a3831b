package runner

import (
	"context"
	"errors"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/store"
)

// hangingCommits is a real store whose commits answer only when their context ends (a store cut
// off without a reset), reporting each commit's end on ended.
type hangingCommits struct {
	store.Store
	started chan struct{}
	ended   chan error
}

func (h *hangingCommits) Commit(ctx context.Context, l store.Lease, w store.Write) (store.Signals, error) {
	select {
	case h.started <- struct{}{}:
	default:
	}
	<-ctx.Done()
	select {
	case h.ended <- ctx.Err():
	default:
	}
	return store.Signals{}, ctx.Err()
}

type failingDriver struct{}

func (failingDriver) Drive(ctx context.Context, l store.Lease) error {
	return errors.New("drive failed")
}

// The release after a failed drive is bounded (by the lease): a store that does not answer does
// not keep the drive's goroutine, nor Run, which waits for it, forever.
func TestReleaseAfterFailedDriveIsBounded(t *testing.T) {
	t.Parallel()
	st := &hangingCommits{Store: newStore(t), started: make(chan struct{}, 1), ended: make(chan error, 1)}
	createRun(t, st, "run-1")
	r := &Runner{Name: "r1", Store: st, Driver: failingDriver{}, Log: quiet, LeaseTTL: 1500 * time.Millisecond, RenewEvery: 500 * time.Millisecond, PollEvery: 50 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()

	<-st.started // the release commit, hanging
	cancel()
	// A liveness bound, not a timing assertion: without the release's own deadline Run never
	// returns, and this fails instead of hanging the whole test binary.
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Run did not return: the release after the failed drive holds it")
	}
	select {
	case err := <-st.ended:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("the release commit ended with %v, want its own deadline", err)
		}
	default:
		t.Error("the release commit had not ended when Run returned")
	}
}
