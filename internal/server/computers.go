package server

import (
	"context"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/computer/providers"
)

// resolveComputer settles an agent's computer against what this server has: no setting gets the
// best sandbox available (none when there is none), a named kind or provider must be available
// here, and a computer tool the agent lists must belong to its computer's kind. The tools of the
// kind, and with a sandbox or a desktop the file tools (read, write, edit, ls, grep), come with
// the computer whether the agent lists them or not (catalog.Offered); listing them is allowed.
func (s *Server) resolveComputer(ctx context.Context, a *api.Agent) error {
	if s.Computers == nil {
		return nil
	}
	c := a.Spec.Computer
	if c == nil {
		c = &api.ComputerSpec{Kind: computer.KindNone}
		if p, err := s.Computers.Resolve(ctx, computer.KindSandbox, "", providers.SandboxPreference...); err == nil {
			c = &api.ComputerSpec{Kind: computer.KindSandbox, Provider: p.Name()}
		}
		a.Spec.Computer = c
	}
	if c.Kind != computer.KindNone {
		p, err := s.Computers.Resolve(ctx, c.Kind, c.Provider, providers.Preference(c.Kind)...)
		if err != nil {
			field := "spec.computer.kind"
			if c.Provider != "" {
				field = "spec.computer.provider"
			}
			return api.Invalid(field, "computer %s is not available on this server: %v", c.Kind, err)
		}
		c.Provider = p.Name()
	} else if c.Provider != "" {
		return api.Invalid("spec.computer.provider", "computer kind none takes no provider")
	}
	var errs api.ErrorList
	for i, t := range a.Spec.Tools {
		if s.Tools[t] {
			continue
		}
		at := api.NewPath("spec", "tools").Index(i).String()
		td, ok := computer.LookupTool(t)
		if !ok {
			errs.Add(api.Invalid(at, "tool %q is not available on this server", t))
		} else if !computer.Has(c.Kind, td) {
			errs.Add(api.Invalid(at, "tool %q needs a computer of kind %s; this agent's computer is %s (the tools of its kind come with it)", t, td.Kind, c.Kind))
		}
	}
	return errs.Err()
}
