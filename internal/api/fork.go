package api

import "strings"

// ForkRequest is the body of POST /v2/agentruns/NAME/fork: a new run of the same agent revision
// that holds the run's completed steps up to and including AtStep and its folder as that step
// left it, and goes on live from there.
type ForkRequest struct {
	// AtStep is a step key as the run's steps show it (t1/tool/0, a workflow node's key).
	AtStep string `json:"atStep"`
	// Name is the new run's name (default: one made from the agent's name).
	Name string `json:"name,omitempty"`
	// Message, when set, is a user message the fork takes at the fork point, before its next
	// model call.
	Message string `json:"message,omitempty"`
	// MaxCostUSD is the fork's own cap (default: the run's). Copied steps cost it nothing.
	MaxCostUSD string `json:"maxCostUSD,omitempty"`
}

// Validate checks the request's own fields (what the run holds is the store's to check).
func (f *ForkRequest) Validate() error {
	if strings.TrimSpace(f.AtStep) == "" {
		return E(CodeRequired, "atStep", "atStep is required: a step key as `runs steps` shows it")
	}
	if len(f.AtStep) > 1024 {
		return Invalid("atStep", "atStep is longer than 1024 characters")
	}
	if len(f.Message) > MaxInputBytes {
		return Errorf(statusTooLarge, CodeTooLarge, "message", "message is %d bytes; the limit is %d (256 KiB)", len(f.Message), MaxInputBytes)
	}
	return nil
}
