package cli

import (
	"time"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/client"
)

// runsForkCmd is `runs fork RUN --at STEP`: a new run that goes on from one of RUN's steps.
func runsForkCmd() *cobra.Command {
	var req client.ForkRequest
	var wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "fork RUN --at STEP [--name NEW] [--message TEXT] [--max-cost-usd N]",
		Short: "Fork a run at a completed step: a new run with its steps up to there and its folder as that step left it",
		Long: `Fork a run at a completed step and print the new run as JSON, as "runs start" does.

The new run is of the same agent revision. Its journal is the run's completed steps up to and
including STEP (keys as "runs steps" shows them: t1/tool/0, a workflow node's key), replayed and
not billed again (its cost starts at zero, under its own cap); its run folder is the folder as it
was right after STEP. It then goes on live: the next model call is made afresh. With --message
that text is a user message at the fork point first. The run forked is not changed.`,
		Example: `  agentrun runs steps notes-x7k2p
  agentrun runs fork notes-x7k2p --at t1/tool/0 --message "Write it in French instead"`,
		Args: exactArgs(1, "the run to fork"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			ctx := ctxOf(cmd)
			r, err := c.ForkRun(ctx, args[0], req)
			if err != nil {
				return err
			}
			if !wait {
				return writeJSON(cmd.OutOrStdout(), viewRun(ctx, c, r))
			}
			last, code, werr := waitRun(ctx, c, r.Metadata.Name, timeout, cmd.ErrOrStderr())
			if last == nil {
				last = r
			}
			return finishWait(ctx, c, cmd.OutOrStdout(), last, code, werr)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&req.AtStep, "at", "", "the step to fork at (required): a key as `runs steps` shows it")
	f.StringVar(&req.Name, "name", "", "the new run's name (default: generated from the agent's)")
	f.StringVar(&req.Message, "message", "", "a user message the fork takes at the fork point, before its next model call")
	f.StringVar(&req.MaxCostUSD, "max-cost-usd", "", "the fork's own spend cap in dollars (default: the run's)")
	f.BoolVar(&wait, "wait", false, "wait until the fork finishes or waits on you, as `runs wait` does")
	f.DurationVar(&timeout, "timeout", 0, "with --wait, give up after this long (exit 1); 0 waits for ever")
	cmd.MarkFlagRequired("at")
	return cmd
}
