package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/client"
)

// runnersCmd is `agentrun runners`: the runners registered in the store with their heartbeats.
func runnersCmd() *cobra.Command {
	return listVerb[client.Runner]{use: "runners", short: "List runners with their last heartbeat, runs held and version",
		fetch: (*client.Client).Runners, header: runnerHeader, rows: runnerRows,
		value: func(rs []client.Runner) any { return map[string]any{"items": rs} }}.cmd()
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
