package agent

import (
	"context"
	"encoding/json"
	"fmt"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/catalog"
	"agentrun.dev/agentrun/internal/humanjson"
	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/policy"
)

// approval decides whether a tool call may run, per the agent's approvals and the server's deny
// set. A call that asks waits for a person: its approval is a journal step (KEY/approval) that
// parks the run in Waiting/Approval until someone approves or denies it; the decision, and who
// made it, are journaled, so a restart neither asks again nor forgets.
// It returns ok=false with a message for the model when the call must not run.
func (d *drive) approval(ctx context.Context, key string, call model.Block, in catalog.Input) (ok bool, refusal string, err error) {
	var spec api.Approvals
	if d.spec.Approvals != nil {
		spec = *d.spec.Approvals
	}
	dec := policy.DecideInput(spec, d.e.ServerDeny, call.Name, in)
	switch dec.Action {
	case policy.Allow:
		return true, "", nil
	case policy.Deny:
		// Journal the refusal so the timeline and steps show it.
		if _, err := d.j.Record(ctx, journal.Spec{Key: key + "/approval", Kind: api.StepKindApproval, Title: "denied " + call.Name + " by " + dec.Rule,
			Args: map[string]any{"tool": call.Name, "input": call.Input, "reason": d.turnText, "rule": dec.Rule}}, map[string]string{"decision": "deny", "by": dec.Rule}); err != nil {
			return false, "", err
		}
		return false, fmt.Sprintf("%s; the call %s did not run", dec.Explain(), call.Name), nil
	}
	args := map[string]any{"tool": call.Name, "input": call.Input, "reason": d.turnText, "rule": dec.Rule, "why": dec.Explain()}
	out, done, err := d.j.Await(ctx, journal.Spec{Key: key + "/approval", Kind: api.StepKindApproval, Title: "approval for " + call.Name + " " + summarize(in), Args: args})
	if err != nil {
		return false, "", err
	}
	if !done {
		d.status.Phase, d.status.Reason = api.PhaseWaiting, api.ReasonApproval
		d.status.Message = fmt.Sprintf("%s asks for approval (%s)", call.Name, dec.Explain())
		d.status.WaitingOn = &api.WaitingOn{Kind: "approval", StepKey: key + "/approval", Detail: call.Name + " " + humanjson.String(call.Input)}
		return false, "", d.park(ctx, &api.Event{Type: api.EventRunApproval, StepKey: key + "/approval", Message: fmt.Sprintf("%s asks for approval: %s %s", d.run.Metadata.Name, call.Name, humanjson.String(call.Input))})
	}
	var res struct {
		Decision string `json:"decision"`
		By       string `json:"by"`
		Reason   string `json:"reason"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return false, "", fmt.Errorf("approval %s: decode the decision: %w", key, err)
	}
	d.status.Phase, d.status.Reason, d.status.Message, d.status.WaitingOn = api.PhaseRunning, "", "", nil
	if res.Decision == "approve" {
		return true, "", nil
	}
	msg := fmt.Sprintf("denied: %s refused the call %s; it did not run", res.By, call.Name)
	if res.Reason != "" {
		msg += " (" + res.Reason + ")"
	}
	return false, msg, nil
}
