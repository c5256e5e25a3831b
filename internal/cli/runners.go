package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/client"
)

// runnersCmd is `agentrun runners`: the runners registered in the store with their heartbeats.
func runnersCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "runners",
		Short: "List runners with their last heartbeat, runs held and version",
		Args:  exactArgs(0, "no arguments"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "", "json", "yaml"); err != nil {
				return err
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			rs, err := c.Runners(ctxOf(cmd))
			if err != nil {
				return err
			}
			if output != "" {
				return writeValue(cmd.OutOrStdout(), map[string]any{"items": rs}, output)
			}
			return writeTable(cmd.OutOrStdout(), runnerHeader, runnerRows(rs))
		}),
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml (default a table)")
	return cmd
}

var runnerHeader = []string{"NAME", "STATE", "HEARTBEAT", "RUNS", "VERSION", "HOST/PID"}

// runnerRows are the runners table's rows. A gone runner's count of runs is what it held at its
// last heartbeat: those runs go to other runners as their leases run out.
func runnerRows(rs []client.Runner) [][]string {
	rows := make([][]string, 0, len(rs))
	for _, r := range rs {
		state, held := "live", fmt.Sprint(r.RunsHeld)
		if !r.Live {
			state, held = "gone", fmt.Sprintf("(%d at its last heartbeat)", r.RunsHeld)
		}
		rows = append(rows, []string{r.Name, state, r.SinceHeartbeat + " ago", held, r.Version, fmt.Sprintf("%s/%d", r.Host, r.PID)})
	}
	return rows
}
