package app

import (
	"context"
	"log/slog"

	"agentrun.dev/agentrun/internal/computer/local"
	"agentrun.dev/agentrun/internal/eval"
	"agentrun.dev/agentrun/internal/group"
	"agentrun.dev/agentrun/internal/server"
	"agentrun.dev/agentrun/internal/store"
)

// startGroups starts the group admission loop and the evaluation grader of a server; they stop
// with ctx. Every server runs them: admission is transactional in the store, and grading writes
// results only over the group status it read (resourceVersion).
func startGroups(ctx context.Context, srv *server.Server, st store.Store, log *slog.Logger) {
	srv.Groups = group.New(st, log.With("part", "groups"))
	ev := &eval.Evaluator{Store: st, Log: log.With("part", "eval"), BaseURL: srv.BaseURL, Sandbox: local.New()}
	srv.Eval = ev
	go srv.Groups.Run(ctx)
	go ev.Run(ctx)
}
