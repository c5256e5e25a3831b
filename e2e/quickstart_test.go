package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const quickstartScript = `
entries:
  - name: notes
    match: "Ask me which region"
    turns:
      - text: "I'll ask which region."
        tool_calls:
          - name: ask_person
            input: {question: "Which region should I cover?"}
      - tool_calls:
          - name: write
            input: {path: region.md, content: "# {{last_tool_result}}\n\nNotes about {{last_tool_result}}.\n"}
      - text: "I wrote region.md: {{last_tool_result}}."
`

// seedQuickstart is the AgentRun seed's "A first run from the terminal", typed as a user would,
// with the binary (on PATH as agentrun) in place of npx @parcha/agentrun. Two lines are added to
// record the exit code of step 2 and keep its output.
const seedQuickstart = `set -e
# 1. Make an agent that can write files and ask you things.
cat > agent.json <<'JSON'
{"definition": {"id": "notes", "version": 1, "name": "Notes",
  "instructions": "Do what you are asked, and write what you make to a file.",
  "skills": [], "tools": ["write", "ask_person"]}}
JSON
agentrun agents create --body @agent.json

# 2. Start a capped run and wait. It stops to ask you which region (exit code 8: it waits on you).
set +e
agentrun runs start notes --max-cost-usd 1 --wait \
  --body '{"input": {"content": "Ask me which region to cover, then write region.md about it."}}' > out.json
echo "start-exit=$?" >&2
set -e
cp out.json out1.json

# 3. Answer, wait for it to finish, and read what it wrote.
run=$(node -p 'require("./out.json").run_id')
agentrun runs message "$run" --content "Europe"
agentrun runs wait "$run" > out.json
agentrun runs read-file "$run" region.md
`

func TestSeedQuickstart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, quickstartScript)
	e.start()
	work := t.TempDir()
	script := seedQuickstart
	if _, err := exec.LookPath("node"); err != nil {
		t.Log("Node.js is not installed: reading run_id with sed instead of node -p")
		script = strings.Replace(script, `node -p 'require("./out.json").run_id'`, `sed -n 's/.*"run_id": *"\([^"]*\)".*/\1/p' out.json`, 1)
	}
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = work
	cmd.Env = append(e.baseEnv(), "PATH="+filepath.Dir(binPath)+":"+os.Getenv("PATH"))
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
		if n := e.model.CountTurn("notes", turn); n != 1 {
			t.Errorf("model turn %d called %d times, want 1", turn, n)
		}
	}
	var keys []string
	for _, s := range e.steps(run) {
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
