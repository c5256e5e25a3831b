// Package e2e tests agentrun as a user meets it: the real binary, started as a child process on a
// temporary data folder, driven through its CLI and HTTP API, with the scripted model server as
// the only stand-in (for the model vendor). Crash tests kill the server with SIGKILL.
package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/app"
	"agentrun.dev/agentrun/internal/computer/sandboxhelper"
	"agentrun.dev/agentrun/internal/model/fake"
)

// binPath is an "agentrun" command: a small wrapper that runs this test binary as the agentrun
// binary (app.Main), so the test cache knows every source file the tests exercise.
var binPath string

const asBinaryEnv = "AGENTRUN_E2E_AS_BINARY"

func TestMain(m *testing.M) {
	// This test binary is also the binary's re-exec entry points (a sandbox's helper), as its
	// main calls them.
	if code, ok := sandboxhelper.Main(os.Args[1:]); ok {
		os.Exit(code)
	}
	if os.Getenv(asBinaryEnv) == "1" {
		os.Exit(app.Main(os.Args[1:]))
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "agentrun-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "agentrun")
	wrapper := fmt.Sprintf("#!/bin/sh\n%s=1 exec %q \"$@\"\n", asBinaryEnv, self)
	if err := os.WriteFile(binPath, []byte(wrapper), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuffer is a bytes.Buffer safe for a process writer and a test reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// env is one test's world: a data folder, a scripted model server, and the server process.
type env struct {
	t      *testing.T
	dir    string
	model  *fake.Server
	extra  []string
	count  string // dev_count's file
	proc   *exec.Cmd
	stderr *syncBuffer
	url    string
	token  string
	exited chan struct{}
}

func newEnv(t *testing.T, script string) *env {
	t.Helper()
	sc, err := fake.ParseScript([]byte(script))
	if err != nil {
		t.Fatalf("parse script: %v", err)
	}
	srv, url, err := fake.Start(sc)
	if err != nil {
		t.Fatalf("start model server: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	e := &env{t: t, dir: t.TempDir(), model: srv}
	e.count = filepath.Join(t.TempDir(), "count.txt")
	e.extra = []string{"ANTHROPIC_API_KEY=test-key", "ANTHROPIC_BASE_URL=" + url, "AGENTRUN_DEV=1", "AGENTRUN_DEV_COUNT_FILE=" + e.count}
	t.Cleanup(func() {
		if e.proc != nil {
			e.kill()
		}
		if t.Failed() && e.stderr != nil {
			t.Logf("server stderr (requests answered 2xx or 3xx left out):\n%s", quietLog(e.stderr.String()))
		}
	})
	return e
}

func (e *env) baseEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AGENTRUN_") || strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "OPENAI_") || strings.HasPrefix(k, "OPENROUTER_") {
			continue
		}
		out = append(out, kv)
	}
	return append(append(out, "AGENTRUN_HOME="+e.dir), e.extra...)
}

// start launches `agentrun serve` and waits until it answers.
func (e *env) start(extraEnv ...string) {
	e.t.Helper()
	e.startWith([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", "debug"}, extraEnv...)
}

// startWith launches the binary with args (a serve command) and waits until it answers.
func (e *env) startWith(args []string, extraEnv ...string) {
	e.t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Env = append(e.baseEnv(), extraEnv...)
	e.stderr = &syncBuffer{}
	cmd.Stderr = e.stderr
	cmd.Stdout = e.stderr
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("start server: %v", err)
	}
	e.proc = cmd
	e.exited = make(chan struct{})
	go func() { cmd.Wait(); close(e.exited) }()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var info struct {
			URL string `json:"url"`
			PID int    `json:"pid"`
		}
		b, err := os.ReadFile(filepath.Join(e.dir, "server.json"))
		if err == nil && json.Unmarshal(b, &info) == nil && info.PID == cmd.Process.Pid {
			if resp, err := http.Get(info.URL + "/healthz"); err == nil {
				resp.Body.Close()
				e.url = info.URL
				tok, _ := os.ReadFile(filepath.Join(e.dir, "token"))
				e.token = strings.TrimSpace(string(tok))
				return
			}
		}
		select {
		case <-e.exited:
			e.t.Fatalf("server exited at start:\n%s", e.stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	e.t.Fatalf("server did not come up:\n%s", e.stderr.String())
}

// kill sends SIGKILL and waits for the process to be gone.
func (e *env) kill() {
	if e.proc == nil {
		return
	}
	e.proc.Process.Signal(syscall.SIGKILL)
	<-e.exited
	e.proc = nil
}

// waitStderr waits for a line containing s in the server's output.
func (e *env) waitStderr(s string, d time.Duration) {
	e.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if strings.Contains(e.stderr.String(), s) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatalf("server never printed %q:\n%s", s, e.stderr.String())
}

type result struct {
	stdout, stderr string
	code           int
}

// cli runs the agentrun CLI in dir (for @file arguments) with the test's data folder.
func (e *env) cli(dir string, args ...string) result {
	e.t.Helper()
	return e.cliIn(dir, "", args...)
}

// cliIn is cli with text on standard input.
func (e *env) cliIn(dir, stdin string, args ...string) result {
	e.t.Helper()
	cmd := exec.Command(binPath, args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = e.baseEnv()
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("run cli %v: %v", args, err)
	}
	return result{out.String(), errb.String(), code}
}

// mustCLI runs the CLI and fails the test unless it exits with want.
func (e *env) mustCLI(want int, args ...string) result {
	e.t.Helper()
	r := e.cli(e.dir, args...)
	if r.code != want {
		e.t.Fatalf("agentrun %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, want, r.stdout, r.stderr)
	}
	return r
}

// do makes an API request with the API token and decodes a JSON answer into out (if non-nil);
// it returns the status.
func (e *env) do(method, path string, body any, out any) int {
	e.t.Helper()
	return e.doAs(e.token, method, path, body, out)
}

// doAs makes an API request with the given bearer credential (the API token, or a person's
// session); body is nil, a string, []byte, or a value to send as JSON.
func (e *env) doAs(bearer, method, path string, body any, out any) int {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, e.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			e.t.Fatalf("%s %s: decode %q: %v", method, path, data, err)
		}
	}
	return resp.StatusCode
}

func (e *env) getRun(name string) api.AgentRun {
	e.t.Helper()
	var r api.AgentRun
	if st := e.do("GET", "/v2/agentruns/"+name, nil, &r); st != 200 {
		e.t.Fatalf("get run %s: HTTP %d", name, st)
	}
	return r
}

// waitPhase polls until the run reaches one of the phases.
func (e *env) waitPhase(name string, d time.Duration, phases ...api.Phase) api.AgentRun {
	e.t.Helper()
	deadline := time.Now().Add(d)
	var r api.AgentRun
	for time.Now().Before(deadline) {
		r = e.getRun(name)
		for _, p := range phases {
			if r.Status.Phase == p {
				return r
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.t.Fatalf("run %s is %s (%s: %s), want one of %v", name, r.Status.Phase, r.Status.Reason, r.Status.Message, phases)
	return r
}

func (e *env) steps(name string) []api.Step {
	e.t.Helper()
	var out struct{ Items []api.Step }
	e.do("GET", "/v2/agentruns/"+name+"/steps", nil, &out)
	return out.Items
}

// toolResult is a tool step's result as the model read it.
type toolResult struct {
	Content string
	IsError bool
}

// toolResults are the results of a run's steps by step key (steps whose result is not a tool's
// read as empty).
func (e *env) toolResults(name string) map[string]toolResult {
	e.t.Helper()
	out := map[string]toolResult{}
	for _, s := range e.steps(name) {
		var r toolResult
		json.Unmarshal(s.Result, &r)
		out[s.Key] = r
	}
	return out
}

func (e *env) events(name string) []api.Event {
	e.t.Helper()
	var out struct{ Items []api.Event }
	e.do("GET", "/v2/agentruns/"+name+"/events", nil, &out)
	return out.Items
}

// counted returns the labels dev_count recorded.
func (e *env) counted() []string {
	b, err := os.ReadFile(e.count)
	if err != nil {
		return nil
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// quietLog drops from a server's log the lines of requests answered 2xx or 3xx (tests poll, and
// those lines would bury what went wrong) and says how many it dropped.
func quietLog(s string) string {
	var b strings.Builder
	dropped := 0
	for _, line := range strings.SplitAfter(s, "\n") {
		if strings.Contains(line, "msg=http ") && (strings.Contains(line, " status=2") || strings.Contains(line, " status=3")) {
			dropped++
			continue
		}
		b.WriteString(line)
	}
	fmt.Fprintf(&b, "(%d request lines answered 2xx or 3xx left out)\n", dropped)
	return b.String()
}
