package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// The console's New agent, Templates and Start a run forms go through the same code as the API's
// routes (consoleAgents, mcp.go): POST /v2/agents, POST /v2/templates/apply and POST
// /v2/agents/NAME/runs, so a form is refused exactly as the API would refuse its body.

// CreateAgent validates a and stores it as revision 1, as POST /v2/agents does.
func (c consoleAgents) CreateAgent(ctx context.Context, a *api.Agent) (*api.Agent, error) {
	s := c.s
	if err := s.validateAgent(ctx, a); err != nil {
		return nil, err
	}
	_, gerr := s.Store.GetAgent(ctx, a.Metadata.Name)
	if err := mustNotExist(gerr, "agent", a.Metadata.Name); err != nil {
		return nil, err
	}
	if err := s.Store.CreateAgent(ctx, a); err != nil {
		return nil, storeErr(err)
	}
	return withTools(a), nil
}

// ApplyTemplate makes req as POST /v2/templates/apply does. secrets (name → key → value) are
// the trigger signing secrets the person pasted: each one not stored yet is sealed first, so the
// triggers start unsuspended, and removed again when the apply is refused (all or nothing).
func (c consoleAgents) ApplyTemplate(ctx context.Context, req *api.TemplateApply, secrets map[string]map[string]string) (*api.TemplateApplied, error) {
	s := c.s
	var made []string
	undo := func() {
		uctx := context.WithoutCancel(ctx)
		for _, n := range made {
			if err := s.Store.DeleteSecret(uctx, n); err != nil {
				s.Log.Error("console template apply: undo", "secret", n, "err", err)
			}
		}
	}
	for name, data := range secrets {
		if _, err := s.Store.GetSecret(ctx, name); err == nil {
			continue // stored already: the trigger uses it, and a paste never overwrites it here
		} else if !errors.Is(err, store.ErrNotFound) {
			undo()
			return nil, err
		}
		if s.Seal == nil {
			undo()
			return nil, api.E(api.CodeInternal, "", "this server has no seal key, so it cannot keep secret %s", name)
		}
		sealed, keys, err := s.Seal.SealMap(name, data)
		if err != nil {
			undo()
			return nil, fmt.Errorf("seal secret %s: %w", name, err)
		}
		if err := s.Store.PutSecret(ctx, name, sealed, keys); err != nil {
			undo()
			return nil, fmt.Errorf("store secret %s: %w", name, err)
		}
		made = append(made, name)
	}
	out, err := s.makeTemplate(ctx, req)
	if err != nil {
		undo()
		return nil, err
	}
	return out, nil
}

// StartRun starts a run of agent on input, as POST /v2/agents/NAME/runs with {"input":
// {"content": input}} does (the run's name generated from the agent's).
func (c consoleAgents) StartRun(ctx context.Context, agent, input string) (*api.AgentRun, error) {
	s := c.s
	seed := api.SeedRunBody{Input: api.SeedInput{Content: input}}
	run := seed.Run(agent)
	run.Metadata.Name = generateName(agent)
	// storeRun reads only the request's context.
	r := (&http.Request{Header: http.Header{}}).WithContext(ctx)
	if err := s.storeRun(r, run, agent); err != nil {
		if _, ok := api.AsError(err); !ok {
			return nil, storeErr(err) // the store's, named as the API names it
		}
		return nil, err
	}
	return run, nil
}

// ListableTools are the tool names an agent of this server may list in spec.tools besides the
// catalog's (the dev tools, when on).
func (c consoleAgents) ListableTools() map[string]bool { return c.s.knownTools() }
