package protocols

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
)

// script is the scripted model's replies the clients' scenarios meet.
const script = `
entries:
  - name: hello
    match: "Say hello"
    turns:
      - text: "Hello from the scripted model."
  - name: asks
    match: "Ask me which region"
    turns:
      - text: "I'll ask which region."
        tool_calls:
          - name: ask_person
            input: {question: "Which region should I cover?"}
      - text: "Covering {{last_tool_result}}."
  - name: careful
    match: "Count carefully"
    turns:
      - tool_calls:
          - name: dev_count
            input: {label: "once"}
      - text: "result: {{last_tool_result}}"
`

// greeterDoc is a workflow whose input schema the greeter's MCP tool takes as its arguments.
const greeterDoc = `{"v": 2, "name": "greet", "schemas": {"In": {"type": "object", "required": ["who"], "properties": {"who": {"type": "string"}}},
  "Out": {"type": "object"}}, "input": {"schemaId": "In"}, "output": {"schemaId": "Out", "path": "g"},
  "root": {"node": "chain", "steps": [{"node": "code", "label": "greet", "code": "(s) => ({ g: { hello: s.who } })"}]}}`

// newServer starts the binary with the three agents the scenarios use.
func newServer(t *testing.T) *Env {
	t.Helper()
	e := NewEnv(t, script)
	e.Start()
	for _, a := range []string{
		`{"metadata": {"name": "hello-agent"}, "spec": {"displayName": "Hello", "system": "You greet people.\nBe brief."}}`,
		`{"metadata": {"name": "notes"}, "spec": {"description": "Takes notes on a region, after asking which.", "system": "You take notes.", "tools": ["ask_person"]}}`,
		`{"metadata": {"name": "careful"}, "spec": {"tools": ["dev_count"], "approvals": {"default": "allow", "rules": [{"match": "dev_count", "action": "ask"}]}}}`,
		`{"metadata": {"name": "greeter"}, "spec": {"workflow": ` + greeterDoc + `}}`,
	} {
		var m struct {
			Metadata struct{ Name string }
		}
		json.Unmarshal([]byte(a), &m)
		if st := e.Do("PUT", "/v2/agents/"+m.Metadata.Name, a, nil); st != 201 {
			t.Fatalf("create agent %s: HTTP %d", m.Metadata.Name, st)
		}
	}
	return e
}

// installing holds one lock per client, so that tests sharing a client install it once while
// different clients install side by side.
var installing sync.Map

// client installs clients/NAME (npm ci from its lockfile) into the cache and answers the folder
// it is installed in, with the folder's scripts copied beside node_modules. It skips when node
// 20+ or npm is missing, or npm cannot install.
func client(t *testing.T, name string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("Node.js is not installed: the protocol clients from npm need node 20 or later")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed: it installs the protocol clients")
	}
	out, err := exec.Command(node, "-p", "process.versions.node").Output()
	if err != nil {
		t.Fatalf("node -p process.versions.node: %v", err)
	}
	if major, _ := strconv.Atoi(strings.SplitN(strings.TrimSpace(string(out)), ".", 2)[0]); major < 20 {
		t.Skipf("Node.js %s is older than 20, which the clients need", strings.TrimSpace(string(out)))
	}
	src := filepath.Join("clients", name)
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(lock), `"resolved"`) {
		t.Errorf("%s/package-lock.json carries resolved URLs: make it with the folder's .npmrc (omit-lockfile-registry-resolved=true)", src)
	}
	cache := os.Getenv("AGENTRUN_PROTOCOL_CLIENTS_CACHE")
	if cache == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			d = t.TempDir()
		}
		cache = filepath.Join(d, "agentrun-protocol-clients")
	}
	sum := sha256.Sum256(lock)
	dir := filepath.Join(cache, name+"-"+hex.EncodeToString(sum[:6]))
	mu, _ := installing.LoadOrStore(name, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		b, err := os.ReadFile(filepath.Join(src, en.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, en.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil {
		return dir
	}
	install := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--prefer-offline")
	install.Dir = dir
	if b, err := install.CombinedOutput(); err != nil {
		t.Skipf("npm ci could not install %s (no registry reachable?): %v\n%s", name, err, Tail(string(b), 2000))
	}
	return dir
}

// runNode runs script in dir against e and decodes the JSON it prints into out.
func runNode(t *testing.T, e *Env, dir, script string, out any) {
	t.Helper()
	cmd := exec.Command("node", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AGENTRUN_URL="+e.URL, "AGENTRUN_TOKEN="+e.Token)
	var stderr SyncBuffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\nstdout: %s\nstderr: %s", script, err, Tail(string(b), 4000), Tail(stderr.String(), 4000))
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), out); err != nil {
		t.Fatalf("node %s printed %q: %v\nstderr: %s", script, b, err, Tail(stderr.String(), 4000))
	}
}

func waitPhase(t *testing.T, e *Env, run string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	r := e.GetRun(run)
	for time.Now().Before(deadline) && r.Status.Phase == "Running" {
		time.Sleep(50 * time.Millisecond)
		r = e.GetRun(run)
	}
	return string(r.Status.Phase) + "/" + string(r.Status.Reason)
}
