// Package trigger owns Triggers (docs/architecture.md, "Groups, triggers and learning"): what makes
// a run start on its own. It parses and runs schedules (five-field cron in an IANA zone, daylight
// saving handled, a missed-slot policy), verifies signed deliveries (Standard Webhooks, GitHub's
// X-Hub-Signature-256), renders a trigger's input over its event, rotates signing secrets (sealed
// secrets), and fires: every fire goes through store.RecordFire, one row per trigger and slot or
// delivery with its run created in the same transaction, so a fire happens once whichever server
// sees it. The HTTP routes are the server's (internal/server/triggers.go); the scheduler loop is
// started by internal/app.
package trigger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/secret"
	"agentrun.dev/agentrun/internal/store"
)

// The keys of a trigger's signing secret (the sealed secret spec.*.secretRef names). A secret with
// a single key of another name is read as the signing secret too.
const (
	SecretKey         = "WEBHOOK_SECRET"
	PreviousKey       = "WEBHOOK_SECRET_PREVIOUS"
	PreviousUntilKey  = "WEBHOOK_SECRET_PREVIOUS_UNTIL"
	DefaultRotateHold = 24 * time.Hour
)

// LateAfter is how long after its time a slot still fires as on time; a slot older than that
// when a server first sees it was missed (no server was up) and spec.schedule.missed applies.
const LateAfter = time.Minute

// maxTick bounds the scheduler's sleep, so new and changed triggers are seen soon.
const maxTick = 5 * time.Second

// Controller fires triggers. It is safe for concurrent use; Run is its only goroutine.
type Controller struct {
	Store store.Store
	// Prepare validates a fire's run against its agent and fills what the system owns (the
	// pinned revision, the cap copied from the agent when the trigger sets none, the console URL):
	// the server's own run preparation, so a fire's run is made as a POST would make it.
	Prepare func(ctx context.Context, run *api.AgentRun) error
	// Seal opens and seals signing secrets (nil: deliveries never verify, rotation is refused).
	Seal *secret.Box
	// Kick tells the group controller that a member may be admitted (nil: nothing to tell).
	Kick func()
	Log  *slog.Logger
	// Now is the clock (injected in tests); nil is time.Now.
	Now func() time.Time
	// Every, when set, is how often the scheduler looks, whatever the next slot (an injected
	// clock moves by itself).
	Every time.Duration
}

func (c *Controller) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Controller) log() *slog.Logger {
	if c.Log != nil {
		return c.Log
	}
	return slog.Default()
}

// Event is one thing that may fire a trigger.
type Event struct {
	Source string
	// Key is unique per trigger for one slot or delivery: a second fire with it starts nothing.
	Key           string
	DeliveryID    string
	ScheduledTime *time.Time
	// Data is what spec.input renders over.
	Data map[string]any
	// Outcome and Message, when Outcome is set, record the fire without a run (Missed).
	Outcome, Message string
}

// Fire records an event's fire of t once and, unless the trigger is suspended, Forbid skips it or
// its input does not render, starts its run in the same transaction. created=false: the key was
// recorded before (by this server or another) and rec is that first record.
func (c *Controller) Fire(ctx context.Context, t *api.Trigger, ev Event) (rec api.TriggerFire, created bool, err error) {
	f := api.TriggerFire{Trigger: t.Metadata.Name, Key: ev.Key, Source: ev.Source, DeliveryID: ev.DeliveryID, ScheduledTime: ev.ScheduledTime}
	without := func(outcome, msg string) (api.TriggerFire, bool, error) {
		f.Outcome, f.Message = outcome, msg
		return c.Store.RecordFire(ctx, f, t.Spec.Concurrency, nil)
	}
	if ev.Outcome != "" {
		return without(ev.Outcome, ev.Message)
	}
	if t.Spec.Suspend {
		return without(api.FireSkipped, "the trigger is suspended (spec.suspend)")
	}
	run, err := c.NewRun(ctx, t, ev.Data)
	if err != nil {
		if _, ok := api.AsError(err); !ok {
			return api.TriggerFire{}, false, err
		}
		return c.failed(ctx, f, t, err)
	}
	rec, created, err = c.Store.RecordFire(ctx, f, t.Spec.Concurrency, run)
	if err != nil {
		if refused(err) {
			return c.failed(ctx, f, t, err)
		}
		return rec, created, err
	}
	if created && rec.Run != "" {
		msg := fmt.Sprintf("queued by trigger %s (%s %s) for agent %s revision %d", t.Metadata.Name, ev.Source, displayKey(ev), run.Spec.Agent, run.Status.AgentRevision)
		if err := c.Store.AppendEvents(ctx, rec.Run, []api.Event{{Type: "run.created", Message: msg}}); err != nil {
			c.log().Warn("trigger: the fire's run.created event was not added", "trigger", t.Metadata.Name, "run", rec.Run, "err", err)
		}
		if run.Spec.Group != "" && c.Kick != nil {
			c.Kick()
		}
	}
	if created {
		c.log().Info("trigger fired", "trigger", t.Metadata.Name, "source", ev.Source, "key", ev.Key, "outcome", rec.Outcome, "run", rec.Run)
	}
	return rec, created, nil
}

func displayKey(ev Event) string {
	if ev.DeliveryID != "" {
		return "delivery " + ev.DeliveryID
	}
	if ev.ScheduledTime != nil {
		return "slot " + ev.ScheduledTime.UTC().Format(time.RFC3339)
	}
	return ev.Key
}

// failed records a fire whose run could not be made, with why.
func (c *Controller) failed(ctx context.Context, f api.TriggerFire, t *api.Trigger, why error) (api.TriggerFire, bool, error) {
	f.Outcome, f.Message = api.FireFailed, why.Error()
	if ae, ok := api.AsError(why); ok {
		f.Message = ae.Message
		if ae.Field != "" {
			f.Message = ae.Field + ": " + ae.Message
		}
	}
	rec, created, err := c.Store.RecordFire(ctx, f, t.Spec.Concurrency, nil)
	if err == nil && created {
		c.log().Warn("trigger fire failed", "trigger", t.Metadata.Name, "key", f.Key, "why", f.Message)
	}
	return rec, created, err
}

// refused reports whether a store error is a refusal of the run (its group, its name) rather
// than the store failing: a refusal is recorded as a failed fire, a failure is tried again.
func refused(err error) bool {
	if errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrStoreFull) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if _, ok := api.AsError(err); ok {
		return true
	}
	if _, ok := store.AsRuleError(err); ok {
		return true
	}
	return errors.Is(err, store.ErrAlreadyExists)
}

// NewRun makes (without storing) the run a fire of t over data starts: its input rendered, the
// trigger's cap, a name of its own (GROUP-TASKKEY in a group), labelled with the trigger.
func (c *Controller) NewRun(ctx context.Context, t *api.Trigger, data map[string]any) (*api.AgentRun, error) {
	input, err := Render(t.Spec.Input, data)
	if errors.Is(err, errInputTooLarge) {
		return nil, api.E(api.CodeTooLarge, "spec.input", "%v", err)
	}
	if err != nil {
		return nil, api.Invalid("spec.input", "the input does not render against the event: %v", err)
	}
	suffix, err := randomHex(4)
	if err != nil {
		return nil, err
	}
	run := &api.AgentRun{
		TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "AgentRun"},
		Metadata: api.ObjectMeta{Name: runName(t.Metadata.Name, suffix), Labels: map[string]string{api.LabelTrigger: t.Metadata.Name}},
		Spec:     api.AgentRunSpec{Agent: t.Spec.Agent, Input: input, MaxCostUSD: t.Spec.MaxCostUSD},
	}
	if g := t.Spec.Group; g != "" {
		run.Spec.Group, run.Spec.TaskKey = g, runName(t.Metadata.Name, suffix)
		run.Metadata.Name = g + "-" + run.Spec.TaskKey
		if len(run.Metadata.Name) > 63 {
			run.Spec.TaskKey = "fire-" + suffix
			run.Metadata.Name = g + "-" + run.Spec.TaskKey
		}
	}
	if c.Prepare != nil {
		if err := c.Prepare(ctx, run); err != nil {
			return nil, err
		}
	}
	return run, nil
}

// runName is NAME-SUFFIX within a DNS label's 63 characters.
func runName(name, suffix string) string {
	if len(name) > 63-1-len(suffix) {
		name = strings.TrimRight(name[:63-1-len(suffix)], "-")
	}
	return name + "-" + suffix
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random name: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// ManualEvent is the event of `triggers fire` and `triggers test`: payload (nil: the trigger's
// test payload) as the trigger's kind would deliver it, or a schedule's event for now.
func ManualEvent(t *api.Trigger, payload json.RawMessage, now time.Time) (map[string]any, error) {
	if len(payload) == 0 {
		payload = t.Spec.TestPayload
	}
	switch {
	case t.Spec.Webhook != nil:
		if len(payload) == 0 {
			payload = json.RawMessage("{}")
		}
		return WebhookEvent(t.Metadata.Name, "manual", fmt.Sprint(now.Unix()), payload), nil
	case t.Spec.GitHub != nil:
		if len(payload) == 0 {
			payload = json.RawMessage("{}")
		}
		p, ok := decodeBody(payload).(map[string]any)
		if !ok {
			return nil, api.Invalid("payload", "a GitHub payload is a JSON object")
		}
		ev := "pull_request"
		if len(t.Spec.GitHub.Events) > 0 {
			ev = t.Spec.GitHub.Events[0]
		}
		return GitHubEvent(t.Metadata.Name, ev, "manual", p), nil
	}
	loc := time.UTC
	if t.Spec.Schedule != nil {
		if sch, err := ParseSchedule(t.Spec.Schedule.Cron, t.Spec.Schedule.TimeZone); err == nil {
			loc = sch.Location()
		}
	}
	ev := ScheduleEvent(t.Metadata.Name, now, loc)
	if len(payload) > 0 {
		if p, ok := decodeBody(payload).(map[string]any); ok {
			for k, v := range p {
				ev[k] = v
			}
		}
	}
	return ev, nil
}

// FireNow is `triggers fire`: one fire now, under its own key.
func (c *Controller) FireNow(ctx context.Context, t *api.Trigger, payload json.RawMessage) (api.TriggerFire, error) {
	now := c.now()
	data, err := ManualEvent(t, payload, now)
	if err != nil {
		return api.TriggerFire{}, err
	}
	id, err := randomHex(8)
	if err != nil {
		return api.TriggerFire{}, err
	}
	rec, _, err := c.Fire(ctx, t, Event{Source: api.FireSourceManual, Key: "manual:" + id, Data: data})
	return rec, err
}

// Secrets returns the signing secrets that verify t's deliveries now: the current one and, until
// its hold runs out, the one a rotation replaced.
func (c *Controller) Secrets(ctx context.Context, t *api.Trigger) ([]string, error) {
	return SigningSecrets(ctx, c.Store, c.Seal, t.Spec.SigningSecret(), c.now())
}

// SigningSecrets returns the signing secrets the sealed secret ref holds now: the current one
// first and, until its hold runs out, the one a rotation replaced (none when ref is "", there is
// no seal key or no such secret). Triggers verify with them, outbound webhooks sign with the first.
func SigningSecrets(ctx context.Context, st store.Store, seal *secret.Box, ref string, now time.Time) ([]string, error) {
	if ref == "" || seal == nil {
		return nil, nil
	}
	data, err := (&secret.Opener{Box: seal, Store: st}).Open(ctx, ref)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	return signingSecrets(data, now), nil
}

func signingSecrets(data map[string]string, now time.Time) []string {
	var out []string
	if v := data[SecretKey]; v != "" {
		out = append(out, v)
	} else if len(data) == 1 {
		for _, v := range data {
			out = append(out, v)
		}
	}
	if prev := data[PreviousKey]; prev != "" {
		if until, err := time.Parse(time.RFC3339, data[PreviousUntilKey]); err == nil && now.Before(until) {
			out = append(out, prev)
		}
	}
	return out
}

// Rotation is what Rotate made: the new secret (shown once) and until when the old one verifies.
type Rotation struct {
	Secret        string     `json:"secret"`
	SecretRef     string     `json:"secretRef"`
	PreviousUntil *time.Time `json:"previousValidUntil,omitempty"`
}

// Rotate makes a new signing secret for t, keeping the current one verifying for hold (0: a day).
// The caller checks that a signed-in person asked.
func (c *Controller) Rotate(ctx context.Context, t *api.Trigger, hold time.Duration) (Rotation, error) {
	ref := t.Spec.SigningSecret()
	if ref == "" {
		return Rotation{}, api.Invalid("spec", "trigger %q is a schedule: it has no signing secret", t.Metadata.Name)
	}
	rot, err := RotateSecret(ctx, c.Store, c.Seal, ref, t.Spec.GitHub != nil, hold, c.now())
	if err != nil {
		return Rotation{}, fmt.Errorf("rotate %s: %w", t.Metadata.Name, err)
	}
	return rot, nil
}

// RotateSecret writes a new signing secret (Standard Webhooks' whsec_, or GitHub's hex) into the
// sealed secret ref, keeping the current one as WEBHOOK_SECRET_PREVIOUS for hold (0: a day).
// The caller checks that a signed-in person asked; the new secret is returned to be shown once.
func RotateSecret(ctx context.Context, st store.Store, seal *secret.Box, ref string, github bool, hold time.Duration, now time.Time) (Rotation, error) {
	if seal == nil {
		return Rotation{}, api.Errorf(503, api.CodeInternal, "", "this server has no seal key")
	}
	if hold <= 0 {
		hold = DefaultRotateHold
	}
	newSecret, err := NewStandardSecret()
	if github {
		newSecret, err = NewGitHubSecret()
	}
	if err != nil {
		return Rotation{}, err
	}
	cur, err := SigningSecrets(ctx, st, seal, ref, now)
	if err != nil {
		return Rotation{}, err
	}
	data := map[string]string{SecretKey: newSecret}
	rot := Rotation{Secret: newSecret, SecretRef: ref}
	if len(cur) > 0 {
		until := now.Add(hold).UTC().Truncate(time.Second)
		data[PreviousKey], data[PreviousUntilKey] = cur[0], until.Format(time.RFC3339)
		rot.PreviousUntil = &until
	}
	sealed, keys, err := seal.SealMap(ref, data)
	if err != nil {
		return Rotation{}, err
	}
	if err := st.PutSecret(ctx, ref, sealed, keys); err != nil {
		return Rotation{}, err
	}
	return rot, nil
}
