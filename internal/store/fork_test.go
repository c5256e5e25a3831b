package store

import (
	"encoding/json"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
)

// TestPlanForkKeepsCompletedStepsUpToTheStep: the plan keeps the completed steps numbered up to
// the step (a workflow branch's step completed after it but numbered before it included; a
// started one left out), renumbers them, zeroes their cost, and reads the last message consumed.
func TestPlanForkKeepsCompletedStepsUpToTheStep(t *testing.T) {
	cost := int64(9)
	steps := []api.Step{
		{Seq: 1, Key: "m0", Kind: "message", State: api.StepCompleted, Result: json.RawMessage(`{"seq":3,"payload":"hi"}`)},
		{Seq: 2, Key: "wf/a", Kind: "tool", State: api.StepStarted},
		{Seq: 3, Key: "wf/b", Kind: "tool", State: api.StepCompleted, CostMicros: &cost},
		{Seq: 4, Key: "wf/c", Kind: "tool", State: api.StepCompleted},
		{Seq: 5, Key: "wf/d", Kind: "tool", State: api.StepCompleted},
	}
	p, err := PlanFork("src", api.AgentRunStatus{}, steps, "wf/c")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i, s := range p.Steps {
		keys = append(keys, s.Key)
		if s.Seq != int64(i+1) || s.CopiedFrom != "src" || s.CostMicros == nil || *s.CostMicros != 0 {
			t.Errorf("copied %s = %+v", s.Key, s)
		}
	}
	if got, _ := json.Marshal(keys); string(got) != `["m0","wf/b","wf/c"]` || p.At != 4 || p.LastMessage != 3 {
		t.Errorf("plan = %s at %d last message %d", got, p.At, p.LastMessage)
	}
	// A save tagged 2 (the started step's park) counts one copied step below it; 4 counts three.
	if p.NewTag(2) != 1 || p.NewTag(4) != 3 || p.NewTag(0) != 0 {
		t.Errorf("NewTag(2, 4, 0) = %d, %d, %d; want 1, 3, 0", p.NewTag(2), p.NewTag(4), p.NewTag(0))
	}
	if *steps[2].CostMicros != 9 {
		t.Error("PlanFork changed the source's steps")
	}
	for at, code := range map[string]api.Code{"wf/a": api.CodeStepNotCompleted, "wf/z": api.CodeStepNotFound} {
		if _, err := PlanFork("src", api.AgentRunStatus{}, steps, at); err == nil || err.(*RuleError).Code != code {
			t.Errorf("PlanFork at %s = %v, want %s", at, err, code)
		}
	}
	now := time.Now()
	if _, err := PlanFork("src", api.AgentRunStatus{PayloadsPurgedAt: &now}, steps, "wf/c"); err == nil || err.(*RuleError).Code != api.CodeRunPurged {
		t.Errorf("PlanFork of a purged run = %v", err)
	}
}

// TestFolderAt: the last version of each path at or below the tag, deletions dropped, paths in
// the order first saved.
func TestFolderAt(t *testing.T) {
	h := []FileVersion{
		{Version: 1, Tag: 1, FileWrite: FileWrite{Path: "a", Content: []byte("1")}},
		{Version: 2, Tag: 1, FileWrite: FileWrite{Path: "b", Content: []byte("b")}},
		{Version: 3, Tag: 2, FileWrite: FileWrite{Path: "a", Content: []byte("2")}},
		{Version: 4, Tag: 2, FileWrite: FileWrite{Path: "b", Deleted: true}},
		{Version: 5, Tag: 3, FileWrite: FileWrite{Path: "c", Content: []byte("c")}},
	}
	str := func(fs []FileWrite) string {
		out := ""
		for _, f := range fs {
			out += f.Path + "=" + string(f.Content) + " "
		}
		return out
	}
	for tag, want := range map[int64]string{0: "", 1: "a=1 b=b ", 2: "a=2 ", 3: "a=2 c=c "} {
		if got := str(FolderAt(h, tag)); got != want {
			t.Errorf("FolderAt(%d) = %q, want %q", tag, got, want)
		}
	}
}
