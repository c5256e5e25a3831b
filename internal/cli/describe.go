package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/internal/api"
)

// describeCmd is kubectl's describe: a trigger as a person reads it (its event source, cap,
// concurrency, next fire, webhook URL and last fires); any other resource as YAML.
func describeCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "describe TYPE/NAME | TYPE NAME",
		Short:   "Show one resource for a person to read (a trigger with its next fire, URL and last fires)",
		Example: "  agentrun describe trigger/inbound-lead",
		Args:    minArgs(1, "TYPE/NAME or TYPE NAME"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			typ, names, err := parseRefs(args)
			if err != nil {
				return err
			}
			if len(names) != 1 {
				return usageError("describe one resource: TYPE/NAME")
			}
			if typ != typeTriggers {
				return getResources(cmd, typ, names, "yaml", "")
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			raw, err := c.GetObject(ctxOf(cmd), typ.plural, names[0])
			if err != nil {
				return err
			}
			var t api.Trigger
			if err := json.Unmarshal(raw, &t); err != nil {
				return fmt.Errorf("decode trigger: %w", err)
			}
			return describeTrigger(cmd.OutOrStdout(), &t)
		}),
	}
}

func describeTrigger(w io.Writer, t *api.Trigger) error {
	s := t.Spec
	var b strings.Builder
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%-14s %s\n", k+":", v)
		}
	}
	line("Name", t.Metadata.Name)
	line("Kind", t.Status.Kind)
	line("Agent", s.Agent)
	capText := "the agent's perRunMaxCostUSD"
	if s.MaxCostUSD != "" {
		capText = "$" + s.MaxCostUSD
	}
	line("Run cap", capText)
	line("Concurrency", string(s.Concurrency))
	line("Suspended", fmt.Sprint(s.Suspend))
	line("Group", s.Group)
	switch {
	case s.Schedule != nil:
		line("Schedule", fmt.Sprintf("%s in %s (missed: %s)", s.Schedule.Cron, s.Schedule.TimeZone, s.Schedule.Missed))
		if t.Status.NextFireTime != nil {
			line("Next fire", t.Status.NextFireTime.Format(time.RFC3339))
		}
	case s.Webhook != nil:
		line("Secret", s.Webhook.SecretRef+" (Standard Webhooks, whsec_)")
	case s.GitHub != nil:
		line("Secret", s.GitHub.SecretRef+" (X-Hub-Signature-256)")
		line("Events", strings.Join(s.GitHub.Events, ", "))
		line("Actions", strings.Join(s.GitHub.Actions, ", "))
		line("Repositories", strings.Join(s.GitHub.Repositories, ", "))
	}
	line("Webhook URL", t.Status.WebhookURL)
	if s.Input != "" {
		line("Input", s.Input)
	}
	b.WriteString("Last fires:\n")
	if len(t.Status.LastFires) == 0 {
		b.WriteString("  none yet\n")
	}
	for _, f := range t.Status.LastFires {
		fmt.Fprintf(&b, "  %s  %-8s %-9s %s %s\n", f.Time.Format(time.RFC3339), f.Source, f.Outcome, dash(f.Run), f.Message)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
