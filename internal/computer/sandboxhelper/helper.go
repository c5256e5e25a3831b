package sandboxhelper

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"agentrun.dev/agentrun/internal/computer"
)

// The sandbox's processes are started by a helper inside it: the host's own
// executable, made visible read-only at HelperPath and run with helperArg.
// One long-lived helper per computer means one set of namespaces, so a
// background server started by one call is reachable from the next (with
// network unshared each would get its own loopback), and the PID
// namespace holds every process of the computer, which dies with it.
const (
	// HelperPath is where a provider puts the server's executable inside
	// the sandbox (read-only).
	HelperPath = "/.agentrun/helper"
	helperArg  = "__agentrun-sandbox-helper"
	// limitsArg makes the executable set resource limits on itself and exec
	// the command: the helper starts each command through it, so the limits
	// bind the command and its children but not the helper.
	limitsArg = "__agentrun-sandbox-limits"
)

// Main runs this package's re-exec entry points: when args (the program's arguments, os.Args[1:])
// name one, it runs it and returns its exit code and true; otherwise it returns false at once.
// The sandbox runs the server's own executable as its helper, so the binary's main calls Main
// first, explicitly, and so does the TestMain of every test binary whose tests start sandboxes
// (they re-execute the test binary).
func Main(args []string) (code int, ok bool) {
	if len(args) < 1 {
		return 0, false
	}
	switch args[0] {
	case helperArg:
		return helperMain(args[1:]), true
	case limitsArg:
		return limitsMain(args[1:]), true
	}
	return 0, false
}

// limitsMain: limitsArg JSON-limits argv...
func limitsMain(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "agentrun sandbox: bad limits call")
		return 127
	}
	var l Limits
	if err := json.Unmarshal([]byte(args[0]), &l); err != nil {
		fmt.Fprintln(os.Stderr, "agentrun sandbox:", err)
		return 127
	}
	// Into the sandbox's cgroups first: a command that cannot be bounded does not run.
	for _, fd := range l.CgroupFDs {
		f := os.NewFile(uintptr(fd), "cgroup.procs")
		_, err := f.Write([]byte("0")) // 0: the writing process
		f.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "agentrun sandbox: enter the sandbox's cgroup: %v\n", err)
			return 127
		}
	}
	set := func(res int, v int64) {
		if v > 0 {
			lim := syscall.Rlimit{Cur: uint64(v), Max: uint64(v)}
			if err := syscall.Setrlimit(res, &lim); err != nil {
				fmt.Fprintf(os.Stderr, "agentrun sandbox: setrlimit %d: %v\n", res, err)
			}
		}
	}
	set(syscall.RLIMIT_AS, l.AS)
	set(syscall.RLIMIT_CPU, l.CPU)
	set(rlimitNPROC, l.NProc)
	set(syscall.RLIMIT_FSIZE, l.MaxFile)
	err := syscall.Exec(args[1], args[1:], os.Environ())
	fmt.Fprintf(os.Stderr, "agentrun sandbox: exec %s: %v\n", args[1], err)
	return 127
}

const rlimitNPROC = 6 // RLIMIT_NPROC on Linux; the syscall package does not name it

// helper is the state of the helper process inside the sandbox.
type helper struct {
	limits Limits
	env    []string
	// cgroups are the inherited cgroup.procs files (Limits.CgroupFDs), handed to each command.
	cgroups []*os.File

	outMu sync.Mutex
	out   *bufio.Writer

	mu      sync.Mutex
	procs   map[string]*bgProc
	nextID  int
	cancels map[int64]context.CancelFunc
	// spawned are the running processes started by spawn, by their spawn request's id, and
	// forwards the loopback listeners of forward, by socket (stdio.go).
	spawned  map[int64]*spawned
	forwards map[string]string
}

func helperMain(args []string) int {
	h := &helper{procs: map[string]*bgProc{}, cancels: map[int64]context.CancelFunc{},
		out: bufio.NewWriter(os.Stdout)}
	if len(args) < 1 || json.Unmarshal([]byte(args[0]), &h.limits) != nil {
		fmt.Fprintln(os.Stderr, "agentrun sandbox: bad helper call")
		return 2
	}
	h.env = os.Environ()
	for _, fd := range h.limits.CgroupFDs {
		// Not inherited by commands except as their wrapper's ExtraFiles (command), which closes
		// them before the command runs.
		syscall.CloseOnExec(fd)
		h.cgroups = append(h.cgroups, os.NewFile(uintptr(fd), "cgroup.procs"))
	}
	// Not dumpable: code in the sandbox (the same user, without capabilities) cannot open the
	// helper's files through /proc/PID/fd, the cgroup files among them, nor ptrace it.
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); errno != 0 {
		fmt.Fprintln(os.Stderr, "agentrun sandbox: prctl(PR_SET_DUMPABLE):", errno)
		return 2
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			var req request
			if jerr := json.Unmarshal(line, &req); jerr != nil {
				h.reply(response{Err: "bad request: " + jerr.Error()})
			} else {
				// Each request in its own goroutine, so a long command does
				// not hold up the others. They end with their request, or with
				// the helper (and the whole PID namespace) at Close.
				go h.handle(req)
			}
		}
		if err != nil {
			// The host closed our stdin: the computer is closing. Its
			// processes die with the PID namespace when we return.
			return 0
		}
	}
}

func (h *helper) reply(r response) {
	b, err := json.Marshal(r)
	if err != nil {
		b, _ = json.Marshal(response{ID: r.ID, Err: err.Error()})
	}
	h.outMu.Lock()
	defer h.outMu.Unlock()
	h.out.Write(b)
	h.out.WriteByte('\n')
	h.out.Flush()
}

func agentErr(id int64, format string, args ...any) response {
	return response{ID: id, Err: fmt.Sprintf(format, args...), Agent: true}
}

func (h *helper) handle(req request) {
	var r response
	switch req.Op {
	case "ping":
		ns, _ := os.Readlink("/proc/self/ns/pid")
		r = response{PidNS: ns}
	case "exec":
		r = h.exec(req)
	case "start":
		r = h.start(req)
	case "list":
		r = response{Procs: h.list()}
	case "output":
		r = h.output(req)
	case "stop":
		r = h.stop(req)
	case "cancel":
		h.mu.Lock()
		if c := h.cancels[req.Target]; c != nil {
			c()
		}
		h.mu.Unlock()
	case "read":
		r = h.read(req)
	case "write":
		r = h.write(req)
	case "spawn":
		r = h.spawn(req)
	case "stdin":
		r = h.stdin(req)
	case "ack":
		h.ack(req)
		return // unanswered: the host does not wait on it
	case "kill":
		r = h.kill(req)
	case "forward":
		r = h.forward(req)
	default:
		r = response{Err: "unknown op " + req.Op}
	}
	r.ID = req.ID
	h.reply(r)
}

// resolve makes a sandbox path absolute: relative paths are under /workspace.
func resolve(p string) string {
	if p == "" {
		return "/workspace"
	}
	if !path.IsAbs(p) {
		p = path.Join("/workspace", p)
	}
	return path.Clean(p)
}

func (h *helper) command(req request) (*exec.Cmd, error) {
	dir := resolve(req.Workdir)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("working folder %s does not exist in the sandbox", dir)
	}
	for _, e := range req.Env {
		if !strings.Contains(e, "=") || strings.HasPrefix(e, "=") {
			return nil, fmt.Errorf("environment entry %q is not NAME=value", e)
		}
	}
	lim := h.limits
	lim.CgroupFDs = nil
	for i := range h.cgroups {
		lim.CgroupFDs = append(lim.CgroupFDs, 3+i) // ExtraFiles start at fd 3
	}
	// Not a login shell, and no startup files: bash would otherwise run ~/.bash_profile, ~/.bashrc
	// or $BASH_ENV (files the agent can write) before every command, where approvals never see
	// what they run. PATH and the rest come from the sandbox's own environment.
	cmd := exec.Command(HelperPath, limitsArg, mustJSON(lim), "/bin/bash", "--noprofile", "--norc", "-c", req.Cmd)
	cmd.ExtraFiles = h.cgroups
	cmd.Dir = dir
	cmd.Env = withoutStartupFiles(append(append([]string(nil), h.env...), req.Env...))
	// Its own process group, so a timeout or stop kills what it started too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A descendant that leaves the group may hold the output pipes open;
	// do not wait for it once the command itself has ended.
	cmd.WaitDelay = time.Second
	return cmd, nil
}

// withoutStartupFiles drops the variables that make a non-interactive shell read a file first
// (BASH_ENV, ENV) or run text before its commands (PROMPT_COMMAND, PS4 with xtrace, exported
// functions).
func withoutStartupFiles(env []string) []string {
	out := env[:0]
	for _, e := range env {
		name, _, _ := strings.Cut(e, "=")
		switch {
		case name == "BASH_ENV", name == "ENV", name == "PROMPT_COMMAND", name == "PS4",
			name == "SHELLOPTS", name == "BASHOPTS", strings.HasPrefix(name, "BASH_FUNC_"):
			continue
		}
		out = append(out, e)
	}
	return out
}

func killGroup(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, sig)
	}
}

func (h *helper) exec(req request) response {
	cmd, err := h.command(req)
	if err != nil {
		return agentErr(0, "%v", err)
	}
	max := req.MaxOutput
	if max <= 0 {
		max = defaultMaxOutput
	}
	stdout, stderr := &capBuffer{max: max}, &capBuffer{max: max}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	timeout := time.Duration(req.TimeoutMS) * time.Millisecond
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.mu.Lock()
	h.cancels[req.ID] = cancel
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.cancels, req.ID)
		h.mu.Unlock()
	}()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		// The processes of a command just ended (a fork loop, say) may still be exiting and hold
		// the sandbox's process limit for a moment: try again briefly before giving up.
		for i := 0; i < 40 && errors.Is(err, syscall.EAGAIN); i++ {
			time.Sleep(50 * time.Millisecond)
			next, cerr := h.command(req)
			if cerr != nil {
				return agentErr(0, "%v", cerr)
			}
			next.Stdout, next.Stderr = stdout, stderr
			cmd = next
			err = cmd.Start()
		}
		if err != nil {
			return response{Err: "start: " + err.Error()}
		}
	}
	done := make(chan struct{})
	timedOut := false
	var killWG sync.WaitGroup
	killWG.Add(1)
	go func() {
		defer killWG.Done()
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			timedOut = true
			killGroup(cmd, syscall.SIGKILL)
		case <-ctx.Done():
			killGroup(cmd, syscall.SIGKILL)
		}
	}()
	werr := cmd.Wait()
	close(done)
	killWG.Wait()
	// Whatever the command left behind in its group goes with it.
	killGroup(cmd, syscall.SIGKILL)
	res := &computer.ExecResult{ExitCode: cmd.ProcessState.ExitCode(), Stdout: stdout.String(),
		Stderr: stderr.String(), TimedOut: timedOut, Truncated: stdout.cut || stderr.cut,
		Duration: time.Since(start)}
	if werr != nil && !errors.Is(werr, exec.ErrWaitDelay) {
		var ee *exec.ExitError
		if !errors.As(werr, &ee) {
			return response{Err: "wait: " + werr.Error()}
		}
	}
	return response{Exec: res}
}

// capBuffer keeps the first max bytes written.
type capBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
	cut bool
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := b.max - len(b.buf)
	if room < len(p) {
		b.cut = true
		if room > 0 {
			b.buf = append(b.buf, p[:room]...)
		}
		return len(p), nil
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *capBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.ToValidUTF8(string(b.buf), "\uFFFD")
}

// bgProc is a background process and the last bgKeep bytes of its output.
type bgProc struct {
	cmd     *exec.Cmd
	id      string
	command string
	started time.Time
	done    chan struct{}

	mu       sync.Mutex
	data     []byte
	start    int64 // offset of data[0]
	exitCode int
	running  bool
}

func (p *bgProc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.data = append(p.data, b...)
	if over := len(p.data) - bgKeep; over > 0 {
		p.data = append(p.data[:0:0], p.data[over:]...)
		p.start += int64(over)
	}
	return len(b), nil
}

func (p *bgProc) info() computer.ProcessInfo {
	p.mu.Lock()
	defer p.mu.Unlock()
	pid := 0
	if p.cmd.Process != nil {
		pid = p.cmd.Process.Pid
	}
	return computer.ProcessInfo{ID: p.id, Command: p.command, PID: pid, Running: p.running,
		ExitCode: p.exitCode, Started: p.started, OutputBytes: p.start + int64(len(p.data))}
}

func (h *helper) start(req request) response {
	cmd, err := h.command(req)
	if err != nil {
		return agentErr(0, "%v", err)
	}
	h.mu.Lock()
	// Bound what the helper keeps: at most maxRunning background processes
	// at once, and the output of at most maxKept finished ones (the oldest
	// forgotten first).
	var running int
	var finished []*bgProc
	for _, q := range h.procs {
		if q.info().Running {
			running++
		} else {
			finished = append(finished, q)
		}
	}
	if running >= maxRunning {
		h.mu.Unlock()
		return agentErr(0, "%d background processes are running already; stop one with bash_kill first", running)
	}
	sort.Slice(finished, func(i, j int) bool { return finished[i].started.Before(finished[j].started) })
	for len(finished) >= maxKept {
		delete(h.procs, finished[0].id)
		finished = finished[1:]
	}
	h.nextID++
	p := &bgProc{cmd: cmd, id: fmt.Sprintf("p%d", h.nextID), command: req.Cmd, started: time.Now(),
		done: make(chan struct{}), running: true}
	h.mu.Unlock()
	cmd.Stdout, cmd.Stderr = p, p
	if err := cmd.Start(); err != nil {
		return response{Err: "start: " + err.Error()}
	}
	h.mu.Lock()
	h.procs[p.id] = p
	h.mu.Unlock()
	go func() {
		// Ends when the process does; the helper's own exit ends it
		// otherwise (the whole PID namespace goes).
		cmd.Wait()
		p.mu.Lock()
		p.running = false
		p.exitCode = cmd.ProcessState.ExitCode()
		p.mu.Unlock()
		close(p.done)
	}()
	info := p.info()
	return response{Proc: &info}
}

func (h *helper) list() []computer.ProcessInfo {
	h.mu.Lock()
	ps := make([]*bgProc, 0, len(h.procs))
	for _, p := range h.procs {
		ps = append(ps, p)
	}
	h.mu.Unlock()
	out := make([]computer.ProcessInfo, len(ps))
	for i, p := range ps {
		out[i] = p.info()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out
}

func (h *helper) proc(id string) *bgProc {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.procs[id]
}

func (h *helper) output(req request) response {
	p := h.proc(req.Proc)
	if p == nil {
		return agentErr(0, "no background process %q (bash_list lists them)", req.Proc)
	}
	p.mu.Lock()
	off := req.Offset
	if off < 0 {
		off = 0
	}
	o := &computer.Output{Offset: off}
	if off < p.start {
		o.Dropped = p.start - off
		o.Offset = p.start
	}
	end := p.start + int64(len(p.data))
	if o.Offset > end {
		o.Offset = end
	}
	chunk := p.data[o.Offset-p.start:]
	if len(chunk) > maxOutputRead {
		chunk = chunk[:maxOutputRead]
	}
	o.Data = strings.ToValidUTF8(string(chunk), "\uFFFD")
	o.Next = o.Offset + int64(len(chunk))
	p.mu.Unlock()
	o.Process = p.info()
	return response{Output: o}
}

func (h *helper) stop(req request) response {
	p := h.proc(req.Proc)
	if p == nil {
		return agentErr(0, "no background process %q (bash_list lists them)", req.Proc)
	}
	// The group is signalled even when its leader is over: what it started
	// may live on in the group. PIDs are handed out cyclically, so its
	// number is not another group's unless the namespace wrapped around.
	killGroup(p.cmd, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(3 * time.Second):
	}
	killGroup(p.cmd, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(3 * time.Second):
		return response{Err: "process " + p.id + " did not die after SIGKILL"}
	}
	info := p.info()
	return response{Proc: &info}
}

func fileErr(id int64, op, p string, err error) response {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return agentErr(id, "%s: no such file in the sandbox", p)
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS), errors.Is(err, syscall.EISDIR),
		errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EFBIG):
		return agentErr(id, "%s %s: %v", op, p, errors.Unwrap(err))
	}
	return response{Err: fmt.Sprintf("%s %s: %v", op, p, err)}
}

func (h *helper) read(req request) response {
	p := resolve(req.Path)
	f, err := os.Open(p)
	if err != nil {
		return fileErr(0, "read", p, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fileErr(0, "read", p, err)
	}
	if st.IsDir() {
		return agentErr(0, "%s is a folder, not a file", p)
	}
	if st.Size() > maxFileBytes {
		return agentErr(0, "%s is %d bytes; reading is limited to %d", p, st.Size(), maxFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return fileErr(0, "read", p, err)
	}
	if len(data) > maxFileBytes {
		return agentErr(0, "%s is over %d bytes; reading is limited to that", p, maxFileBytes)
	}
	return response{Data: data}
}

func (h *helper) write(req request) response {
	p := resolve(req.Path)
	if len(req.Data) > maxFileBytes {
		return agentErr(0, "content is %d bytes; writing is limited to %d", len(req.Data), maxFileBytes)
	}
	if err := os.MkdirAll(path.Dir(p), 0o755); err != nil {
		return fileErr(0, "write", p, err)
	}
	if err := os.WriteFile(p, req.Data, 0o644); err != nil {
		return fileErr(0, "write", p, err)
	}
	return response{}
}
