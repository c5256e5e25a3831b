package sandboxhelper

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"agentrun.dev/agentrun/internal/computer"
)

// Client is the host's side of one helper: it sends requests down the
// helper's stdin and matches the responses read from its stdout, so calls
// from several goroutines may overlap. Its methods are those of
// computer.Sandbox that talk to the sandbox (a provider embeds it and adds
// Kind, Info and Close).
type Client struct {
	stderr func() string // the tail of what the sandbox wrote to stderr, for errors

	wmu   sync.Mutex // serializes writes to stdin
	stdin io.WriteCloser

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan response
	streams map[int64]*stream // spawned processes, by id (stdio.go)
	closed  bool
	done    chan struct{} // closed when the helper's output has ended and the reader with it
}

// NewClient starts reading the helper's responses from stdout (until it
// ends: Done) and returns a client sending requests to stdin. stderr, when
// not nil, returns the end of the sandbox's error output, to explain a
// helper that died.
func NewClient(stdin io.WriteCloser, stdout io.Reader, stderr func() string) *Client {
	if stderr == nil {
		stderr = func() string { return "" }
	}
	c := &Client{stderr: stderr, stdin: stdin, pending: map[int64]chan response{}, streams: map[int64]*stream{}, done: make(chan struct{})}
	go c.readLoop(stdout)
	return c
}

// Done is closed when the helper's output has ended (it exited, or its
// sandbox died) and the client has stopped reading it; calls fail with
// computer.ErrClosed from then on.
func (c *Client) Done() <-chan struct{} { return c.done }

// Close makes further calls fail with computer.ErrClosed and closes the
// helper's stdin, which tells the helper to exit. It does not wait for the
// helper: the provider ends its sandbox, then waits for Done.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	// Not under wmu: a write blocked on a helper that stopped reading
	// must not hold up Close (closing ends that write).
	return c.stdin.Close()
}

// maxLine bounds one response from the helper; the helper is inside the
// sandbox, so what it says is not trusted to be small.
const maxLine = 32 << 20

// readLoop reads the helper's responses until its output ends, then fails
// every call still waiting.
func (c *Client) readLoop(r io.Reader) {
	defer close(c.done)
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := readLine(br, maxLine)
		if err != nil {
			break
		}
		var resp response
		if json.Unmarshal(line, &resp) != nil {
			continue
		}
		if resp.Event != nil {
			c.event(resp.Event)
			continue
		}
		c.mu.Lock()
		ch := c.pending[resp.ID]
		delete(c.pending, resp.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- resp // buffered
		}
	}
	// The helper is gone, and its spawned processes with it.
	c.endStreams()
	// Drain, so a runaway helper cannot block on a full pipe.
	io.Copy(io.Discard, r)
}

// readLine reads one line, discarding (and skipping) lines longer than max.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(buf)+len(chunk) <= max {
			buf = append(buf, chunk...)
		} else {
			buf = buf[:0]
			max = -1 // too long: keep reading to its end, then return nothing useful
		}
		switch {
		case err == nil:
			if max < 0 {
				return []byte("{}"), nil
			}
			return buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}

// exited is the error of a call to a helper whose output has ended: the call was sent and may
// have started (a command may have run part way).
func (c *Client) exited() error {
	if tail := strings.TrimSpace(c.stderr()); tail != "" {
		return fmt.Errorf("%w: the sandbox's helper exited (%s)", computer.ErrClosed, tail)
	}
	return fmt.Errorf("%w: the sandbox's helper exited", computer.ErrClosed)
}

// call sends req and waits for its response. When ctx ends first, a running
// command is cancelled in the sandbox.
func (c *Client) call(ctx context.Context, req request) (response, error) {
	return c.callHook(ctx, req, nil)
}

// callHook is call, with hook (when not nil) told the request's id under the client's lock
// before the request is sent.
func (c *Client) callHook(ctx context.Context, req request, hook func(id int64)) (response, error) {
	if _, ok := ctx.Deadline(); !ok && req.Op != "exec" {
		// Code in the sandbox can write to the helper's output and garble
		// an answer; no call waits for one forever.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, 2*time.Minute, errors.New("the sandbox did not answer in 2 minutes"))
		defer cancel()
	}
	ch := make(chan response, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return response{}, computer.NotStarted("the sandbox was closed before the call")
	}
	select {
	case <-c.done:
		c.mu.Unlock()
		return response{}, fmt.Errorf("%w (%w)", c.exited(), computer.ErrNotStarted)
	default:
	}
	c.nextID++
	req.ID = c.nextID
	c.pending[req.ID] = ch
	if hook != nil {
		hook(req.ID)
	}
	c.mu.Unlock()
	if err := c.send(req); err != nil {
		// The helper reads whole lines only: a request it could not be sent did not run.
		c.forget(req.ID)
		return response{}, computer.NotStarted("sending the call to the sandbox's helper: " + err.Error())
	}
	select {
	case r := <-ch:
		if r.Err != "" {
			if r.Agent {
				return r, &computer.AgentError{Msg: r.Err}
			}
			return r, errors.New("sandbox: " + r.Err)
		}
		return r, nil
	case <-c.done:
		c.forget(req.ID)
		return response{}, c.exited()
	case <-ctx.Done():
		c.forget(req.ID)
		if req.Op == "exec" {
			c.send(request{Op: "cancel", Target: req.ID})
		}
		return response{}, context.Cause(ctx)
	}
}

func (c *Client) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

func (c *Client) send(req request) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.stdin.Write(append(b, '\n'))
	return err
}

// Ping waits for the helper to answer and returns its PID namespace as
// /proc/self/ns/pid shows it ("pid:[inode]").
func (c *Client) Ping(ctx context.Context) (string, error) {
	r, err := c.call(ctx, request{Op: "ping"})
	return r.PidNS, err
}

func (c *Client) Exec(ctx context.Context, cmd string, opts computer.ExecOptions) (computer.ExecResult, error) {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	// The helper enforces the timeout; this bound is for a helper that
	// stopped answering, so a caller without a deadline is not stuck.
	ctx, cancel := context.WithTimeoutCause(ctx, timeout+30*time.Second,
		errors.New("the sandbox did not answer 30 s after the command's timeout"))
	defer cancel()
	r, err := c.call(ctx, request{Op: "exec", Cmd: cmd, Workdir: opts.Workdir, Env: opts.Env,
		TimeoutMS: timeout.Milliseconds(), MaxOutput: opts.MaxOutput})
	if err != nil {
		return computer.ExecResult{}, err
	}
	if r.Exec == nil {
		return computer.ExecResult{}, errors.New("sandbox: exec answered without a result")
	}
	return *r.Exec, nil
}

func (c *Client) Start(ctx context.Context, cmd string, opts computer.ExecOptions) (computer.ProcessInfo, error) {
	r, err := c.call(ctx, request{Op: "start", Cmd: cmd, Workdir: opts.Workdir, Env: opts.Env})
	if err != nil {
		return computer.ProcessInfo{}, err
	}
	if r.Proc == nil {
		return computer.ProcessInfo{}, errors.New("sandbox: start answered without a process")
	}
	return *r.Proc, nil
}

func (c *Client) Processes(ctx context.Context) ([]computer.ProcessInfo, error) {
	r, err := c.call(ctx, request{Op: "list"})
	return r.Procs, err
}

func (c *Client) Output(ctx context.Context, id string, offset int64) (computer.Output, error) {
	r, err := c.call(ctx, request{Op: "output", Proc: id, Offset: offset})
	if err != nil {
		return computer.Output{}, err
	}
	if r.Output == nil {
		return computer.Output{}, errors.New("sandbox: output answered without output")
	}
	return *r.Output, nil
}

func (c *Client) Stop(ctx context.Context, id string) (computer.ProcessInfo, error) {
	r, err := c.call(ctx, request{Op: "stop", Proc: id})
	if err != nil {
		return computer.ProcessInfo{}, err
	}
	if r.Proc == nil {
		return computer.ProcessInfo{}, errors.New("sandbox: stop answered without a process")
	}
	return *r.Proc, nil
}

func (c *Client) ReadFile(ctx context.Context, path string) ([]byte, error) {
	r, err := c.call(ctx, request{Op: "read", Path: path})
	return r.Data, err
}

func (c *Client) WriteFile(ctx context.Context, path string, data []byte) error {
	if len(data) > maxFileBytes {
		return computer.Agentf("content is %d bytes; writing is limited to %d", len(data), maxFileBytes)
	}
	_, err := c.call(ctx, request{Op: "write", Path: path, Data: data})
	return err
}

// TailBuffer keeps the last bytes written to it: a sandbox's stderr, to
// explain a failure.
type TailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

// NewTailBuffer returns a TailBuffer keeping the last max bytes.
func NewTailBuffer(max int) *TailBuffer { return &TailBuffer{max: max} }

func (b *TailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = b.buf[len(b.buf)-b.max:]
	}
	return len(p), nil
}

func (b *TailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
