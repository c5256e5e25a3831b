package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteSkills(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "skills")
	one := []Skill{{Name: "release-notes", Files: []SkillFile{{Path: "SKILL.md", Content: []byte("---\nname: release-notes\n---\nx")}, {Path: "ref/a.txt", Content: []byte("a")}}}}
	if err := WriteSkills(dir, one); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "release-notes", "ref", "a.txt")); err != nil || string(b) != "a" {
		t.Fatalf("ref/a.txt: %q %v", b, err)
	}
	// A later start holds exactly its own skills: what the earlier one wrote is gone.
	if err := WriteSkills(dir, []Skill{{Name: "other", Files: []SkillFile{{Path: "SKILL.md", Content: []byte("o")}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "release-notes")); !os.IsNotExist(err) {
		t.Errorf("the earlier start's skill is still there: %v", err)
	}
	for _, bad := range []Skill{
		{Name: "../up", Files: []SkillFile{{Path: "SKILL.md"}}},
		{Name: "ok", Files: []SkillFile{{Path: "../../escape.md"}}},
		{Name: "ok", Files: []SkillFile{{Path: "/etc/passwd"}}},
	} {
		if err := WriteSkills(dir, []Skill{bad}); err == nil || !strings.Contains(err.Error(), "skill") {
			t.Errorf("%+v: written (%v)", bad, err)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape.md")); !os.IsNotExist(err) {
		t.Error("a path that escapes its folder was written")
	}
}

func TestPiSkillsHideFromPromptList(t *testing.T) {
	t.Parallel()
	in := []Skill{{Name: "a", Files: []SkillFile{{Path: "SKILL.md", Content: []byte("---\nname: a\ndescription: d\n---\nbody")}, {Path: "x.md", Content: []byte("---\nkeep\n")}}}}
	out := piSkills(in)
	if got := string(out[0].Files[0].Content); got != "---\ndisable-model-invocation: true\nname: a\ndescription: d\n---\nbody" {
		t.Errorf("SKILL.md for pi: %q", got)
	}
	if string(out[0].Files[1].Content) != "---\nkeep\n" || string(in[0].Files[0].Content) != "---\nname: a\ndescription: d\n---\nbody" {
		t.Error("a file beside SKILL.md, or the caller's skill, was changed")
	}
}
