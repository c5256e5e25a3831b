package cli

import (
	"fmt"

	"github.com/spf13/cobra"
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
			rows := make([][]string, 0, len(rs))
			for _, r := range rs {
				state := "live"
				if !r.Live {
					state = "gone"
				}
				rows = append(rows, []string{r.Name, state, r.SinceHeartbeat + " ago", fmt.Sprint(r.RunsHeld), r.Version, fmt.Sprintf("%s/%d", r.Host, r.PID)})
			}
			return writeTable(cmd.OutOrStdout(), []string{"NAME", "STATE", "HEARTBEAT", "RUNS", "VERSION", "HOST/PID"}, rows)
		}),
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: json or yaml (default a table)")
	return cmd
}
