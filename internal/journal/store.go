package journal

import (
	"context"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// Store is the part of the store a journal uses: the run's steps when it opens, fenced commits,
// and the run's status (shown again once a write refused for a full disk goes through).
type Store interface {
	ListSteps(ctx context.Context, run string) ([]api.Step, error)
	Commit(ctx context.Context, l store.Lease, w store.Write) (store.Signals, error)
	GetRun(ctx context.Context, name string) (*api.AgentRun, error)
}

var _ Store = store.Store(nil)
