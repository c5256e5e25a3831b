package harness

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// pi's answer is the last assistant message's text; a turn that ended in error is an error with
// pi's message, and a turn with no assistant message is one too.
func TestPiAnswer(t *testing.T) {
	var ev piLine
	line := `{"type":"agent_end","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]},
		{"role":"assistant","content":[{"type":"text","text":"calling"},{"type":"toolCall","name":"write"}],"stopReason":"toolUse"},
		{"role":"toolResult","content":[{"type":"text","text":"ok"}]},
		{"role":"assistant","content":[{"type":"text","text":"done"},{"type":"text","text":"really"}],"stopReason":"stop"}]}`
	if err := json.Unmarshal([]byte(line), &ev); err != nil {
		t.Fatal(err)
	}
	if got, err := piAnswer(ev.Messages); err != nil || got != "done\nreally" {
		t.Errorf("answer = %q, %v", got, err)
	}
	failed := []piMessage{{Role: "assistant", StopReason: "error", ErrorMessage: "529 overloaded"}}
	var ee *ExitError
	if _, err := piAnswer(failed); !errors.As(err, &ee) || !strings.Contains(err.Error(), "529 overloaded") {
		t.Errorf("an errored turn gave %v", err)
	}
	if _, err := piAnswer(nil); err == nil {
		t.Errorf("a turn without an answer gave no error")
	}
}

// An OpenCode error event says its data.message, else its name, else the raw event.
func TestOpenCodeError(t *testing.T) {
	for raw, want := range map[string]string{
		`{"name":"APIError","data":{"message":"Cannot connect to API"}}`: "Cannot connect to API",
		`{"name":"ProviderAuthError"}`:                                   "ProviderAuthError",
		`"boom"`:                                                         `"boom"`,
	} {
		if got := opencodeError(json.RawMessage(raw)); got != want {
			t.Errorf("opencodeError(%s) = %q, want %q", raw, got, want)
		}
	}
}

// OpenCode is never installed on first use: Install refuses with the exact line, capabilities
// list it unavailable with it, and serve's notes carry it; pi installs on first use.
func TestOpenCodeManualInstall(t *testing.T) {
	t.Setenv(CacheEnv, t.TempDir())
	data := t.TempDir()
	d, _ := Lookup("opencode")
	line := "npm install --no-audit --no-fund --save-exact --prefix " + filepath.Join(data, "harnesses", "opencode@"+OpenCodeVersion) + " opencode-ai@" + OpenCodeVersion
	if got := d.Package().InstallLine(data, "opencode"); got != line {
		t.Errorf("install line = %q, want %q", got, line)
	}
	_, err := Install(t.Context(), data, d.Package(), func(string) { t.Errorf("Install reported progress: it must not install") })
	if err == nil || !strings.Contains(err.Error(), line) {
		t.Errorf("Install = %v, want the install line", err)
	}
	found := false
	for _, in := range Capabilities(data) {
		switch in.Name {
		case "opencode":
			found = true
			if in.Available || !strings.Contains(in.Why, line) {
				t.Errorf("capabilities: %+v", in)
			}
		case "pi":
			if strings.Contains(in.Why, "not installed on first use") {
				t.Errorf("pi is said to need a manual install: %+v", in)
			}
		}
	}
	if !found {
		t.Errorf("capabilities do not list opencode")
	}
	if notes := Notes(data); len(notes) != 1 || !strings.Contains(notes[0], line) {
		t.Errorf("notes = %q", notes)
	}
}
