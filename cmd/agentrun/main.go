// Command agentrun is the one binary: `serve` starts the server and a runner; every other verb is
// the CLI, which talks to a server over HTTP.
package main

import (
	"os"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/internal/cli"
)

func main() {
	root := &cobra.Command{
		Use:           "agentrun",
		Short:         "agentrun: a server where AI agents run durably, and its CLI",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cli.AddGlobalFlags(root)
	root.AddCommand(newServeCmd(), newDevCmd())
	root.AddCommand(cli.Commands()...)
	cli.Version = version
	os.Exit(cli.Report(root.Execute(), os.Stderr))
}
