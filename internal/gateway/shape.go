package gateway

import "encoding/json"

// MaxTokensField is the output-limit field of a request body of wire: Chat Completions takes
// either name, and the one the body has is kept.
func MaxTokensField(wire Wire, body map[string]json.RawMessage) string {
	switch wire {
	case WireResponses:
		return "max_output_tokens"
	case WireChat:
		if _, ok := body["max_completion_tokens"]; ok {
			return "max_completion_tokens"
		}
		if _, ok := body["max_tokens"]; ok {
			return "max_tokens"
		}
		return "max_completion_tokens"
	}
	return "max_tokens"
}

// LimitCall puts model and the output limit maxTokens into a harness's request body of wire (an
// output limit above maxTokens, or none, becomes maxTokens), and has a Chat Completions stream
// report its usage, and returns the limit the body asked for (0: none).
func LimitCall(wire Wire, body map[string]json.RawMessage, model string, maxTokens int) (asked int) {
	field := MaxTokensField(wire, body)
	if err := json.Unmarshal(body[field], &asked); err != nil {
		asked = 0 // no limit asked, or not a number: the agent's limit is put in
	}
	if asked <= 0 || asked > maxTokens {
		body[field], _ = json.Marshal(maxTokens)
	}
	body["model"], _ = json.Marshal(model)
	// A Chat Completions stream reports its usage only when asked: without it the call could not
	// be priced.
	var stream bool
	if wire == WireChat && json.Unmarshal(body["stream"], &stream) == nil && stream {
		opts := map[string]json.RawMessage{}
		json.Unmarshal(body["stream_options"], &opts)
		opts["include_usage"] = json.RawMessage("true")
		body["stream_options"], _ = json.Marshal(opts)
	}
	return asked
}
