package model

import "agentrun.dev/agentrun/internal/cost"

// Choice is which model an agent's runs use on the server's access.
type Choice struct {
	// Routed: no model named, on a provider that serves Claude; each turn's model is chosen by the
	// router within Families.
	Routed   bool
	Provider string
	// Model is the model when not routed.
	Model    string
	Families []string
}

// Choose says which model an agent's runs use on the server's access, from the agent's
// spec.model provider, name and families (none: every family). The run loop and the server's
// checks at run creation both ask it, so they agree. A BYOK agent's model is its own name and
// is not chosen here.
func (c *Config) Choose(provider, name string, families []string) (Choice, error) {
	p := provider
	if p == "" {
		p = c.Default()
	}
	if name == "" && (p == "anthropic" || p == "openrouter") {
		if len(families) == 0 {
			families = cost.Families
		}
		return Choice{Routed: true, Provider: p, Families: families}, nil
	}
	_, m, err := c.Resolve(provider, name)
	if err != nil {
		return Choice{}, err
	}
	return Choice{Provider: p, Model: m}, nil
}
