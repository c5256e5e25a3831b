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

// groupControllers makes a server's group admission loop and evaluation grader and returns them
// for runParts to run and stop. Every server runs them: admission is transactional in the store,
// and grading writes results only over the group status it read (resourceVersion).
func groupControllers(srv *server.Server, st store.Store, log *slog.Logger) map[string]func(context.Context) {
	srv.Groups = group.New(st, log.With("part", "groups"))
	ev := &eval.Evaluator{Store: st, Log: log.With("part", "eval"), BaseURL: srv.BaseURL, Sandbox: local.New()}
	srv.Eval = ev
	return map[string]func(context.Context){"group controller": srv.Groups.Run, "evaluator": ev.Run}
}
