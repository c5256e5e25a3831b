package gateway

import (
	"encoding/json"
	"strings"
	"testing"
)

// A harness names its skill folder under its home (Claude Code's "Base directory for this
// skill", OpenCode's and pi's locations): two runners' data folders give the same request.
func TestNormalizeHarnessHome(t *testing.T) {
	t.Parallel()
	body := func(home string) map[string]json.RawMessage {
		b, _ := json.Marshal("Base directory for this skill: " + home + "/.claude/skills/release-notes")
		return map[string]json.RawMessage{"messages": b}
	}
	a := Normalize(body("/data-a/harness-home/r1"), "/data-a/runs/r1", "/data-a/harness-home/r1")
	b := Normalize(body("/data-b/harness-home/r1"), "/data-b/runs/r1", "/data-b/harness-home/r1")
	if string(a) != string(b) || !strings.Contains(string(a), "<harness home>/.claude/skills/release-notes") {
		t.Errorf("normalized: %s and %s", a, b)
	}
	if other := Normalize(body("/data-a/harness-home/r1"), "/data-a/runs/r1"); string(other) == string(a) {
		t.Error("without the home given, the path is kept")
	}
}
