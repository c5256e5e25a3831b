package e2etest

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
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/app"
	"agentrun.dev/agentrun/internal/computer/sandboxhelper"
	"agentrun.dev/agentrun/internal/model/fake"
	"agentrun.dev/agentrun/internal/workflow"
)

// BinPath is an "agentrun" command: a small wrapper that runs this test binary as the agentrun
// binary (app.Main), so the test cache knows every source file the tests exercise.
var BinPath string

const asBinaryEnv = "AGENTRUN_E2E_AS_BINARY"

func Main(m *testing.M) {
	// This test binary is also the binary's re-exec entry points (a sandbox's helper), as its
	// main calls them.
	if code, ok := sandboxhelper.Main(os.Args[1:]); ok {
		os.Exit(code)
	}
	if code, ok := workflow.Main(os.Args[1:]); ok {
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
	BinPath = filepath.Join(dir, "agentrun")
	wrapper := fmt.Sprintf("#!/bin/sh\n%s=1 exec %q \"$@\"\n", asBinaryEnv, self)
	if err := os.WriteFile(BinPath, []byte(wrapper), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// SyncBuffer is a bytes.Buffer safe for a process writer and a test reader.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Env is one test's world: a data folder, a scripted model server, and the server process.
type Env struct {
	T      *testing.T
	Dir    string
	Model  *fake.Server
	Extra  []string
	count  string // dev_count's file
	Proc   *exec.Cmd
	Stderr *SyncBuffer
	URL    string
	Token  string
	Exited chan struct{}
	// docker: the server was started able to make docker computers (AGENTRUN_DOCKER_BASE set),
	// whose containers Kill waits for.
	docker bool
}

func NewEnv(t *testing.T, script string) *Env {
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
	e := &Env{T: t, Dir: t.TempDir(), Model: srv}
	e.count = filepath.Join(t.TempDir(), "count.txt")
	e.Extra = []string{"ANTHROPIC_API_KEY=test-key", "ANTHROPIC_BASE_URL=" + url, "AGENTRUN_DEV=1", "AGENTRUN_DEV_COUNT_FILE=" + e.count}
	t.Cleanup(func() {
		if e.Proc != nil {
			e.Kill()
		}
		if t.Failed() && e.Stderr != nil {
			t.Logf("server stderr (requests answered 2xx or 3xx left out):\n%s", QuietLog(e.Stderr.String()))
		}
	})
	return e
}

func (e *Env) BaseEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AGENTRUN_") || strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "OPENAI_") || strings.HasPrefix(k, "OPENROUTER_") {
			continue
		}
		out = append(out, kv)
	}
	return append(append(out, "AGENTRUN_HOME="+e.Dir), e.Extra...)
}

// Start launches `agentrun serve` and waits until it answers.
func (e *Env) Start(extraEnv ...string) {
	e.T.Helper()
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", "debug"}, extraEnv...)
}

// StartWith launches the binary with args (a serve command) and waits until it answers.
func (e *Env) StartWith(args []string, extraEnv ...string) {
	e.T.Helper()
	cmd := exec.Command(BinPath, args...)
	cmd.Env = append(e.BaseEnv(), extraEnv...)
	for _, kv := range cmd.Env {
		e.docker = e.docker || strings.HasPrefix(kv, "AGENTRUN_DOCKER_BASE=")
	}
	e.Stderr = &SyncBuffer{}
	cmd.Stderr = e.Stderr
	cmd.Stdout = e.Stderr
	if err := cmd.Start(); err != nil {
		e.T.Fatalf("start server: %v", err)
	}
	e.Proc = cmd
	e.Exited = make(chan struct{})
	go func() { cmd.Wait(); close(e.Exited) }()
	// A server comes up in well under a second; a machine whose disk stalls (seen in CI while
	// other packages built Docker images) can hold its store's first writes for tens of seconds.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		var info struct {
			URL string `json:"url"`
			PID int    `json:"pid"`
		}
		b, err := os.ReadFile(filepath.Join(e.Dir, "server.json"))
		if err == nil && json.Unmarshal(b, &info) == nil && info.PID == cmd.Process.Pid {
			if resp, err := http.Get(info.URL + "/healthz"); err == nil {
				resp.Body.Close()
				e.URL = info.URL
				tok, _ := os.ReadFile(filepath.Join(e.Dir, "token"))
				e.Token = strings.TrimSpace(string(tok))
				return
			}
		}
		select {
		case <-e.Exited:
			e.T.Fatalf("server exited at start:\n%s", e.Stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	e.T.Fatalf("server did not come up within 60 s:\n%s", e.Stderr.String())
}

// Kill sends SIGKILL and waits for the process to be gone, for what it started in its data
// folder (NoStraysIn), and for its docker computers' containers: they end by themselves when the killed server's attach connections close, but
// the engine notices a moment later, and until then what runs in them (a harness whose home is
// bound from the data folder) can still write there, under a TempDir's removal, say.
func (e *Env) Kill() {
	if e.Proc == nil {
		return
	}
	e.Proc.Process.Signal(syscall.SIGKILL)
	<-e.Exited
	e.Proc = nil
	NoStraysIn(e.T, e.Dir, 5*time.Second)
	if e.docker {
		NoContainersOf(e.T, e.Dir, 30*time.Second)
	}
}

// DumpGoroutines ends the server with SIGQUIT, so its stderr (logged when the test fails) ends
// with every goroutine's stack: for a test that found the server stuck, it shows where.
func (e *Env) DumpGoroutines() {
	if e.Proc == nil {
		return
	}
	e.Proc.Process.Signal(syscall.SIGQUIT)
	select {
	case <-e.Exited:
	case <-time.After(10 * time.Second):
	}
	e.Kill()
}

// WaitStderr waits for a line containing s in the server's output.
func (e *Env) WaitStderr(s string, d time.Duration) {
	e.T.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if strings.Contains(e.Stderr.String(), s) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.T.Fatalf("server never printed %q:\n%s", s, e.Stderr.String())
}

type Result struct {
	Stdout, Stderr string
	Code           int
}

// CLI runs the agentrun CLI in dir (for @file arguments) with the test's data folder.
func (e *Env) CLI(dir string, args ...string) Result {
	e.T.Helper()
	return e.CLIIn(dir, "", args...)
}

// CLIIn is cli with text on standard input.
func (e *Env) CLIIn(dir, stdin string, args ...string) Result {
	e.T.Helper()
	cmd := exec.Command(BinPath, args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = e.BaseEnv()
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		e.T.Fatalf("run cli %v: %v", args, err)
	}
	return Result{out.String(), errb.String(), code}
}

// MustCLI runs the CLI and fails the test unless it exits with want.
func (e *Env) MustCLI(want int, args ...string) Result {
	e.T.Helper()
	r := e.CLI(e.Dir, args...)
	if r.Code != want {
		e.T.Fatalf("agentrun %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.Code, want, r.Stdout, r.Stderr)
	}
	return r
}

// MustCLIIn is MustCLI with text on standard input.
func (e *Env) MustCLIIn(stdin string, want int, args ...string) Result {
	e.T.Helper()
	r := e.CLIIn(e.Dir, stdin, args...)
	if r.Code != want {
		e.T.Fatalf("agentrun %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.Code, want, r.Stdout, r.Stderr)
	}
	return r
}

// RetryAsPerson resolves the step a run waits on with retry from the CLI as a signed-in person
// (re-running a command whose outcome is unknown is a person's decision; the API token is
// refused), then signs out, so the test's other CLI calls use the token as before.
func (e *Env) RetryAsPerson(run string) {
	e.T.Helper()
	const password = "correct horse battery staple"
	if r := e.CLIIn(e.Dir, password+"\n", "login", "--password-stdin"); r.Code != 0 {
		m := regexp.MustCompile(`setup code: ([0-9A-F]+)`).FindStringSubmatch(e.Stderr.String())
		if m == nil {
			e.T.Fatalf("sign in to retry: %s; and no setup code printed", strings.TrimSpace(r.Stderr))
		}
		e.MustCLIIn(password+"\n", 0, "login", "--setup-code", m[1], "--password-stdin")
	}
	e.MustCLI(0, "runs", "resolve", run, "--retry")
	e.MustCLI(0, "login", "--logout")
}

// Do makes an API request with the API token and decodes a JSON answer into out (if non-nil);
// it returns the status.
func (e *Env) Do(method, path string, body any, out any) int {
	e.T.Helper()
	return e.DoAs(e.Token, method, path, body, out)
}

// DoAs makes an API request with the given bearer credential (the API token, or a person's
// session); body is nil, a string, []byte, or a value to send as JSON.
func (e *Env) DoAs(bearer, method, path string, body any, out any) int {
	e.T.Helper()
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
	req, _ := http.NewRequest(method, e.URL+path, rd)
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			e.T.Fatalf("%s %s: decode %q: %v", method, path, data, err)
		}
	}
	return resp.StatusCode
}

func (e *Env) GetRun(name string) api.AgentRun {
	e.T.Helper()
	var r api.AgentRun
	if st := e.Do("GET", "/v2/agentruns/"+name, nil, &r); st != 200 {
		e.T.Fatalf("get run %s: HTTP %d", name, st)
	}
	return r
}

// WaitPhase polls until the run reaches one of the phases.
func (e *Env) WaitPhase(name string, d time.Duration, phases ...api.Phase) api.AgentRun {
	e.T.Helper()
	deadline := time.Now().Add(d)
	var r api.AgentRun
	for time.Now().Before(deadline) {
		r = e.GetRun(name)
		for _, p := range phases {
			if r.Status.Phase == p {
				return r
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.T.Fatalf("run %s is %s (%s: %s), want one of %v", name, r.Status.Phase, r.Status.Reason, r.Status.Message, phases)
	return r
}

func (e *Env) Steps(name string) []api.Step {
	e.T.Helper()
	var out struct{ Items []api.Step }
	e.Do("GET", "/v2/agentruns/"+name+"/steps", nil, &out)
	return out.Items
}

// ToolResult is a tool step's result as the model read it.
type ToolResult struct {
	Content string
	IsError bool
}

// ToolResults are the results of a run's steps by step key (steps whose result is not a tool's
// read as empty).
func (e *Env) ToolResults(name string) map[string]ToolResult {
	e.T.Helper()
	out := map[string]ToolResult{}
	for _, s := range e.Steps(name) {
		var r ToolResult
		json.Unmarshal(s.Result, &r)
		out[s.Key] = r
	}
	return out
}

func (e *Env) Events(name string) []api.Event {
	e.T.Helper()
	var out struct{ Items []api.Event }
	e.Do("GET", "/v2/agentruns/"+name+"/events", nil, &out)
	return out.Items
}

// Counted returns the labels dev_count recorded.
func (e *Env) Counted() []string {
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

func WriteFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// QuietLog drops from a server's log the lines of requests answered 2xx or 3xx (tests poll, and
// those lines would bury what went wrong) and says how many it dropped.
func QuietLog(s string) string {
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
