package console

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
)

func learnEv(typ api.EventType, msg string, data any) api.Event {
	b, _ := json.Marshal(data)
	return api.Event{Type: typ, Message: msg, Data: b}
}

// A run's learning record from its timeline: a drive taken up again says an item's outcome
// again (the last holds), a pending approval makes its item wait, a decided one is named, and a
// run without learning events has no record.
func TestRunLearningOf(t *testing.T) {
	t.Parallel()
	if rl := runLearningOf("a", []api.Event{{Type: api.EventRunStarted}}, nil, nil); rl != nil {
		t.Fatalf("a run without learning has a record: %+v", rl)
	}
	evs := []api.Event{
		learnEv(api.EventLearningGiven, "", map[string]any{"commit": "c0ffee", "notes": []string{"notes/a.md"}, "skills": []string{"deploy"}}),
		learnEv(api.EventLearningOpened, "", map[string]string{"note": "notes/a.md", "etag": "e1"}),
		learnEv(api.EventLearningProposed, "", map[string]any{"items": []string{"note add notes/b.md", "note add notes/c.md", "note add notes/d.md", "note add notes/../x.md"}}),
		learnEv(api.EventLearningRefused, "", map[string]any{"item": 3, "path": "notes/../x.md", "code": "PathOutsideFolder", "reason": "not under notes/"}),
		learnEv(api.EventLearningKept, "", map[string]any{"item": 0, "path": "notes/b.md", "reason": "useful"}),
		learnEv(api.EventLearningDropped, "", map[string]any{"item": 1, "path": "notes/c.md", "by": "person"}),
		learnEv(api.EventLearningKept, "", map[string]any{"item": 0, "path": "notes/b.md", "reason": "useful"}),
	}
	apps := []Approval{{ID: 7, StepKey: "learn/approval/2", State: "pending"}, {ID: 5, StepKey: "learn/approval/1", State: "denied"}}
	rl := runLearningOf("a", evs, apps, nil)
	if rl == nil || rl.Commit != "c0ffee" || len(rl.Given) != 1 || len(rl.Skills) != 1 || len(rl.Opened) != 1 || rl.Opened[0].ETag != "e1" {
		t.Fatalf("given/opened: %+v", rl)
	}
	want := []learnItem{
		{Index: 0, What: "note add notes/b.md", Path: "notes/b.md", Outcome: "kept", Reason: "useful"},
		{Index: 1, What: "note add notes/c.md", Path: "notes/c.md", Outcome: "dropped", By: "person", Reason: "a person denied it", Approval: 5},
		{Index: 2, What: "note add notes/d.md", Path: "notes/d.md", Outcome: "waiting", Approval: 7},
		{Index: 3, What: "note add notes/../x.md", Path: "notes/../x.md", Outcome: "refused", By: "the checks", Reason: "PathOutsideFolder: not under notes/"},
	}
	if len(rl.Items) != len(want) {
		t.Fatalf("items: %+v", rl.Items)
	}
	for i := range want {
		if rl.Items[i] != want[i] {
			t.Errorf("item %d: %+v, want %+v", i, rl.Items[i], want[i])
		}
	}
	// A proposal refused as a whole.
	whole := runLearningOf("a", []api.Event{learnEv(api.EventLearningRefused, "the proposal was refused: not JSON", nil)}, nil, nil)
	if whole == nil || !whole.Proposed || whole.Refused != "the proposal was refused: not JSON" {
		t.Errorf("whole refusal: %+v", whole)
	}
}

// After retention purged a run's payloads its learning events keep their messages only: the
// section says the record was purged and repeats the messages, and does not claim the run was
// given no notes, opened none or proposed nothing.
func TestRunLearningPurged(t *testing.T) {
	t.Parallel()
	evs := []api.Event{
		{Type: api.EventLearningGiven, Message: "started from learning commit 4c83da5700f2 with 1 notes, 0 skills and 0 workflows"},
		{Type: api.EventLearningOpened, Message: "opened note notes/deploy.md", StepKey: "t0/tool/0"},
		{Type: api.EventLearningProposed, Message: "proposed 1 items to keep"},
		{Type: api.EventLearningKept, Message: "notes/friday.md kept: a rule the person stated"},
	}
	at := time.Date(2026, 12, 1, 12, 53, 6, 0, time.UTC)
	rl := runLearningOf("a", evs, nil, &at)
	var b strings.Builder
	if err := runTmpl.ExecuteTemplate(&b, "learning", rl); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"purged on 2026-12-01 12:53:06 UTC", "with 1 notes", "opened note notes/deploy.md", "notes/friday.md kept: a rule the person stated"} {
		if !strings.Contains(page, want) {
			t.Errorf("the purged run's Learning section lacks %q:\n%s", want, page)
		}
	}
	for _, wrong := range []string{"empty learning folder", "It opened no note", "proposed nothing", "It opened (step"} {
		if strings.Contains(page, wrong) {
			t.Errorf("the purged run's Learning section says %q:\n%s", wrong, page)
		}
	}
}
