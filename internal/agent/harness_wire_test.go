package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/harness"
)

// Each harness speaks the wire its run's provider serves (forwarded as it is), codex on
// Anthropic the Responses API the gateway translates, and Claude Code on OpenAI nothing: a
// HarnessUnavailable failure that names the providers that would run it.
func TestHarnessWire(t *testing.T) {
	want := map[string]map[string]harness.Wire{
		"claude-agent": {"anthropic": harness.WireAnthropic, "openrouter": harness.WireAnthropic, "openai": ""},
		"codex":        {"anthropic": harness.WireResponses, "openrouter": harness.WireResponses, "openai": harness.WireResponses},
		"pi":           {"anthropic": harness.WireAnthropic, "openrouter": harness.WireChat, "openai": harness.WireChat},
		"opencode":     {"anthropic": harness.WireAnthropic, "openrouter": harness.WireChat, "openai": harness.WireChat},
	}
	for name, byProvider := range want {
		drv, ok := harness.Lookup(name)
		if !ok {
			t.Fatalf("no driver %s", name)
		}
		for provider, w := range byProvider {
			got, err := harnessWire(drv, provider)
			if w == "" {
				f, ok := err.(*failure)
				if !ok || !strings.Contains(f.msg, "provider openai does not serve") || !strings.Contains(f.msg, "anthropic or openrouter") {
					t.Errorf("%s on %s: %q, %v; want a failure naming anthropic or openrouter", name, provider, got, err)
				}
				continue
			}
			if err != nil || got != w {
				t.Errorf("%s on %s: %q, %v; want %q", name, provider, got, err, w)
			}
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
		limitCall("openai-chat", b, "gpt-4.1", 100)
		if string(b["stream_options"]) != want {
			t.Errorf("%s: stream_options %s, want %s", body, b["stream_options"], want)
		}
	}
}
