package app

import (
	"context"
	"log/slog"

	"agentrun.dev/agentrun/internal/group"
	"agentrun.dev/agentrun/internal/server"
	"agentrun.dev/agentrun/internal/store"
)

// startGroups starts the group admission loop (and evaluation, when available) of a server; it
// stops with ctx. Every server runs it: admission is transactional in the store.
func startGroups(ctx context.Context, srv *server.Server, st store.Store, log *slog.Logger) {
	srv.Groups = group.New(st, log.With("part", "groups"))
	go srv.Groups.Run(ctx)
}
