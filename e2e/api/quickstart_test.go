package api

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "agentrun.dev/agentrun/e2e/e2etest"
)

func TestSeedQuickstart(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, QuickstartScript)
	e.Start()
	work := t.TempDir()
	script := SeedQuickstart
	if _, err := exec.LookPath("node"); err != nil {
		t.Log("Node.js is not installed: reading run_id with sed instead of node -p")
		script = strings.Replace(script, `node -p 'require("./out.json").run_id'`, `sed -n 's/.*"run_id": *"\([^"]*\)".*/\1/p' out.json`, 1)
	}
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = work
	cmd.Env = append(e.BaseEnv(), "PATH="+filepath.Dir(BinPath)+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("quickstart failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "start-exit=8") {
		t.Errorf("runs start --wait should exit 8 while the agent asks a question; output:\n%s", out)
	}
	if !strings.Contains(string(out), "# Europe") || !strings.Contains(string(out), "Notes about Europe.") {
		t.Errorf("read-file did not print region.md about Europe; output:\n%s", out)
	}

	var first map[string]any
	b, _ := os.ReadFile(filepath.Join(work, "out1.json"))
	if err := json.Unmarshal(b, &first); err != nil {
		t.Fatalf("runs start printed no JSON: %v\n%s", err, b)
	}
	run, _ := first["run_id"].(string)
	if !strings.HasPrefix(run, "notes-") {
		t.Fatalf("run_id = %q", first["run_id"])
	}
	consoleURL, _ := first["console_url"].(string)
	if first["status"] != "waiting" || !strings.HasSuffix(consoleURL, "/runs/"+run) {
		t.Errorf("first out.json = %v", first)
	}
	if q, _ := first["question"].(string); q != "Which region should I cover?" {
		t.Errorf("first out.json question = %q", q)
	}
	var final map[string]any
	b, _ = os.ReadFile(filepath.Join(work, "out.json"))
	if err := json.Unmarshal(b, &final); err != nil {
		t.Fatalf("runs wait printed no JSON: %v\n%s", err, b)
	}
	if final["status"] != "completed" || final["answer"] != "I wrote region.md: wrote 30 bytes to region.md." {
		t.Errorf("final out.json = %v", final)
	}
	// Each scripted turn was asked for exactly once.
	for turn := 0; turn < 3; turn++ {
		if n := e.Model.CountTurn("notes", turn); n != 1 {
			t.Errorf("model turn %d called %d times, want 1", turn, n)
		}
	}
	var keys []string
	for _, s := range e.Steps(run) {
		if s.State != "Completed" {
			t.Errorf("step %s is %s", s.Key, s.State)
		}
		keys = append(keys, s.Key)
	}
	if want := "t0/route t0/model t0/tool/0 t1/model t1/tool/0 t2/model"; strings.Join(keys, " ") != want {
		t.Errorf("steps = %v, want %s", keys, want)
	}
	// The run's console page exists, behind sign-in.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(consoleURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Errorf("console_url without a session: HTTP %d to %q, want a redirect to /login", resp.StatusCode, resp.Header.Get("Location"))
	}
}
