package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/catalog"
	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/learning"
	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/tools"
	"agentrun.dev/agentrun/internal/workflow"
)

// What a learning run is offered from its folder beyond the notes: the learned skills (through
// the skill tool, beside the agent's own) and each learned workflow as one tool, on any loop.

// withLearnedTools adds to defs the skill tool when only learned skills bring it, and one tool
// per learned workflow; the result is also what a learned workflow's agent nodes are offered.
func (d *drive) withLearnedTools(defs []model.ToolDef) []model.ToolDef {
	if d.learn != nil {
		if len(d.learn.skills) > 0 && !slices.ContainsFunc(defs, func(t model.ToolDef) bool { return t.Name == catalog.SkillName }) {
			if e, ok := catalog.Lookup(catalog.SkillName); ok {
				defs = append(defs, model.ToolDef{Name: e.Name, Description: e.Description, InputSchema: e.Schema})
			}
		}
		for _, w := range d.learnedWorkflows() {
			defs = append(defs, model.ToolDef{Name: w.Tool, Description: w.Description, InputSchema: w.InputSchema})
		}
	}
	d.offered = defs
	return defs
}

// learnedWorkflows are the learned workflows the run is offered as tools (loadLearning chose
// them).
func (d *drive) learnedWorkflows() []learning.Workflow {
	if d.learn == nil {
		return nil
	}
	return d.learn.workflows
}

// learnedWorkflow is the learned workflow offered as tool name (nil: none is).
func (d *drive) learnedWorkflow(name string) *learning.Workflow {
	ws := d.learnedWorkflows()
	for i := range ws {
		if ws[i].Tool == name {
			return &ws[i]
		}
	}
	return nil
}

// runLearnedWorkflow runs a learned workflow as tool call key: the engine runs the document on
// the call's input with the workflow host of the drive (the journal gated on its lock, so a
// map's items run at once up to its maxConcurrency, as in a workflow run), every node with an
// effect a journal step keyed under the call (KEY/wf/...), each tool call through the run's tool
// step (its tools, the deny set, its approvals), each model call under its cap. The call's own
// step, recorded once the workflow ended, holds what the model is answered; after a crash the
// workflow runs again and every node completed is answered from the journal. A failed node is
// the call's error result, not the run's failure.
func (d *drive) runLearnedWorkflow(ctx context.Context, key string, call model.Block, w *learning.Workflow, result func(string, bool) model.Block) (model.Block, error) {
	spec := journal.Spec{Key: key, Kind: api.StepKindTool, Title: "workflow " + w.Tool + " (" + w.Path + ")", Args: map[string]any{"tool": call.Name, "input": call.Input}}
	if st, ok := d.j.Lookup(key); ok && st.State == api.StepCompleted {
		return d.toolOutcome(key, journal.Outcome{Result: st.Result, Replayed: true}, result)
	}
	var res tools.Result
	var in map[string]any
	switch {
	case d.inWorkflow:
		res = tools.Result{IsError: true, Content: fmt.Sprintf("%s: a learned workflow cannot call a learned workflow; the call did not run", call.Name)}
	case json.Unmarshal(call.Input, &in) != nil || in == nil:
		res = tools.Result{IsError: true, Content: fmt.Sprintf("%s: the input is a JSON object (the workflow's input); the call did not run", call.Name)}
	default:
		d.inWorkflow = true
		h := &wfHost{d: d, defs: d.offered}
		out, err := h.runAs(ctx, w.W, &keyedHost{h: h, under: key}, in)
		d.inWorkflow = false
		var f *workflow.Failure
		switch {
		case d.parked:
			// An item parked the run (an approval, the cap) while others ran: their effects
			// recorded their results first, and nothing started after.
			return model.Block{}, errParked
		case errors.As(err, &f):
			res = tools.Result{IsError: true, Content: f.Error()}
		case err != nil:
			return model.Block{}, err // a park, a lost lease, the cap: the run's, not the call's
		case out.Escalation != nil:
			e := out.Escalation
			res = tools.Result{Content: fmt.Sprintf("the workflow escalated at %q (%s, %s): %s", e.Label, e.Kind, e.Stage, e.Summary)}
		default:
			res = tools.Result{Content: string(out.Output)}
		}
	}
	raw, err := d.j.Record(ctx, spec, res)
	if err != nil {
		return model.Block{}, err
	}
	return d.toolOutcome(key, journal.Outcome{Result: raw}, result)
}

// keyedHost puts a workflow's step keys under a tool call's: node wf/check of the workflow called
// as t2/tool/0 is step t2/tool/0/wf/check.
type keyedHost struct {
	h     *wfHost
	under string
}

func (k *keyedHost) Tool(ctx context.Context, key, tool string, args map[string]any) (workflow.ToolResult, error) {
	return k.h.Tool(ctx, k.under+"/"+key, tool, args)
}

func (k *keyedHost) Shell(ctx context.Context, key, command string, env map[string]string, deadline time.Duration) (workflow.ShellResult, error) {
	return k.h.Shell(ctx, k.under+"/"+key, command, env, deadline)
}

func (k *keyedHost) Ask(ctx context.Context, key string, q workflow.Question) (workflow.Answer, error) {
	return k.h.Ask(ctx, k.under+"/"+key, q)
}

func (k *keyedHost) Agent(ctx context.Context, key string, t workflow.Task) (string, error) {
	return k.h.Agent(ctx, k.under+"/"+key, t)
}
