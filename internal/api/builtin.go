package api

// The ready-made agent a server makes (the Nodus seed's "To start from Nodus's ready-made
// assistant, name the template claude-assistant").
const (
	// BuiltinAssistant is the ready-made agent's name.
	BuiltinAssistant = "claude-assistant"
	// TemplateLabel marks an agent made from a template: TemplateBuiltin for the one the server
	// makes itself, the template's name for one `template apply` made.
	TemplateLabel   = "agentrun.dev/template"
	TemplateBuiltin = "builtin"
)

// BuiltinAssistantSystem is the ready-made assistant's system prompt.
const BuiltinAssistantSystem = `You are a helpful, careful general assistant. Do what the person asks as well as you can, and answer clearly and concisely.
When you have a computer, use it to check your work: run commands, read and write files in your working folder (/workspace), and look at the results before you rely on them.
Say what you did and what you found; when something could not be done or checked, say so plainly rather than guessing.
Ask the person a question only when you cannot go on without their decision or information that only they have.`

// BuiltinAssistantAgent is the ready-made assistant as the server creates it: model access
// Server, no computer setting (so it gets the server's best sandbox, like any agent without one),
// the default caps, and the template label.
func BuiltinAssistantAgent() *Agent {
	return &Agent{
		TypeMeta: TypeMeta{APIVersion: APIVersion, Kind: "Agent"},
		Metadata: ObjectMeta{Name: BuiltinAssistant, Labels: map[string]string{TemplateLabel: TemplateBuiltin}},
		Spec: AgentSpec{
			DisplayName: "Claude assistant",
			System:      BuiltinAssistantSystem,
			Model:       ModelSpec{Access: "Server"},
			// The file tools are listed so that the assistant keeps them on a server without a
			// sandbox; with one they come with it anyway.
			Tools: []string{"read", "write", "edit", "ls", "grep", "ask_person"},
		},
	}
}
