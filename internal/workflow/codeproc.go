package workflow

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// A code node, and an executor body, runs in a child process: this same executable,
// re-executed with codeChildArg, its data held to CodeMemory (RLIMIT_DATA, set by the child on
// itself before it reads the code; not RLIMIT_AS: the Go runtime reserves over a GiB of address
// space it never uses). goja has no heap limit and allocates eagerly in native code
// ("a".repeat(2 ** 40) and new ArrayBuffer(2 ** 40) ask Go for a terabyte at once, which no check
// inside the interpreter sees, and Go's answer is a fatal error no recover catches), and a deep
// enough value overflows Go's stack in native recursion, also fatally. In a child, any of these
// ends only the child: the node fails (code_memory, or code_failed saying how the child ended)
// and so does the run, while the server goes on. The parent also holds the child to CodeTimeout
// by wall clock (the child's own interrupt cannot stop native code) and reads at most
// CodeMaxResult of its answer. An executor body's tool calls come back to the parent as
// messages, which it answers through the host: the child reaches nothing but the parent.
const (
	// CodeMemory is the data (heap) a code node's process may map: the Go runtime and goja take
	// about 80 MB of it; the rest is the code's.
	CodeMemory = 512 << 20
	// codeGrace is how long past CodeTimeout the parent waits before it kills the child (the
	// child's own interrupt answers first in every case it can).
	codeGrace = time.Second
	// codeStart bounds the start of a code node's process, up to its ready byte (codeReady).
	codeStart = 30 * time.Second
	codeReady = '+'
	// codeChildArg is the re-exec entry's argument (Main).
	codeChildArg = "__agentrun-workflow-code"
)

// ErrCodeMemory is a code node that ran out of its memory (CodeMemory).
var ErrCodeMemory = errors.New("the code ran out of memory")

// codeSlots bounds the code children running at once in this process, a core each and at most
// 8, so code nodes hold at most 8 × CodeMemory (4 GiB) however many runs and map items want them
// (the others wait their turn, and their time limit starts when they run).
var codeSlots = make(chan struct{}, min(max(2, runtime.NumCPU()), 8))

// childReady says this program's main calls Main, so re-executing it reaches the code child.
var childReady atomic.Bool

// Main runs this package's re-exec entry point: when args (os.Args[1:]) name it, it runs a code
// node and returns its exit code and true; otherwise it returns false at once. The binary's main
// calls it first, and so does the TestMain of every test binary that runs code nodes (they
// re-execute the test binary); a program that does not call it cannot run code nodes.
func Main(args []string) (code int, ok bool) {
	childReady.Store(true)
	if len(args) < 1 || args[0] != codeChildArg {
		return 0, false
	}
	return codeChildMain(os.Stdin, os.Stdout), true
}

// The child's protocol. The parent writes one codeRequest line on the child's stdin; the child
// writes its ready byte (codeReady) on stdout as the code starts, then JSON lines: an executor
// body's tool calls (codeMessage.Call), each answered by a codeReply line on stdin, and last its
// answer (Result or Error).
type codeRequest struct {
	Executor bool            `json:"executor,omitempty"` // an executor body, not a code node
	Src      string          `json:"src"`
	Input    json.RawMessage `json:"input"`
}

type codeMessage struct {
	Call   *codeCall       `json:"call,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

type codeCall struct {
	Tool string `json:"tool"`
	Args any    `json:"args"`
}

type codeReply struct {
	Value     any    `json:"value"`
	ToolError string `json:"toolError,omitempty"`
}

func codeChildMain(stdin io.Reader, stdout io.Writer) int {
	lim := &syscall.Rlimit{Cur: CodeMemory, Max: CodeMemory}
	if err := syscall.Setrlimit(syscall.RLIMIT_DATA, lim); err != nil {
		fmt.Fprintln(os.Stderr, "agentrun code node: limit memory:", err)
		return 127
	}
	// The collector works harder as the heap nears the bound, so a code node that allocates and
	// drops a lot stays under it.
	debug.SetMemoryLimit(CodeMemory / 2)
	dec := json.NewDecoder(stdin)
	enc := json.NewEncoder(stdout)
	var req codeRequest
	if err := dec.Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "agentrun code node: read the request:", err)
		return 127
	}
	if _, err := stdout.Write([]byte{codeReady}); err != nil {
		return 127
	}
	var res json.RawMessage
	var err error
	if req.Executor {
		var in any
		if err := json.Unmarshal(req.Input, &in); err != nil {
			fmt.Fprintln(os.Stderr, "agentrun code node: read the input:", err)
			return 127
		}
		res, err = runExecutorHere(context.Background(), req.Src, in, func(tool string, args any) (any, error) {
			if err := enc.Encode(codeMessage{Call: &codeCall{Tool: tool, Args: args}}); err != nil {
				return nil, err
			}
			var rep codeReply
			if err := dec.Decode(&rep); err != nil {
				return nil, fmt.Errorf("read %s's answer: %w", tool, err)
			}
			if rep.ToolError != "" {
				return nil, &toolError{rep.ToolError}
			}
			return rep.Value, nil
		})
	} else {
		res, err = runCodeHere(req.Src, req.Input)
	}
	ans := codeMessage{Result: res}
	if err != nil {
		ans = codeMessage{Error: err.Error()}
	}
	if err := enc.Encode(ans); err != nil {
		fmt.Fprintln(os.Stderr, "agentrun code node: write the answer:", err)
		return 127
	}
	return 0
}

// RunCode calls the code node's function with the state in a child process (see CodeMemory)
// and returns its result as JSON. An error wrapping ErrCodeMemory is the code running out of
// memory; other errors say what the code did (threw, ran over its time, returned too much).
func RunCode(ctx context.Context, src string, state map[string]any) (json.RawMessage, error) {
	in, err := json.Marshal(state)
	if err != nil {
		return nil, fmt.Errorf("code input: %w", err)
	}
	return runChild(ctx, codeRequest{Src: src, Input: in}, nil)
}

// RunExecutor runs an executor body with input and a tools proxy whose calls go to call, in a
// child process as a code node is (the body's own running time is bounded as a code node's, the
// time its tool calls take is not; deadline_s, ctx's, bounds the whole). A host error from call
// ends the body at once and is returned as it is; the body cannot catch it. Every other error is
// the body's own (a *codeError).
func RunExecutor(ctx context.Context, body string, input any, call func(tool string, args any) (any, error)) (json.RawMessage, error) {
	in, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("executor input: %w", err)
	}
	var hostErr error
	res, err := runChild(ctx, codeRequest{Executor: true, Src: body, Input: in}, func(tool string, args any) (codeReply, error) {
		v, err := call(tool, args)
		var te *toolError
		switch {
		case errors.As(err, &te):
			return codeReply{ToolError: te.msg}, nil
		case err != nil:
			hostErr = err
			return codeReply{}, err
		}
		return codeReply{Value: v}, nil
	})
	switch {
	case hostErr != nil:
		return nil, hostErr
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return nil, &codeError{err}
	}
	return res, nil
}

// maxCodeLine bounds one line the child writes (an answer, or a tool call's arguments).
const maxCodeLine = CodeMaxResult + 64<<10

// runChild runs req in a code child and returns its result; serve answers an executor body's
// tool calls (nil for a code node), and an error from it ends the child and is returned.
func runChild(ctx context.Context, req codeRequest, serve func(tool string, args any) (codeReply, error)) (json.RawMessage, error) {
	if !childReady.Load() {
		return nil, errors.New("code runs in a child process of this program, and this program's main does not call workflow.Main")
	}
	line, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("code input: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("code: find this program: %w", err)
	}
	select {
	case codeSlots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-codeSlots }()
	c, err := startChild(self)
	if err != nil {
		return nil, err
	}
	// Whatever happens below, the child ends and is waited for before this returns.
	defer func() {
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
	}()
	go func() {
		// The request (and, below, replies): a child that does not read them is killed anyway.
		_, _ = c.stdin.Write(append(line, '\n'))
	}()
	quit := make(chan struct{})
	defer close(quit)
	return c.converse(ctx, c.read(quit), serve)
}

// child is a started code child process.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	errOut *capped // the start of its stderr, to say how it died
}

// startChild starts this program (self) as a code child, with none of the server's environment.
func startChild(self string) (*child, error) {
	cmd := exec.Command(self, codeChildArg)
	// Nothing of the server's environment: the child needs none of it (GOMAXPROCS=1: one core
	// for one interpreter, so a map of code nodes does not take the machine's every thread).
	cmd.Env = []string{"GOMAXPROCS=1", "GOTRACEBACK=none"}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	errOut := &capped{max: 8 << 10}
	cmd.Stderr = errOut
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("code: start its process: %w", err)
	}
	return &child{cmd: cmd, stdin: stdin, stdout: stdout, errOut: errOut}, nil
}

// childOutput is what the child writes, as read: ready is closed at its ready byte, then each
// line is a message, until an error (io.EOF: the output ended).
type childOutput struct {
	ready   chan struct{}
	msgs    chan codeMessage
	readErr chan error
}

// read reads the child's output in a goroutine that ends with it, or when quit is closed.
func (c *child) read(quit <-chan struct{}) childOutput {
	out := childOutput{ready: make(chan struct{}), msgs: make(chan codeMessage), readErr: make(chan error, 1)}
	go func() {
		br := bufio.NewReaderSize(c.stdout, 64<<10)
		if b, err := br.ReadByte(); err != nil {
			out.readErr <- err
			return
		} else if b != codeReady {
			out.readErr <- fmt.Errorf("the code's process answered %q, not its ready byte", b)
			return
		}
		close(out.ready)
		for {
			l, err := readCodeLine(br)
			if err != nil {
				out.readErr <- err
				return
			}
			var m codeMessage
			if err := json.Unmarshal(l, &m); err != nil {
				out.readErr <- fmt.Errorf("an unreadable line: %v", err)
				return
			}
			select {
			case out.msgs <- m:
			case <-quit:
				return
			}
		}
	}()
	return out
}

// converse waits for the child's answer, answering its tool calls with serve, under the time
// limits.
func (c *child) converse(ctx context.Context, out childOutput, serve func(tool string, args any) (codeReply, error)) (json.RawMessage, error) {
	// The time limit runs from the child's ready byte, written as the code starts (starting a
	// process on a loaded machine takes its own time, which is not the code's), and stops while
	// the parent answers a tool call.
	startBy := time.NewTimer(codeStart)
	defer startBy.Stop()
	left := CodeTimeout + codeGrace
	limit := time.NewTimer(time.Hour)
	limit.Stop()
	defer limit.Stop()
	var since time.Time
	ready := out.ready
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-startBy.C:
			return nil, fmt.Errorf("the code's process did not start within %s", codeStart)
		case <-ready:
			ready = nil
			startBy.Stop()
			since = time.Now()
			limit.Reset(left)
		case <-limit.C:
			return nil, fmt.Errorf("the code ran over its time limit (%s)", CodeTimeout)
		case m := <-out.msgs:
			if m.Call == nil {
				if m.Error != "" {
					return nil, errors.New(m.Error)
				}
				return m.Result, nil
			}
			if serve == nil {
				return nil, errors.New("the code's process asked for a tool call, which a code node has none of")
			}
			limit.Stop()
			left -= time.Since(since)
			rep, err := serve(m.Call.Tool, m.Call.Args)
			if err != nil {
				return nil, err
			}
			b, err := json.Marshal(rep)
			if err != nil {
				return nil, fmt.Errorf("encode %s's answer: %w", m.Call.Tool, err)
			}
			if _, err := c.stdin.Write(append(b, '\n')); err != nil {
				return nil, fmt.Errorf("the code's process stopped reading: %w", err)
			}
			since = time.Now()
			limit.Reset(max(left, 0))
		case err := <-out.readErr:
			if !errors.Is(err, io.EOF) {
				return nil, err
			}
			// The child's output ended without an answer: it died; its stderr says how.
			return nil, childDied(c.cmd.Wait(), c.errOut.buf.String())
		}
	}
}

// readCodeLine reads one line of at most maxCodeLine bytes.
func readCodeLine(br *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		chunk, err := br.ReadSlice('\n')
		out = append(out, chunk...)
		if len(out) > maxCodeLine {
			return nil, fmt.Errorf("the code's result is over %d bytes", CodeMaxResult)
		}
		if err == nil {
			return out, nil
		}
		if err != bufio.ErrBufferFull {
			return nil, err
		}
	}
}

// childDied says how a code child that ended without its answer died.
func childDied(waitErr error, stderr string) error {
	if strings.Contains(stderr, "out of memory") || strings.Contains(stderr, "cannot allocate memory") {
		return fmt.Errorf("%w (%d MiB)", ErrCodeMemory, CodeMemory>>20)
	}
	if strings.Contains(stderr, "stack overflow") || strings.Contains(stderr, "stack exceeds") {
		return errors.New("the code's values are nested too deeply (its stack overflowed)")
	}
	how := "exited"
	if waitErr != nil {
		how = waitErr.Error()
	}
	if line := firstLine(strings.TrimSpace(stderr)); line != "" {
		how += ": " + line
	}
	return fmt.Errorf("the code's process ended without an answer (%s)", how)
}

// capped keeps the first max bytes written to it. (The buffer is a field, not embedded: an
// embedded bytes.Buffer's ReadFrom would let io.Copy write past it.)
type capped struct {
	buf bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); len(p) > room {
		c.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return c.buf.Write(p)
}
