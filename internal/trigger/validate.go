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
// I/O (the agent's and group's existence are the server's to check). Every problem is told
// (api.ErrorList), each an *api.Error naming the field (spec.schedule.cron, spec.input, ...).
// The input must parse, and render against spec.testPayload when there is one (a schedule's
// made-up event otherwise).
func DefaultAndValidate(t *api.Trigger, now time.Time) error {
	var errs api.ErrorList
	switch {
	case t.APIVersion != "" && t.APIVersion != api.APIVersion && t.APIVersion != api.AltAPIVersion:
		errs.Add(api.Invalid("apiVersion", "apiVersion %q is not served; use %s", t.APIVersion, api.APIVersion))
	case t.Kind != "" && t.Kind != "Trigger":
		errs.Add(api.Invalid("kind", "kind is %q, expected Trigger", t.Kind))
	default:
		t.APIVersion, t.Kind = api.APIVersion, "Trigger"
	}
	errs.AddErr(api.ValidName("metadata.name", t.Metadata.Name))
	s := &t.Spec
	spec := api.NewPath("spec")
	errs.AddErr(api.ValidName(spec.Child("agent").String(), s.Agent))
	switch {
	case s.Concurrency == "":
		s.Concurrency = api.ConcurrencyAllow
	case !s.Concurrency.Known():
		errs.Add(api.Invalid(spec.Child("concurrency").String(), "concurrency %q: want %s", s.Concurrency, api.OrList(api.Concurrencies)))
	}
	if s.MaxCostUSD != "" {
		if _, err := cost.ParseUSDStrict(s.MaxCostUSD); err != nil {
			errs.Add(api.Invalid(spec.Child("maxCostUSD").String(), "%v", err))
		}
	}
	if s.Group != "" {
		errs.AddErr(api.ValidName(spec.Child("group").String(), s.Group))
	}
	kinds := 0
	for _, set := range []bool{s.Schedule != nil, s.Webhook != nil, s.GitHub != nil} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		errs.Add(api.Invalid(spec.String(), "a trigger has exactly one of spec.schedule, spec.webhook and spec.github (it has %d)", kinds))
		errs.AddErr(checkInput(s.Input, nil, ""))
		return errs.Err()
	}
	event, err := checkSource(t, now)
	errs.AddErr(err)
	what := "the test payload"
	if s.Schedule != nil {
		what = "a schedule's event (scheduledTime, trigger)"
	}
	errs.AddErr(checkInput(s.Input, event, what))
	return errs.Err()
}

// checkSource checks the trigger's one source (schedule, webhook or github) and returns the event
// its input is rendered against (nil: none to try).
func checkSource(t *api.Trigger, now time.Time) (map[string]any, error) {
	var errs api.ErrorList
	s := &t.Spec
	spec := api.NewPath("spec")
	testPayload := spec.Child("testPayload").String()
	var event map[string]any
	switch {
	case s.Schedule != nil:
		at := spec.Child("schedule")
		switch s.Schedule.Missed {
		case "":
			s.Schedule.Missed = api.MissedSkip
		case api.MissedSkip, api.MissedRunOnce:
		default:
			errs.Add(api.Invalid(at.Child("missed").String(), "missed %q: want Skip or RunOnce", s.Schedule.Missed))
		}
		if s.Schedule.TimeZone == "" {
			s.Schedule.TimeZone = "UTC"
		}
		if sch, err := ParseSchedule(s.Schedule.Cron, s.Schedule.TimeZone); err != nil {
			if fe, ok := asFieldError(err); ok {
				errs.Add(api.Invalid(at.Child(fe.Field).String(), "%s", fe.Msg))
			} else {
				errs.Add(api.Invalid(at.String(), "%v", err))
			}
		} else {
			event = ScheduleEvent(t.Metadata.Name, sch.Next(now), sch.Location())
		}
		if len(s.TestPayload) > 0 {
			errs.Add(api.Invalid(testPayload, "a schedule's event is made by the schedule; testPayload is for webhook and github triggers"))
		}
	case s.Webhook != nil:
		errs.AddErr(api.ValidName(spec.Child("webhook", "secretRef").String(), s.Webhook.SecretRef))
		if len(s.TestPayload) > 0 {
			if !json.Valid(s.TestPayload) {
				errs.Add(api.Invalid(testPayload, "testPayload is not JSON"))
			} else {
				event = WebhookEvent(t.Metadata.Name, "msg_test", fmt.Sprint(now.Unix()), s.TestPayload)
			}
		}
	case s.GitHub != nil:
		g := s.GitHub
		at := spec.Child("github")
		errs.AddErr(api.ValidName(at.Child("secretRef").String(), g.SecretRef))
		for i, e := range g.Events {
			if e == "" || strings.ContainsAny(e, " \t") {
				errs.Add(api.Invalid(at.Child("events").Index(i).String(), "%q is not a GitHub event name (pull_request, push, issues, ...)", e))
			}
		}
		for i, a := range g.Actions {
			if a == "" || strings.ContainsAny(a, " \t") {
				errs.Add(api.Invalid(at.Child("actions").Index(i).String(), "%q is not an action name (opened, synchronize, reopened, ...)", a))
			}
		}
		for i, r := range g.Repositories {
			if !repoName.MatchString(r) {
				errs.Add(api.Invalid(at.Child("repositories").Index(i).String(), "%q: want owner/name", r))
			}
		}
		if len(s.TestPayload) > 0 {
			var p map[string]any
			if err := json.Unmarshal(s.TestPayload, &p); err != nil || p == nil {
				// null decodes into a nil map without an error: it is no object either.
				why := "null"
				if err != nil {
					why = err.Error()
				}
				errs.Add(api.Invalid(testPayload, "a GitHub test payload is a JSON object, as GitHub sends: %s", why))
			} else {
				ev := "pull_request"
				if len(g.Events) > 0 {
					ev = g.Events[0]
				}
				event = GitHubEvent(t.Metadata.Name, ev, "test-delivery", decodeBody(s.TestPayload).(map[string]any))
			}
		}
	}
	return event, errs.Err()
}

// checkInput checks that the input template parses and, given an event, renders against it
// (what names the event in the error).
func checkInput(input string, event map[string]any, what string) error {
	if _, err := ParseInput(input); err != nil {
		return api.Invalid("spec.input", "the input template does not parse: %v", err)
	}
	if event != nil {
		if _, err := Render(input, event); err != nil {
			return api.Invalid("spec.input", "the input does not render against %s: %v", what, err)
		}
	}
	return nil
}
