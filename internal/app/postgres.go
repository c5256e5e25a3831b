package app

import (
	"context"

	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/store/postgres"
)

func init() {
	openPostgres = func(ctx context.Context, url string) (store.Store, error) {
		return postgres.Open(ctx, url)
	}
}
