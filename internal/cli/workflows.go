package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/workflow"
)

func workflowsCmd() *cobra.Command {
	cmd := groupCmd("workflows", "Validate workflow documents and plan their runs", "workflow")
	cmd.AddCommand(workflowsValidateCmd(), workflowsRunCmd())
	return cmd
}

// readWorkflow validates FILE on this machine (no server needed); a child named by string is
// NAME.json beside it, or with toServer left to the server, which resolves it as agent NAME's
// workflow when it saves the document.
func readWorkflow(file string, runnable, toServer bool) (*workflow.Workflow, []byte, workflow.Invalid, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read workflow: %w", err)
	}
	if toServer {
		w, errs := workflow.Validate(raw, workflow.Options{Runnable: runnable, DeferNamed: true})
		return w, raw, errs, nil
	}
	dir := filepath.Dir(file)
	w, errs := workflow.Validate(raw, workflow.Options{Runnable: runnable, Resolve: func(name string) ([]byte, error) {
		if strings.ContainsAny(name, `/\`) || name == ".." {
			return nil, fmt.Errorf("a child is named by a plain name (NAME.json beside this file), not %q", name)
		}
		return os.ReadFile(filepath.Join(dir, name+".json"))
	}})
	return w, raw, errs, nil
}

func workflowsValidateCmd() *cobra.Command {
	var runnable, asJSON bool
	cmd := &cobra.Command{
		Use:   "validate FILE",
		Short: "Check a workflow document and print every error (exit 0 valid, 1 invalid)",
		Long: `Check a workflow document ({"v": 2, "name", "schemas", "input", "output", "root"}) and print
every error, not the first: FILE:LINE:COLUMN, its code, its JSON pointer and what to do. A child
named by string ("workflow": "NAME") is NAME.json beside FILE. --runnable also refuses the node
kinds this server does not run yet. The same check is POST /v2/workflows:validate.`,
		Example: `  agentrun workflows validate read-site.json`,
		Args:    exactArgs(1, "the workflow file"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			_, _, errs, err := readWorkflow(args[0], runnable, false)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				list := []workflow.Error(errs)
				if list == nil {
					list = []workflow.Error{}
				}
				b, _ := json.MarshalIndent(map[string]any{"valid": len(errs) == 0, "errors": list}, "", "  ")
				fmt.Fprintln(out, string(b))
			} else {
				for _, e := range errs {
					ptr := e.Pointer
					if ptr == "" {
						ptr = "/"
					}
					fmt.Fprintf(out, "%s:%d:%d: %s at %s: %s\n", args[0], e.Line, e.Column, e.Code, ptr, e.Message)
				}
			}
			if len(errs) > 0 {
				return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%s: %s", args[0], workflow.CountErrors(len(errs)))}
			}
			if !asJSON {
				fmt.Fprintf(out, "%s: valid\n", args[0])
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&runnable, "runnable", false, "also refuse node kinds this server does not run yet")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {valid, errors} as JSON")
	return cmd
}

// questionOutput bounds a typed question's answer: JSON of a few fields and their confidences.
const questionOutput = 1024

func workflowsRunCmd() *cobra.Command {
	var agent, input string
	var dry, wait bool
	cmd := &cobra.Command{
		Use:   "run FILE --agent A --input @in.json [--dry-run] [--wait]",
		Short: "Run a workflow as agent A (a new revision of A), or plan it with --dry-run",
		Long: `With --dry-run: validate FILE, check the input against its input schema, and print
every node with the most times it can run (a map over an input list once per item, a loop
maxIters times, a route each branch) and the run's worst case: tool and shell calls, typed
questions (one structured model call each, priced at the cheapest family with its whole input
bounded by 256 KiB of state and 1024 output tokens) and agent steps (bounded by the run's cap).
Nothing is called.

Without --dry-run: the workflow becomes agent A's spec.workflow (a new revision of A, as
agentrun apply would make; runs already started keep theirs) and a run of A starts with the
input; --wait waits as runs wait does. A node kind this server does not run is refused first
(kind_not_runnable, naming it). A child named by string ("workflow": "NAME") is agent NAME's
workflow, which the server resolves and pins when it saves A (the dry run, like validate, reads
NAME.json beside FILE).`,
		Example: `  agentrun workflows run read-site.json --agent site-reader --input '{"website": "https://example.com"}' --dry-run`,
		Args:    exactArgs(1, "the workflow file"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			w, raw, errs, err := readWorkflow(args[0], !dry, !dry)
			if err != nil {
				return err
			}
			if len(errs) > 0 {
				for _, e := range errs {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s:%d:%d: %s at %s: %s\n", args[0], e.Line, e.Column, e.Code, e.Pointer, e.Message)
				}
				return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%s: %s", args[0], workflow.CountErrors(len(errs)))}
			}
			var in map[string]any
			if input != "" {
				raw, _, err := readArg(input, cmd.InOrStdin())
				if err != nil {
					return err
				}
				if err := json.Unmarshal(raw, &in); err != nil {
					return usageError("--input: want a JSON object: %v", err)
				}
				if err := w.CheckInput(in); err != nil {
					return err
				}
			}
			if !dry {
				return runWorkflow(cmd, agent, raw, in, wait)
			}
			p := w.MakePlan(in)
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "workflow %s for agent %s (dry run: nothing was called)\n", w.Name, agent)
			for _, l := range p.Lines {
				fmt.Fprintln(out, "  "+l)
			}
			per := ""
			if p.Unbounded {
				per = " (per item of a map whose list is not in the input)"
			}
			fmt.Fprintf(out, "worst case%s: %d tool calls, %d shell calls, %d typed questions, %d agent steps, %d code steps\n",
				per, p.ToolCalls, p.ShellCalls, p.Questions, p.AgentSteps, p.CodeSteps)
			prices := cost.Default()
			modelID, _ := prices.FamilyModel("haiku")
			if price, ok := prices.Lookup(modelID); ok && p.Questions > 0 {
				each := price.WorstCaseBill(int64(api.MaxInputBytes), questionOutput)
				total := int64(each) * (p.Questions - p.SiftCalls)
				if p.SiftCalls > 0 {
					// A sift's answer grows with its items: priced at the most one call may take.
					sift := price.WorstCaseBill(int64(api.MaxInputBytes), int64(workflow.AnswerTokens(workflow.MaxQuestionsPerRequest)))
					total += int64(sift) * p.SiftCalls
					fmt.Fprintf(out, "typed questions at worst: $%s (%d × $%s, and %d sift calls × $%s, on %s)\n", cost.Micros(total), p.Questions-p.SiftCalls, each, p.SiftCalls, sift, modelID)
				} else {
					fmt.Fprintf(out, "typed questions at worst: $%s (%d × $%s on %s)\n", cost.Micros(total), p.Questions, each, modelID)
				}
			} else if p.Questions > 0 {
				fmt.Fprintln(out, "typed questions at worst: unknown (the cheapest family is not priced)")
			}
			if p.AgentSteps > 0 {
				fmt.Fprintln(out, "agent steps at worst: the run's cap (an agent's loop has no bound of its own)")
			}
			if p.ExecutorCalls > 0 {
				fmt.Fprintf(out, "executor bodies: %d (their tool calls are known only when they run; each is bounded by its deadline_s)\n", p.ExecutorCalls)
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&agent, "agent", "", "the agent the workflow runs as (its tools, approvals and cap)")
	cmd.Flags().StringVar(&input, "input", "", "the input object: JSON, @FILE or @- for stdin")
	cmd.Flags().BoolVar(&dry, "dry-run", false, "validate, print the plan and the worst case, call nothing")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the run finishes or waits on you, as `runs wait` does")
	_ = cmd.MarkFlagRequired("agent")
	return cmd
}

// runWorkflow saves the document as the agent's spec.workflow (a merge patch: a new revision)
// and starts a run of it with the input as its JSON content.
func runWorkflow(cmd *cobra.Command, agent string, doc []byte, in map[string]any, wait bool) error {
	if in == nil {
		in = map[string]any{}
	}
	input, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encode --input: %w", err)
	}
	c, err := newClient()
	if err != nil {
		return err
	}
	ctx := ctxOf(cmd)
	a, err := c.PatchAgent(ctx, agent, map[string]any{"spec": map[string]any{"workflow": json.RawMessage(doc)}})
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "agent %s revision %d runs workflow %s\n", agent, a.Status.Revision, filepath.Base(cmd.Flags().Arg(0)))
	r, err := c.StartRun(ctx, agent, map[string]any{"input": map[string]any{"content": string(input)}})
	if err != nil {
		return err
	}
	if !wait {
		return writeJSON(cmd.OutOrStdout(), viewRun(ctx, c, r))
	}
	last, code, werr := waitRun(ctx, c, r.Metadata.Name, 0, cmd.ErrOrStderr())
	if last == nil {
		last = r
	}
	return finishWait(ctx, c, cmd.OutOrStdout(), last, code, werr)
}
