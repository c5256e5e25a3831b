package computer

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// fakeSandbox answers from fields; it records the last call.
type fakeSandbox struct {
	exec    ExecResult
	err     error
	lastCmd string
	lastOpt ExecOptions
}

func (f *fakeSandbox) Kind() Kind     { return KindSandbox }
func (f *fakeSandbox) Info() []string { return nil }
func (f *fakeSandbox) Close() error   { return nil }
func (f *fakeSandbox) Exec(_ context.Context, cmd string, o ExecOptions) (ExecResult, error) {
	f.lastCmd, f.lastOpt = cmd, o
	return f.exec, f.err
}
func (f *fakeSandbox) Start(_ context.Context, cmd string, o ExecOptions) (ProcessInfo, error) {
	f.lastCmd = cmd
	return ProcessInfo{ID: "p1", PID: 7, Running: true, Command: cmd}, f.err
}
func (f *fakeSandbox) Processes(context.Context) ([]ProcessInfo, error) {
	return []ProcessInfo{{ID: "p1", Command: "sleep 9", Running: true}}, f.err
}
func (f *fakeSandbox) Output(_ context.Context, id string, off int64) (Output, error) {
	if id != "p1" {
		return Output{}, Agentf("no background process %q", id)
	}
	return Output{Data: "hello\n", Offset: off, Next: off + 6, Process: ProcessInfo{ID: "p1", ExitCode: 2, OutputBytes: off + 6}}, f.err
}
func (f *fakeSandbox) Stop(_ context.Context, id string) (ProcessInfo, error) {
	return ProcessInfo{ID: id, ExitCode: -1}, f.err
}
func (f *fakeSandbox) ReadFile(context.Context, string) ([]byte, error) { return nil, f.err }
func (f *fakeSandbox) WriteFile(context.Context, string, []byte) error  { return f.err }

func TestToolDefinitions(t *testing.T) {
	for _, kind := range []Kind{KindSandbox, KindBrowser} {
		defs := Tools(kind)
		if len(defs) == 0 {
			t.Fatalf("no tools for %s", kind)
		}
		for _, d := range defs {
			var s map[string]any
			if err := json.Unmarshal(d.Schema, &s); err != nil || s["type"] != "object" {
				t.Errorf("%s: schema %s: %v", d.Name, d.Schema, err)
			}
			if d.Description == "" {
				t.Errorf("%s: no description", d.Name)
			}
		}
	}
	if len(Tools(KindNone)) != 0 {
		t.Error("kind none has tools")
	}
	if d, _ := LookupTool("bash"); d.ReadOnly {
		t.Error("bash is marked read-only")
	}
	if d, _ := LookupTool("browser_text"); !d.ReadOnly {
		t.Error("browser_text is not marked read-only")
	}
}

func TestRunBash(t *testing.T) {
	ctx := context.Background()
	f := &fakeSandbox{exec: ExecResult{ExitCode: 3, Stdout: "out", Stderr: "err\n"}}
	content, isErr, err := Run(ctx, f, "bash", json.RawMessage(`{"command":"make","timeout_s":5,"workdir":"src"}`))
	if err != nil || isErr {
		t.Fatalf("isErr %v err %v", isErr, err)
	}
	if content != "exit code 3\nout\n--- stderr ---\nerr" {
		t.Errorf("content %q", content)
	}
	if f.lastCmd != "make" || f.lastOpt.Timeout != 5*time.Second || f.lastOpt.Workdir != "src" {
		t.Errorf("called with %q %+v", f.lastCmd, f.lastOpt)
	}

	// Agent mistakes are error results.
	for _, in := range []string{`{}`, `{"command":""}`, `{"command":"x","timeout_s":0}`, `{"command":"x","timeout_s":9999}`,
		`{"command":"x","bogus":1}`, `{"command":5}`, `[1]`, `not json`} {
		content, isErr, err := Run(ctx, f, "bash", json.RawMessage(in))
		if err != nil || !isErr || content == "" {
			t.Errorf("input %s: content %q isErr %v err %v", in, content, isErr, err)
		}
	}
	// A timeout is an error result that still shows the output.
	f.exec = ExecResult{ExitCode: -1, TimedOut: true, Stdout: "partial\n"}
	content, isErr, err = Run(ctx, f, "bash", json.RawMessage(`{"command":"sleep 30","timeout_s":1}`))
	if err != nil || !isErr || !strings.Contains(content, "timed out after 1 s") || !strings.Contains(content, "partial") {
		t.Errorf("timeout: %q %v %v", content, isErr, err)
	}
	// An infrastructure failure is an error.
	f.err = ErrClosed
	if _, _, err := Run(ctx, f, "bash", json.RawMessage(`{"command":"true"}`)); !errors.Is(err, ErrClosed) {
		t.Errorf("infrastructure failure: %v", err)
	}
}

func TestRunBackgroundTools(t *testing.T) {
	ctx := context.Background()
	f := &fakeSandbox{}
	content, isErr, err := Run(ctx, f, "bash", json.RawMessage(`{"command":"python3 -m http.server","background":true}`))
	if err != nil || isErr || !strings.Contains(content, "p1") {
		t.Fatalf("start: %q %v %v", content, isErr, err)
	}
	content, isErr, err = Run(ctx, f, "bash_output", json.RawMessage(`{"id":"p1","offset":4}`))
	if err != nil || isErr || !strings.Contains(content, "hello") || !strings.Contains(content, "next offset: 10") ||
		!strings.Contains(content, "exited with code 2") {
		t.Fatalf("output: %q %v %v", content, isErr, err)
	}
	content, isErr, err = Run(ctx, f, "bash_output", json.RawMessage(`{"id":"p9"}`))
	if err != nil || !isErr || !strings.Contains(content, "p9") {
		t.Fatalf("unknown id: %q %v %v", content, isErr, err)
	}
	content, _, err = Run(ctx, f, "bash_list", nil)
	if err != nil || !strings.Contains(content, "sleep 9") {
		t.Fatalf("list: %q %v", content, err)
	}
	content, _, err = Run(ctx, f, "bash_kill", json.RawMessage(`{"id":"p1"}`))
	if err != nil || !strings.Contains(content, "killed by a signal") {
		t.Fatalf("kill: %q %v", content, err)
	}
}

func TestRunWrongComputer(t *testing.T) {
	if _, _, err := Run(context.Background(), &fakeSandbox{}, "browser_open", json.RawMessage(`{"url":"http://x"}`)); err == nil {
		t.Fatal("a browser tool ran on a sandbox")
	}
	if _, _, err := Run(context.Background(), nil, "bash", json.RawMessage(`{"command":"x"}`)); err == nil {
		t.Fatal("a sandbox tool ran without a computer")
	}
	if content, isErr, err := Run(context.Background(), nil, "nope", nil); err != nil || !isErr || content == "" {
		t.Fatalf("unknown tool: %q %v %v", content, isErr, err)
	}
}

type fakeProvider struct {
	name  string
	kinds []Kind
	avail Availability
}

func (p fakeProvider) Name() string                           { return p.name }
func (p fakeProvider) Kinds() []Kind                          { return p.kinds }
func (p fakeProvider) Available(context.Context) Availability { return p.avail }
func (p fakeProvider) Create(context.Context, Spec) (Computer, error) {
	return nil, errors.New("fake")
}

func TestRegistry(t *testing.T) {
	r := NewRegistry(
		fakeProvider{"docker", []Kind{KindSandbox}, Availability{Reason: "no Docker engine"}},
		fakeProvider{"local", []Kind{KindSandbox}, Availability{Available: true}},
		fakeProvider{"chromium", []Kind{KindBrowser}, Availability{Reason: "chromium not installed"}},
	)
	st := r.Status(context.Background())
	if len(st) != 3 || st[0].Name != "chromium" || st[0].Available || st[0].Reason == "" {
		t.Fatalf("status %+v", st)
	}
	p, err := r.Resolve(context.Background(), KindSandbox, "", "docker", "local")
	if err != nil || p.Name() != "local" {
		t.Fatalf("best sandbox: %v %v", p, err)
	}
	if _, err := r.Resolve(context.Background(), KindBrowser, ""); err == nil {
		t.Fatal("a browser resolved with none available")
	}
	if _, err := r.Resolve(context.Background(), KindSandbox, "docker"); err == nil || !strings.Contains(err.Error(), "no Docker engine") {
		t.Fatalf("unavailable provider: %v", err)
	}
	if _, err := r.Resolve(context.Background(), KindBrowser, "local"); err == nil {
		t.Fatal("local resolved as a browser")
	}
}
