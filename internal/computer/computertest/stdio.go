package computertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/computer"
)

// The checks of computer.Spawner (in sandboxChecks), for the sandboxes that implement it (the
// others skip them):
// bytes in and out unchanged and in order (more than the flow-control window), stderr apart,
// the exit code, the working folder and environment (nothing of the host's), the sandbox's
// limits, a missing command as the agent's error, kill on Close with the process group, death with
// the computer, read-only mounts, and a loopback port inside forwarded to a host unix socket.

func spawner(e *Env, run string, adjust func(*computer.Spec)) (computer.Spawner, computer.Sandbox, error) {
	s, _, err := sandbox(e, run, adjust)
	if err != nil {
		return nil, nil, err
	}
	sp, ok := s.(computer.Spawner)
	if !ok {
		return nil, nil, Skip{fmt.Sprintf("provider %s's %T is not a computer.Spawner (no processes with streamed stdio)", e.Provider.Name(), s)}
	}
	return sp, s, nil
}

func spawn(e *Env, sp computer.Spawner, argv []string, opts computer.SpawnOptions) (computer.StdioProcess, error) {
	ctx, cancel := context.WithTimeout(e.Ctx, 30*time.Second)
	defer cancel()
	p, err := sp.Spawn(ctx, argv, opts)
	if err != nil {
		return nil, fmt.Errorf("spawn %q: %w", argv, err)
	}
	e.Cleanup(func() { p.Close() })
	return p, nil
}

// waitDone waits for p to exit, bounded, and returns its exit code.
func waitDone(p computer.StdioProcess, what string) (int, error) {
	select {
	case <-p.Done():
		return p.ExitCode(), nil
	case <-time.After(30 * time.Second):
		return 0, fmt.Errorf("%s did not exit within 30 s", what)
	}
}

func checkStdioStreams(e *Env) error {
	sp, _, err := spawner(e, "stdio", nil)
	if err != nil {
		return err
	}
	// 3 MiB of random bytes through cat, written while read: more than the window of output the
	// host may leave unread, so flow control is crossed both ways.
	cat, err := spawn(e, sp, []string{"cat"}, computer.SpawnOptions{})
	if err != nil {
		return err
	}
	in := make([]byte, 3<<20)
	rand.Read(in)
	werr := make(chan error, 1)
	go func() {
		_, err := cat.Stdin().Write(in)
		if err == nil {
			err = cat.Stdin().Close()
		}
		werr <- err
	}()
	out, err := io.ReadAll(cat.Stdout())
	if err != nil {
		return fmt.Errorf("read cat's stdout: %w", err)
	}
	if err := <-werr; err != nil {
		return fmt.Errorf("write cat's stdin: %w", err)
	}
	if !bytes.Equal(out, in) {
		return fmt.Errorf("cat gave back %d bytes for %d written, or other bytes", len(out), len(in))
	}
	if code, err := waitDone(cat, "cat"); err != nil || code != 0 {
		return fmt.Errorf("cat after its stdin closed: exit %d, %v", code, err)
	}
	// stderr apart from stdout, and the exit code.
	sh, err := spawn(e, sp, []string{"/bin/sh", "-c", "echo out; echo err >&2; exit 7"}, computer.SpawnOptions{})
	if err != nil {
		return err
	}
	o, _ := io.ReadAll(sh.Stdout())
	se, _ := io.ReadAll(sh.Stderr())
	code, err := waitDone(sh, "sh")
	if err != nil {
		return err
	}
	if string(o) != "out\n" || string(se) != "err\n" || code != 7 || sh.ExitStatus() != "exit status 7" {
		return fmt.Errorf("got stdout %q stderr %q exit %d (%q); want \"out\\n\", \"err\\n\", 7 (\"exit status 7\")", o, se, code, sh.ExitStatus())
	}
	// A command that is not there is the agent's mistake, said as such.
	if _, err := sp.Spawn(e.Ctx, []string{"no-such-command-here"}, computer.SpawnOptions{}); !computer.IsAgentError(err) || !strings.Contains(err.Error(), "no-such-command-here") {
		return fmt.Errorf("spawning a missing command: %v, want an *AgentError naming it", err)
	}
	return nil
}

func checkStdioEnvLimits(e *Env) error {
	os.Setenv("AGENTRUN_CONFORMANCE_HOST_VAR", "host-value")
	e.Cleanup(func() { os.Unsetenv("AGENTRUN_CONFORMANCE_HOST_VAR") })
	sp, _, err := spawner(e, "stdio-env", func(s *computer.Spec) { s.Limits.CPUSeconds = 123 })
	if err != nil {
		return err
	}
	os.MkdirAll(filepath.Join(e.Data, "runs", "stdio-env", "sub"), 0o755)
	p, err := spawn(e, sp, []string{"sh", "-c", `pwd; echo "$FOO"; echo "${AGENTRUN_CONFORMANCE_HOST_VAR-unset}"; ulimit -t`},
		computer.SpawnOptions{Workdir: "sub", Env: []string{"FOO=bar baz"}})
	if err != nil {
		return err
	}
	out, _ := io.ReadAll(p.Stdout())
	if _, err := waitDone(p, "sh"); err != nil {
		return err
	}
	if got, want := string(out), "/workspace/sub\nbar baz\nunset\n123\n"; got != want {
		return fmt.Errorf("working folder, env, host env and CPU limit: got %q, want %q", got, want)
	}
	return nil
}

func checkStdioKill(e *Env) error {
	sp, s, err := spawner(e, "stdio-kill", nil)
	if err != nil {
		return err
	}
	marker := fmt.Sprintf("%d", 3000000+time.Now().UnixNano()%1000000)
	p, err := spawn(e, sp, []string{"sh", "-c", "sleep " + marker + " & exec sleep " + marker}, computer.SpawnOptions{})
	if err != nil {
		return err
	}
	if p.PID() <= 0 {
		return fmt.Errorf("spawned process has PID %d", p.PID())
	}
	if err := waitHostProcs(e, marker, 2); err != nil {
		return err
	}
	if err := p.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	select {
	case <-p.Done():
	default:
		return errors.New("Close returned before the process was done")
	}
	if code, st := p.ExitCode(), p.ExitStatus(); code != -1 || !strings.Contains(st, "killed") {
		return fmt.Errorf("a killed process's exit code is %d (%q), want -1 (killed)", code, st)
	}
	if err := waitGone(marker); err != nil {
		return err
	}
	// The sandbox goes on.
	if _, err := want(e, s, "echo still alive"); err != nil {
		return fmt.Errorf("after killing a spawned process: %w", err)
	}
	if err := p.Close(); err != nil {
		return fmt.Errorf("second close: %w", err)
	}
	return nil
}

func checkStdioComputerClose(e *Env) error {
	sp, s, err := spawner(e, "stdio-close", nil)
	if err != nil {
		return err
	}
	marker := fmt.Sprintf("%d", 3100000+time.Now().UnixNano()%1000000)
	p, err := spawn(e, sp, []string{"sh", "-c", "setsid sleep " + marker + " & exec sleep " + marker}, computer.SpawnOptions{})
	if err != nil {
		return err
	}
	if err := waitHostProcs(e, marker, 2); err != nil {
		return err
	}
	if err := s.Close(); err != nil {
		return fmt.Errorf("close the computer: %w", err)
	}
	if _, err := waitDone(p, "a process of a closed computer"); err != nil {
		return err
	}
	if n, err := p.Stdout().Read(make([]byte, 10)); n != 0 || err != io.EOF {
		return fmt.Errorf("stdout of a process of a closed computer: %d bytes, %v; want io.EOF", n, err)
	}
	return waitGone(marker)
}

func checkStdioMountsForward(e *Env) error {
	ro := filepath.Join(e.Data, "ro")
	os.MkdirAll(ro, 0o755)
	if err := os.WriteFile(filepath.Join(ro, "file.txt"), []byte("from the host\n"), 0o644); err != nil {
		return err
	}
	// A unix socket path must be short.
	sockDir, err := os.MkdirTemp("", "ct-sock-")
	if err != nil {
		return err
	}
	e.Cleanup(func() { os.RemoveAll(sockDir) })
	ln, err := net.Listen("unix", filepath.Join(sockDir, "s.sock"))
	if err != nil {
		return err
	}
	e.Cleanup(Pong(ln))
	sp, s, err := spawner(e, "stdio-mounts", func(s *computer.Spec) {
		s.Mounts = []computer.Mount{{Source: ro, Target: "/opt/ro"}, {Source: filepath.Join(sockDir, "s.sock"), Target: "/.agentrun/host.sock"}}
	})
	if err != nil {
		return err
	}
	out, err := want(e, s, "cat /opt/ro/file.txt; echo x > /opt/ro/new.txt 2>/dev/null && echo WROTE || echo refused")
	if err != nil {
		return err
	}
	if out != "from the host\nrefused\n" {
		return fmt.Errorf("a read-only mount reads %q (want its file, and a write refused)", out)
	}
	ctx, cancel := context.WithTimeout(e.Ctx, 30*time.Second)
	defer cancel()
	addr, err := sp.ForwardUnix(ctx, 4180, "/.agentrun/host.sock")
	if err != nil {
		return fmt.Errorf("forward: %w", err)
	}
	again, err := sp.ForwardUnix(ctx, 4180, "/.agentrun/host.sock")
	if err != nil || again != addr {
		return fmt.Errorf("forwarding the same socket again gave %q, %v; want %q", again, err, addr)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "127.0.0.1" {
		return fmt.Errorf("forward listens on %q, want 127.0.0.1:PORT", addr)
	}
	dial := fmt.Sprintf(`python3 -c 'import socket; s = socket.create_connection(("127.0.0.1", %s), timeout=5); print(s.recv(10).decode(), end="")'`, port)
	if out, err := want(e, s, dial); err != nil || out != "pong\n" {
		return fmt.Errorf("through the forwarded port: %q, %v", out, err)
	}
	return nil
}

// waitHostProcs waits until n host processes run "sleep marker" (for providers whose processes
// the host sees: local and docker), so a check that they are gone later proves something.
func waitHostProcs(e *Env, marker string, n int) error {
	if name := e.Provider.Name(); name != "local" && name != "docker" {
		return nil
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(hostProcs("sleep\x00"+marker)) < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("spawned processes not visible on the host: %v", hostProcs("sleep\x00"+marker))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

func waitGone(marker string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := hostProcs("sleep\x00" + marker)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("spawned processes survive: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
