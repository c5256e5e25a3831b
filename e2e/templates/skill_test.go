package templates

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "agentrun.dev/agentrun/e2e/e2etest"
)

// `agentrun skill install --claude --codex` writes the skill where each coding agent reads a
// user's skills, and the server serves the same text at /SKILL.md without a token.
func TestSkillInstallAndServed(t *testing.T) {
	e := NewEnv(t, script)
	e.Start()
	home := t.TempDir()
	e.Extra = append(e.Extra, "HOME="+home, "CODEX_HOME=")
	r := e.MustCLI(0, "skill", "install", "--claude", "--codex")
	claude := filepath.Join(home, ".claude", "skills", "agentrun", "SKILL.md")
	codex := filepath.Join(home, ".codex", "skills", "agentrun", "SKILL.md")
	if !strings.Contains(r.Stdout, claude) || !strings.Contains(r.Stdout, codex) {
		t.Fatalf("install said: %s", r.Stdout)
	}
	a, _ := os.ReadFile(claude)
	b, _ := os.ReadFile(codex)
	resp, err := http.Get(e.URL + "/SKILL.md")
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(string(served), "---\nname: agentrun\n") || string(a) != string(served) || string(b) != string(served) {
		t.Fatalf("GET /SKILL.md: HTTP %d, %d bytes; claude's %d, codex's %d", resp.StatusCode, len(served), len(a), len(b))
	}
	if r := e.CLI(e.Dir, "skill", "install"); r.Code != 2 {
		t.Errorf("install with no agent: exit %d", r.Code)
	}
}
