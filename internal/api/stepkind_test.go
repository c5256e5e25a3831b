package api

import (
	"encoding/json"
	"testing"
)

// The step kinds are stored in journals: their wire values must stay what journals already
// hold, or a stored journal no longer replays.
func TestStepKindWireValues(t *testing.T) {
	want := map[StepKind]string{
		StepKindModel: "model", StepKindRoute: "route", StepKindCount: "count", StepKindTool: "tool",
		StepKindApproval: "approval", StepKindQuestion: "question", StepKindMessage: "message",
		StepKindComputer: "computer", StepKindLearning: "learning", StepKindClock: "clock",
		StepKindTurnPre: "turn.pre", StepKindStop: "turn.stop",
	}
	for k, w := range want {
		b, err := json.Marshal(Step{Kind: k})
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil || m["kind"] != w {
			t.Errorf("%q marshals as %s, want kind %q", k, b, w)
		}
		var back Step
		if err := json.Unmarshal([]byte(`{"kind":"`+w+`"}`), &back); err != nil || back.Kind != k {
			t.Errorf("stored kind %q reads back as %q (%v), want %q", w, back.Kind, err, k)
		}
	}
}
