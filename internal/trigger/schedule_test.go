package trigger

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
)

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func mustParse(t *testing.T, expr, zone string) *Schedule {
	t.Helper()
	s, err := ParseSchedule(expr, zone)
	if err != nil {
		t.Fatalf("ParseSchedule(%q, %q): %v", expr, zone, err)
	}
	return s
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// slots lists the slots in (from, to].
func slots(s *Schedule, from, to time.Time) []string {
	var out []string
	for _, t := range s.Slots(from, to) {
		out = append(out, t.UTC().Format(time.RFC3339))
	}
	return out
}

func TestScheduleAcrossDaylightSaving(t *testing.T) {
	// Berlin, 2027: clocks skip 02:00-03:00 on 28 March and repeat 02:00-03:00 on 31 October.
	daily := mustParse(t, "30 2 * * *", "Europe/Berlin")
	got := slots(daily, utc("2027-03-26T12:00:00Z"), utc("2027-03-30T12:00:00Z"))
	want := []string{
		"2027-03-27T01:30:00Z", // 02:30 CET
		"2027-03-28T01:00:00Z", // 02:30 does not exist: once, at 03:00 CEST
		"2027-03-29T00:30:00Z", // 02:30 CEST
		"2027-03-30T00:30:00Z",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("spring forward: slots %v, want %v", got, want)
	}
	got = slots(daily, utc("2027-10-29T12:00:00Z"), utc("2027-11-01T12:00:00Z"))
	want = []string{
		"2027-10-30T00:30:00Z", // 02:30 CEST
		"2027-10-31T00:30:00Z", // 02:30 happens twice: once, at the first (CEST)
		"2027-11-01T01:30:00Z", // 02:30 CET
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("fall back: slots %v, want %v", got, want)
	}
	// Every 20 minutes in the skipped hour: 02:00, 02:20, 02:40 all come to 03:00, one slot.
	inGap := mustParse(t, "*/20 2,3 * * *", "Europe/Berlin")
	got = slots(inGap, utc("2027-03-28T00:00:00Z"), utc("2027-03-28T03:00:00Z"))
	want = []string{"2027-03-28T01:00:00Z", "2027-03-28T01:20:00Z", "2027-03-28T01:40:00Z"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("a cron inside the gap: slots %v, want %v", got, want)
	}
	// Hourly at :15 on the repeated night: 02:15 once (CEST), then 03:15 CET.
	hourly := mustParse(t, "15 * * * *", "Europe/Berlin")
	got = slots(hourly, utc("2027-10-30T23:00:00Z"), utc("2027-10-31T03:00:00Z"))
	want = []string{"2027-10-30T23:15:00Z", "2027-10-31T00:15:00Z", "2027-10-31T02:15:00Z"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("hourly on the repeated night: slots %v, want %v", got, want)
	}
	// The issue's own example: Monday 09:00 in Berlin, in winter and in summer.
	weekly := mustParse(t, "0 9 * * MON", "Europe/Berlin")
	if got := weekly.Next(utc("2027-03-24T00:00:00Z")); !got.Equal(utc("2027-03-29T07:00:00Z")) {
		t.Errorf("Monday 09:00 after the change = %s", got)
	}
	if got := weekly.Next(utc("2027-01-01T00:00:00Z")); !got.Equal(utc("2027-01-04T08:00:00Z")) {
		t.Errorf("Monday 09:00 in winter = %s", got)
	}
	// New York skips 02:00-03:00 on 14 March 2027.
	ny := mustParse(t, "30 2 * * *", "America/New_York")
	if got := ny.Next(utc("2027-03-13T12:00:00Z")); !got.Equal(utc("2027-03-14T07:00:00Z")) { // 03:00 EDT
		t.Errorf("New York spring forward = %s, want 03:00 EDT", got)
	}
}

func TestParseScheduleRefuses(t *testing.T) {
	for _, c := range []struct{ cron, zone, field string }{
		{"61 * * * *", "UTC", "cron"},
		{"* * *", "UTC", "cron"},
		{"", "UTC", "cron"},
		{"@every 5m", "UTC", "cron"},
		{"TZ=Europe/Berlin 0 9 * * *", "UTC", "cron"},
		{"0 0 30 2 *", "UTC", "cron"},
		{"0 9 * * MON", "Europe/Berlln", "timeZone"},
		{"0 9 * * MON", "Local", "timeZone"},
	} {
		_, err := ParseSchedule(c.cron, c.zone)
		fe, ok := asFieldError(err)
		if !ok || fe.Field != c.field {
			t.Errorf("ParseSchedule(%q, %q) = %v, want an error on %s", c.cron, c.zone, err, c.field)
		}
	}
	if _, err := ParseSchedule("@daily", ""); err != nil {
		t.Errorf("@daily in UTC: %v", err)
	}
}

func TestValidateNamesTheField(t *testing.T) {
	now := utc("2027-01-01T00:00:00Z")
	base := func() *api.Trigger {
		return &api.Trigger{Metadata: api.ObjectMeta{Name: "t"}, Spec: api.TriggerSpec{Agent: "a",
			Webhook: &api.TriggerWebhook{SecretRef: "hook"}, Input: "Lead: {{.body.lead.email}}",
			TestPayload: []byte(`{"lead": {"email": "x@example.com"}}`)}}
	}
	if err := DefaultAndValidate(base(), now); err != nil {
		t.Fatalf("a good webhook trigger: %v", err)
	}
	for field, mut := range map[string]func(*api.Trigger){
		"spec.input":             func(tr *api.Trigger) { tr.Spec.Input = "Lead: {{.body.lead.phone}}" },
		"spec.agent":             func(tr *api.Trigger) { tr.Spec.Agent = "" },
		"spec.concurrency":       func(tr *api.Trigger) { tr.Spec.Concurrency = "Sometimes" },
		"spec.maxCostUSD":        func(tr *api.Trigger) { tr.Spec.MaxCostUSD = "lots" },
		"spec":                   func(tr *api.Trigger) { tr.Spec.Schedule = &api.TriggerSchedule{Cron: "0 9 * * *"} },
		"spec.webhook.secretRef": func(tr *api.Trigger) { tr.Spec.Webhook.SecretRef = "" },
		"spec.schedule.cron":     func(tr *api.Trigger) { *tr = *schedTrigger("0 25 * * *", "UTC") },
		"spec.schedule.timeZone": func(tr *api.Trigger) { *tr = *schedTrigger("0 9 * * *", "Mars/Olympus") },
		"spec.schedule.missed":   func(tr *api.Trigger) { *tr = *schedTrigger("0 9 * * *", "UTC"); tr.Spec.Schedule.Missed = "Later" },
		"spec.github.repositories[1]": func(tr *api.Trigger) {
			tr.Spec.Webhook, tr.Spec.TestPayload = nil, nil
			tr.Spec.GitHub = &api.TriggerGitHub{SecretRef: "gh", Repositories: []string{"o/r", "just-a-name"}}
		},
	} {
		tr := base()
		mut(tr)
		err := DefaultAndValidate(tr, now)
		ae, ok := api.AsError(err)
		if !ok || ae.Field != field {
			t.Errorf("want an error on %s, got %v", field, err)
		}
	}
	// A schedule's input renders over its own event.
	st := schedTrigger("0 9 * * *", "Europe/Berlin")
	st.Spec.Input = "Report for {{.scheduledTime}}"
	if err := DefaultAndValidate(st, now); err != nil || st.Spec.Schedule.Missed != api.MissedSkip || st.Spec.Concurrency != api.ConcurrencyAllow {
		t.Errorf("a good schedule: %v %+v", err, st.Spec)
	}
	st.Spec.Input = "Report for {{.body}}"
	if ae, ok := api.AsError(DefaultAndValidate(st, now)); !ok || ae.Field != "spec.input" {
		t.Errorf("a schedule's input naming a missing key: %v", ae)
	}
}

func schedTrigger(cron, zone string) *api.Trigger {
	return &api.Trigger{Metadata: api.ObjectMeta{Name: "t"}, Spec: api.TriggerSpec{Agent: "a", Input: "go",
		Schedule: &api.TriggerSchedule{Cron: cron, TimeZone: zone}}}
}

func TestRenderMissingKeyIsAnError(t *testing.T) {
	ev := WebhookEvent("t", "msg_1", "1", []byte(`{"lead": {"email": "x@example.com", "n": 12345678901}}`))
	got, err := Render("{{.body.lead.email}} {{.body.lead.n}}", ev)
	if err != nil || got != "x@example.com 12345678901" {
		t.Errorf("Render = %q, %v", got, err)
	}
	if _, err := Render("{{.body.lead.phone}}", ev); err == nil {
		t.Errorf("a missing key rendered")
	}
	if got, err := Render("", ScheduleEvent("t", utc("2027-01-04T08:00:00Z"), time.UTC)); err != nil || !strings.Contains(got, `"scheduledTime": "2027-01-04T08:00:00Z"`) {
		t.Errorf("an empty input = %q, %v", got, err)
	}
}

func TestDueAndPrev(t *testing.T) {
	daily := mustParse(t, "30 2 * * *", "Europe/Berlin")
	if got := daily.Prev(utc("2027-03-28T01:30:00Z")); !got.Equal(utc("2027-03-28T01:00:00Z")) {
		t.Errorf("Prev after the skipped 02:30 = %s, want 03:00 CEST", got)
	}
	if got := daily.Prev(utc("2027-10-31T01:45:00Z")); !got.Equal(utc("2027-10-31T00:30:00Z")) {
		t.Errorf("Prev after the repeated 02:30 = %s, want its first occurrence", got)
	}
	if got := daily.Prev(utc("2027-10-31T00:30:00Z")); !got.Equal(utc("2027-10-31T00:30:00Z")) {
		t.Errorf("Prev at a slot = %s, want the slot itself", got)
	}
	// Months of an every-minute cron: the latest slot, and the count stops past the limit.
	minute := mustParse(t, "* * * * *", "UTC")
	latest, n := minute.Due(utc("2026-12-01T09:00:00Z"), utc("2027-03-27T12:00:30Z"), 100)
	if !latest.Equal(utc("2027-03-27T12:00:00Z")) || n != 101 {
		t.Errorf("Due over months = %s, %d; want 12:00 and 101 (more than 100)", latest, n)
	}
	hourly := mustParse(t, "0 * * * *", "UTC")
	if latest, n := hourly.Due(utc("2027-11-08T10:00:00Z"), utc("2027-11-08T15:20:00Z"), 100); !latest.Equal(utc("2027-11-08T15:00:00Z")) || n != 5 {
		t.Errorf("Due over 5 hours = %s, %d", latest, n)
	}
	if _, n := hourly.Due(utc("2027-11-08T15:00:00Z"), utc("2027-11-08T15:59:59Z"), 100); n != 0 {
		t.Errorf("Due with no new slot = %d", n)
	}
}
