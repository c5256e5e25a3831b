package store

import (
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
)

// The retry schedule: the base doubling per failure, at most an hour apart, given up a day after
// the event.
func TestNextAttempt(t *testing.T) {
	created := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	want := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second}
	for i, w := range want {
		next, ok := NextAttempt(created, i+1, created, DefaultRetryBase, DefaultRetryFor)
		if !ok || next.Sub(created) != w {
			t.Errorf("after attempt %d: %v %v, want %v", i+1, next.Sub(created), ok, w)
		}
	}
	if next, _ := NextAttempt(created, 20, created, DefaultRetryBase, DefaultRetryFor); next.Sub(created) != RetryMaxDelay {
		t.Errorf("after attempt 20: %v, want %v", next.Sub(created), RetryMaxDelay)
	}
	if _, ok := NextAttempt(created, 30, created.Add(23*time.Hour+30*time.Minute), DefaultRetryBase, DefaultRetryFor); ok {
		t.Errorf("a retry past a day after the event was scheduled")
	}
}

// A run's cost in a payload: micro-dollars, unknown when unpriceable, never 0 for unknown.
func TestCostOf(t *testing.T) {
	for _, c := range []struct {
		in      string
		micros  *int64
		unknown bool
	}{
		{"0.041250", ptr(41250), false},
		{"unknown", nil, true},
		{"at least 0.01", ptr(10000), true},
		{"", nil, true},
	} {
		got := CostOf(&api.RunCost{TotalUSD: c.in})
		if got.Unknown != c.unknown || (got.Micros == nil) != (c.micros == nil) || (got.Micros != nil && *got.Micros != *c.micros) {
			t.Errorf("CostOf(%q) = %+v", c.in, got)
		}
	}
}

func ptr(v int64) *int64 { return &v }

// Only a park on a person reports run.waiting, and an approval also approval.requested.
func TestRunOutbox(t *testing.T) {
	now := time.Now()
	waiting := func(r api.Reason) Write {
		return Write{Status: &api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: r, WaitingOn: &api.WaitingOn{StepKey: "k"}}, Events: []api.Event{{Type: api.EventRunWaiting}}, Release: true}
	}
	for _, c := range []struct {
		w    Write
		want []string
	}{
		{waiting(api.ReasonMessage), nil},
		{waiting(api.ReasonModelKeyMissing), nil},
		{waiting(api.ReasonCredits), []string{api.WebhookRunWaiting}},
		{waiting(api.ReasonApproval), []string{api.WebhookRunWaiting, api.WebhookApprovalRequested}},
		{Write{Status: &api.AgentRunStatus{Phase: api.PhaseCancelled}, Events: []api.Event{{Type: api.EventRunCancelled}}}, []string{api.WebhookRunCancelled}},
		{Write{Status: &api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: api.ReasonQuestion}}, nil}, // no timeline event: no new park
	} {
		var got []string
		for _, ev := range RunOutbox("r", 1, c.w, now) {
			got = append(got, ev.Type)
		}
		if len(got) != len(c.want) || (len(got) > 0 && got[len(got)-1] != c.want[len(c.want)-1]) {
			t.Errorf("%+v: %v, want %v", c.w.Status, got, c.want)
		}
	}
}
