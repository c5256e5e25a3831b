package policy

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDecideOnStrictInput: a call is decided on its input as the tool decodes it, so a key in
// another case or given twice cannot hide the command that would run.
func TestDecideOnStrictInput(t *testing.T) {
	t.Parallel()
	deny := []string{"bash(curl *)"}
	for _, raw := range []string{
		`{"Command": "curl --version"}`,
		`{"command": "ls", "Command": "touch x; curl --version"}`,
		`{"command": "ls", "command": "curl --version"}`,
		`{"command": "ls", "COMMAND": "curl --version"}`,
	} {
		d := Decide(Spec{NeverAsk: true}, deny, "bash", json.RawMessage(raw))
		if d.Action != Deny || !strings.HasPrefix(d.Rule, "invalid input: ") || !strings.Contains(d.Explain(), "ommand") {
			t.Errorf("%s: %+v (%s)", raw, d, d.Explain())
		}
	}
	// The same through a tool the catalog does not have.
	if d := Decide(Spec{}, []string{"web_fetch(https://evil.example/*)"}, "web_fetch", json.RawMessage(`{"url": "https://ok.example/", "URL": "https://evil.example/x"}`)); d.Action != Deny {
		t.Errorf("generic case variant: %+v", d)
	}
	if d := Decide(Spec{}, deny, "bash", json.RawMessage(`{"command": "ls"}`)); d.Action != Allow {
		t.Errorf("plain ls: %+v", d)
	}
}
