package selfskill

import (
	"os"
	"path/filepath"
	"testing"

	"agentrun.dev/agentrun/internal/api"
)

// The text is a valid skill (front matter named agentrun), and Install writes it where each
// coding agent reads a user's skills.
func TestSkillAndInstall(t *testing.T) {
	sk := api.Skill{Spec: api.SkillSpec{Files: []api.SkillFile{{Path: api.SkillFileName, Content: Text}}}}
	if err := api.DefaultAndValidateSkill(&sk); err != nil || sk.Metadata.Name != Name {
		t.Fatalf("SKILL.md as a skill: %v (name %q)", err, sk.Metadata.Name)
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CODEX_HOME", "")
	for agent, want := range map[string]string{"claude": ".claude/skills/agentrun/SKILL.md", "codex": ".codex/skills/agentrun/SKILL.md"} {
		p, err := Install(agent)
		if err != nil || p != filepath.Join(home, want) {
			t.Fatalf("%s: %s %v", agent, p, err)
		}
		if b, _ := os.ReadFile(p); string(b) != Text {
			t.Errorf("%s: wrote %d bytes, not the skill", agent, len(b))
		}
	}
	t.Setenv("CODEX_HOME", filepath.Join(home, "cx"))
	if p, _ := Install("codex"); p != filepath.Join(home, "cx", "skills", "agentrun", "SKILL.md") {
		t.Errorf("CODEX_HOME ignored: %s", p)
	}
}
