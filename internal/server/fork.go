package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/store"
)

func (s *Server) forkRoutes(v2 *http.ServeMux) {
	v2.HandleFunc("POST /v2/agentruns/{name}/fork", s.forkRun)
}

// forkRun is POST /v2/agentruns/NAME/fork: a new run of the source's agent revision that holds
// the source's completed steps up to and including atStep and its folder as that step left it,
// and goes on live (store.Forks). The source is not changed.
func (s *Server) forkRun(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, err)
		return
	}
	var req api.ForkRequest
	if err := api.DecodeStrict(body, &req); err != nil {
		writeErr(w, err)
		return
	}
	if err := req.Validate(); err != nil {
		writeErr(w, err)
		return
	}
	fork, err := s.fork(r.Context(), r.PathValue("name"), &req)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, fork)
}

// fork makes the fork of run the request asks for (req validated).
func (s *Server) fork(ctx context.Context, run string, req *api.ForkRequest) (*api.AgentRun, error) {
	src, err := s.Store.GetRun(ctx, run)
	if err != nil {
		return nil, err
	}
	fork, err := s.forkOf(ctx, src, req)
	if err != nil {
		return nil, err
	}
	f := store.Fork{Run: fork, Source: src.Metadata.Name, AtStep: req.AtStep, Message: req.Message}
	err = s.Store.ForkRun(ctx, f, forkEvents(fork, &f)...)
	for tries := 0; req.Name == "" && errors.Is(err, store.ErrAlreadyExists) && tries < 3; tries++ {
		fork.Metadata.Name = generateName(src.Spec.Agent)
		fork.Status.ConsoleURL = s.consoleURL(fork.Metadata.Name)
		err = s.Store.ForkRun(ctx, f, forkEvents(fork, &f)...)
	}
	if err != nil {
		return nil, err
	}
	return fork, nil
}

// consoleFork is the run page's "Fork from here": the fork's name.
func (s *Server) consoleFork(ctx context.Context, run, atStep string) (string, error) {
	req := api.ForkRequest{AtStep: atStep}
	if err := req.Validate(); err != nil {
		return "", err
	}
	f, err := s.fork(ctx, run, &req)
	if err != nil {
		if e, ok := api.AsError(err); ok {
			return "", e
		}
		return "", storeErr(err)
	}
	return f.Metadata.Name, nil
}

// forkOf is the fork of src as the request asks: the source's spec (out of any group: a fork is
// a run of its own), pinned to the source's agent revision, with its own cap and a deadline
// resolved from now.
func (s *Server) forkOf(ctx context.Context, src *api.AgentRun, req *api.ForkRequest) (*api.AgentRun, error) {
	name := req.Name
	if name == "" {
		name = generateName(src.Spec.Agent)
	} else if err := api.ValidName("name", name); err != nil {
		return nil, err
	}
	spec := src.Spec
	spec.Group, spec.TaskKey, spec.DependsOn = "", "", nil
	if req.MaxCostUSD != "" {
		if _, err := cost.ParseUSDStrict(req.MaxCostUSD); err != nil {
			return nil, api.Invalid("maxCostUSD", "%v", err)
		}
		spec.MaxCostUSD = req.MaxCostUSD
	}
	fork := &api.AgentRun{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "AgentRun"},
		Metadata: api.ObjectMeta{Name: name, Labels: src.Metadata.Labels}, Spec: spec}
	now := s.Now()
	if err := api.DefaultAndValidateRun(fork, now); err != nil {
		return nil, err
	}
	ag, err := s.Store.GetAgentRevision(ctx, src.Spec.Agent, src.Status.AgentRevision)
	if err != nil {
		return nil, fmt.Errorf("load agent %s revision %d: %w", src.Spec.Agent, src.Status.AgentRevision, err)
	}
	if req.Message != "" && len(ag.Workflow) > 0 {
		// A workflow reads no user message between its nodes: refused rather than kept unread.
		return nil, api.Invalid("message", "run %s is a workflow run: a fork of it takes no message (its nodes after %s run as the workflow says)", src.Metadata.Name, req.AtStep)
	}
	limit, _ := cost.ParseUSD(spec.MaxCostUSD)
	st := api.AgentRunStatus{Phase: api.PhaseQueued, AgentRevision: src.Status.AgentRevision, ConsoleURL: s.consoleURL(name),
		Cost: &api.RunCost{TotalUSD: cost.Micros(0).String(), LimitUSD: limit.String(), Billing: "credits"}}
	if ag.Model.Access == api.AccessBYOK {
		st.Cost.LimitUSD, st.Cost.Billing = "", "none"
	}
	if spec.Deadline != "" {
		d, _ := api.ResolveDeadline(spec.Deadline, now)
		d = d.UTC()
		st.Deadline = &d
	}
	fork.Status = st
	return fork, nil
}

// forkEvents are a fork's first events: run.created, then run.forked naming the source and step.
func forkEvents(fork *api.AgentRun, f *store.Fork) []api.Event {
	forked := api.Event{Type: api.EventRunForked, StepKey: f.AtStep,
		Message: fmt.Sprintf("forked from run %s at step %s: its completed steps up to there are copied (not billed again) and its folder is as that step left it", f.Source, f.AtStep),
		Data:    json.RawMessage(store.MustJSON(map[string]string{"source": f.Source, "atStep": f.AtStep}))}
	return []api.Event{createdEvent(fork), forked}
}
