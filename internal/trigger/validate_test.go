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
