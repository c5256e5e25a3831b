package cli

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
)

// creditsCmd is `agentrun credits` (balance and recent ledger) and `agentrun credits add USD`.
func creditsCmd() *cobra.Command {
	var output string
	var limit int
	cmd := &cobra.Command{
		Use:   "credits",
		Short: "Show the server's credits: balance, what calls in flight hold, and the recent ledger",
		Long: `Show the server's credits. Calls on the server's own model access (access: Server, alias Nodus),
the routing call before each turn included, are billed from them at cost / 0.875. Until credits
are added for the first time they are not enforced (runs are metered, not limited).`,
		Args: exactArgs(0, "no arguments (add credits with: agentrun credits add USD)"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "", "table", "json", "yaml"); err != nil {
				return err
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			cr, err := c.GetCredits(ctxOf(cmd), limit)
			if err != nil {
				return err
			}
			if output == "json" || output == "yaml" {
				return writeValue(cmd.OutOrStdout(), cr, output)
			}
			w := cmd.OutOrStdout()
			state := "enforced"
			if !cr.Enforced {
				state = "not enforced (no credits added yet: runs are metered, not limited)"
			}
			d := cost.Dollars
			fmt.Fprintf(w, "balance:   %s\navailable: %s (reserved by calls in flight: %s)\nadded:     %s\ncharged:   %s\ncredits:   %s\n\n",
				d(cr.BalanceUSD), d(cr.AvailableUSD), d(cr.ReservedUSD), d(cr.AddedUSD), d(cr.ChargedUSD), state)
			rows := make([][]string, 0, len(cr.Entries))
			for _, e := range cr.Entries {
				amt := cost.Dollars(e.AmountUSD)
				if e.Kind == "charge" {
					amt = "-" + amt
				} else {
					amt = "+" + amt
				}
				rows = append(rows, []string{strconv.FormatInt(e.Seq, 10), e.Time, e.Kind, amt, e.Run, e.StepKey, e.Note})
			}
			return writeTable(w, []string{"SEQ", "TIME", "KIND", "AMOUNT", "RUN", "STEP", "NOTE"}, rows)
		}),
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: table (default), json or yaml")
	cmd.Flags().IntVar(&limit, "limit", 20, "ledger entries to show, newest first (0: all)")
	var note string
	add := &cobra.Command{
		Use:     "add USD",
		Short:   "Add credits (a decimal amount of dollars); runs waiting on credits continue",
		Example: "  agentrun credits add 5\n  agentrun credits add 0.25 --note refill",
		Args:    exactArgs(1, "the amount in dollars"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			cr, err := c.AddCredits(ctxOf(cmd), trimDollar(args[0]), note)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "added $%s; balance %s, available %s\n", trimDollar(args[0]), cost.Dollars(cr.BalanceUSD), cost.Dollars(cr.AvailableUSD))
			return err
		}),
	}
	add.Flags().StringVar(&note, "note", "", "a note for the ledger")
	cmd.AddCommand(add)
	return cmd
}

func trimDollar(s string) string {
	if len(s) > 0 && s[0] == '$' {
		return s[1:]
	}
	return s
}

// raiseCapCmd is `agentrun runs raise-cap RUN USD`.
func raiseCapCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "raise-cap RUN USD",
		Short: "Raise a run's own spend cap (never lower it); a run waiting with MaxCostReached continues",
		Long: `Raise a run's cap (spec.maxCostUSD) to USD. A run waiting with MaxCostReached says in
status.cost.neededUSD the least cap that lets it make its next call. Editing the agent does not
change a run that has started; this does.`,
		Example: "  agentrun runs raise-cap notes-x7k2p 2.50",
		Args:    exactArgs(2, "the run's name and the new cap in dollars"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			r, err := c.RaiseCap(ctxOf(cmd), args[0], trimDollar(args[1]))
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "run %s: cap $%s (%s)\n", r.Metadata.Name, r.Spec.MaxCostUSD, r.Status.Phase)
			return err
		}),
	}
}

// turnsCmd is `agentrun runs turns RUN`: each turn with its model, how it was chosen, its tokens
// by kind and its cost.
func turnsCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "turns RUN",
		Short: "List a run's turns: model, family, how it was chosen, tokens by kind, cost",
		Args:  exactArgs(1, "the run's name"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "", "table", "json", "yaml"); err != nil {
				return err
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			r, err := c.GetAgentRun(ctxOf(cmd), args[0])
			if err != nil {
				return err
			}
			turns := r.Status.Turns
			if turns == nil {
				turns = []api.Turn{}
			}
			if output == "json" || output == "yaml" {
				return writeValue(cmd.OutOrStdout(), map[string]any{"items": turns, "cost": r.Status.Cost}, output)
			}
			rows := make([][]string, 0, len(turns)+1)
			for _, t := range turns {
				i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
				rows = append(rows, []string{strconv.Itoa(t.Index), t.Model, t.Family, t.ChosenBy, strconv.Itoa(t.ModelCalls),
					i64(t.InputTokens), i64(t.OutputTokens), i64(t.CacheWriteTokens), i64(t.CacheReadTokens), i64(t.ReasoningTokens), dollars(t.RouteCostUSD), dollars(t.CostUSD)})
			}
			if err := writeTable(cmd.OutOrStdout(), []string{"TURN", "MODEL", "FAMILY", "CHOSEN BY", "CALLS", "INPUT", "OUTPUT", "CACHE WRITE", "CACHE READ", "REASONING", "ROUTING", "COST"}, rows); err != nil {
				return err
			}
			if cst := r.Status.Cost; cst != nil {
				line := "total: " + dollars(cst.TotalUSD)
				if cst.LimitUSD != "" {
					line += " of a " + dollars(cst.LimitUSD) + " cap"
				}
				if cst.Billing == "none" {
					line += " (your own key: not billed here; list price " + dollars(cst.VendorUSD) + ")"
				} else if cst.VendorUSD != "" {
					line += " billed from credits (list price " + dollars(cst.VendorUSD) + ")"
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), line)
			}
			return err
		}),
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: table (default), json or yaml")
	return cmd
}

// dollars prints an amount string with a $ after any qualifier ("at least $0.01"), unless it is
// unknown or empty.
func dollars(s string) string { return cost.Dollars(s) }

// secretsCmd is `agentrun secrets [set|delete]`. Writing needs a signed-in person (agentrun login).
func secretsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secrets",
		Short: "List secrets (names and key names; values are never shown)",
		Args:  exactArgs(0, "no arguments (set one with: agentrun secrets set NAME KEY)"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			list, err := c.ListSecrets(ctxOf(cmd))
			if err != nil {
				return err
			}
			rows := make([][]string, 0, len(list))
			for _, s := range list {
				rows = append(rows, []string{s.Name, strings.Join(s.Keys, ","), s.UpdatedAt.Format(time.RFC3339Nano)})
			}
			return writeTable(cmd.OutOrStdout(), []string{"NAME", "KEYS", "UPDATED"}, rows)
		}),
	}
	set := &cobra.Command{
		Use:   "set NAME KEY[=-]...",
		Short: "Set a sealed secret (a signed-in person only); each KEY's value comes from the environment variable of that name, or from stdin with KEY=-",
		Long: `Set a secret. Values never go on the command line: KEY takes the value of the environment
variable KEY, and KEY=- reads it from stdin (one key at most). Only a signed-in person may write a
secret (agentrun login); the API token cannot.`,
		Example: "  agentrun login\n  agentrun secrets set anthropic-key ANTHROPIC_API_KEY\n  pass show openai | agentrun secrets set openai-key OPENAI_API_KEY=-",
		Args:    minArgs(2, "the secret's name and at least one KEY"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			data := map[string]string{}
			stdinUsed := false
			for _, a := range args[1:] {
				k, v, hasEq := strings.Cut(a, "=")
				switch {
				case hasEq && v == "-":
					if stdinUsed {
						return usageError("only one KEY=- may read stdin")
					}
					stdinUsed = true
					b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), 64<<10))
					if err != nil {
						return err
					}
					data[k] = strings.TrimRight(string(b), "\r\n")
				case hasEq:
					return usageError("%s: values never go on the command line; export %s and pass just %s, or use %s=- and stdin", k, k, k, k)
				default:
					v, ok := os.LookupEnv(k)
					if !ok || v == "" {
						return usageError("environment variable %s is not set", k)
					}
					data[k] = v
				}
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			if err := c.PutSecret(ctxOf(cmd), args[0], data); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "secret %s set (%d keys)\n", args[0], len(data))
			return err
		}),
	}
	del := &cobra.Command{
		Use:   "delete NAME",
		Short: "Remove a secret (a signed-in person only)",
		Args:  exactArgs(1, "the secret's name"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			return c.DeleteSecret(ctxOf(cmd), args[0])
		}),
	}
	cmd.AddCommand(set, del)
	return cmd
}
