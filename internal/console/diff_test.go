package console

import (
	"strings"
	"testing"
)

func TestLineDiff(t *testing.T) {
	var a, b []string
	for i := 0; i < 20; i++ {
		a = append(a, "line "+string(rune('a'+i)))
	}
	b = append(b, a...)
	b[10] = "line changed"
	b = append(b, "line added")
	lines, added, removed := lineDiff(strings.Join(a, "\n")+"\n", strings.Join(b, "\n")+"\n")
	if added != 2 || removed != 1 {
		t.Fatalf("added %d, removed %d, want 2 and 1: %+v", added, removed, lines)
	}
	var ops strings.Builder
	for _, l := range lines {
		ops.WriteString(l.Op)
	}
	// 7 unchanged lines fold, 3 kept either side of the change, the added line at the end with
	// the 3 before it, the 3 between folded.
	if got, want := ops.String(), "…   -+   …   +"; got != want {
		t.Errorf("ops %q, want %q: %+v", got, want, lines)
	}
	if lines[0].Text != "7 unchanged lines" {
		t.Errorf("fold %q", lines[0].Text)
	}
	for _, l := range lines {
		switch {
		case l.Op == "-" && (l.Text != "line k" || l.Old != 11 || l.New != 0):
			t.Errorf("removed line %+v", l)
		case l.Op == "+" && l.Text == "line changed" && (l.New != 11 || l.Old != 0):
			t.Errorf("added line %+v", l)
		}
	}
	if lines, added, removed := lineDiff("same\n", "same\n"); added != 0 || removed != 0 || len(lines) != 1 || lines[0].Op != "…" {
		t.Errorf("no change: %+v", lines)
	}
}

func TestParseSpan(t *testing.T) {
	for _, ok := range []string{"1..2", "3..1", "2..2"} {
		if _, _, err := parseSpan(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "1", "1..", "..2", "0..1", "a..b", "1...2", "-1..2"} {
		if _, _, err := parseSpan(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

func TestFormFieldOf(t *testing.T) {
	for path, want := range map[string]string{
		"metadata.name": "name", "spec.system": "instructions", "spec.tools[2]": "tools", "spec.model.access": "access",
		"spec.model.apiKeySecret": "apiKeySecret", "spec.model.name": "model", "spec.computer.kind": "computer",
		"spec.approvals.rules[0].match": "approvals", "spec.approvals.default": "approvalDefault",
		"spec.perRunMaxCostUSD": "cap", "spec.mcpServers[0].name": "", "metadata.namespace": "", "spec.systemx": "",
	} {
		if got := formFieldOf(path); got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
}
