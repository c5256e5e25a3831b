package local

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
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"agentrun.dev/agentrun/internal/computer"
)

// Sandbox is a running local sandbox. It implements computer.Sandbox.
type Sandbox struct {
	spec   computer.Spec
	limits computer.Limits
	cg     *cgroups
	info   []string
	pidNS  string // "pid:[inode]" of the sandbox's PID namespace

	cmd        *exec.Cmd
	stderr     *tailBuffer
	readerDone chan struct{}

	wmu   sync.Mutex // serializes writes to stdin
	stdin io.WriteCloser

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan response
	closed  bool
	dead    chan struct{} // closed when the helper's output ends

	closeOnce sync.Once
	closeErr  error
}

var _ computer.Sandbox = (*Sandbox)(nil)

func (s *Sandbox) Kind() computer.Kind { return computer.KindSandbox }
func (s *Sandbox) Info() []string      { return append([]string(nil), s.info...) }

// maxLine bounds one response from the helper; the helper is inside the
// sandbox, so what it says is not trusted to be small.
const maxLine = 32 << 20

// readLoop reads the helper's responses until its output ends, then fails
// every call still waiting.
func (s *Sandbox) readLoop(r io.Reader) {
	defer close(s.readerDone)
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
		s.mu.Lock()
		ch := s.pending[resp.ID]
		delete(s.pending, resp.ID)
		s.mu.Unlock()
		if ch != nil {
			ch <- resp // buffered
		}
	}
	s.mu.Lock()
	close(s.dead)
	s.mu.Unlock()
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

// call sends req and waits for its response. When ctx ends first, a running
// command is cancelled in the sandbox.
func (s *Sandbox) call(ctx context.Context, req request) (response, error) {
	if _, ok := ctx.Deadline(); !ok && req.Op != "exec" {
		// Code in the sandbox can write to the helper's output and garble
		// an answer; no call waits for one forever.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, 2*time.Minute, errors.New("the sandbox did not answer in 2 minutes"))
		defer cancel()
	}
	ch := make(chan response, 1)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return response{}, computer.ErrClosed
	}
	select {
	case <-s.dead:
		s.mu.Unlock()
		return response{}, fmt.Errorf("%w: the sandbox's helper exited (%s)", computer.ErrClosed, s.stderr.String())
	default:
	}
	s.nextID++
	req.ID = s.nextID
	s.pending[req.ID] = ch
	s.mu.Unlock()
	if err := s.send(req); err != nil {
		s.forget(req.ID)
		return response{}, fmt.Errorf("%w: %v", computer.ErrClosed, err)
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
	case <-s.dead:
		s.forget(req.ID)
		return response{}, fmt.Errorf("%w: the sandbox's helper exited", computer.ErrClosed)
	case <-ctx.Done():
		s.forget(req.ID)
		if req.Op == "exec" {
			s.send(request{Op: "cancel", Target: req.ID})
		}
		return response{}, context.Cause(ctx)
	}
}

func (s *Sandbox) forget(id int64) {
	s.mu.Lock()
	delete(s.pending, id)
	s.mu.Unlock()
}

func (s *Sandbox) send(req request) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err = s.stdin.Write(append(b, '\n'))
	return err
}

func (s *Sandbox) Exec(ctx context.Context, cmd string, opts computer.ExecOptions) (computer.ExecResult, error) {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	// The helper enforces the timeout; this bound is for a helper that
	// stopped answering, so a caller without a deadline is not stuck.
	ctx, cancel := context.WithTimeoutCause(ctx, timeout+30*time.Second,
		errors.New("the sandbox did not answer 30 s after the command's timeout"))
	defer cancel()
	r, err := s.call(ctx, request{Op: "exec", Cmd: cmd, Workdir: opts.Workdir, Env: opts.Env,
		TimeoutMS: timeout.Milliseconds(), MaxOutput: opts.MaxOutput})
	if err != nil {
		return computer.ExecResult{}, err
	}
	if r.Exec == nil {
		return computer.ExecResult{}, errors.New("sandbox: exec answered without a result")
	}
	return *r.Exec, nil
}

func (s *Sandbox) Start(ctx context.Context, cmd string, opts computer.ExecOptions) (computer.ProcessInfo, error) {
	r, err := s.call(ctx, request{Op: "start", Cmd: cmd, Workdir: opts.Workdir, Env: opts.Env})
	if err != nil {
		return computer.ProcessInfo{}, err
	}
	if r.Proc == nil {
		return computer.ProcessInfo{}, errors.New("sandbox: start answered without a process")
	}
	return *r.Proc, nil
}

func (s *Sandbox) Processes(ctx context.Context) ([]computer.ProcessInfo, error) {
	r, err := s.call(ctx, request{Op: "list"})
	return r.Procs, err
}

func (s *Sandbox) Output(ctx context.Context, id string, offset int64) (computer.Output, error) {
	r, err := s.call(ctx, request{Op: "output", Proc: id, Offset: offset})
	if err != nil {
		return computer.Output{}, err
	}
	if r.Output == nil {
		return computer.Output{}, errors.New("sandbox: output answered without output")
	}
	return *r.Output, nil
}

func (s *Sandbox) Stop(ctx context.Context, id string) (computer.ProcessInfo, error) {
	r, err := s.call(ctx, request{Op: "stop", Proc: id})
	if err != nil {
		return computer.ProcessInfo{}, err
	}
	if r.Proc == nil {
		return computer.ProcessInfo{}, errors.New("sandbox: stop answered without a process")
	}
	return *r.Proc, nil
}

func (s *Sandbox) ReadFile(ctx context.Context, path string) ([]byte, error) {
	r, err := s.call(ctx, request{Op: "read", Path: path})
	return r.Data, err
}

func (s *Sandbox) WriteFile(ctx context.Context, path string, data []byte) error {
	if len(data) > maxFileBytes {
		return computer.Agentf("content is %d bytes; writing is limited to %d", len(data), maxFileBytes)
	}
	_, err := s.call(ctx, request{Op: "write", Path: path, Data: data})
	return err
}

// Close kills the sandbox (bwrap and, through --die-with-parent and the PID
// namespace, everything in it), then checks that no process of the sandbox
// is left and removes its cgroups.
func (s *Sandbox) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Sandbox) close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stdin.Close()
	if s.cmd.Process != nil {
		s.cmd.Process.Kill()
	}
	var errs []error
	werr := make(chan error, 1)
	go func() { werr <- s.cmd.Wait() }()
	select {
	case <-werr:
	case <-time.After(10 * time.Second):
		errs = append(errs, errors.New("bwrap did not exit 10 s after SIGKILL"))
	}
	<-s.readerDone
	if s.cg != nil {
		if err := s.cg.kill(5 * time.Second); err != nil {
			errs = append(errs, err)
		} else if err := s.cg.remove(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.pidNS != "" {
		if left := waitNamespaceEmpty(s.pidNS, 5*time.Second); len(left) > 0 {
			errs = append(errs, fmt.Errorf("sandbox processes %v survived Close", left))
		}
	}
	return errors.Join(errs...)
}

// waitNamespaceEmpty waits until no host process is in the PID namespace ns,
// killing stragglers, and returns those that would not go.
func waitNamespaceEmpty(ns string, wait time.Duration) []int {
	deadline := time.Now().Add(wait)
	for {
		left := namespaceProcs(ns)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		for _, p := range left {
			killPID(p)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// namespaceProcs lists host processes in PID namespace ns (those this user
// may look at, which includes every process of a sandbox it made).
func namespaceProcs(ns string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if link, err := os.Readlink(filepath.Join("/proc", e.Name(), "ns", "pid")); err == nil && link == ns && !dead(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func killPID(pid int) { syscall.Kill(pid, syscall.SIGKILL) }

// dead reports whether pid is a zombie (or gone): the sandbox's PID 1 ends
// as one, reparented to the host's init, which reaps it in its own time.
func dead(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	// The state follows the command name, which is in parentheses and may
	// itself hold ") ".
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] == 'Z' || b[i+2] == 'X'
}

// PIDNamespace returns the sandbox's PID namespace as /proc/PID/ns/pid shows
// it, for tests that check nothing of it survives.
func (s *Sandbox) PIDNamespace() string { return s.pidNS }
