package trigger

import (
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
)

// A trigger with three mistakes is told all three, at their paths, the first as the error.
func TestDefaultAndValidateEveryMistake(t *testing.T) {
	tr := &api.Trigger{Metadata: api.ObjectMeta{Name: "nightly"}, Spec: api.TriggerSpec{
		Agent: "Bad Agent", Concurrency: "Sometimes", Input: "{{ .scheduledTime",
		Schedule: &api.TriggerSchedule{Cron: "0 3 * * *", Missed: "Maybe"}}}
	e, ok := api.AsError(DefaultAndValidate(tr, time.Now()))
	want := []string{"spec.agent", "spec.concurrency", "spec.schedule.missed", "spec.input"}
	if !ok || e.Field != want[0] || len(e.Errors) != len(want) {
		t.Fatalf("got %v, want %d errors at %v", e, len(want), want)
	}
	for i, w := range want {
		if g := e.Errors[i]; g.Field != w || g.Code != api.CodeInvalid {
			t.Errorf("error %d is %s at %s, want Invalid at %s", i, g.Code, g.Field, w)
		}
	}
}

// A GitHub trigger's testPayload of null (or any JSON that is not an object) is refused at its
// field; it used to reach a type assertion and panic.
func TestGitHubTestPayloadNotAnObject(t *testing.T) {
	for _, payload := range []string{`null`, `[1]`, `"x"`} {
		tr := &api.Trigger{Metadata: api.ObjectMeta{Name: "prs"}, Spec: api.TriggerSpec{
			Agent: "reviewer", Input: "review {{ .pull_request.number }}",
			GitHub: &api.TriggerGitHub{SecretRef: "gh"}, TestPayload: []byte(payload)}}
		e, ok := api.AsError(DefaultAndValidate(tr, time.Now()))
		if !ok || e.Field != "spec.testPayload" || e.Code != api.CodeInvalid {
			t.Errorf("testPayload %s: got %v, want Invalid at spec.testPayload", payload, e)
		}
	}
}
