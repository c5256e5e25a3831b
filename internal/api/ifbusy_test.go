package api

import (
	"encoding/json"
	"testing"
)

func TestMarkRolledBack(t *testing.T) {
	stop, _ := json.Marshal(TurnStop{Mode: IfBusyRollback, Seq: 2, At: "t3/model", RolledBack: []string{"m1", "t2/model", "t2/tool/0"}})
	steps := []Step{{Key: "t0/model"}, {Key: "m1"}, {Key: "t2/model"}, {Key: "t2/tool/0"}, {Key: "t3/stop", Kind: StepKindStop, State: StepCompleted, Result: stop}, {Key: "t4/model"}}
	MarkRolledBack(steps)
	for _, s := range steps {
		want := s.Key == "m1" || s.Key == "t2/model" || s.Key == "t2/tool/0"
		if s.RolledBack != want {
			t.Errorf("%s rolledBack = %v, want %v", s.Key, s.RolledBack, want)
		}
	}
}

func TestIfBusyRules(t *testing.T) {
	if err := CheckIfBusy("ifBusy", "later"); err == nil {
		t.Error("ifBusy later was accepted")
	} else if e, ok := err.(*Error); !ok || e.Field != "ifBusy" {
		t.Errorf("error %v names no field ifBusy", err)
	}
	for _, m := range append(IfBusyModes, "") {
		if err := CheckIfBusy("ifBusy", m); err != nil {
			t.Errorf("ifBusy %q refused: %v", m, err)
		}
	}
	cases := []struct {
		spec AgentSpec
		mode IfBusy
		ok   bool
	}{
		{AgentSpec{}, IfBusyRollback, true},
		{AgentSpec{Harness: "codex"}, IfBusyInterrupt, true},
		{AgentSpec{Harness: "codex"}, IfBusyRollback, true},
		{AgentSpec{Harness: "claude-agent"}, IfBusyRollback, true},
		{AgentSpec{Workflow: json.RawMessage(`{}`)}, IfBusyRollback, false},
		{AgentSpec{Workflow: json.RawMessage(`{}`)}, IfBusyInterrupt, false},
	}
	for _, c := range cases {
		if got := SteerUnsupported(&c.spec, c.mode) == ""; got != c.ok {
			t.Errorf("SteerUnsupported(%+v, %s) ok = %v, want %v", c.spec.Harness, c.mode, got, c.ok)
		}
	}
	if !Busy(PhaseRunning) || !Busy(PhaseQueued) || Busy(PhaseWaiting) || Busy(PhaseNeedsResolution) || Busy(PhaseSucceeded) {
		t.Error("Busy is wrong for some phase")
	}
}

func TestQueuedMessages(t *testing.T) {
	msgs := []Message{{Seq: 1}, {Seq: 2}, {Seq: 3}}
	steps := []Step{{Key: "m0", Kind: "message", State: StepCompleted, Result: json.RawMessage(`{"seq":2}`)}}
	if got := QueuedMessages(msgs, steps); len(got) != 1 || got[0].Seq != 3 {
		t.Errorf("QueuedMessages = %+v, want seq 3 only", got)
	}
}
