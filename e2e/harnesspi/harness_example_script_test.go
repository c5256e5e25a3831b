package harnesspi

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/harness"
)

// TestExampleScriptOnHarnesses: the README's way to try agentrun with no key, the scripted model
// server with the shipped examples/model-script.yaml, runs the seed's quickstart on claude-agent
// and opencode as on builtin: the script names the tools write and ask_person, which the scripted
// server calls by the name each harness offers them under (mcp__agentrun__write, agentrun_write).
// Before, the harness was answered with calls of tools it did not have: the run "completed"
// without asking and without region.md.
func TestExampleScriptOnHarnesses(t *testing.T) {
	t.Parallel()
	script, err := os.ReadFile(filepath.Join("..", "..", "examples", "model-script.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"claude-agent", "opencode"} {
		t.Run(h, func(t *testing.T) {
			t.Parallel()
			cache := InstalledHarness(t, h)
			e := NewEnv(t, string(script))
			e.Extra = append(e.Extra, harness.CacheEnv+"="+cache)
			e.Start()
			quick := strings.Replace(SeedQuickstart, `{"definition": {"id": "notes",`, `{"definition": {"id": "notes", "harness": "`+h+`",`, 1)
			cmd := exec.Command("bash", "-c", quick)
			cmd.Dir = t.TempDir()
			cmd.Env = append(e.BaseEnv(), "PATH="+filepath.Dir(BinPath)+":"+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("quickstart failed: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), "start-exit=8") || !strings.Contains(string(out), "# Europe") {
				t.Errorf("the quickstart did not ask and write region.md about Europe:\n%s", out)
			}
		})
	}
}
