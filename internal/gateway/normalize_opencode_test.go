package gateway

import (
	"encoding/json"
	"fmt"
	"testing"
)

// OpenCode's system prompt ends with "Today's date: Tue Dec 01 2026": a replay the next day is the
// same request, and a changed prompt is still a divergence.
func TestHarnessReplayNormalizeOpenCodeDate(t *testing.T) {
	body := func(sys string) map[string]json.RawMessage {
		b, _ := json.Marshal(map[string]any{"model": "m", "system": []map[string]string{{"type": "text", "text": sys}},
			"messages": []map[string]string{{"role": "user", "content": "hi"}}})
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	const env = "You are OpenCode.\n<env>\n  Working directory: /d/runs/r1\n  Today's date: %s\n</env>"
	day1 := Normalize(body(fmt.Sprintf(env, "Tue Dec 01 2026")), "/d/runs/r1")
	day2 := Normalize(body(fmt.Sprintf(env, "Wed Dec 02 2026")), "/d/runs/r1")
	if string(day1) != string(day2) {
		t.Errorf("the next day's replay diverges:\n%s\n%s", day1, day2)
	}
	other := Normalize(body(fmt.Sprintf("You are another agent.\n<env>\n  Today's date: %s\n</env>", "Wed Dec 02 2026")), "/d/runs/r1")
	if string(day1) == string(other) {
		t.Errorf("a changed system prompt is not a divergence")
	}
}
