package harness

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"agentrun.dev/agentrun/internal/computer"
)

// GuardMounts makes each path (keeping what is there), shows each folder between the home and it
// as a writable mount of its own before the read-only mount of the path, and refuses a path that
// leaves the home.
func TestGuardMounts(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	ms, err := GuardMounts(home, []ConfigPath{{Rel: ".claude/settings.json"}, {Rel: ".claude/skills", Dir: true}, {Rel: "mcp.json"}})
	if err != nil {
		t.Fatal(err)
	}
	j := func(p string) string { return filepath.Join(home, p) }
	want := []computer.Mount{
		{Source: j(".claude"), Target: j(".claude"), Writable: true},
		{Source: j(".claude/settings.json"), Target: j(".claude/settings.json")},
		{Source: j(".claude/skills"), Target: j(".claude/skills")},
		{Source: j("mcp.json"), Target: j("mcp.json")},
	}
	if !slices.Equal(ms, want) {
		t.Errorf("mounts\n%v\nwant\n%v", ms, want)
	}
	if b, _ := os.ReadFile(j(".claude/settings.json")); string(b) != "{}" {
		t.Errorf("settings.json = %q: what was there is kept", b)
	}
	if st, err := os.Stat(j(".claude/skills")); err != nil || !st.IsDir() {
		t.Errorf("skills folder not made: %v", err)
	}
	if st, err := os.Stat(j("mcp.json")); err != nil || !st.Mode().IsRegular() {
		t.Errorf("mcp.json not made: %v", err)
	}
	if _, err := GuardMounts(home, []ConfigPath{{Rel: "../out"}}); err == nil {
		t.Error("a path leaving the home was taken")
	}
	if err := computer.CheckMounts(ms); err != nil {
		t.Errorf("the mounts do not pass the providers' check: %v", err)
	}
}

// Every driver names its config paths, each inside its home.
func TestEveryDriverGuards(t *testing.T) {
	for _, name := range Names() {
		ps := ConfigPaths(name)
		if len(ps) == 0 {
			t.Errorf("%s names no config paths", name)
		}
		if _, err := GuardMounts(t.TempDir(), ps); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
