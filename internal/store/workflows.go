package store

import (
	"context"
	"errors"
	"fmt"

	"agentrun.dev/agentrun/internal/api"
)

// RevisionGetter is the part of the store that reads an agent revision.
type RevisionGetter interface {
	GetAgentRevision(ctx context.Context, name string, revision int64) (*api.AgentSpec, error)
}

// PinnedWorkflows resolves the children a workflow names by string ("workflow": "NAME"): NAME is
// the workflow of agent NAME at the revision pinned in spec.workflowChildren when the parent's
// revision was saved, so every run of that revision (and every replay of a run) runs the same
// children whatever has been saved since. A name with no pin is refused, never looked up afresh.
func PinnedWorkflows(ctx context.Context, st RevisionGetter, pins map[string]int64) func(name string) ([]byte, error) {
	return func(name string) ([]byte, error) {
		rev, ok := pins[name]
		if !ok {
			return nil, fmt.Errorf("no revision of agent %q is pinned for this child (spec.workflowChildren); save the parent again to pin one", name)
		}
		spec, err := st.GetAgentRevision(ctx, name, rev)
		if errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("agent %q has no revision %d", name, rev)
		}
		if err != nil {
			return nil, fmt.Errorf("child workflow %q: %w", name, err)
		}
		if len(spec.Workflow) == 0 {
			return nil, fmt.Errorf("agent %q revision %d has no workflow", name, rev)
		}
		return spec.Workflow, nil
	}
}

// TreeReader is the part of the store a run's node tree is read from.
type TreeReader interface {
	RevisionGetter
	ListSteps(ctx context.Context, run string) ([]api.Step, error)
}

// RunTree is run's node tree (api.RunTree) read from st: its agent revision, its journal and its
// pinned children. The API and the console's run page show the same.
func RunTree(ctx context.Context, st TreeReader, run *api.AgentRun) (*api.WorkflowTree, error) {
	var spec *api.AgentSpec
	if run.Status.AgentRevision > 0 {
		var err error
		if spec, err = st.GetAgentRevision(ctx, run.Spec.Agent, run.Status.AgentRevision); err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
	}
	if spec == nil || len(spec.Workflow) == 0 {
		return &api.WorkflowTree{Run: run.Metadata.Name}, nil
	}
	steps, err := st.ListSteps(ctx, run.Metadata.Name)
	if err != nil {
		return nil, err
	}
	return api.RunTree(run, spec, steps, PinnedWorkflows(ctx, st, spec.WorkflowChildren))
}
