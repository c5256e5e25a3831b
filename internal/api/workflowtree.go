package api

import (
	"fmt"

	"agentrun.dev/agentrun/internal/workflow"
)

// WorkflowNode is one node of a workflow run's tree (workflow.TreeNode): its execution path,
// kind, label, state (done, running, waiting, failed, escalated, skipped, pending), a preview
// of its value, its cost rolled up in micro-dollars and its children.
type WorkflowNode = workflow.TreeNode

// WorkflowTree is GET /v2/agentruns/NAME/nodes: the run's node tree, made from its pinned
// workflow and its journal. Root is absent for a run whose agent revision has no workflow.
type WorkflowTree struct {
	Run      string        `json:"run"`
	Workflow string        `json:"workflow,omitempty"`
	Root     *WorkflowNode `json:"root,omitempty"`
}

// RunTree is run's node tree given its agent revision's spec, its journal steps and the
// resolver of the children its workflow names (store.PinnedWorkflows).
func RunTree(run *AgentRun, spec *AgentSpec, steps []Step, resolve func(name string) ([]byte, error)) (*WorkflowTree, error) {
	t := &WorkflowTree{Run: run.Metadata.Name}
	if spec == nil || len(spec.Workflow) == 0 {
		return t, nil
	}
	w, errs := workflow.Validate(spec.Workflow, workflow.Options{Resolve: resolve, DeferNamed: resolve == nil})
	if len(errs) > 0 {
		return nil, fmt.Errorf("the workflow of %s revision %d: %w", run.Spec.Agent, run.Status.AgentRevision, errs)
	}
	ts := make([]workflow.TreeStep, 0, len(steps))
	for _, s := range steps {
		ts = append(ts, workflow.TreeStep{Key: s.Key, Kind: string(s.Kind), State: string(s.State), Title: s.Title, Result: s.Result, CostMicros: s.CostMicros})
	}
	st := workflow.TreeRun{Finished: Finished(run.Status.Phase), FailedKey: run.Status.FailedNode,
		Completed: run.Status.Phase == PhaseSucceeded && run.Status.Escalation == nil}
	if run.Status.WaitingOn != nil {
		st.WaitingKey = run.Status.WaitingOn.StepKey
	}
	if run.Status.Escalation != nil {
		st.EscalatedKey = run.Status.Escalation.StepKey
	}
	t.Workflow = w.Name
	t.Root = w.Tree(ts, st)
	return t, nil
}
