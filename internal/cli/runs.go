package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/client"
	"agentrun.dev/agentrun/internal/api"
)

func agentsCmd() *cobra.Command {
	cmd := groupCmd("agents", "Create, list and show agents", "agent")

	var body, file, output string
	create := &cobra.Command{
		Use:   "create (--body @agent.json|JSON | -f FILE)",
		Short: "Create an agent from JSON (an Agent, or {\"definition\": {...}})",
		Example: `  agentrun agents create --body @agent.json
  agentrun agents create -f agent.yaml`,
		Args: exactArgs(0, "no arguments"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if (body == "") == (file == "") {
				return usageError("give the agent with --body @FILE|JSON or -f FILE")
			}
			if err := checkOutput(output, "json", "yaml", "name"); err != nil {
				return err
			}
			var data []byte
			var err error
			if body != "" {
				data, err = jsonBody("--body", body, cmd.InOrStdin(), true)
			} else {
				arg := "@" + file
				if file == "-" {
					arg = "-"
				}
				data, err = jsonBody("-f", arg, cmd.InOrStdin(), true)
			}
			if err != nil {
				return err
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			raw, err := c.CreateObject(ctxOf(cmd), client.Agents, data)
			if err != nil {
				return err
			}
			if output == "name" {
				var a api.Agent
				if err := json.Unmarshal(raw, &a); err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "agent/%s created\n", a.Metadata.Name)
				return err
			}
			return writeRaw(cmd.OutOrStdout(), raw, output)
		}),
	}
	create.Flags().StringVar(&body, "body", "", "the agent as JSON, or @FILE (@- for stdin)")
	create.Flags().StringVarP(&file, "filename", "f", "", "a file holding the agent (JSON or YAML; - for stdin)")
	create.Flags().StringVarP(&output, "output", "o", "json", "output format: json, yaml or name")

	var listOut string
	list := &cobra.Command{
		Use:   "list",
		Short: "List agents",
		Args:  exactArgs(0, "no arguments"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			return getResources(cmd, typeAgents, nil, listOut, "")
		}),
	}
	list.Flags().StringVarP(&listOut, "output", "o", "", "output format: table (default), wide, json, yaml or name")

	var getOut string
	get := &cobra.Command{
		Use:   "get NAME",
		Short: "Show an agent",
		Args:  exactArgs(1, "the agent's name"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			return getResources(cmd, typeAgents, args, getOut, "")
		}),
	}
	get.Flags().StringVarP(&getOut, "output", "o", "json", "output format: json, yaml, table, wide or name")

	cmd.AddCommand(create, list, get, agentsMCPToolsCmd())
	return cmd
}

func runsCmd() *cobra.Command {
	cmd := groupCmd("runs", "Start, watch and talk to agent runs", "run")
	cmd.AddCommand(runsStartCmd(), runsWaitCmd(), messageCmd("message RUN --content TEXT", "Send a message to a run (an answer to its question, or a follow-up)", false),
		answerCmd("answer RUN"), stepsCmd("steps RUN"), readFileCmd(), timelineCmd(), resolveCmd(),
		runsCancelCmd(), runsListCmd(), runsGetCmd(), approvalsCmd(), decideCmd("approve"), decideCmd("deny"),
		raiseCapCmd(), turnsCmd(), runsForkCmd())
	return cmd
}

func runsStartCmd() *cobra.Command {
	var body, input, maxCost, deadline, name string
	var keepAlive, wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "start AGENT [--body JSON|@FILE] [--input TEXT]",
		Short: "Start a run of an agent and print it as JSON (--wait: wait as `runs wait` does)",
		Long: `Start a run of an agent and print it as JSON on stdout.

The body is the seed's shape, {"input": {"content": "..."}}; the flags add to it or override it.
With --wait it waits like "runs wait" (progress on stderr) and exits the same way: 0 completed
(or a keep-alive run waiting for its next message), 1 failed or cancelled, 8 waiting on you.`,
		Example: `  agentrun runs start notes --max-cost-usd 1 --wait \
    --body '{"input": {"content": "Ask me which region to cover, then write region.md about it."}}' > out.json
  agentrun runs start notes --input "Summarize the logs" --keep-alive`,
		Args: exactArgs(1, "the agent's name"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			var data []byte
			if body != "" {
				var err error
				if data, err = jsonBody("--body", body, cmd.InOrStdin(), false); err != nil {
					return err
				}
			}
			var o startOptions
			f := cmd.Flags()
			if f.Changed("input") {
				o.Input = &input
			}
			if f.Changed("max-cost-usd") {
				o.MaxCostUSD = &maxCost
			}
			if f.Changed("keep-alive") {
				o.KeepAlive = &keepAlive
			}
			if f.Changed("deadline") {
				o.Deadline = &deadline
			}
			if f.Changed("name") {
				o.Name = &name
			}
			req, err := buildStartBody(data, o)
			if err != nil {
				return err
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			ctx := ctxOf(cmd)
			r, err := c.StartRun(ctx, args[0], json.RawMessage(req))
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
	f.StringVar(&body, "body", "", `the request as JSON, or @FILE (@- for stdin): {"input": {"content": "..."}}`)
	f.StringVar(&input, "input", "", "the run's input (its first message)")
	f.StringVar(&maxCost, "max-cost-usd", "", "the run's spend cap in dollars (default: the agent's perRunMaxCostUSD)")
	f.BoolVar(&keepAlive, "keep-alive", false, "keep the run open for follow-up messages after each turn")
	f.StringVar(&deadline, "deadline", "", "bound the run's lifetime: an RFC 3339 time or a duration such as 30m")
	f.StringVar(&name, "name", "", "the run's name (default: generated from the agent's)")
	f.BoolVar(&wait, "wait", false, "wait until the run finishes or waits on you, as `runs wait` does")
	f.DurationVar(&timeout, "timeout", 0, "with --wait, give up after this long (exit 1); 0 waits for ever")
	return cmd
}

func runsWaitCmd() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "wait RUN [--timeout D]",
		Short: "Wait until a run finishes or waits on you; print it as JSON",
		Long: `Wait until a run finishes, waits on a person, or (a keep-alive run) waits for its next
message, then print it as JSON on stdout. Each change of state is printed on stderr.

Exit codes: 0 completed, or a keep-alive run idle waiting for a message (its turn is done);
1 failed, cancelled, or the timeout passed; 8 waiting on you (a question, an approval, its spend
cap, credits, or an interrupted step that needs resolution).`,
		Args: exactArgs(1, "the run's name"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			ctx := ctxOf(cmd)
			r, code, err := waitRun(ctx, c, args[0], timeout, cmd.ErrOrStderr())
			return finishWait(ctx, c, cmd.OutOrStdout(), r, code, err)
		}),
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long (exit 1); 0 waits for ever")
	return cmd
}

// messageCmd is `runs message RUN --content TEXT [--key K]` and the Nodus seed's
// `agentrun send NAME TEXT --key K` (positional text).
func messageCmd(use, short string, positional bool) *cobra.Command {
	var content, key, ifBusy string
	what := "the run's name (and the message, if not given with --content)"
	if positional {
		what = "the run's name and the message"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  rangeArgs(1, 2, what),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			var text string
			switch given := cmd.Flags().Changed("content"); {
			case len(args) == 2 && given:
				return usageError("give the message once: as an argument or with --content")
			case len(args) == 2:
				text = args[1] // as written: an argument is never a file name
			case given:
				data, _, err := readArg(content, cmd.InOrStdin())
				if err != nil {
					return err
				}
				text = string(data)
			default:
				return usageError("no message: give it with --content TEXT (or @FILE)")
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			if err := api.CheckIfBusy("--if-busy", api.IfBusy(ifBusy)); err != nil {
				return usageError("--if-busy %q: use enqueue, reject, interrupt or rollback", ifBusy)
			}
			res, err := c.SendMessageIfBusy(ctxOf(cmd), args[0], text, key, client.IfBusy(ifBusy))
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			switch {
			case res.Created && res.Message.IfBusy == client.IfBusyEnqueue:
				_, err = fmt.Fprintf(out, "message %d delivered to run %s: queued until the turn in flight ends\n", res.Message.Seq, args[0])
			case res.Created && res.Message.IfBusy.Steers():
				_, err = fmt.Fprintf(out, "message %d delivered to run %s: the turn in flight stops for it (%s)\n", res.Message.Seq, args[0], res.Message.IfBusy)
			case res.Created:
				_, err = fmt.Fprintf(out, "message %d delivered to run %s\n", res.Message.Seq, args[0])
			default:
				_, err = fmt.Fprintf(out, "message %d already delivered to run %s (key %s)\n", res.Message.Seq, args[0], res.Message.Key)
			}
			return err
		}),
	}
	cmd.Flags().StringVar(&content, "content", "", "the message text, or @FILE (@- for stdin)")
	cmd.Flags().StringVar(&key, "key", "", "an idempotency key: a message with the same key is delivered once")
	cmd.Flags().StringVar(&ifBusy, "if-busy", "", "if the run has a turn in flight: enqueue (wait for it), reject (refuse: RunBusy), interrupt (stop it now) or rollback (discard it); default: the agent's spec.ifBusy, else enqueue")
	return cmd
}

func answerCmd(use string) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: "Print a run's whole final answer (with a newline at the end if it has none)",
		Args:  exactArgs(1, "the run's name"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			a, err := c.Answer(ctxOf(cmd), args[0])
			if err != nil {
				return err
			}
			if a != "" && !strings.HasSuffix(a, "\n") {
				a += "\n" // the answer's bytes, ended as a line
			}
			_, err = io.WriteString(cmd.OutOrStdout(), a)
			return err
		}),
	}
}

func stepsCmd(use string) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   use,
		Short: "List what a run did, step by step (its journal)",
		Args:  exactArgs(1, "the run's name"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, "", "table", "json", "yaml"); err != nil {
				return err
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			steps, err := c.Steps(ctxOf(cmd), args[0])
			if err != nil {
				return err
			}
			tree, err := c.Nodes(ctxOf(cmd), args[0])
			if err != nil {
				return err
			}
			if output == "json" || output == "yaml" {
				if steps == nil {
					steps = []api.Step{}
				}
				v := map[string]any{"items": steps}
				if tree.Root != nil {
					v["nodes"] = tree.Root
				}
				return writeValue(cmd.OutOrStdout(), v, output)
			}
			if tree.Root != nil {
				// A workflow run: its node tree, then the journal steps it is made of.
				if err := writeTable(cmd.OutOrStdout(), nodeHeader, nodeRows(tree.Root)); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout())
			}
			return writeTable(cmd.OutOrStdout(), stepHeader, stepRows(steps))
		}),
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: table (default), json or yaml")
	return cmd
}

func readFileCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "read-file RUN PATH",
		Short: "Print a file from a run's folder (raw bytes)",
		Args:  exactArgs(2, "the run's name and the file's path"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			b, err := c.ReadFile(ctxOf(cmd), args[0], args[1])
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(b)
			return err
		}),
	}
}

// eventLine is one timeline line: time, type, step key, message.
func eventLine(e api.Event) string {
	key := e.StepKey
	if key == "" {
		key = "-"
	}
	line := fmt.Sprintf("%s  %-18s %-24s %s", e.Time.Local().Format("2006-01-02T15:04:05.000Z07:00"), e.Type, key, e.Message)
	for len(line) > 0 && line[len(line)-1] == ' ' {
		line = line[:len(line)-1]
	}
	return line
}

func timelineCmd() *cobra.Command {
	var follow bool
	cmd := &cobra.Command{
		Use:   "timeline RUN [--follow]",
		Short: "Print a run's timeline, one line per event (--follow streams until the run finishes)",
		Args:  exactArgs(1, "the run's name"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			ctx, out := ctxOf(cmd), cmd.OutOrStdout()
			emit := func(e api.Event) error {
				_, err := fmt.Fprintln(out, eventLine(e))
				return err
			}
			if follow {
				return c.FollowEvents(ctx, args[0], 0, emit)
			}
			var after int64
			for {
				evs, err := c.Events(ctx, args[0], after)
				if err != nil {
					return err
				}
				progressed := false
				for _, e := range evs {
					if e.Seq != 0 && e.Seq <= after {
						continue
					}
					if err := emit(e); err != nil {
						return err
					}
					if e.Seq > after {
						after, progressed = e.Seq, true
					}
				}
				if !progressed {
					return nil
				}
			}
		}),
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "stream new events as they happen (reconnecting if the connection drops) until the run finishes")
	return cmd
}

func resolveCmd() *cobra.Command {
	var retry, skip bool
	var complete, step string
	cmd := &cobra.Command{
		Use:   "resolve RUN (--retry | --skip | --complete @result.json) [--step KEY]",
		Short: "Decide what to do with a run's interrupted step (NeedsResolution)",
		Long: `Decide what to do with the interrupted step a run in NeedsResolution waits on:
--retry runs it again, --skip tells the agent it was interrupted, --complete records the given
JSON as its result.`,
		Args: exactArgs(1, "the run's name"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			n := 0
			req := client.ResolveRequest{StepKey: step}
			if retry {
				n++
				req.Action = client.ResolveRetry
			}
			if skip {
				n++
				req.Action = client.ResolveSkip
			}
			if cmd.Flags().Changed("complete") {
				n++
				req.Action = client.ResolveComplete
				data, err := jsonBody("--complete", complete, cmd.InOrStdin(), false)
				if err != nil {
					return err
				}
				req.Result = data
			}
			if n != 1 {
				return usageError("give exactly one of --retry, --skip or --complete @result.json")
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			r, err := c.Resolve(ctxOf(cmd), args[0], req)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "agentrun/%s resolved (%s); now %s\n", r.Metadata.Name, req.Action, describeState(r))
			return err
		}),
	}
	f := cmd.Flags()
	f.BoolVar(&retry, "retry", false, "run the interrupted step again")
	f.BoolVar(&skip, "skip", false, "skip the step: the agent is told it was interrupted")
	f.StringVar(&complete, "complete", "", "complete the step with this result: JSON, or @FILE")
	f.StringVar(&step, "step", "", "the step's key (default: the step the run waits on)")
	return cmd
}

func runsCancelCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel RUN",
		Short: "Cancel a run (its computer is deleted)",
		Args:  exactArgs(1, "the run's name"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			return cancelResources(cmd, typeAgentRuns, args)
		}),
	}
}

func runsListCmd() *cobra.Command {
	var agent, phase, output, selector string
	cmd := &cobra.Command{
		Use:   "list [--agent A]",
		Short: "List runs",
		Args:  exactArgs(0, "no arguments"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			q := map[string]string{"agent": agent, "phase": phase}
			return getResourcesQuery(cmd, typeAgentRuns, nil, output, selector, q)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&agent, "agent", "", "only the runs of this agent")
	f.StringVar(&phase, "phase", "", "only the runs in this phase")
	f.StringVar(&selector, "field-selector", "", "filter by fields, for example spec.group=G")
	f.StringVarP(&output, "output", "o", "", "output format: table (default), wide, json, yaml or name")
	return cmd
}

func runsGetCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "get RUN",
		Short: "Show a run",
		Args:  exactArgs(1, "the run's name"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			return getResources(cmd, typeAgentRuns, args, output, "")
		}),
	}
	cmd.Flags().StringVarP(&output, "output", "o", "json", "output format: json, yaml, table, wide or name")
	return cmd
}

// nodusRunCmd is the Nodus seed's `agentrun answer|steps|send` (alias ar).
func nodusRunCmd() *cobra.Command {
	cmd := groupCmd("agentrun", "Read and talk to one agent run (Nodus style: answer, steps, send)", "ar")
	cmd.AddCommand(answerCmd("answer NAME"), stepsCmd("steps NAME"),
		messageCmd("send NAME TEXT [--key K]", "Send a message to a run; the same --key delivers it once", true))
	return cmd
}
