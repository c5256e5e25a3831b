package app

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/internal/harness"
)

// newInstallHarnessesCmd is `agentrun dev install-harnesses --into DIR`: install every harness's
// pinned npm package into DIR once (CI, and machines that run the harness tests), for
// AGENTRUN_HARNESS_CACHE=DIR.
func newInstallHarnessesCmd() *cobra.Command {
	var into string
	cmd := &cobra.Command{
		Use:   "install-harnesses --into DIR",
		Short: "Install the pinned harness CLIs with npm into DIR (for AGENTRUN_HARNESS_CACHE=DIR)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if into == "" {
				return fmt.Errorf("--into DIR is required")
			}
			return harness.InstallAll(cmd.Context(), into, func(msg string) { fmt.Fprintln(os.Stderr, msg) })
		},
	}
	cmd.Flags().StringVar(&into, "into", "", "folder to install into (NAME@VERSION under it)")
	return cmd
}
