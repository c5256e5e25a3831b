package cli

import (
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/selfskill"
)

// Every command line in the coding agents' skill's code blocks names a command and flags this CLI has
// (serve and dev are cmd/agentrun's own, outside Commands).
func TestSelfSkillCommandsExist(t *testing.T) {
	root, _, _ := newRoot()
	n := 0
	inBlock := false
	for _, line := range strings.Split(selfskill.Text, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock {
			continue
		}
		if i := strings.Index(line, "#"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if !strings.HasPrefix(line, "agentrun ") {
			continue
		}
		words := strings.Fields(line)[1:]
		if words[0] == "serve" || words[0] == "dev" {
			continue
		}
		n++
		var path []string
		for _, w := range words {
			if strings.HasPrefix(w, "-") {
				break
			}
			path = append(path, w)
		}
		c, rest, err := root.Find(path)
		if err != nil || c == root {
			t.Errorf("%q: no such command (%v)", line, err)
			continue
		}
		if len(rest) > 0 && c.HasSubCommands() {
			t.Errorf("%q: %s has no subcommand %q", line, c.CommandPath(), rest[0])
		}
		for _, w := range words {
			if name, ok := strings.CutPrefix(w, "--"); ok {
				name, _, _ = strings.Cut(name, "=")
				if c.Flags().Lookup(name) == nil && c.InheritedFlags().Lookup(name) == nil {
					t.Errorf("%q: %s has no flag --%s", line, c.CommandPath(), name)
				}
			}
		}
	}
	if n < 10 {
		t.Fatalf("found %d command lines in the skill; the scan is broken", n)
	}
}
