package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/catalog"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/workflow"
)

// runNodes is GET /v2/agentruns/{name}/nodes: the run's node tree (api.RunTree), made from its
// pinned workflow and its journal; a run of an agent revision without a workflow has no root.
func (s *Server) runNodes(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	run, err := s.Store.GetRun(ctx, r.PathValue("name"))
	if err != nil {
		writeErr(w, err)
		return
	}
	t, err := store.RunTree(ctx, s.Store, run)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// resolveWorkflowChildren checks the children a's workflow names by string and pins each: NAME is
// the workflow of agent NAME, at the revision spec.workflowChildren gives or else its current one.
// The whole document is validated again with them (an unknown child at its pointer, a cycle
// through named children, a child's own errors at the node that names it); the pins of every
// child reached, children's children too, are kept in spec.workflowChildren.
func (s *Server) resolveWorkflowChildren(ctx context.Context, a *api.Agent) error {
	if len(a.Spec.Workflow) == 0 {
		a.Spec.WorkflowChildren = nil
		return nil
	}
	given := a.Spec.WorkflowChildren
	pins := map[string]int64{}
	var lookupErr error
	resolve := func(name string) ([]byte, error) {
		if name == a.Metadata.Name {
			return a.Spec.Workflow, nil // itself: validation finds the cycle
		}
		rev, ok := given[name]
		if !ok {
			cur, err := s.Store.GetAgent(ctx, name)
			if errors.Is(err, store.ErrNotFound) {
				return nil, fmt.Errorf("no agent %q is stored (a child named by string is the workflow of the agent of that name); create it first, or inline the child", name)
			}
			if err != nil {
				lookupErr = err
				return nil, err
			}
			rev = cur.Status.Revision
		}
		spec, err := s.Store.GetAgentRevision(ctx, name, rev)
		if errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("agent %q has no revision %d (spec.workflowChildren)", name, rev)
		}
		if err != nil {
			lookupErr = err
			return nil, err
		}
		if len(spec.Workflow) == 0 {
			return nil, fmt.Errorf("agent %q revision %d has no workflow to run as a child", name, rev)
		}
		pins[name] = rev
		return spec.Workflow, nil
	}
	_, errs := workflow.Validate(a.Spec.Workflow, workflow.Options{Runnable: true, Resolve: resolve, Tool: s.workflowTool(a)})
	if lookupErr != nil {
		return lookupErr
	}
	if err := api.WorkflowInvalid(errs); err != nil {
		return err
	}
	for name := range given {
		if _, ok := pins[name]; !ok {
			return api.Invalid(api.NewPath("spec", "workflowChildren").Member(name).String(), "the workflow names no child %q", name)
		}
	}
	a.Spec.WorkflowChildren = nil
	if len(pins) > 0 {
		a.Spec.WorkflowChildren = pins
	}
	return nil
}

// workflowTool is the check of a call via tool in a's workflow: a tool this server knows (the
// catalog's, a computer's, its dev tools) that a's runs are not offered (status.tools) is refused
// when the agent is saved, rather than failing when a run reaches the call. Any other name (an MCP
// server's tool, known only when the run connects) is left to the run.
func (s *Server) workflowTool(a *api.Agent) func(string) string {
	c := *a
	offered := withTools(&c).Status.Tools
	return func(name string) string {
		if _, known := catalog.Lookup(name); !known && !s.knownTools()[name] {
			return ""
		}
		if slices.Contains(offered, name) || (name == catalog.SkillName && a.Spec.Learning) {
			return ""
		}
		list := strings.Join(offered, ", ")
		if list == "" {
			list = "none"
		}
		return fmt.Sprintf("tool %q is not one this agent's runs are offered (theirs: %s): add it to spec.tools, or give the agent a computer that brings it", name, list)
	}
}

// patchesWorkflowOnly reports a merge patch that sets spec.workflow and not spec.workflowChildren.
func patchesWorkflowOnly(body []byte) bool {
	var p struct {
		Spec map[string]json.RawMessage `json:"spec"`
	}
	if json.Unmarshal(body, &p) != nil {
		return false
	}
	_, wf := p.Spec["workflow"]
	_, pins := p.Spec["workflowChildren"]
	return wf && !pins
}
