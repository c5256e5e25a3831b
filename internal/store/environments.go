package store

import (
	"context"

	"agentrun.dev/agentrun/internal/api"
)

// Environments keeps evaluation environments, immutable per NAME@VERSION.
type Environments interface {
	// PutEnvironment stores NAME@VERSION. The same content again changes nothing (created false);
	// other content under a NAME@VERSION already stored is ErrAlreadyExists (versions are
	// immutable: load a new version).
	PutEnvironment(ctx context.Context, e *api.Environment) (created bool, err error)
	GetEnvironment(ctx context.Context, name, version string) (*api.Environment, error)
	// ListEnvironments returns every stored environment, whole, ordered by name and version (the
	// server never shows the tasks' answers).
	ListEnvironments(ctx context.Context) ([]*api.Environment, error)
}
