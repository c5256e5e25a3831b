package store

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
)

// Webhooks is the part of the store that keeps outbound webhooks and their deliveries
// (docs/webhooks.md).
//
// The outbox: an event a webhook reports (a run finishing, a run parking on a person, a trigger's
// fire failing) becomes a delivery row per subscribed webhook in the same transaction that
// commits it (Commit, RecordFire, an admission finishing a group member), so an event is never
// committed without its deliveries, nor a delivery without its event. Each row is unique per
// webhook and event key, so an event written twice (a run re-parking on the same wait) is
// delivered once. Deliveries are claimed under a lease (ClaimDeliveries: PostgreSQL skips rows
// another claim holds), so of many servers one delivers each; an attempt is recorded under that
// lease (FinishAttempt).
type Webhooks interface {
	// CreateWebhook stores a new webhook (uid, resourceVersion, generation, creationTimestamp).
	// ErrAlreadyExists if the name is taken.
	CreateWebhook(ctx context.Context, w *api.Webhook) error
	// UpdateWebhook replaces spec and labels; a non-empty resourceVersion must match (ErrConflict).
	UpdateWebhook(ctx context.Context, w *api.Webhook) error
	GetWebhook(ctx context.Context, name string) (*api.Webhook, error)
	ListWebhooks(ctx context.Context) ([]*api.Webhook, error)
	// DeleteWebhook removes the webhook with its deliveries and their attempts.
	DeleteWebhook(ctx context.Context, name string) error
	// EnqueueDelivery adds a delivery of ev to the named webhook alone, whatever its events
	// (`webhooks test`). ErrNotFound if there is no such webhook.
	EnqueueDelivery(ctx context.Context, webhook string, ev OutboxEvent) (api.WebhookDelivery, error)
	// ClaimDeliveries leases to owner, for ttl, up to max pending deliveries whose next attempt
	// is due and which no live lease holds, oldest due first.
	ClaimDeliveries(ctx context.Context, owner string, max int, ttl time.Duration) ([]Delivery, error)
	// FinishAttempt records attempt a of a delivery owner claimed and ends the lease: the delivery
	// is Delivered (a.Delivered), Pending again at next, or Failed (next nil). ok is false, and
	// nothing is written, when owner no longer holds the delivery.
	FinishAttempt(ctx context.Context, owner string, d Delivery, a api.WebhookAttempt, next *time.Time) (ok bool, err error)
	// ListDeliveries returns a webhook's deliveries with their attempts, newest first, at most
	// limit (0: all).
	ListDeliveries(ctx context.Context, webhook string, limit int) ([]api.WebhookDelivery, error)
	// PendingDeliveries counts each webhook's pending deliveries.
	PendingDeliveries(ctx context.Context) (map[string]int, error)
	// PruneDeliveries removes up to max deliveries (and their attempts) that were delivered or
	// given up before before, and returns how many.
	PruneDeliveries(ctx context.Context, before time.Time, max int) (int, error)
}

// OutboxEvent is one event to report: a delivery per subscribed webhook is made of it.
type OutboxEvent struct {
	// ID is the webhook-id of its deliveries (NewDeliveryID), the same on every attempt.
	ID   string
	Type string
	// Key is the event's identity: a webhook gets at most one delivery per key.
	Key     string
	Run     string
	Agent   string // "" for a run's event: the run's agent, read in the transaction
	Trigger string
	Time    time.Time
	// Data is the payload's data (WebhookData bounds it).
	Data json.RawMessage
}

// Delivery is a claimed delivery: the record and the data its payload is made from.
type Delivery struct {
	api.WebhookDelivery
	Data      json.RawMessage
	CreatedAt time.Time
	// LeaseUntil is when the claim runs out (store clock).
	LeaseUntil time.Time
}

// Bounds of what a delivery carries.
const (
	// MaxWebhookMessage bounds the status message (and waiting detail) copied into a payload.
	MaxWebhookMessage = 1000
	// MaxWebhookData bounds a payload's data.
	MaxWebhookData = 8 << 10
)

// NewDeliveryID makes a webhook-id: msg_ and 26 random base32 characters.
func NewDeliveryID() string {
	var b [16]byte
	rand.Read(b[:])
	return "msg_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// RunOutbox is the rule that says which webhook events a fenced write of a run reports, so both
// backends report the same. A finish event (run.succeeded, run.failed, run.cancelled) is reported
// once per run. A park on a person (a status Waiting on a question, an approval, the cap or
// credits, written with its timeline event) is run.waiting, and an approval also
// approval.requested, once per wait: the key holds the reason, the step and the poke counter
// the lease was claimed at, so a run looking again at its credits (no poke since) reports no second
// wait, while a run that waits again after a person acted does.
func RunOutbox(run string, pokeSeq int64, w Write, now time.Time) []OutboxEvent {
	var out []OutboxEvent
	add := func(typ, key string) {
		out = append(out, OutboxEvent{ID: NewDeliveryID(), Type: typ, Key: "run:" + run + ":" + key, Run: run, Time: now, Data: runData(run, w.Status)})
	}
	parked := false
	for _, ev := range w.Events {
		switch ev.Type {
		case api.EventRunSucceeded, api.EventRunFailed, api.EventRunCancelled:
			add(string(ev.Type), string(ev.Type))
		case api.EventRunWaiting, api.EventRunQuestion, api.EventRunApproval:
			parked = true
		}
	}
	st := w.Status
	if !parked || st == nil || st.Phase != api.PhaseWaiting {
		return out
	}
	switch st.Reason {
	case api.ReasonQuestion, api.ReasonApproval, api.ReasonMaxCostReached, api.ReasonCredits:
	default:
		return out
	}
	step := ""
	if st.WaitingOn != nil {
		step = st.WaitingOn.StepKey
	}
	wait := string(st.Reason) + ":" + step + ":" + strconv.FormatInt(pokeSeq, 10)
	add(api.WebhookRunWaiting, "waiting:"+wait)
	if st.Reason == api.ReasonApproval {
		add(api.WebhookApprovalRequested, "approval:"+wait)
	}
	return out
}

// FinishOutbox is the outbox of a run finished outside a lease (a group member its dependencies
// failed): its finish event, once per run.
func FinishOutbox(run string, st *api.AgentRunStatus, now time.Time) []OutboxEvent {
	if st == nil || !api.Finished(st.Phase) {
		return nil
	}
	typ := string(api.FinishEvent(st.Phase))
	return []OutboxEvent{{ID: NewDeliveryID(), Type: typ, Key: "run:" + run + ":" + typ, Run: run, Time: now, Data: runData(run, st)}}
}

// FireOutbox is the outbox of a trigger's fire: trigger.failed when it could not make its run.
func FireOutbox(f api.TriggerFire, agent string, now time.Time) []OutboxEvent {
	if f.Outcome != api.FireFailed {
		return nil
	}
	data := bounded(map[string]any{"trigger": f.Trigger, "agent": agent, "fireKey": cut(f.Key, 300), "source": f.Source, "message": cut(f.Message, MaxWebhookMessage)})
	return []OutboxEvent{{ID: NewDeliveryID(), Type: api.WebhookTriggerFailed, Key: "fire:" + f.Trigger + ":" + f.Key, Agent: agent, Trigger: f.Trigger, Time: now, Data: data}}
}

// WebhookCost is a run's cost in a payload: micro-dollars, with unknown set when some of it
// could not be priced (micros is then what was priced, null when nothing was).
type WebhookCost struct {
	Micros  *int64 `json:"micros"`
	USD     string `json:"usd"`
	Unknown bool   `json:"unknown"`
}

// CostOf reads a run's cost for a payload ("unknown", "at least X" or an amount).
func CostOf(c *api.RunCost) WebhookCost {
	if c == nil || c.TotalUSD == "" {
		return WebhookCost{USD: "unknown", Unknown: true}
	}
	s := c.TotalUSD
	out := WebhookCost{USD: s}
	if rest, ok := strings.CutPrefix(s, "at least "); ok {
		out.Unknown, s = true, rest
	}
	if m, err := cost.ParseUSD(s); err == nil {
		v := int64(m)
		out.Micros = &v
	} else {
		out.Unknown = true
	}
	return out
}

func runData(run string, st *api.AgentRunStatus) json.RawMessage {
	d := map[string]any{"run": run}
	if st != nil {
		d["phase"], d["reason"], d["message"] = st.Phase, st.Reason, cut(st.Message, MaxWebhookMessage)
		d["cost"] = CostOf(st.Cost)
		if st.ConsoleURL != "" {
			d["consoleURL"] = st.ConsoleURL
		}
		if st.WaitingOn != nil {
			d["waitingOn"] = map[string]string{"kind": st.WaitingOn.Kind, "stepKey": cut(st.WaitingOn.StepKey, 300), "detail": cut(st.WaitingOn.Detail, MaxWebhookMessage)}
		}
	}
	return bounded(d)
}

// bounded is d as JSON, at most MaxWebhookData: past it (many multi-byte characters escaped)
// the free text goes and "cut" says so.
func bounded(d map[string]any) json.RawMessage {
	b, _ := json.Marshal(d)
	if len(b) <= MaxWebhookData {
		return b
	}
	delete(d, "message")
	delete(d, "waitingOn")
	d["cut"] = true
	b, _ = json.Marshal(d)
	return b
}

// cut bounds s to n bytes at a character boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// WebhookSubscriptions are the rows a webhook's spec makes in the subscriptions table both
// backends match events against: one per event and agent ("" for every agent).
func WebhookSubscriptions(s api.WebhookSpec) (events, agents []string) {
	as := s.Agents
	if len(as) == 0 {
		as = []string{""}
	}
	for _, e := range s.Events {
		for _, a := range as {
			events, agents = append(events, e), append(agents, a)
		}
	}
	return events, agents
}

// CheckWebhookUpdate is UpdateWebhook's rule: the resourceVersion check, and the versions to
// write (generation moves with the spec).
func CheckWebhookUpdate(cur, next *api.Webhook) (Versions, error) {
	if err := CheckVersion("webhook", cur.Metadata.Name, cur.Metadata.ResourceVersion, next.Metadata.ResourceVersion); err != nil {
		return Versions{}, err
	}
	return nextVersions(cur.Metadata, !reflect.DeepEqual(asJSON(cur.Spec), asJSON(next.Spec))), nil
}

// Retry schedule of deliveries.
const (
	// DefaultRetryBase is the first retry's delay; each further one doubles, up to RetryMaxDelay.
	DefaultRetryBase = 5 * time.Second
	RetryMaxDelay    = time.Hour
	// DefaultRetryFor is how long after its event a delivery is still tried.
	DefaultRetryFor = 24 * time.Hour
)

// NextAttempt is when a delivery whose attempt number attempts (1: the first) just failed is
// tried again: base doubled per earlier failure, at most RetryMaxDelay; ok is false once that is
// past its event's time plus retryFor (the delivery is given up).
func NextAttempt(created time.Time, attempts int, now time.Time, base, retryFor time.Duration) (time.Time, bool) {
	d := base
	for i := 1; i < attempts && d < RetryMaxDelay; i++ {
		d *= 2
	}
	d = min(d, RetryMaxDelay)
	next := now.Add(d)
	if next.After(created.Add(retryFor)) {
		return time.Time{}, false
	}
	return next, true
}
