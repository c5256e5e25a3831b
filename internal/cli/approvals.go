package cli

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/client"
	"agentrun.dev/agentrun/internal/humanjson"
)

func approvalsCmd() *cobra.Command {
	return listVerb[client.Approval]{use: "approvals RUN",
		short: "List a run's tool calls that asked for approval, with their exact arguments",
		long: `List a run's tool calls that asked for approval or were refused by a rule: the exact
arguments, the agent's stated reason (REASON), who decided (DECIDED BY: a person, or the rule that
refused the call) and the note given with the decision (NOTE: runs deny RUN ID --reason ...).`,
		arg: "the run's name", of: (*client.Client).Approvals,
		header: []string{"ID", "STATE", "TOOL", "ARGUMENTS", "REASON", "DECIDED BY", "NOTE"},
		rows: rowEach(func(a client.Approval) []string {
			return []string{fmt.Sprint(a.ID), a.State, a.Tool, truncate(humanjson.String(a.Input), 80), truncate(a.Reason, 50), a.DecidedBy, truncate(a.Note, 50)}
		}),
		value: func(as []client.Approval) any { return map[string]any{"items": as} }}.cmd()
}

func decideCmd(decision string) *cobra.Command {
	var reason string
	verb := map[string]string{"approve": "Approve", "deny": "Deny"}[decision]
	cmd := &cobra.Command{
		Use:   decision + " RUN ID",
		Short: verb + " a tool call that waits for approval (a signed-in person only: agentrun login)",
		Args:  exactArgs(2, "the run's name and the approval's ID"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[1], 10, 64)
			if err != nil {
				return usageError("approval ID %q is not a number (see `agentrun runs approvals %s`)", args[1], args[0])
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			a, err := c.Decide(ctxOf(cmd), args[0], id, decision, reason)
			if err != nil {
				return failure(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "approval %d of %s: %s by %s\n", a.ID, args[0], a.State, a.DecidedBy)
			return nil
		}),
	}
	if decision == "deny" {
		cmd.Flags().StringVar(&reason, "reason", "", "why (told to the agent)")
	} else {
		cmd.Flags().StringVar(&reason, "reason", "", "a note kept with the decision")
	}
	return cmd
}
