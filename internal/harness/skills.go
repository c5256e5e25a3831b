package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Skill is one of the run's skills (the agent's, pinned, and those it learned) as the files of
// its folder, SKILL.md among them: what a driver writes into its harness's own skill folder.
type Skill struct {
	Name  string
	Files []SkillFile
}

// SkillFile is one file of a skill, its path relative to the skill's folder.
type SkillFile struct {
	Path    string
	Content []byte
}

// WriteSkills makes dir hold exactly skills, each in dir/NAME/ (what an earlier start wrote there
// is removed first, but not dir itself: a computer may show that folder read-only, and a mount
// shows the folder it was made on), so the harness's own skill loader finds them where its
// documentation says.
// Names and paths were checked when the skill was stored; one that would leave its folder is
// refused here too.
func WriteSkills(dir string, skills []Skill) error {
	old, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("skill folder %s: %w", dir, err)
	}
	for _, e := range old {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("skill folder %s: %w", dir, err)
		}
	}
	if len(skills) == 0 {
		return nil
	}
	for _, s := range skills {
		if s.Name == "" || strings.ContainsAny(s.Name, `/\`) || s.Name == "." || s.Name == ".." {
			return fmt.Errorf("skill %q: not a folder name", s.Name)
		}
		root := filepath.Join(dir, s.Name)
		for _, f := range s.Files {
			clean, ok := inside(f.Path)
			if !ok {
				return fmt.Errorf("skill %s: file %q is not inside its folder", s.Name, f.Path)
			}
			p := filepath.Join(root, clean)
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				return fmt.Errorf("skill %s: %w", s.Name, err)
			}
			fd, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return fmt.Errorf("skill %s: %w", s.Name, err)
			}
			_, err = fd.Write(f.Content)
			if cerr := fd.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("skill %s: write %s: %w", s.Name, f.Path, err)
			}
		}
	}
	return nil
}

// onPath reports whether an executable named name is in one of the folders of env's PATH.
func onPath(env []string, name string) bool {
	for _, kv := range env {
		dirs, ok := strings.CutPrefix(kv, "PATH=")
		if !ok {
			continue
		}
		for _, d := range filepath.SplitList(dirs) {
			if fi, err := os.Stat(filepath.Join(d, name)); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				return true
			}
		}
	}
	return false
}
