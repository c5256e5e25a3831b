package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/client"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
)

// Trigger commands: agentrun triggers [list] | history | test | fire | rotate | suspend | resume.
// The resource itself goes through apply, get, describe-by-get and delete (kube.go).

func triggersCmd() *cobra.Command {
	cmd := groupCmd("triggers", "Triggers: schedules, signed webhooks and GitHub events that start capped runs", "trigger")
	list := triggersListCmd()
	cmd.RunE, cmd.Args = list.RunE, list.Args
	cmd.AddCommand(list, triggersHistoryCmd(), triggersTestCmd(), triggersFireCmd(), triggersRotateCmd(),
		triggersSuspendCmd("suspend", true), triggersSuspendCmd("resume", false))
	return cmd
}

func triggersListCmd() *cobra.Command {
	return listVerb[api.Trigger]{use: "list", short: "List triggers with their kind, next fire and last fire",
		fetch: listObjects[api.Trigger]("triggers"), header: triggerHeader, rows: rowEach(triggerRow)}.cmd()
}

var triggerHeader = []string{"NAME", "KIND", "AGENT", "SUSPENDED", "NEXT FIRE", "LAST FIRE", "URL"}

func triggerRow(t api.Trigger) []string {
	next, last, url := "-", "-", "-"
	if t.Status.NextFireTime != nil {
		next = t.Status.NextFireTime.Format(time.RFC3339)
	}
	if len(t.Status.LastFires) > 0 {
		f := t.Status.LastFires[0]
		last = f.Time.Format(time.RFC3339) + " " + f.Outcome
	}
	if t.Status.WebhookURL != "" {
		url = t.Status.WebhookURL
	}
	return []string{t.Metadata.Name, t.Status.Kind, t.Spec.Agent, fmt.Sprint(t.Spec.Suspend), next, last, url}
}

func triggersHistoryCmd() *cobra.Command {
	return historyVerb[api.TriggerFire]{use: "history TRIGGER [--limit N] [-o json]",
		short:   "List a trigger's fires: time, source, delivery id, run, outcome and cost",
		example: "  agentrun triggers history nightly-digest", arg: "the trigger's name", items: "fires",
		fetch:  (*client.Client).TriggerFires,
		header: []string{"TIME", "SOURCE", "DELIVERY", "RUN", "OUTCOME", "PHASE", "COST", "NOTE"},
		row: func(f api.TriggerFire) []string {
			return []string{f.Time.Format(time.RFC3339), f.Source, dash(f.DeliveryID), dash(f.Run), f.Outcome, dash(f.RunPhase), costText(f), dash(f.Message)}
		}}.cmd()
}

// costText is a fire's run cost: "-" without a run; a run's cost that could not be priced
// reads "unknown", never $0.
func costText(f api.TriggerFire) string {
	switch {
	case f.Run == "":
		return "-"
	case f.CostUSD == "":
		return "unknown"
	}
	return cost.Dollars(f.CostUSD) // "unknown" and "at least $X" stay as they are
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// payloadFlag reads --payload (JSON text, @file or - for stdin).
func payloadFlag(cmd *cobra.Command, arg string) (json.RawMessage, error) {
	if arg == "" {
		return nil, nil
	}
	b, err := jsonBody("--payload", arg, cmd.InOrStdin(), true)
	if err != nil {
		return nil, err
	}
	return json.RawMessage(b), nil
}

func triggersTestCmd() *cobra.Command {
	var payload string
	cmd := &cobra.Command{
		Use:   "test TRIGGER [--payload @event.json]",
		Short: "Render the trigger's input over an event and show the run a fire would start; nothing starts",
		Long: `Render spec.input over the payload (default: the trigger's spec.testPayload; a schedule's
event for now) and print the run a fire would start, as JSON. Nothing is started or recorded. A
template naming a key the event lacks fails with the missing key.`,
		Example: "  agentrun triggers test inbound-lead --payload @event.json",
		Args:    exactArgs(1, "the trigger's name"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			p, err := payloadFlag(cmd, payload)
			if err != nil {
				return err
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			raw, err := c.TestTrigger(ctxOf(cmd), args[0], p)
			if err != nil {
				return err
			}
			return writeRaw(cmd.OutOrStdout(), raw, "json")
		}),
	}
	cmd.Flags().StringVar(&payload, "payload", "", "the event: JSON, @FILE or - (stdin)")
	return cmd
}

func triggersFireCmd() *cobra.Command {
	var payload string
	cmd := &cobra.Command{
		Use:     "fire TRIGGER [--payload @event.json]",
		Short:   "Fire a trigger now: one capped run (subject to spec.concurrency and spec.suspend)",
		Example: "  agentrun triggers fire nightly-digest",
		Args:    exactArgs(1, "the trigger's name"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			p, err := payloadFlag(cmd, payload)
			if err != nil {
				return err
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			raw, err := c.FireTrigger(ctxOf(cmd), args[0], p)
			if err != nil {
				return err
			}
			var out struct {
				Fire       api.TriggerFire `json:"fire"`
				ConsoleURL string          `json:"consoleURL"`
			}
			if err := json.Unmarshal(raw, &out); err != nil {
				return fmt.Errorf("decode fire: %w", err)
			}
			if out.Fire.Run != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "trigger/%s fired: %s agentrun/%s %s\n", args[0], out.Fire.Outcome, out.Fire.Run, out.ConsoleURL)
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "trigger/%s fired: %s, no run (%s)\n", args[0], out.Fire.Outcome, out.Fire.Message)
			}
			return writeRaw(cmd.OutOrStdout(), raw, "json")
		}),
	}
	cmd.Flags().StringVar(&payload, "payload", "", "the event: JSON, @FILE or - (stdin)")
	return cmd
}

func triggersRotateCmd() *cobra.Command {
	var hold string
	cmd := &cobra.Command{
		Use:   "rotate TRIGGER [--hold 24h]",
		Short: "Make a new signing secret (a signed-in person only); the old one verifies for --hold",
		Long: `Make a new signing secret for a webhook or GitHub trigger and print it once: give it to the
sender (a whsec_ secret for Standard Webhooks; paste it into the GitHub webhook's Secret). The
secret the trigger had still verifies for --hold (default 24h), so deliveries signed with it are
not lost while the sender changes over. Only a signed-in person may (agentrun login).`,
		Example: "  agentrun login\n  agentrun triggers rotate inbound-lead --hold 1h",
		Args:    exactArgs(1, "the trigger's name"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			raw, err := c.RotateTrigger(ctxOf(cmd), args[0], hold)
			if err != nil {
				return err
			}
			var rot struct {
				Secret        string     `json:"secret"`
				SecretRef     string     `json:"secretRef"`
				PreviousUntil *time.Time `json:"previousValidUntil"`
			}
			if err := json.Unmarshal(raw, &rot); err != nil {
				return fmt.Errorf("decode rotation: %w", err)
			}
			msg := fmt.Sprintf("trigger/%s: new signing secret in secret %s", args[0], rot.SecretRef)
			if rot.PreviousUntil != nil {
				msg += "; the old one verifies until " + rot.PreviousUntil.Format(time.RFC3339)
			}
			fmt.Fprintln(cmd.ErrOrStderr(), msg+" (shown once):")
			_, err = fmt.Fprintln(cmd.OutOrStdout(), rot.Secret)
			return err
		}),
	}
	cmd.Flags().StringVar(&hold, "hold", "", "how long the old secret still verifies (default 24h, at most 720h)")
	return cmd
}

func triggersSuspendCmd(verb string, suspend bool) *cobra.Command {
	return &cobra.Command{
		Use:   verb + " TRIGGER",
		Short: strings.ToUpper(verb[:1]) + verb[1:] + " a trigger (spec.suspend: " + fmt.Sprint(suspend) + ")",
		Args:  exactArgs(1, "the trigger's name"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			if _, err := c.PatchObject(ctxOf(cmd), "triggers", args[0], map[string]any{"spec": map[string]any{"suspend": suspend}}); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "trigger/%s %sed\n", args[0], strings.TrimSuffix(verb, "e"))
			return err
		}),
	}
}
