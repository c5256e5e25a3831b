package console

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
)

func TestTriggersPage(t *testing.T) {
	t.Parallel()
	tc := newTestConsole(t)
	ctx := context.Background()
	for _, tr := range []*api.Trigger{
		{Metadata: api.ObjectMeta{Name: "digest"}, Spec: api.TriggerSpec{Agent: "a", Concurrency: api.ConcurrencyAllow,
			Schedule: &api.TriggerSchedule{Cron: "0 9 * * MON", TimeZone: "Europe/Berlin", Missed: api.MissedSkip}}},
		{Metadata: api.ObjectMeta{Name: "leads"}, Spec: api.TriggerSpec{Agent: "a", Concurrency: api.ConcurrencyAllow, Input: "{{.body.x}}",
			Webhook: &api.TriggerWebhook{SecretRef: "hook"}}},
	} {
		if err := tc.st.CreateTrigger(ctx, tr); err != nil {
			t.Fatal(err)
		}
	}
	// A fire that started a run, and one whose run could not be made.
	tc.createRun(t, "leads-1")
	slot := time.Now().Add(-time.Hour)
	if _, _, err := tc.st.RecordFire(ctx, api.TriggerFire{Trigger: "leads", Key: "webhook:msg_1", Source: api.FireSourceWebhook, DeliveryID: "msg_1",
		Outcome: api.FireStarted, Run: "leads-1"}, "", nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tc.st.RecordFire(ctx, api.TriggerFire{Trigger: "digest", Key: "slot:x", Source: api.FireSourceSchedule, ScheduledTime: &slot,
		Outcome: api.FireFailed, Message: "spec.agent: agent \"a\" is stopped"}, "", nil); err != nil {
		t.Fatal(err)
	}
	_, page := tc.body(t, "/triggers")
	for _, want := range []string{`<a href="/triggers/digest">digest</a>`, "0 9 * * MON (Europe/Berlin, missed: Skip)",
		`value="` + tc.srv.URL + `/v2/hooks/leads"`, `<a href="/runs/leads-1">leads-1</a>`, `<button>Suspend</button>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the Triggers page lacks %s:\n%s", want, page)
		}
	}
	// Mission Control names the trigger of a failed fire.
	_, mission := tc.body(t, "/")
	if !strings.Contains(mission, `a fire of trigger <a href="/triggers/digest">digest</a> (no run)`) || !strings.Contains(mission, "is stopped") {
		t.Errorf("Mission Control does not show the failed fire with its trigger:\n%s", mission)
	}
	// Suspend needs the page's CSRF token, then suspends; Resume undoes it.
	resp := tc.do(t, ctx, "POST", "/triggers/leads/suspend", tc.session, strings.NewReader("suspend=true"), "Content-Type", "application/x-www-form-urlencoded")
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("suspend without the CSRF token: HTTP %d", resp.StatusCode)
	}
	csrf := pageCSRF(t, page)
	for _, want := range []bool{true, false} {
		form := url.Values{"csrf": {csrf}, "suspend": {map[bool]string{true: "true", false: "false"}[want]}}
		resp := tc.do(t, ctx, "POST", "/triggers/leads/suspend", tc.session, strings.NewReader(form.Encode()), "Content-Type", "application/x-www-form-urlencoded")
		resp.Body.Close()
		if resp.StatusCode != 303 {
			t.Fatalf("suspend=%v: HTTP %d", want, resp.StatusCode)
		}
		got, err := tc.st.GetTrigger(ctx, "leads")
		if err != nil || got.Spec.Suspend != want {
			t.Errorf("after suspend=%v the trigger is %+v (%v)", want, got.Spec, err)
		}
	}
	_, one := tc.body(t, "/triggers/leads")
	if !strings.Contains(one, "msg_1") || !strings.Contains(one, tc.srv.URL+"/v2/hooks/leads") {
		t.Errorf("the trigger's page:\n%s", one)
	}
}

func pageCSRF(t *testing.T, page string) string {
	t.Helper()
	const marker = `name="csrf" value="`
	i := strings.Index(page, marker)
	if i < 0 {
		t.Fatalf("no CSRF token on the page:\n%s", page)
	}
	rest := page[i+len(marker):]
	return rest[:strings.Index(rest, `"`)]
}
