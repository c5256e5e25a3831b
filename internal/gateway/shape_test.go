package gateway

import (
	"encoding/json"
	"testing"
)

// A harness's call gets the turn's model and at most the agent's maxTokens, in each wire's field;
// a smaller limit it asked for stays.
func TestHarnessLimitCall(t *testing.T) {
	cases := []struct {
		wire        Wire
		body, field string
		asked, want int
	}{
		{"anthropic", `{"model":"claude-opus-5-5","max_tokens":64000}`, "max_tokens", 64000, 4096},
		{"anthropic", `{"model":"x","max_tokens":100}`, "max_tokens", 100, 100},
		{"anthropic", `{"model":"x"}`, "max_tokens", 0, 4096},
		{"openai-responses", `{"model":"gpt","max_output_tokens":128000}`, "max_output_tokens", 128000, 4096},
		{"openai-chat", `{"model":"gpt","max_tokens":9000}`, "max_tokens", 9000, 4096},
		{"openai-chat", `{"model":"gpt"}`, "max_completion_tokens", 0, 4096},
	}
	for _, c := range cases {
		var body map[string]json.RawMessage
		json.Unmarshal([]byte(c.body), &body)
		asked := LimitCall(c.wire, body, "claude-sonnet-4-5", 4096)
		var got int
		json.Unmarshal(body[c.field], &got)
		if asked != c.asked || got != c.want || string(body["model"]) != `"claude-sonnet-4-5"` {
			t.Errorf("%s %s: asked %d, %s=%d, model %s; want asked %d, %d", c.wire, c.body, asked, c.field, got, body["model"], c.asked, c.want)
		}
	}
}

// A streamed Chat Completions call always asks for its usage (else it could not be priced),
// keeping the stream options it had; a call that does not stream is left alone.
func TestHarnessLimitCallChatUsage(t *testing.T) {
	for body, want := range map[string]string{
		`{"stream":true}`: `{"include_usage":true}`,
		`{"stream":true,"stream_options":{"include_usage":false,"x":1}}`: `{"include_usage":true,"x":1}`,
		`{"stream":false}`: ``,
	} {
		var b map[string]json.RawMessage
		json.Unmarshal([]byte(body), &b)
		LimitCall(WireChat, b, "gpt-4.1", 100)
		if string(b["stream_options"]) != want {
			t.Errorf("%s: stream_options %s, want %s", body, b["stream_options"], want)
		}
	}
}
