package api

import (
	"encoding/json"
	"strings"
)

// SeedAgentBody is the AgentRun seed's shape for "agents create":
// {"definition": {"id", "version", "name", "instructions", "skills", "tools"}}.
type SeedAgentBody struct {
	Definition SeedDefinition `json:"definition"`
}

// SeedDefinition is the seed's agent definition.
type SeedDefinition struct {
	ID               string        `json:"id"`
	Version          int           `json:"version,omitempty"`
	Name             string        `json:"name,omitempty"`
	Instructions     string        `json:"instructions,omitempty"`
	Skills           []string      `json:"skills,omitempty"`
	Tools            []string      `json:"tools,omitempty"`
	Harness          Harness       `json:"harness,omitempty"`
	Computer         *ComputerSpec `json:"computer,omitempty"`
	Model            *ModelSpec    `json:"model,omitempty"`
	MaxTokens        int           `json:"maxTokens,omitempty"`
	MaxToolCalls     int           `json:"maxToolCalls,omitempty"`
	PerRunMaxCostUSD string        `json:"perRunMaxCostUSD,omitempty"`
	Learning         bool          `json:"learning,omitempty"`
}

// Agent maps the seed's definition onto an Agent resource.
func (d SeedDefinition) Agent() *Agent {
	a := &Agent{TypeMeta: TypeMeta{APIVersion: APIVersion, Kind: "Agent"}}
	a.Metadata.Name = d.ID
	a.Spec = AgentSpec{DisplayName: d.Name, System: d.Instructions, Skills: d.Skills, Tools: d.Tools,
		Harness: d.Harness, Computer: d.Computer, MaxTokens: d.MaxTokens, MaxToolCalls: d.MaxToolCalls, PerRunMaxCostUSD: d.PerRunMaxCostUSD,
		Learning: d.Learning}
	if d.Model != nil {
		a.Spec.Model = *d.Model
	}
	return a
}

// SeedRunBody is the AgentRun seed's shape for "runs start": {"input": {"content": "..."}}, with the
// optional fields the CLI adds.
type SeedRunBody struct {
	Agent      string    `json:"agent,omitempty"`
	Name       string    `json:"name,omitempty"`
	Input      SeedInput `json:"input"`
	MaxCostUSD string    `json:"max_cost_usd,omitempty"`
	KeepAlive  bool      `json:"keep_alive,omitempty"`
	Deadline   string    `json:"deadline,omitempty"`
}

// SeedInput accepts {"content": "..."} or a bare string.
type SeedInput struct {
	Content string `json:"content"`
}

// UnmarshalJSON accepts a string or {"content": string}.
func (in *SeedInput) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		in.Content = s
		return nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&obj); err != nil || obj.Content == nil {
		return E(CodeInvalid, "input", "input must be a string or {\"content\": string}")
	}
	in.Content = *obj.Content
	return nil
}

// Run maps the seed body onto an AgentRun for agent.
func (b SeedRunBody) Run(agent string) *AgentRun {
	r := &AgentRun{TypeMeta: TypeMeta{APIVersion: APIVersion, Kind: "AgentRun"}}
	r.Metadata.Name = b.Name
	r.Spec = AgentRunSpec{Agent: agent, Input: b.Input.Content, MaxCostUSD: b.MaxCostUSD, KeepAlive: b.KeepAlive, Deadline: b.Deadline}
	return r
}
