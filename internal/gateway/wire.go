package gateway

// Wire is the wire format of a harness's model calls: which vendor API it speaks, and so which
// gateway endpoint it calls (Handler), how the answer is read (Summarize), where its output limit
// goes (LimitCall) and what it may not ask the vendor to do (vendorSide). The harness drivers
// configure their CLI for one (harness.Driver.Wires).
type Wire string

const (
	// WireAnthropic is the Messages API: POST {BaseURL}/v1/messages (+ /count_tokens).
	WireAnthropic Wire = "anthropic"
	// WireResponses is the OpenAI Responses API: POST {BaseURL}/responses.
	WireResponses Wire = "openai-responses"
	// WireChat is OpenAI Chat Completions: POST {BaseURL}/chat/completions.
	WireChat Wire = "openai-chat"
)

// APIPath is the path on the gateway of w's endpoints: a Call's Path is under it.
func (w Wire) APIPath() string {
	if w == WireAnthropic {
		return "/v2/gateway/anthropic/v1"
	}
	return "/v2/gateway/openai/v1"
}

// BaseURL is the base URL a harness speaking w is given on the gateway at url: Anthropic's SDKs
// add the /v1 themselves, OpenAI's take it in the base.
func (w Wire) BaseURL(url string) string {
	if w == WireAnthropic {
		return url + "/v2/gateway/anthropic"
	}
	return url + w.APIPath()
}

// Title names w as people know the API ("OpenAI Responses").
func (w Wire) Title() string {
	switch w {
	case WireAnthropic:
		return "Anthropic Messages"
	case WireChat:
		return "OpenAI Chat Completions"
	case WireResponses:
		return "OpenAI Responses"
	}
	return ""
}
