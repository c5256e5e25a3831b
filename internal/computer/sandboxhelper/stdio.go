package sandboxhelper

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"agentrun.dev/agentrun/internal/computer"
)

// Spawned processes (computer.Spawner) ride on the same line protocol as everything else: spawn
// starts one (its id is the spawn request's), stdin writes to it (answered once written, so the
// host's writes keep their order and a process that does not read holds its writer up), and its
// stdout and stderr come back unasked as events. Output is flow-controlled per stream: the helper
// sends at most streamWindow bytes the host has not acknowledged (ack), so a host that does not
// read holds the process up instead of filling the memory of either side. kill ends the process
// group; the exit event follows the end of both streams.

const (
	streamChunk  = 32 << 10 // bytes per output event
	streamWindow = 1 << 20  // unacknowledged output bytes per stream
	ackEvery     = 64 << 10 // the host acknowledges at least this much at once (or all it has)
	stdinChunk   = 256 << 10
	maxSpawned   = 32 // spawned processes running at once
)

// spawned is a running spawned process on the helper's side.
type spawned struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	wmu   sync.Mutex // one stdin write at a time

	mu      sync.Mutex
	cond    *sync.Cond
	unacked [3]int64
	killed  bool
}

// spawn starts req.Argv through the limits wrapper (the sandbox's rlimits and cgroups bind it)
// in its own process group, and streams its output.
func (h *helper) spawn(req request) response {
	if len(req.Argv) == 0 || req.Argv[0] == "" {
		return agentErr(0, "no command to start")
	}
	bin := req.Argv[0]
	if !strings.Contains(bin, "/") {
		p, err := exec.LookPath(bin)
		if err != nil {
			return agentErr(0, "command %q is not in the computer (PATH %s)", bin, os.Getenv("PATH"))
		}
		bin = p
	} else if st, err := os.Stat(resolve(bin)); err != nil || st.IsDir() {
		return agentErr(0, "command %s is not a file in the computer", bin)
	} else {
		bin = resolve(bin)
	}
	cmd, err := h.command(request{Workdir: req.Workdir, Env: req.Env})
	if err != nil {
		return agentErr(0, "%v", err)
	}
	// The wrapper's argv ends in the command's: HelperPath limitsArg LIMITS bin args...
	cmd.Args = append(cmd.Args[:3:3], append([]string{bin}, req.Argv[1:]...)...)
	cmd.Path = HelperPath
	cmd.WaitDelay = 0
	p := &spawned{cmd: cmd}
	p.cond = sync.NewCond(&p.mu)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return response{Err: "spawn: " + err.Error()}
	}
	// Pipes of our own rather than StdoutPipe: Wait then returns when the process exits, even
	// while something it started holds its output open.
	outR, outW, err := os.Pipe()
	if err != nil {
		return response{Err: "spawn: " + err.Error()}
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return response{Err: "spawn: " + err.Error()}
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	p.stdin = stdin
	h.mu.Lock()
	if h.spawned == nil {
		h.spawned = map[int64]*spawned{}
	}
	if len(h.spawned) >= maxSpawned {
		h.mu.Unlock()
		closeFiles(outR, outW, errR, errW)
		return agentErr(0, "%d spawned processes are running already", len(h.spawned))
	}
	h.spawned[req.ID] = p
	h.mu.Unlock()
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		h.mu.Lock()
		delete(h.spawned, req.ID)
		h.mu.Unlock()
		closeFiles(outR, errR)
		return response{Err: "spawn " + bin + ": " + err.Error()}
	}
	var pumps sync.WaitGroup
	pumps.Add(2)
	go h.pump(req.ID, p, 1, outR, &pumps)
	go h.pump(req.ID, p, 2, errR, &pumps)
	go func() { // ends when the process does, or with the helper
		cmd.Wait()
		code, status := cmd.ProcessState.ExitCode(), cmd.ProcessState.String()
		// Whatever it left in its group goes with it; output still in the pipes is sent, but
		// not waited for beyond a moment (a process outside the group may hold them open).
		killGroup(cmd, syscall.SIGKILL)
		drained := make(chan struct{})
		go func() { pumps.Wait(); close(drained) }()
		select {
		case <-drained:
		case <-time.After(2 * time.Second):
			p.unblock()
			closeFiles(outR, errR)
			<-drained
		}
		closeFiles(outR, errR)
		h.mu.Lock()
		delete(h.spawned, req.ID)
		h.mu.Unlock()
		h.reply(response{Event: &event{Sid: req.ID, Exit: &code, Status: status}})
	}()
	return response{PID: cmd.Process.Pid}
}

// pump sends what the process writes to fd as events, at most streamWindow bytes ahead of the
// host's acknowledgements (none once the process is killed: the rest is sent for the host to drop).
func (h *helper) pump(sid int64, p *spawned, fd int, r io.Reader, wg *sync.WaitGroup) {
	defer wg.Done()
	buf := make([]byte, streamChunk)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			h.reply(response{Event: &event{Sid: sid, Fd: fd, Data: buf[:n]}})
			p.mu.Lock()
			p.unacked[fd] += int64(n)
			for p.unacked[fd] > streamWindow && !p.killed {
				p.cond.Wait()
			}
			p.mu.Unlock()
		}
		if err != nil {
			h.reply(response{Event: &event{Sid: sid, Fd: fd, EOF: true}})
			return
		}
	}
}

func closeFiles(fs ...*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

func (h *helper) spawnedProc(sid int64) *spawned {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.spawned[sid]
}

func (h *helper) stdin(req request) response {
	p := h.spawnedProc(req.Sid)
	if p == nil {
		return agentErr(0, "the process has exited")
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if req.EOF {
		p.stdin.Close()
		return response{}
	}
	if _, err := p.stdin.Write(req.Data); err != nil {
		return agentErr(0, "write to the process's stdin: %v", errors.Unwrap(err))
	}
	return response{}
}

func (h *helper) ack(req request) {
	p := h.spawnedProc(req.Sid)
	if p == nil || req.Fd < 1 || req.Fd > 2 {
		return
	}
	p.mu.Lock()
	p.unacked[req.Fd] -= req.N
	p.cond.Broadcast()
	p.mu.Unlock()
}

func (h *helper) kill(req request) response {
	p := h.spawnedProc(req.Sid)
	if p == nil {
		return response{} // over already
	}
	p.unblock()
	killGroup(p.cmd, syscall.SIGKILL)
	return response{}
}

// unblock marks p killed and wakes its pumps: they send the rest without waiting on the host.
func (p *spawned) unblock() {
	p.mu.Lock()
	p.killed = true
	p.cond.Broadcast()
	p.mu.Unlock()
}

// forward listens on 127.0.0.1:req.Port (any port when that one is taken) and joins each
// connection to the unix socket req.Socket.
func (h *helper) forward(req request) response {
	h.mu.Lock()
	defer h.mu.Unlock()
	if addr, ok := h.forwards[req.Socket]; ok {
		return response{Addr: addr}
	}
	if st, err := os.Stat(req.Socket); err != nil || st.Mode()&os.ModeSocket == 0 {
		return response{Err: fmt.Sprintf("forward: %s is not a socket in the computer", req.Socket)}
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", req.Port))
	if err != nil && req.Port != 0 {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		return response{Err: "forward: " + err.Error()}
	}
	if h.forwards == nil {
		h.forwards = map[string]string{}
	}
	addr := ln.Addr().String()
	h.forwards[req.Socket] = addr
	go func() { // lives as long as the helper, as the listener does
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go join(c, req.Socket)
		}
	}()
	return response{Addr: addr}
}

// join copies between c and a new connection to the unix socket until either side ends.
func join(c net.Conn, socket string) {
	defer c.Close()
	u, err := net.DialTimeout("unix", socket, 10*time.Second)
	if err != nil {
		return
	}
	defer u.Close()
	done := make(chan struct{}, 2)
	go func() { io.Copy(u, c); u.(*net.UnixConn).CloseWrite(); done <- struct{}{} }()
	go func() { io.Copy(c, u); c.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	<-done
	<-done
}

// The host's side.

// Spawn starts argv inside the sandbox (computer.Spawner).
func (c *Client) Spawn(ctx context.Context, argv []string, opts computer.SpawnOptions) (computer.StdioProcess, error) {
	s := &stream{c: c, done: make(chan struct{}), exit: -1}
	s.out = &streamBuf{s: s, fd: 1}
	s.errs = &streamBuf{s: s, fd: 2}
	s.out.cond = sync.NewCond(&s.out.mu)
	s.errs.cond = sync.NewCond(&s.errs.mu)
	r, err := c.callHook(ctx, request{Op: "spawn", Argv: argv, Workdir: opts.Workdir, Env: opts.Env}, func(id int64) {
		s.sid = id
		c.streams[id] = s // under c.mu, before the request goes: its events may come before the answer
	})
	if err != nil {
		c.dropStream(s.sid)
		return nil, err
	}
	s.pid = r.PID
	return s, nil
}

// ForwardUnix is computer.Spawner's.
func (c *Client) ForwardUnix(ctx context.Context, port int, socket string) (string, error) {
	r, err := c.call(ctx, request{Op: "forward", Port: port, Socket: socket})
	return r.Addr, err
}

func (c *Client) dropStream(sid int64) {
	c.mu.Lock()
	delete(c.streams, sid)
	c.mu.Unlock()
}

// event hands a spawned process's event to its stream (from readLoop: it must not block).
func (c *Client) event(ev *event) {
	c.mu.Lock()
	s := c.streams[ev.Sid]
	if ev.Exit != nil {
		delete(c.streams, ev.Sid)
	}
	c.mu.Unlock()
	if s == nil {
		return
	}
	switch {
	case ev.Exit != nil:
		s.finish(*ev.Exit, ev.Status)
	case ev.Fd == 1:
		s.out.put(ev.Data, ev.EOF)
	case ev.Fd == 2:
		s.errs.put(ev.Data, ev.EOF)
	}
}

// endStreams ends every stream when the helper's output has ended: the processes died with it.
func (c *Client) endStreams() {
	c.mu.Lock()
	ss := c.streams
	c.streams = map[int64]*stream{}
	c.mu.Unlock()
	for _, s := range ss {
		s.out.put(nil, true)
		s.errs.put(nil, true)
		s.finish(-1, "killed with its computer (the sandbox's helper ended)")
	}
}

// stream is a spawned process on the host's side.
type stream struct {
	c         *Client
	sid       int64
	pid       int
	out, errs *streamBuf
	wmu       sync.Mutex
	stdinDone bool

	once   sync.Once
	done   chan struct{}
	exit   int
	status string

	closeOnce sync.Once
}

func (s *stream) Stdin() io.WriteCloser { return stdinWriter{s} }
func (s *stream) Stdout() io.Reader     { return s.out }
func (s *stream) Stderr() io.Reader     { return s.errs }
func (s *stream) PID() int              { return s.pid }
func (s *stream) Done() <-chan struct{} { return s.done }
func (s *stream) ExitCode() int {
	select {
	case <-s.done:
		return s.exit
	default:
		return -1
	}
}

func (s *stream) ExitStatus() string {
	select {
	case <-s.done:
		return s.status
	default:
		return ""
	}
}

func (s *stream) finish(code int, status string) {
	s.once.Do(func() {
		s.exit, s.status = code, status
		// Output not read by now is not waited for (the process is gone): readers get what
		// came, then EOF.
		s.out.put(nil, true)
		s.errs.put(nil, true)
		close(s.done)
	})
}

func (s *stream) Close() error {
	var err error
	s.closeOnce.Do(func() {
		select {
		case <-s.done:
		default:
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, kerr := s.c.call(ctx, request{Op: "kill", Sid: s.sid}); kerr != nil && !errors.Is(kerr, computer.ErrClosed) {
				err = fmt.Errorf("kill the spawned process: %w", kerr)
			}
			select {
			case <-s.done:
			case <-s.c.done:
			case <-ctx.Done():
				err = errors.Join(err, errors.New("the spawned process did not end 10 s after SIGKILL"))
			}
		}
		s.out.close()
		s.errs.close()
	})
	return err
}

// stdinWriter writes to a spawned process's stdin, each chunk answered once written.
type stdinWriter struct{ s *stream }

func (w stdinWriter) Write(p []byte) (int, error) {
	w.s.wmu.Lock()
	defer w.s.wmu.Unlock()
	if w.s.stdinDone {
		return 0, os.ErrClosed
	}
	n := 0
	for n < len(p) {
		chunk := p[n:min(len(p), n+stdinChunk)]
		if _, err := w.s.c.call(context.Background(), request{Op: "stdin", Sid: w.s.sid, Data: chunk}); err != nil {
			return n, err
		}
		n += len(chunk)
	}
	return n, nil
}

func (w stdinWriter) Close() error {
	w.s.wmu.Lock()
	defer w.s.wmu.Unlock()
	if w.s.stdinDone {
		return nil
	}
	w.s.stdinDone = true
	select {
	case <-w.s.done:
		return nil
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := w.s.c.call(ctx, request{Op: "stdin", Sid: w.s.sid, EOF: true})
	if err != nil && computer.IsAgentError(err) {
		return nil // the process has exited: its stdin is closed
	}
	return err
}

// streamBuf is one output stream of a spawned process: what came and was not read yet.
type streamBuf struct {
	s  *stream
	fd int

	mu       sync.Mutex
	cond     *sync.Cond
	data     []byte
	eof      bool
	closed   bool
	consumed int64
}

func (b *streamBuf) put(p []byte, eof bool) {
	b.mu.Lock()
	if !b.closed {
		b.data = append(b.data, p...)
	}
	if eof {
		b.eof = true
	}
	b.cond.Broadcast()
	b.mu.Unlock()
}

func (b *streamBuf) close() {
	b.mu.Lock()
	b.closed, b.data = true, nil
	b.cond.Broadcast()
	b.mu.Unlock()
}

func (b *streamBuf) Read(p []byte) (int, error) {
	b.mu.Lock()
	for len(b.data) == 0 && !b.eof && !b.closed {
		b.cond.Wait()
	}
	if b.closed || len(b.data) == 0 {
		b.mu.Unlock()
		return 0, io.EOF
	}
	n := copy(p, b.data)
	b.data = b.data[n:]
	if len(b.data) == 0 {
		b.data = nil // let the buffer go
	}
	b.consumed += int64(n)
	var ack int64
	if b.consumed >= ackEvery || len(b.data) == 0 {
		ack, b.consumed = b.consumed, 0
	}
	eof := b.eof
	b.mu.Unlock()
	if ack > 0 && !eof {
		b.s.c.send(request{Op: "ack", Sid: b.s.sid, Fd: b.fd, N: ack})
	}
	return n, nil
}
