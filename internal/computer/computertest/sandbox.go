package computertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"agentrun.dev/agentrun/internal/computer"
)

var sandboxChecks = []Check{
	{"ExecExitCodeAndOutput", checkExec},
	{"ExecWorkdirAndEnv", checkWorkdirEnv},
	{"ExecTimeout", checkTimeout},
	{"ExecOutputCap", checkOutputCap},
	{"BackgroundProcess", checkBackground},
	{"FileRoundTrip", checkFiles},
	{"IsolationFiles", checkIsolationFiles},
	{"IsolationNetwork", checkIsolationNetwork},
	{"IsolationProcesses", checkIsolationProcesses},
	{"LimitProcesses", checkLimitProcesses},
	{"LimitMemory", checkLimitMemory},
	{"Cleanup", checkCleanup},
	// A Spawner's (stdio.go).
	{"StdioStreams", checkStdioStreams},
	{"StdioEnvAndLimits", checkStdioEnvLimits},
	{"StdioKillOnClose", checkStdioKill},
	{"StdioDiesWithComputer", checkStdioComputerClose},
	{"StdioMountsAndForward", checkStdioMountsForward},
}

func sandbox(e *Env, run string, adjust func(*computer.Spec)) (computer.Sandbox, string, error) {
	c, dir, err := e.New(run, adjust)
	if err != nil {
		return nil, "", err
	}
	s, ok := c.(computer.Sandbox)
	if !ok {
		return nil, "", fmt.Errorf("provider %s made a %T for kind sandbox, which is not a computer.Sandbox", e.Provider.Name(), c)
	}
	return s, dir, nil
}

func exec(e *Env, s computer.Sandbox, cmd string, timeout time.Duration) (computer.ExecResult, error) {
	r, err := s.Exec(e.Ctx, cmd, computer.ExecOptions{Timeout: timeout})
	if err != nil {
		return r, fmt.Errorf("exec %q: %w", cmd, err)
	}
	return r, nil
}

// want checks that cmd exits 0 and returns its stdout.
func want(e *Env, s computer.Sandbox, cmd string) (string, error) {
	r, err := exec(e, s, cmd, 60*time.Second)
	if err != nil {
		return "", err
	}
	if r.ExitCode != 0 {
		return "", fmt.Errorf("%q exited %d (timed out %v): stdout %q stderr %q", cmd, r.ExitCode, r.TimedOut, r.Stdout, r.Stderr)
	}
	return r.Stdout, nil
}

func checkExec(e *Env) error {
	s, _, err := sandbox(e, "exec", nil)
	if err != nil {
		return err
	}
	r, err := exec(e, s, "echo out; echo err >&2; exit 3", 30*time.Second)
	if err != nil {
		return err
	}
	if r.ExitCode != 3 || r.Stdout != "out\n" || r.Stderr != "err\n" || r.TimedOut {
		return fmt.Errorf("got exit %d stdout %q stderr %q timedOut %v; want 3, \"out\\n\", \"err\\n\", false", r.ExitCode, r.Stdout, r.Stderr, r.TimedOut)
	}
	out, err := want(e, s, "python3 --version")
	if err != nil {
		return err
	}
	if !strings.HasPrefix(out, "Python 3") {
		return fmt.Errorf("python3 --version printed %q", out)
	}
	return nil
}

func checkWorkdirEnv(e *Env) error {
	s, dir, err := sandbox(e, "workdir", nil)
	if err != nil {
		return err
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		return err
	}
	r, err := s.Exec(e.Ctx, `pwd; echo "$FOO"`, computer.ExecOptions{Workdir: "sub", Env: []string{"FOO=bar baz"}, Timeout: 30 * time.Second})
	if err != nil {
		return err
	}
	if r.Stdout != "/workspace/sub\nbar baz\n" {
		return fmt.Errorf("stdout %q, want the working folder /workspace/sub and FOO", r.Stdout)
	}
	_, err = s.Exec(e.Ctx, "true", computer.ExecOptions{Workdir: "missing"})
	if !computer.IsAgentError(err) {
		return fmt.Errorf("a missing working folder gave %v, want an agent error", err)
	}
	return nil
}

func checkTimeout(e *Env) error {
	s, _, err := sandbox(e, "timeout", nil)
	if err != nil {
		return err
	}
	start := time.Now()
	r, err := exec(e, s, "echo started; sleep 30; echo never", time.Second)
	if err != nil {
		return err
	}
	if !r.TimedOut || r.ExitCode == 0 || strings.Contains(r.Stdout, "never") {
		return fmt.Errorf("sleep 30 with a 1 s timeout: timedOut %v exit %d stdout %q", r.TimedOut, r.ExitCode, r.Stdout)
	}
	if d := time.Since(start); d > 10*time.Second {
		return fmt.Errorf("a 1 s timeout took %v", d)
	}
	if r.Stdout != "started\n" {
		return fmt.Errorf("output before the timeout lost: %q", r.Stdout)
	}
	// The sandbox still works, and the killed command's sleep is gone.
	out, err := want(e, s, "ps -eo args 2>/dev/null || cat /proc/[0-9]*/cmdline | tr '\\0' ' '")
	if err != nil {
		return err
	}
	if strings.Contains(out, "sleep 30") {
		return fmt.Errorf("sleep 30 survived its timeout:\n%s", out)
	}
	return nil
}

func checkOutputCap(e *Env) error {
	s, _, err := sandbox(e, "outcap", nil)
	if err != nil {
		return err
	}
	r, err := s.Exec(e.Ctx, "head -c 3000000 /dev/zero | tr '\\0' x", computer.ExecOptions{MaxOutput: 1000, Timeout: 30 * time.Second})
	if err != nil {
		return err
	}
	if len(r.Stdout) != 1000 || !r.Truncated {
		return fmt.Errorf("3 MB of output with a 1000-byte cap: got %d bytes, truncated %v", len(r.Stdout), r.Truncated)
	}
	return nil
}

func checkBackground(e *Env) error {
	s, dir, err := sandbox(e, "background", nil)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from the run folder\n"), 0o644); err != nil {
		return err
	}
	p, err := s.Start(e.Ctx, "exec python3 -u -m http.server 8765 --bind 127.0.0.1", computer.ExecOptions{})
	if err != nil {
		return err
	}
	if p.ID == "" || !p.Running {
		return fmt.Errorf("started process %+v", p)
	}
	fetch := `python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:8765/hello.txt", timeout=5).read().decode(), end="")'`
	var out string
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, err := exec(e, s, fetch, 10*time.Second)
		if err != nil {
			return err
		}
		if r.ExitCode == 0 {
			out = r.Stdout
			break
		}
		if time.Now().After(deadline) {
			o, _ := s.Output(e.Ctx, p.ID, 0)
			return fmt.Errorf("background server never answered: %s; its output: %q", r.Stderr, o.Data)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if out != "hello from the run folder\n" {
		return fmt.Errorf("background server answered %q", out)
	}
	list, err := s.Processes(e.Ctx)
	if err != nil {
		return err
	}
	if len(list) != 1 || list[0].ID != p.ID || !list[0].Running {
		return fmt.Errorf("process list %+v, want %s running", list, p.ID)
	}
	o, err := s.Output(e.Ctx, p.ID, 0)
	if err != nil {
		return err
	}
	if !strings.Contains(o.Data, "GET /hello.txt") || o.Next != o.Offset+int64(len(o.Data)) {
		return fmt.Errorf("server output %+v, want its request log", o)
	}
	o2, err := s.Output(e.Ctx, p.ID, o.Next)
	if err != nil {
		return err
	}
	if o2.Data != "" || o2.Next != o.Next {
		return fmt.Errorf("output since %d: %+v, want nothing new", o.Next, o2)
	}
	stopped, err := s.Stop(e.Ctx, p.ID)
	if err != nil {
		return err
	}
	if stopped.Running {
		return fmt.Errorf("process still running after Stop: %+v", stopped)
	}
	if r, err := exec(e, s, fetch, 10*time.Second); err != nil || r.ExitCode == 0 {
		return fmt.Errorf("server still answers after Stop (%v)", err)
	}
	if _, err := s.Output(e.Ctx, "p999", 0); !computer.IsAgentError(err) {
		return fmt.Errorf("output of an unknown process: %v, want an agent error", err)
	}
	if _, err := s.Stop(e.Ctx, "p999"); !computer.IsAgentError(err) {
		return fmt.Errorf("stop of an unknown process: %v, want an agent error", err)
	}
	return nil
}

func checkFiles(e *Env) error {
	s, dir, err := sandbox(e, "files", nil)
	if err != nil {
		return err
	}
	// Sandbox → host, through the API and through a command.
	if err := s.WriteFile(e.Ctx, "sub/a.txt", []byte("from the api")); err != nil {
		return err
	}
	if b, err := os.ReadFile(filepath.Join(dir, "sub", "a.txt")); err != nil || string(b) != "from the api" {
		return fmt.Errorf("file written in the sandbox, on the host: %q, %v", b, err)
	}
	if _, err := want(e, s, "echo from a command > /workspace/b.txt"); err != nil {
		return err
	}
	if b, err := os.ReadFile(filepath.Join(dir, "b.txt")); err != nil || string(b) != "from a command\n" {
		return fmt.Errorf("file a command wrote, on the host: %q, %v", b, err)
	}
	// Host → sandbox.
	if err := os.WriteFile(filepath.Join(dir, "c.txt"), []byte("from the host"), 0o644); err != nil {
		return err
	}
	if b, err := s.ReadFile(e.Ctx, "/workspace/c.txt"); err != nil || string(b) != "from the host" {
		return fmt.Errorf("host file read in the sandbox: %q, %v", b, err)
	}
	if out, err := want(e, s, "cat c.txt"); err != nil || out != "from the host" {
		return fmt.Errorf("cat of a host file: %q, %v", out, err)
	}
	if _, err := s.ReadFile(e.Ctx, "missing.txt"); !computer.IsAgentError(err) {
		return fmt.Errorf("reading a missing file: %v, want an agent error", err)
	}
	// The base system is read-only.
	if r, err := exec(e, s, "touch /usr/agentrun-test", 30*time.Second); err != nil || r.ExitCode == 0 {
		return fmt.Errorf("writing /usr succeeded (%v)", err)
	}
	return nil
}

func checkIsolationFiles(e *Env) error {
	// A data folder like a server's: its database, and another run's folder.
	if err := os.WriteFile(filepath.Join(e.Data, "agentrun.db"), []byte("secret database"), 0o644); err != nil {
		return err
	}
	other, err := e.RunFolder("other")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(other, "secret.txt"), []byte("other run's secret"), 0o644); err != nil {
		return err
	}
	s, _, err := sandbox(e, "isolated", nil)
	if err != nil {
		return err
	}
	for _, p := range []string{filepath.Join(other, "secret.txt"), filepath.Join(e.Data, "agentrun.db")} {
		r, err := exec(e, s, "cat "+shellQuote(p), 30*time.Second)
		if err != nil {
			return err
		}
		if r.ExitCode == 0 || strings.Contains(r.Stdout, "secret") {
			return fmt.Errorf("the sandbox read %s: %q", p, r.Stdout)
		}
	}
	// Nothing of the host's home folders or other top-level folders.
	out, err := want(e, s, "ls -A /root /home/* 2>/dev/null; ls /")
	if err != nil {
		return err
	}
	if r, err := exec(e, s, "ls -A /root 2>/dev/null | head -1", 30*time.Second); err != nil || strings.TrimSpace(r.Stdout) != "" {
		return fmt.Errorf("/root is visible in the sandbox: %q (%v)", r.Stdout, err)
	}
	if strings.Contains(out, filepath.Base(e.Data)) {
		return fmt.Errorf("the sandbox's file system shows the data folder: %s", out)
	}
	// Kernel settings are the host's: writing one back unchanged must fail.
	if r, err := exec(e, s, "f=/proc/sys/kernel/printk_ratelimit; v=$(cat $f) && echo $v > $f", 30*time.Second); err != nil || r.ExitCode == 0 {
		return fmt.Errorf("the sandbox could write /proc/sys (%v)", err)
	}
	if _, err := os.Stat("/etc/shadow"); err == nil {
		if r, err := exec(e, s, "cat /etc/shadow", 30*time.Second); err != nil || r.ExitCode == 0 {
			return fmt.Errorf("the sandbox read /etc/shadow (%v)", err)
		}
	}
	return nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// listen opens a TCP listener on the host's loopback that answers "pong" to
// every connection, closed at cleanup.
func listen(e *Env) (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	e.Cleanup(Pong(ln))
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// HostNetworkSharer is implemented by a sandbox provider that says whether
// its sandboxes with the network allowed share the host's network (so they
// reach the host's loopback) or get one of their own (local's behind
// slirp4netns, docker's bridge). A provider that does not implement it
// shares the host's.
type HostNetworkSharer interface {
	SharesHostNetwork() bool
}

// NetworkAvailabler is implemented by a sandbox provider whose sandboxes with the network
// allowed need more of the machine than its others (local's need slirp4netns): where they
// cannot be made, the network half of IsolationNetwork skips with its reason.
type NetworkAvailabler interface {
	NetworkAvailable() computer.Availability
}

// defaultRoute prints the interface of a default route other than lo (/proc/net/route lists
// destination 0.0.0.0 as 00000000), or nothing.
const defaultRoute = `awk 'NR > 1 && $2 == "00000000" && $1 != "lo" {print $1; exit}' /proc/net/route`

func checkIsolationNetwork(e *Env) error {
	port, err := listen(e)
	if err != nil {
		return err
	}
	dial := fmt.Sprintf(`python3 -c 'import socket; s = socket.create_connection(("127.0.0.1", %d), timeout=5); print(s.recv(10).decode(), end="")'`, port)
	closed, _, err := sandbox(e, "nonet", nil)
	if err != nil {
		return err
	}
	r, err := exec(e, closed, dial, 30*time.Second)
	if err != nil {
		return err
	}
	if r.ExitCode == 0 || strings.Contains(r.Stdout, "pong") {
		return fmt.Errorf("a sandbox without network reached the host's 127.0.0.1:%d: %q", port, r.Stdout)
	}
	if n, ok := e.Provider.(NetworkAvailabler); ok {
		if a := n.NetworkAvailable(); !a.Available {
			return Skip{"half checked: a sandbox without network is cut off; one with the network allowed cannot be made here: " + a.Reason}
		}
	}
	open, _, err := sandbox(e, "net", func(s *computer.Spec) { s.Network = true })
	if err != nil {
		return err
	}
	r, err = exec(e, open, dial, 30*time.Second)
	if err != nil {
		return err
	}
	if h, ok := e.Provider.(HostNetworkSharer); ok && !h.SharesHostNetwork() {
		// A network of its own: routed somewhere, and its 127.0.0.1 is its own, not the host's
		// (the provider's own tests check what else of the host it cannot reach).
		if r.ExitCode == 0 || strings.Contains(r.Stdout, "pong") {
			return fmt.Errorf("a %s sandbox with network allowed reached the host's 127.0.0.1:%d: %q", e.Provider.Name(), port, r.Stdout)
		}
		route, err := want(e, open, defaultRoute)
		if err != nil {
			return err
		}
		if strings.TrimSpace(route) == "" {
			return fmt.Errorf("a %s sandbox with network allowed has no default route", e.Provider.Name())
		}
		return nil
	}
	if r.ExitCode != 0 || r.Stdout != "pong\n" {
		return fmt.Errorf("a sandbox with network allowed could not reach the host's 127.0.0.1:%d: exit %d %q %q", port, r.ExitCode, r.Stdout, r.Stderr)
	}
	return nil
}

// psAll lists every process's command line visible in the sandbox.
const psAll = `for p in /proc/[0-9]*; do tr '\0' ' ' < $p/cmdline 2>/dev/null; echo; done`

func checkIsolationProcesses(e *Env) error {
	a, _, err := sandbox(e, "proc-a", nil)
	if err != nil {
		return err
	}
	b, _, err := sandbox(e, "proc-b", nil)
	if err != nil {
		return err
	}
	if _, err := a.Start(e.Ctx, "exec sleep 1234", computer.ExecOptions{}); err != nil {
		return err
	}
	// Start returns once the process is launched, which may be before it has exec'd sleep (on a
	// loaded machine the listing showed the sandbox helper that was about to): it is looked for
	// until it shows or 10 s have passed.
	var seen string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if seen, err = want(e, a, psAll); err != nil {
			return err
		}
		if strings.Contains(seen, "sleep 1234") {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("a sandbox does not see its own background process (10 s after it started):\n%s", seen)
		}
	}
	seen, err = want(e, b, psAll)
	if err != nil {
		return err
	}
	if strings.Contains(seen, "sleep 1234") {
		return fmt.Errorf("a sandbox sees another sandbox's process:\n%s", seen)
	}
	// Nor the host's.
	marker := fmt.Sprintf("%d", 5000000+time.Now().UnixNano()%1000000)
	host := osexec.Command("sleep", marker)
	if err := host.Start(); err != nil {
		return err
	}
	defer func() { host.Process.Kill(); host.Wait() }()
	seen, err = want(e, b, psAll)
	if err != nil {
		return err
	}
	if strings.Contains(seen, "sleep "+marker) {
		return fmt.Errorf("a sandbox sees the host's processes:\n%s", seen)
	}
	if n := strings.Count(strings.TrimSpace(seen), "\n") + 1; n > 10 {
		return fmt.Errorf("a fresh sandbox sees %d processes:\n%s", n, seen)
	}
	return nil
}

func checkLimitProcesses(e *Env) error {
	s, _, err := sandbox(e, "forkbomb", func(s *computer.Spec) { s.Limits.Processes = 64 })
	if err != nil {
		return err
	}
	// A bounded fork bomb: it tries for 1000 processes, so it stays harmless
	// even on a provider that fails this check.
	bomb := `python3 -c '
import os, time
n = 0
for i in range(1000):
    try:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
    except OSError:
        break
print(n)'`
	r, err := exec(e, s, bomb, 60*time.Second)
	if err != nil {
		return err
	}
	n, _ := strconv.Atoi(strings.TrimSpace(r.Stdout))
	if n == 0 || n > 64 {
		return fmt.Errorf("with a limit of 64 processes a fork loop made %q (stderr %q)", r.Stdout, r.Stderr)
	}
	// Contained means the sandbox still works once the command is over.
	if _, err := want(e, s, "echo still alive"); err != nil {
		return fmt.Errorf("after the fork bomb: %w", err)
	}
	return nil
}

func checkLimitMemory(e *Env) error {
	s, _, err := sandbox(e, "memhog", func(s *computer.Spec) { s.Limits.MemoryBytes = 256 << 20 })
	if err != nil {
		return err
	}
	// Touches every byte of 2 GiB, so a limit on real memory bites too.
	r, err := exec(e, s, `python3 -c 'x = b"x" * (2 << 30); print(len(x))'`, 60*time.Second)
	if err != nil {
		return err
	}
	if r.ExitCode == 0 || strings.Contains(r.Stdout, "2147483648") {
		return fmt.Errorf("with a 256 MiB limit a 2 GiB allocation succeeded: exit %d %q", r.ExitCode, r.Stdout)
	}
	if _, err := want(e, s, "echo still alive"); err != nil {
		return fmt.Errorf("after the memory hog: %w", err)
	}
	return nil
}

// hostProcs lists host processes whose command line contains marker.
func hostProcs(marker string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, ent := range entries {
		if _, err := strconv.Atoi(ent.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), marker) {
			out = append(out, ent.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

func checkCleanup(e *Env) error {
	s, _, err := sandbox(e, "cleanup", nil)
	if err != nil {
		return err
	}
	marker := fmt.Sprintf("%d", 4000000+time.Now().UnixNano()%1000000)
	// A background process, and one that left its process group and
	// session (so a foreground command's end did not take it along).
	if _, err := s.Start(e.Ctx, "sleep "+marker, computer.ExecOptions{}); err != nil {
		return err
	}
	if _, err := want(e, s, "setsid sleep "+marker+" > /dev/null 2>&1 < /dev/null & sleep 1"); err != nil {
		return err
	}
	if n := e.Provider.Name(); n == "local" || n == "docker" {
		// The sandbox's processes are the host's too (docker's engine runs
		// on the server's machine): wait until they are seen, or the check
		// below would prove nothing.
		deadline := time.Now().Add(5 * time.Second)
		for len(hostProcs("sleep\x00"+marker)) < 2 {
			if time.Now().After(deadline) {
				return fmt.Errorf("sandbox processes not visible on the host before Close: %v", hostProcs("sleep\x00"+marker))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if err := s.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := hostProcs("sleep\x00" + marker)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes of a closed sandbox survive: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(e.Ctx, 10*time.Second)
	defer cancel()
	if _, err := s.Exec(ctx, "true", computer.ExecOptions{}); !errors.Is(err, computer.ErrClosed) {
		return fmt.Errorf("exec after Close: %v, want computer.ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		return fmt.Errorf("second close: %w", err)
	}
	return nil
}

// Pong answers "pong" to every connection ln accepts until the returned stop is called, which
// closes ln and waits for the loop to end.
func Pong(ln net.Listener) (stop func()) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("pong\n"))
			c.Close()
		}
	}()
	return func() { ln.Close(); wg.Wait() }
}
