package server

import (
	"context"
	"fmt"

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
		c = &api.ComputerSpec{Kind: string(computer.KindNone)}
		if p, err := s.Computers.Resolve(ctx, computer.KindSandbox, "", providers.SandboxPreference...); err == nil {
			c = &api.ComputerSpec{Kind: string(computer.KindSandbox), Provider: p.Name()}
		}
		a.Spec.Computer = c
	}
	if c.Kind != string(computer.KindNone) {
		p, err := s.Computers.Resolve(ctx, computer.Kind(c.Kind), c.Provider, providers.Preference(computer.Kind(c.Kind))...)
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
	for i, t := range a.Spec.Tools {
		if s.Tools[t] {
			continue
		}
		td, ok := computer.LookupTool(t)
		if !ok {
			return api.Invalid(fmt.Sprintf("spec.tools[%d]", i), "tool %q is not available on this server", t)
		}
		if !computer.Has(computer.Kind(c.Kind), td) {
			return api.Invalid(fmt.Sprintf("spec.tools[%d]", i), "tool %q needs a computer of kind %s; this agent's computer is %s (the tools of its kind come with it)", t, td.Kind, c.Kind)
		}
	}
	return nil
}
