package api

import (
	"encoding/json"
	"strings"
)

// IfBusy says what a message sent while its run has a turn in flight does (the message's
// ifBusy, or the agent's spec.ifBusy as the default). A run waiting on a person, its cap or
// credits is not busy: a message to it is taken as always, whatever the mode.
type IfBusy string

// The ifBusy modes.
const (
	// IfBusyEnqueue (the default) keeps the message until the turn in flight is over; it shows as
	// queued (event message.queued) until the run reads it.
	IfBusyEnqueue IfBusy = "enqueue"
	// IfBusyReject refuses the message (409 RunBusy) and stores nothing.
	IfBusyReject IfBusy = "reject"
	// IfBusyInterrupt stops the turn in flight (a model call is cancelled and recorded as
	// interrupted, a tool call is left to finish) and the message starts the next turn.
	IfBusyInterrupt IfBusy = "interrupt"
	// IfBusyRollback discards the turn in flight: its steps are marked rolled back and the run
	// folder is restored to the turn's start; its cost still counts.
	IfBusyRollback IfBusy = "rollback"
)

// IfBusyModes lists the modes, in the order the docs give them.
var IfBusyModes = []IfBusy{IfBusyEnqueue, IfBusyReject, IfBusyInterrupt, IfBusyRollback}

// CheckIfBusy validates a mode ("" is allowed: the default) at field.
func CheckIfBusy(field string, m IfBusy) error {
	if m == "" {
		return nil
	}
	for _, k := range IfBusyModes {
		if m == k {
			return nil
		}
	}
	names := make([]string, len(IfBusyModes))
	for i, k := range IfBusyModes {
		names[i] = string(k)
	}
	return Invalid(field, "ifBusy %q: use %s", m, strings.Join(names, ", "))
}

// Steers reports whether the mode stops the turn in flight (interrupt or rollback).
func (m IfBusy) Steers() bool { return m == IfBusyInterrupt || m == IfBusyRollback }

// Busy reports whether a run in phase has a turn in flight (or about to start): Queued or
// Running. Waiting (a person, a message, the cap, credits) and NeedsResolution are not busy.
func Busy(phase Phase) bool { return phase == PhaseRunning || phase == PhaseQueued }

// TurnStop is what a stop step records: how the turn in flight was stopped, by which message,
// at which step, and for a rollback which steps it discarded.
type TurnStop struct {
	Mode IfBusy `json:"mode"`
	// Seq is the message that stopped the turn.
	Seq int64 `json:"seq"`
	// At is the step in flight (or next) when the turn stopped ("t3/model", "t3/tool/1").
	At string `json:"at"`
	// RolledBack are the keys of the turn's steps a rollback discarded.
	RolledBack []string `json:"rolledBack,omitempty"`
	// Turn is, for a harness's rollback, the turn it discarded, named by the step its prompt
	// came from ("m2"; "input": the run's input): a harness started again skips that turn
	// when it replays the journal, so the turn is not in its history.
	Turn string `json:"turn,omitempty"`
	// InputTokens and OutputTokens are what the stopped model call's stream had reported when
	// it was cut (Anthropic's stream gives the input at its start; OpenAI's wires give usage
	// only at the end): shown, never priced, since the call's cost is unknown.
	InputTokens  int64 `json:"inputTokens,omitempty"`
	OutputTokens int64 `json:"outputTokens,omitempty"`
}

// MarkRolledBack sets RolledBack on the steps a recorded rollback discarded (the rule read by
// the API and the console, written once here).
func MarkRolledBack(steps []Step) {
	gone := map[string]bool{}
	for _, s := range steps {
		if s.Kind != StepKindStop || s.State != StepCompleted {
			continue
		}
		var ts TurnStop
		if json.Unmarshal(s.Result, &ts) == nil {
			for _, k := range ts.RolledBack {
				gone[k] = true
			}
		}
	}
	if len(gone) == 0 {
		return
	}
	for i := range steps {
		if gone[steps[i].Key] {
			steps[i].RolledBack = true
		}
	}
}

// SteerUnsupported says why a run of spec cannot be stopped by a message with mode ("" when it
// can): the built-in loop and every harness take interrupt and rollback; a workflow takes
// neither, since it has no turn for a message to stop (docs/api.md, "A message to a busy run").
func SteerUnsupported(s *AgentSpec, mode IfBusy) string {
	if len(s.Workflow) > 0 {
		return "has no meaning for a workflow agent: a workflow has no turn to stop (its nodes run as its graph says, several at once in a map, and a message is read by the node that waits for one); cancel the run, or fork it at a node key"
	}
	return ""
}

// QueuedMessages are the messages of a run its journal has not read yet (no completed message or
// question step holds them): what the run's page shows as queued.
func QueuedMessages(msgs []Message, steps []Step) []Message {
	var read int64
	for _, s := range steps {
		if (s.Kind != StepKindMessage && s.Kind != StepKindQuestion) || s.State != StepCompleted {
			continue
		}
		var m struct{ Seq int64 }
		if json.Unmarshal(s.Result, &m) == nil && m.Seq > read {
			read = m.Seq
		}
	}
	var out []Message
	for _, m := range msgs {
		if m.Seq > read {
			out = append(out, m)
		}
	}
	return out
}
