package agent

import (
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/gateway"
	"agentrun.dev/agentrun/internal/harness"
)

// Each harness speaks the wire its run's provider serves (forwarded as it is), codex on
// Anthropic the Responses API the gateway translates, and Claude Code on OpenAI nothing: a
// HarnessUnavailable failure that names the providers that would run it.
func TestHarnessWire(t *testing.T) {
	want := map[string]map[string]gateway.Wire{
		"claude-agent": {"anthropic": gateway.WireAnthropic, "openrouter": gateway.WireAnthropic, "openai": ""},
		"codex":        {"anthropic": gateway.WireResponses, "openrouter": gateway.WireResponses, "openai": gateway.WireResponses},
		"pi":           {"anthropic": gateway.WireAnthropic, "openrouter": gateway.WireChat, "openai": gateway.WireChat},
		"opencode":     {"anthropic": gateway.WireAnthropic, "openrouter": gateway.WireChat, "openai": gateway.WireChat},
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
