package cli

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/client"
	"agentrun.dev/agentrun/internal/api"
)

// Webhook commands: agentrun webhooks [list] | history | test | rotate. The resource itself goes
// through apply, get and delete (kube.go).

func webhooksCmd() *cobra.Command {
	cmd := groupCmd("webhooks", "Outbound webhooks: signed notifications of runs' and triggers' events", "webhook")
	list := webhooksListCmd()
	cmd.RunE, cmd.Args = list.RunE, list.Args
	cmd.AddCommand(list, webhooksHistoryCmd(), webhooksTestCmd(), webhooksRotateCmd())
	return cmd
}

var webhookHeader = []string{"NAME", "URL", "EVENTS", "AGENTS", "PENDING", "LAST DELIVERY"}

func webhookRow(w api.Webhook) []string {
	agents, last := "all", "-"
	if len(w.Spec.Agents) > 0 {
		agents = strings.Join(w.Spec.Agents, ",")
	}
	if d := w.Status.LastDelivery; d != nil {
		last = d.Time.Format(time.RFC3339) + " " + d.Type + " " + d.State
	}
	return []string{w.Metadata.Name, w.Spec.URL, strings.Join(w.Spec.Events, ","), agents, strconv.Itoa(w.Status.Pending), last}
}

func webhooksListCmd() *cobra.Command {
	return listVerb[api.Webhook]{use: "list", short: "List webhooks with their URL, events, pending deliveries and last delivery",
		fetch: listObjects[api.Webhook]("webhooks"), header: webhookHeader, rows: rowEach(webhookRow)}.cmd()
}

func webhooksHistoryCmd() *cobra.Command {
	return historyVerb[api.WebhookDelivery]{use: "history WEBHOOK [--limit N] [-o json]",
		short:   "List a webhook's deliveries and their attempts: time, event, run, state, status code, error, duration",
		example: "  agentrun webhooks history ops-alerts", arg: "the webhook's name", items: "deliveries",
		fetch:  (*client.Client).WebhookDeliveries,
		header: []string{"TIME", "WEBHOOK-ID", "EVENT", "RUN", "STATE", "ATTEMPTS", "CODE", "TOOK", "NEXT", "ERROR"},
		row:    deliveryRow}.cmd()
}

// deliveryRow is one delivery of a webhook's history.
func deliveryRow(d api.WebhookDelivery) []string {
	subject := d.Run
	if subject == "" {
		subject = d.Trigger
	}
	code, errText, dur, next := "-", "-", "-", "-"
	if n := len(d.History); n > 0 {
		a := d.History[n-1]
		if a.StatusCode != 0 {
			code = strconv.Itoa(a.StatusCode)
		}
		errText, dur = dash(a.Error), fmt.Sprintf("%dms", a.DurationMS)
	}
	if d.NextAttempt != nil {
		next = d.NextAttempt.Format(time.RFC3339)
	}
	return []string{d.Time.Format(time.RFC3339), d.ID, d.Type, dash(subject), d.State, strconv.Itoa(d.Attempts), code, dur, next, errText}
}

func webhooksTestCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "test WEBHOOK",
		Short:   "Send a webhook.test delivery to this webhook (see it with webhooks history)",
		Example: "  agentrun webhooks test ops-alerts && agentrun webhooks history ops-alerts --limit 1",
		Args:    exactArgs(1, "the webhook's name"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			raw, err := c.TestWebhook(ctxOf(cmd), args[0])
			if err != nil {
				return err
			}
			var d api.WebhookDelivery
			if err := json.Unmarshal(raw, &d); err != nil {
				return fmt.Errorf("decode delivery: %w", err)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "webhook/%s: test delivery %s queued (agentrun webhooks history %s)\n", args[0], d.ID, args[0])
			return err
		}),
	}
}

func webhooksRotateCmd() *cobra.Command {
	var hold string
	cmd := &cobra.Command{
		Use:   "rotate WEBHOOK [--hold 24h]",
		Short: "Make a new whsec_ signing secret in the secret spec.secretRef names (a signed-in person only), printed once",
		Long: `Make a new Standard Webhooks signing secret (whsec_...) for a webhook and print it once: give
it to the receiver, which verifies each delivery's webhook-signature with it. Deliveries are signed
with the new secret from now on; the old one is kept as WEBHOOK_SECRET_PREVIOUS until --hold has
passed. Only a signed-in person may (agentrun login).`,
		Example: "  agentrun login\n  agentrun webhooks rotate ops-alerts",
		Args:    exactArgs(1, "the webhook's name"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			raw, err := c.RotateWebhook(ctxOf(cmd), args[0], hold)
			if err != nil {
				return err
			}
			var rot struct {
				Secret    string `json:"secret"`
				SecretRef string `json:"secretRef"`
			}
			if err := json.Unmarshal(raw, &rot); err != nil {
				return fmt.Errorf("decode rotation: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "webhook/%s: new signing secret in secret %s (shown once):\n", args[0], rot.SecretRef)
			_, err = fmt.Fprintln(cmd.OutOrStdout(), rot.Secret)
			return err
		}),
	}
	cmd.Flags().StringVar(&hold, "hold", "", "how long the old secret is kept as the previous one (default 24h, at most 720h)")
	return cmd
}
