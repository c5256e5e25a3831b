// Package app is the agentrun binary's command tree: `serve` (the server with its in-process
// runner), `dev model-server`, and the CLI verbs from internal/cli. cmd/agentrun is a one-line
// main around Main; end-to-end tests run Main from their own test binary so the Go test cache
// knows every source file they exercise.
//
// It is the composition root: the only package that builds the store, the runner with its driver
// (internal/agent), the server and the background loops (groups, triggers, retention) from flags
// and environment, and owns their goroutines (docs/architecture.md, "Parts and where they live").
package app

import (
	"context"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/internal/cli"
	"agentrun.dev/agentrun/internal/store"
)

// Main runs the binary with args (without the program name) and returns the exit code.
func Main(args []string) int {
	root := &cobra.Command{
		Use:           "agentrun",
		Short:         "agentrun: a server where AI agents run durably, and its CLI",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cli.AddGlobalFlags(root)
	serve := newServeCmd()
	// Bare `agentrun` starts the server, as `npx @parcha/agentrun` does in the AgentRun seed.
	root.Args = cobra.NoArgs
	root.RunE = func(cmd *cobra.Command, args []string) error {
		serve.SetContext(cmd.Context())
		return serve.RunE(serve, nil)
	}
	root.AddCommand(serve, newRunnerCmd(), newDevCmd())
	root.AddCommand(cli.Commands()...)
	addToSecrets(root)
	root.AddCommand(newComputerCmd())
	root.AddCommand(newBackupCmd(), newRestoreCmd(), newHealthcheckCmd())
	cli.Version = version
	store.BinaryVersion = version
	root.SetArgs(args)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return cli.Report(root.ExecuteContext(ctx), os.Stderr)
}
