package api

import (
	"net/url"
	"strings"
	"time"
)

// Webhook event types (spec.events): what an outbound webhook reports (docs/webhooks.md).
const (
	WebhookRunSucceeded      = "run.succeeded"
	WebhookRunFailed         = "run.failed"
	WebhookRunCancelled      = "run.cancelled"
	WebhookRunWaiting        = "run.waiting"
	WebhookApprovalRequested = "approval.requested"
	WebhookTriggerFailed     = "trigger.failed"
	// WebhookTest is the event `webhooks test` sends to one webhook; no spec subscribes to it.
	WebhookTest = "webhook.test"
)

// WebhookEventInfo is one webhook event type and when it is sent.
type WebhookEventInfo struct {
	Type    string
	Meaning string
}

// WebhookEvents lists every event type a webhook may subscribe to.
var WebhookEvents = []WebhookEventInfo{
	{WebhookRunSucceeded, "a run finished with an answer"},
	{WebhookRunFailed, "a run failed"},
	{WebhookRunCancelled, "a run was cancelled"},
	{WebhookRunWaiting, "a run waits on a person: a question, an approval, its cost cap or credits"},
	{WebhookApprovalRequested, "a tool call (or a learned item) waits for a person's approval"},
	{WebhookTriggerFailed, "a trigger's fire could not make its run (agent stopped or deleted, group sealed, input not rendered)"},
}

// Delivery states (a delivery's record).
const (
	// DeliveryPending: not delivered yet; tried again at nextAttempt.
	DeliveryPending = "Pending"
	// DeliveryDelivered: the receiver answered 2xx.
	DeliveryDelivered = "Delivered"
	// DeliveryFailed: every attempt over the retry window failed; no more are made.
	DeliveryFailed = "Failed"
)

// Bounds of a webhook.
const (
	MaxWebhookURL    = 2048
	MaxWebhookAgents = 100
)

// Webhook sends signed notifications (Standard Webhooks) of runs' and triggers' events to a URL.
type Webhook struct {
	TypeMeta `json:",inline"`
	Metadata ObjectMeta    `json:"metadata"`
	Spec     WebhookSpec   `json:"spec"`
	Status   WebhookStatus `json:"status,omitempty"`
}

// WebhookSpec is what a user writes for a webhook.
type WebhookSpec struct {
	// URL receives a POST per event (http or https; loopback and private addresses only with the
	// server's --webhook-allow).
	URL string `json:"url"`
	// Events are the event types sent (WebhookEvents).
	Events []string `json:"events"`
	// Agents, when set, limits run events to runs of these agents (and trigger.failed to
	// triggers of them); empty: every agent.
	Agents []string `json:"agents,omitempty"`
	// SecretRef names the sealed secret holding the whsec_ signing secret (key WEBHOOK_SECRET,
	// made by `agentrun webhooks rotate`).
	SecretRef string `json:"secretRef"`
}

// WebhookStatus is derived when a webhook is read.
type WebhookStatus struct {
	// Pending counts deliveries not yet delivered nor given up.
	Pending int `json:"pending"`
	// LastDelivery is the newest delivery's record (nil: none yet).
	LastDelivery *WebhookDelivery `json:"lastDelivery,omitempty"`
}

// WebhookDelivery is one event's delivery to one webhook: the same webhook-id on every attempt.
type WebhookDelivery struct {
	ID      string `json:"id"`
	Webhook string `json:"webhook"`
	Type    string `json:"type"`
	Run     string `json:"run,omitempty"`
	Agent   string `json:"agent,omitempty"`
	Trigger string `json:"trigger,omitempty"`
	// Time is the event's time (the payload's timestamp).
	Time        time.Time  `json:"time"`
	State       string     `json:"state"`
	Attempts    int        `json:"attempts"`
	NextAttempt *time.Time `json:"nextAttempt,omitempty"`
	// History lists the attempts, oldest first.
	History []WebhookAttempt `json:"history,omitempty"`
}

// WebhookAttempt is one POST of a delivery: its outcome, the receiver's status code (0: none),
// why it failed, and how long it took.
type WebhookAttempt struct {
	Attempt    int       `json:"attempt"`
	Time       time.Time `json:"time"`
	StatusCode int       `json:"statusCode,omitempty"`
	Error      string    `json:"error,omitempty"`
	DurationMS int64     `json:"durationMs"`
	// Delivered: the receiver answered 2xx.
	Delivered bool `json:"delivered"`
}

// KnownWebhookEvent reports whether t is a type a webhook may subscribe to.
func KnownWebhookEvent(t string) bool {
	for _, e := range WebhookEvents {
		if e.Type == t {
			return true
		}
	}
	return false
}

// DefaultAndValidateWebhook fills a webhook's defaults and checks it as a user submitted it, with
// no I/O (whether its address may be reached is the server's to check). Every error names its
// field.
func DefaultAndValidateWebhook(w *Webhook) error {
	if w.APIVersion != "" && w.APIVersion != APIVersion && w.APIVersion != AltAPIVersion {
		return Invalid("apiVersion", "apiVersion %q is not served; use %s", w.APIVersion, APIVersion)
	}
	if w.Kind != "" && w.Kind != "Webhook" {
		return Invalid("kind", "kind is %q, expected Webhook", w.Kind)
	}
	w.APIVersion, w.Kind = APIVersion, "Webhook"
	if err := ValidName("metadata.name", w.Metadata.Name); err != nil {
		return err
	}
	if err := ValidLabels("metadata.labels", w.Metadata.Labels); err != nil {
		return err
	}
	s := &w.Spec
	if err := CheckWebhookURL("spec.url", s.URL); err != nil {
		return err
	}
	if len(s.Events) == 0 {
		return E(CodeRequired, "spec.events", "spec.events is required: one or more of %s", webhookEventNames())
	}
	seen := map[string]bool{}
	for i, e := range s.Events {
		field := NewPath("spec", "events").Index(i).String()
		if !KnownWebhookEvent(e) {
			return E(CodeUnknownWebhookEvent, field, "%q is not a webhook event; use %s", e, webhookEventNames())
		}
		if seen[e] {
			return Invalid(field, "%q is listed twice", e)
		}
		seen[e] = true
	}
	if len(s.Agents) > MaxWebhookAgents {
		return Invalid("spec.agents", "%d agents; at most %d", len(s.Agents), MaxWebhookAgents)
	}
	seen = map[string]bool{}
	for i, a := range s.Agents {
		field := NewPath("spec", "agents").Index(i).String()
		if err := ValidName(field, a); err != nil {
			return err
		}
		if seen[a] {
			return Invalid(field, "%q is listed twice", a)
		}
		seen[a] = true
	}
	return ValidName("spec.secretRef", s.SecretRef)
}

// CheckWebhookURL checks a webhook URL's form: http or https, a host, no user name or password,
// no fragment, bounded. Its address is checked where it is dialled.
func CheckWebhookURL(field, raw string) error {
	if raw == "" {
		return E(CodeRequired, field, "%s is required", field)
	}
	if len(raw) > MaxWebhookURL {
		return Invalid(field, "the URL is %d bytes; at most %d", len(raw), MaxWebhookURL)
	}
	u, err := url.Parse(raw)
	if err != nil || strings.TrimSpace(raw) != raw {
		return Invalid(field, "%q is not a URL", raw)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return Invalid(field, "%q: want an http:// or https:// URL", raw)
	case u.Hostname() == "":
		return Invalid(field, "%q has no host", raw)
	case u.User != nil:
		return Invalid(field, "%q carries a user name or password; webhooks are signed instead", raw)
	case u.Fragment != "":
		return Invalid(field, "%q has a fragment (#...), which is never sent", raw)
	}
	return nil
}

func webhookEventNames() string {
	var names []string
	for _, e := range WebhookEvents {
		names = append(names, e.Type)
	}
	return strings.Join(names, ", ")
}

// WebhookEventTable is the table of webhook events in docs/webhooks.md, made from WebhookEvents.
func WebhookEventTable() string {
	var b strings.Builder
	b.WriteString("| type | when |\n|---|---|\n")
	for _, e := range WebhookEvents {
		b.WriteString("| `" + e.Type + "` | " + e.Meaning + " |\n")
	}
	return b.String()
}
