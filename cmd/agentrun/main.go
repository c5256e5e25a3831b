// Command agentrun is the one binary: `serve` starts the server and a runner; every other verb is
// the CLI, which talks to a server over HTTP.
package main

import (
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{Use: "agentrun", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(newServeCmd(), newDevCmd())
	if err := root.Execute(); err != nil {
		os.Stderr.WriteString("error: " + err.Error() + "\n")
		os.Exit(1)
	}
}
