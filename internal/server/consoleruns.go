package server

import (
	"context"
	"net/http"

	"agentrun.dev/agentrun/internal/api"
)

// consoleRuns gives the console's runs list the API's cancel and a re-run: a new run of the same
// agent with the same input, cap, keep-alive and deadline, made as POST /v2/agents/NAME/runs makes
// one (validated against the agent, its first event written with it).
type consoleRuns struct{ s *Server }

func (c consoleRuns) Cancel(ctx context.Context, run, user string) error {
	return c.s.cancel(ctx, run, "a user asked to cancel the run ("+user+", from the console)")
}

func (c consoleRuns) Rerun(ctx context.Context, run, user string) (*api.AgentRun, error) {
	old, err := c.s.Store.GetRun(ctx, run)
	if err != nil {
		return nil, err
	}
	nr := &api.AgentRun{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "AgentRun"},
		Metadata: api.ObjectMeta{Name: generateName(old.Spec.Agent)},
		Spec: api.AgentRunSpec{Agent: old.Spec.Agent, Input: old.Spec.Input, KeepAlive: old.Spec.KeepAlive,
			Deadline: old.Spec.Deadline, MaxCostUSD: old.Spec.MaxCostUSD}}
	r := (&http.Request{Header: http.Header{}}).WithContext(ctx)
	if err := c.s.storeRun(r, nr, old.Spec.Agent); err != nil {
		return nil, err
	}
	return nr, nil
}
