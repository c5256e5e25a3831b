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
// no I/O (whether its address may be reached is the server's to check). Every problem is told
// (ErrorList), each naming its field.
func DefaultAndValidateWebhook(w *Webhook) error {
	var errs ErrorList
	errs.AddErr(checkTypeMeta(&w.TypeMeta, "Webhook"))
	errs.AddErr(ValidName("metadata.name", w.Metadata.Name))
	errs.AddErr(ValidLabels("metadata.labels", w.Metadata.Labels))
	s := &w.Spec
	spec := NewPath("spec")
	errs.AddErr(CheckWebhookURL(spec.Child("url").String(), s.URL))
	if len(s.Events) == 0 {
		errs.Add(E(CodeRequired, spec.Child("events").String(), "spec.events is required: one or more of %s", webhookEventNames()))
	}
	seen := map[string]bool{}
	for i, e := range s.Events {
		field := spec.Child("events").Index(i).String()
		switch {
		case !KnownWebhookEvent(e):
			errs.Add(E(CodeUnknownWebhookEvent, field, "%q is not a webhook event; use %s", e, webhookEventNames()))
		case seen[e]:
			errs.Add(Invalid(field, "%q is listed twice", e))
		}
		seen[e] = true
	}
	if len(s.Agents) > MaxWebhookAgents {
		errs.Add(Invalid(spec.Child("agents").String(), "%d agents; at most %d", len(s.Agents), MaxWebhookAgents))
	} else {
		seen = map[string]bool{}
		for i, a := range s.Agents {
			field := spec.Child("agents").Index(i).String()
			if err := ValidName(field, a); err != nil {
				errs.AddErr(err)
			} else if seen[a] {
				errs.Add(Invalid(field, "%q is listed twice", a))
			}
			seen[a] = true
		}
	}
	errs.AddErr(ValidName(spec.Child("secretRef").String(), s.SecretRef))
	return errs.Err()
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
