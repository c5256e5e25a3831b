package api

// TemplateApply is the body of POST /v2/templates/apply: a template as the CLI parsed it
// (internal/template), made in one step. The server validates every part before it stores any,
// and removes what it made when a later part fails: an agent and its triggers are made together
// or not at all.
type TemplateApply struct {
	// Template is the template's name (labelled on the agent as agentrun.dev/template).
	Template string `json:"template"`
	Agent    Agent  `json:"agent"`
	// Skills are stored (as their next version) before the agent, which names them.
	Skills []Skill `json:"skills,omitempty"`
	// Triggers start runs of Agent; one whose signing secret is not stored yet is made suspended.
	Triggers []Trigger `json:"triggers,omitempty"`
}

// TemplateApplied is the answer of POST /v2/templates/apply: what was made.
type TemplateApplied struct {
	Agent    *Agent            `json:"agent"`
	Skills   []string          `json:"skills,omitempty"`
	Triggers []TemplateTrigger `json:"triggers,omitempty"`
}

// TemplateTrigger is one trigger a template's apply made: Suspended with SuspendedFor (the secret
// it waits on) when its signing secret is not stored yet.
type TemplateTrigger struct {
	Name         string `json:"name"`
	Kind         string `json:"kind"`
	Suspended    bool   `json:"suspended,omitempty"`
	SuspendedFor string `json:"suspendedFor,omitempty"`
	WebhookURL   string `json:"webhookURL,omitempty"`
}
