package trigger

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
)

var repoName = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)

// DefaultAndValidate fills a trigger's defaults and checks it as a user submitted it, with no
// I/O (the agent's and group's existence are the server's to check). Every error is an
// *api.Error naming the field (spec.schedule.cron, spec.input, ...). The input must parse, and
// render against spec.testPayload when there is one (a schedule's made-up event otherwise).
func DefaultAndValidate(t *api.Trigger, now time.Time) error {
	if t.APIVersion != "" && t.APIVersion != api.APIVersion && t.APIVersion != api.AltAPIVersion {
		return api.Invalid("apiVersion", "apiVersion %q is not served; use %s", t.APIVersion, api.APIVersion)
	}
	if t.Kind != "" && t.Kind != "Trigger" {
		return api.Invalid("kind", "kind is %q, expected Trigger", t.Kind)
	}
	t.APIVersion, t.Kind = api.APIVersion, "Trigger"
	if err := api.ValidName("metadata.name", t.Metadata.Name); err != nil {
		return err
	}
	s := &t.Spec
	if err := api.ValidName("spec.agent", s.Agent); err != nil {
		return err
	}
	switch {
	case s.Concurrency == "":
		s.Concurrency = api.ConcurrencyAllow
	case !s.Concurrency.Known():
		return api.Invalid("spec.concurrency", "concurrency %q: want %s", s.Concurrency, api.OrList(api.Concurrencies))
	}
	if s.MaxCostUSD != "" {
		if _, err := cost.ParseUSDStrict(s.MaxCostUSD); err != nil {
			return api.Invalid("spec.maxCostUSD", "%v", err)
		}
	}
	if s.Group != "" {
		if err := api.ValidName("spec.group", s.Group); err != nil {
			return err
		}
	}
	kinds := 0
	for _, set := range []bool{s.Schedule != nil, s.Webhook != nil, s.GitHub != nil} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return api.Invalid("spec", "a trigger has exactly one of spec.schedule, spec.webhook and spec.github (it has %d)", kinds)
	}
	var event map[string]any
	switch {
	case s.Schedule != nil:
		switch s.Schedule.Missed {
		case "":
			s.Schedule.Missed = api.MissedSkip
		case api.MissedSkip, api.MissedRunOnce:
		default:
			return api.Invalid("spec.schedule.missed", "missed %q: want Skip or RunOnce", s.Schedule.Missed)
		}
		if s.Schedule.TimeZone == "" {
			s.Schedule.TimeZone = "UTC"
		}
		sch, err := ParseSchedule(s.Schedule.Cron, s.Schedule.TimeZone)
		if err != nil {
			if fe, ok := asFieldError(err); ok {
				return api.Invalid("spec.schedule."+fe.Field, "%s", fe.Msg)
			}
			return api.Invalid("spec.schedule", "%v", err)
		}
		event = ScheduleEvent(t.Metadata.Name, sch.Next(now), sch.Location())
		if len(s.TestPayload) > 0 {
			return api.Invalid("spec.testPayload", "a schedule's event is made by the schedule; testPayload is for webhook and github triggers")
		}
	case s.Webhook != nil:
		if err := api.ValidName("spec.webhook.secretRef", s.Webhook.SecretRef); err != nil {
			return err
		}
		if len(s.TestPayload) > 0 {
			if !json.Valid(s.TestPayload) {
				return api.Invalid("spec.testPayload", "testPayload is not JSON")
			}
			event = WebhookEvent(t.Metadata.Name, "msg_test", fmt.Sprint(now.Unix()), s.TestPayload)
		}
	case s.GitHub != nil:
		g := s.GitHub
		if err := api.ValidName("spec.github.secretRef", g.SecretRef); err != nil {
			return err
		}
		for i, e := range g.Events {
			if e == "" || strings.ContainsAny(e, " \t") {
				return api.Invalid(api.NewPath("spec", "github", "events").Index(i).String(), "%q is not a GitHub event name (pull_request, push, issues, ...)", e)
			}
		}
		for i, a := range g.Actions {
			if a == "" || strings.ContainsAny(a, " \t") {
				return api.Invalid(api.NewPath("spec", "github", "actions").Index(i).String(), "%q is not an action name (opened, synchronize, reopened, ...)", a)
			}
		}
		for i, r := range g.Repositories {
			if !repoName.MatchString(r) {
				return api.Invalid(api.NewPath("spec", "github", "repositories").Index(i).String(), "%q: want owner/name", r)
			}
		}
		if len(s.TestPayload) > 0 {
			var p map[string]any
			if err := json.Unmarshal(s.TestPayload, &p); err != nil {
				return api.Invalid("spec.testPayload", "a GitHub test payload is a JSON object, as GitHub sends: %v", err)
			}
			ev := "pull_request"
			if len(g.Events) > 0 {
				ev = g.Events[0]
			}
			event = GitHubEvent(t.Metadata.Name, ev, "test-delivery", decodeBody(s.TestPayload).(map[string]any))
		}
	}
	if _, err := ParseInput(s.Input); err != nil {
		return api.Invalid("spec.input", "the input template does not parse: %v", err)
	}
	if event != nil {
		if _, err := Render(s.Input, event); err != nil {
			what := "the test payload"
			if s.Schedule != nil {
				what = "a schedule's event (scheduledTime, trigger)"
			}
			return api.Invalid("spec.input", "the input does not render against %s: %v", what, err)
		}
	}
	return nil
}
