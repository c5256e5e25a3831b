package api

import (
	"encoding/json"
	"slices"
	"time"
)

// Concurrency is a trigger's policy for a fire while its last fire's run is unfinished
// (spec.concurrency), as a Kubernetes CronJob's.
type Concurrency string

// Trigger concurrency policies.
const (
	ConcurrencyAllow   Concurrency = "Allow"
	ConcurrencyForbid  Concurrency = "Forbid"
	ConcurrencyReplace Concurrency = "Replace"
)

// Concurrencies are every spec.concurrency value, the one list validation names.
var Concurrencies = []Concurrency{ConcurrencyAllow, ConcurrencyForbid, ConcurrencyReplace}

// Known reports whether c is one of Concurrencies.
func (c Concurrency) Known() bool { return slices.Contains(Concurrencies, c) }

// Missed-slot policies (spec.schedule.missed): what a schedule does with the slots that passed
// while no server was up.
const (
	MissedSkip    = "Skip"
	MissedRunOnce = "RunOnce"
)

// Fire sources and outcomes (a fire's record).
const (
	FireSourceSchedule = "schedule"
	FireSourceWebhook  = "webhook"
	FireSourceGitHub   = "github"
	FireSourceManual   = "manual"

	// FireStarted: the fire started a run. FireReplaced: it started one and asked the previous
	// fire's unfinished run to cancel. FireSkipped: Forbid and the previous run was unfinished,
	// or the trigger is suspended. FireMissed: schedule slots passed while no server was up and
	// missed: Skip left them. FireFailed: the run could not be made (the agent was deleted, ...).
	FireStarted  = "Started"
	FireReplaced = "Replaced"
	FireSkipped  = "Skipped"
	FireMissed   = "Missed"
	FireFailed   = "Failed"
)

// LabelTrigger names, on a run, the trigger whose fire started it.
const LabelTrigger = "agentrun.dev/trigger"

// Trigger starts capped runs of an agent on a schedule, a signed webhook or GitHub events.
type Trigger struct {
	TypeMeta `json:",inline"`
	Metadata ObjectMeta    `json:"metadata"`
	Spec     TriggerSpec   `json:"spec"`
	Status   TriggerStatus `json:"status,omitempty"`
}

// TriggerSpec is what a user writes for a trigger. Exactly one of schedule, webhook and github.
type TriggerSpec struct {
	Agent string `json:"agent"`
	// Input is a Go text/template over the event rendered into the run's input; a key the event
	// lacks is an error, never "<no value>".
	Input string `json:"input,omitempty"`
	// MaxCostUSD caps each fire's run (default: the agent's perRunMaxCostUSD).
	MaxCostUSD  string      `json:"maxCostUSD,omitempty"`
	Concurrency Concurrency `json:"concurrency,omitempty"`
	Suspend     bool        `json:"suspend,omitempty"`
	// Group makes each fire's run a task of that AgentGroup, under its limits.
	Group    string           `json:"group,omitempty"`
	Schedule *TriggerSchedule `json:"schedule,omitempty"`
	Webhook  *TriggerWebhook  `json:"webhook,omitempty"`
	GitHub   *TriggerGitHub   `json:"github,omitempty"`
	// TestPayload is an example event: the input must render against it when the trigger is
	// applied (a schedule's event is made up, so it needs none).
	TestPayload json.RawMessage `json:"testPayload,omitempty"`
}

// SigningSecret names the secret holding a webhook or GitHub trigger's signing secret ("" for a
// schedule).
func (s TriggerSpec) SigningSecret() string {
	switch {
	case s.Webhook != nil:
		return s.Webhook.SecretRef
	case s.GitHub != nil:
		return s.GitHub.SecretRef
	}
	return ""
}

// TriggerSchedule is a five-field cron in an IANA time zone.
type TriggerSchedule struct {
	Cron     string `json:"cron"`
	TimeZone string `json:"timeZone,omitempty"`
	Missed   string `json:"missed,omitempty"`
}

// TriggerWebhook is a Standard Webhooks endpoint, POST /v2/hooks/NAME.
type TriggerWebhook struct {
	// SecretRef names the sealed secret holding the whsec_ signing secret.
	SecretRef string `json:"secretRef"`
}

// TriggerGitHub is a GitHub webhook endpoint, POST /v2/hooks/NAME.
type TriggerGitHub struct {
	SecretRef    string   `json:"secretRef"`
	Events       []string `json:"events,omitempty"`
	Actions      []string `json:"actions,omitempty"`
	Repositories []string `json:"repositories,omitempty"`
}

// TriggerStatus is derived when a trigger is read: its kind, its next fire, its URL and its
// last fires.
type TriggerStatus struct {
	Kind         string        `json:"kind,omitempty"`
	NextFireTime *time.Time    `json:"nextFireTime,omitempty"`
	WebhookURL   string        `json:"webhookURL,omitempty"`
	LastFires    []TriggerFire `json:"lastFires,omitempty"`
}

// TriggerFire is one fire's record: one per trigger and key (a schedule slot, a delivery id).
type TriggerFire struct {
	Trigger       string     `json:"trigger"`
	Key           string     `json:"key"`
	Time          time.Time  `json:"time"`
	Source        string     `json:"source"`
	DeliveryID    string     `json:"deliveryId,omitempty"`
	ScheduledTime *time.Time `json:"scheduledTime,omitempty"`
	Run           string     `json:"run,omitempty"`
	Outcome       string     `json:"outcome"`
	Message       string     `json:"message,omitempty"`
	// RunPhase and CostUSD are the run's, filled in when the fire is read.
	RunPhase string `json:"runPhase,omitempty"`
	CostUSD  string `json:"costUSD,omitempty"`
}

// Kind names which of schedule, webhook and github the trigger has ("" if none).
func (s *TriggerSpec) Kind() string {
	switch {
	case s.Schedule != nil:
		return FireSourceSchedule
	case s.Webhook != nil:
		return FireSourceWebhook
	case s.GitHub != nil:
		return FireSourceGitHub
	}
	return ""
}
