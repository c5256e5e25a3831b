package store

import (
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
)

// Then is one write of two, in order: the later status and release win, nothing of the first
// is lost, and the result shares no backing array a later append to either could overwrite.
func TestWriteThen(t *testing.T) {
	first := Write{Steps: make([]api.Step, 1, 4), Events: []api.Event{{Type: "a"}}, Status: &api.AgentRunStatus{Message: "first"}}
	first.Steps[0] = api.Step{Key: "t0/model", State: api.StepCompleted}
	wake := time.Now()
	next := Write{Steps: []api.Step{{Key: "t1/model", State: api.StepStarted}}, Events: []api.Event{{Type: "b"}}, Release: true, WakeAt: &wake,
		Charges: []Charge{{StepKey: "t1/model"}}, Files: []FileWrite{{Path: "notes.txt"}}}
	got := first.Then(next)
	if len(got.Steps) != 2 || got.Steps[0].Key != "t0/model" || got.Steps[1].Key != "t1/model" {
		t.Errorf("steps %+v, want t0/model then t1/model", got.Steps)
	}
	if len(got.Events) != 2 || got.Events[0].Type != "a" || got.Events[1].Type != "b" {
		t.Errorf("events %+v, want a then b", got.Events)
	}
	if got.Status != first.Status || !got.Release || got.WakeAt != &wake || len(got.Charges) != 1 || len(got.Files) != 1 {
		t.Errorf("Then = %+v: want the first status (the next has none), the next's release, wake, charge and file", got)
	}
	if got.HistoryStep() != "t0/model" {
		t.Errorf("HistoryStep = %q, want t0/model (the last step ended)", got.HistoryStep())
	}
	// first had room to grow: the merged steps must not be written into its backing array.
	_ = append(first.Steps, api.Step{Key: "other"})
	if got.Steps[1].Key != "t1/model" {
		t.Errorf("an append to the first write's steps overwrote the merged write: %+v", got.Steps)
	}
	later := &api.AgentRunStatus{Message: "later"}
	if w := first.Then(Write{Status: later}); w.Status != later {
		t.Errorf("Then with a later status kept %+v, want the later one", w.Status)
	}
}
