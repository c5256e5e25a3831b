// Package selfskill owns the skill that teaches a coding agent (Claude Code, Codex) agentrun's
// CLI: one SKILL.md, which `agentrun skill install --claude|--codex` writes where that agent
// finds its skills and the server serves at /SKILL.md, so both give the same text.
package selfskill

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
)

// Text is the skill's SKILL.md.
//
//go:embed SKILL.md
var Text string

// Name is the skill's name (its folder).
const Name = "agentrun"

// Dir is where a coding agent finds a user's skill NAME: Claude Code's ~/.claude/skills,
// Codex's $CODEX_HOME/skills (default ~/.codex/skills).
func Dir(agent string) (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the home folder: %w", err)
	}
	switch agent {
	case "claude":
		return filepath.Join(home, ".claude", "skills", Name), nil
	case "codex":
		base := os.Getenv("CODEX_HOME")
		if base == "" {
			base = filepath.Join(home, ".codex")
		}
		return filepath.Join(base, "skills", Name), nil
	}
	return "", fmt.Errorf("unknown coding agent %q: claude or codex", agent)
}

// Install writes SKILL.md for agent and returns its path.
func Install(agent string) (string, error) {
	dir, err := Dir(agent)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("make %s: %w", dir, err)
	}
	p := filepath.Join(dir, "SKILL.md")
	if err := os.WriteFile(p, []byte(Text), 0o644); err != nil {
		return "", fmt.Errorf("write %s: %w", p, err)
	}
	return p, nil
}
