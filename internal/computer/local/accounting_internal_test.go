package local

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/computer"
)

func newTestSandbox(t *testing.T, lim computer.Limits) *Sandbox {
	t.Helper()
	p := New()
	if a := p.Available(t.Context()); !a.Available {
		t.Skip(a.Reason)
	}
	s, err := p.create(t.Context(), computer.Spec{Run: "accounting", Folder: t.TempDir(), Kind: computer.KindSandbox, Limits: lim}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func run(t *testing.T, s *Sandbox, cmd string) computer.ExecResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	r, err := s.Exec(ctx, cmd, computer.ExecOptions{Timeout: time.Minute})
	if err != nil {
		t.Fatalf("%s: %v (the helper died?)", cmd, err)
	}
	return r
}

// Filling /tmp stops at its size with ENOSPC for the command that wrote it; the helper lives on,
// and nothing outside the run folder and the sized tmpfs mounts can be written.
func TestTmpIsBounded(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, computer.Limits{})
	r := run(t, s, `echo ran >> count.log; head -c 2G /dev/zero > /tmp/fill`)
	if r.ExitCode == 0 || !strings.Contains(r.Stderr, "No space left on device") {
		t.Fatalf("filling /tmp: exit %d, stderr %q; want ENOSPC", r.ExitCode, r.Stderr)
	}
	r = run(t, s, `stat -c %s /tmp/fill; wc -l < count.log`)
	if want := fmt.Sprintf("%d\n1\n", TmpBytes); r.Stdout != want {
		t.Errorf("after the fill: %q, want %q", r.Stdout, want)
	}
	for dir, size := range map[string]int64{"/home/agent": HomeBytes, "/dev/shm": ShmBytes} {
		r = run(t, s, `head -c 2G /dev/zero > `+dir+`/fill; stat -c %s `+dir+`/fill`)
		if r.Stdout != fmt.Sprintf("%d\n", size) || !strings.Contains(r.Stderr, "No space left on device") {
			t.Errorf("filling %s: %q %q, want %d bytes and ENOSPC", dir, r.Stdout, r.Stderr, size)
		}
	}
	for _, p := range []string{"/fill", "/dev/fill", "/home/fill"} {
		if r = run(t, s, `echo x > `+p); r.ExitCode == 0 || !strings.Contains(r.Stderr, "Read-only file system") {
			t.Errorf("writing %s: exit %d %q, want read-only", p, r.ExitCode, r.Stderr)
		}
	}
}

// The sandbox's cgroups hold its commands, never its helper: a command that takes all the memory
// is the one the kernel kills, and the next command runs on the same sandbox.
func TestHelperOutsideAccounting(t *testing.T) {
	t.Parallel()
	s := newTestSandbox(t, computer.Limits{MemoryBytes: 256 << 20})
	if s.cg == nil || !s.cg.memory {
		t.Skip("no memory cgroup here: ", strings.Join(s.Info(), "; "))
	}
	if p := s.cg.procs(); len(p) != 0 {
		t.Fatalf("an idle sandbox's cgroups hold processes %v: the helper is in them", p)
	}
	if _, err := s.Start(t.Context(), "sleep 60", computer.ExecOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(s.cg.procs()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if len(s.cg.procs()) == 0 {
		t.Fatal("a background command is not in the sandbox's cgroups")
	}
	// tail -n keeps a line without a newline whole in memory: it grows past the 256 MiB limit.
	r := run(t, s, `set -o pipefail; echo ran >> count.log; head -c 1G /dev/zero | tail -n 1 | wc -c`)
	if r.ExitCode == 0 {
		t.Fatalf("the memory hog succeeded: %+v", r)
	}
	if r = run(t, s, `wc -l < count.log`); r.Stdout != "1\n" {
		t.Errorf("count.log has %q lines, want 1", r.Stdout)
	}
	// /tmp's pages count against the commands' memory too: it is sized to leave them room.
	r = run(t, s, `head -c 2G /dev/zero > /tmp/fill; echo rc=$?; stat -c %s /tmp/fill; rm /tmp/fill && echo removed`)
	if want := fmt.Sprintf("rc=1\n%d\nremoved\n", 64<<20); r.Stdout != want || !strings.Contains(r.Stderr, "No space left on device") {
		t.Fatalf("tmp fill under a 256 MiB cgroup: %+v, want %q", r, want)
	}
	if _, err := s.Ping(t.Context()); err != nil {
		t.Fatalf("the helper died: %v", err)
	}
}

// A desktop's Xvfb, started before the helper, is in the commands' cgroups: the pixmaps the
// sandbox's X clients make it allocate count against the sandbox.
func TestXvfbInSandboxCgroup(t *testing.T) {
	t.Parallel()
	p := New()
	if a := p.KindAvailable(t.Context(), computer.KindDesktop); !a.Available {
		t.Skip(a.Reason)
	}
	c, err := p.Create(t.Context(), computer.Spec{Run: "xvfb-cgroup", Folder: t.TempDir(), Kind: computer.KindDesktop})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := c.(*Desktop).sandbox
	if s.cg == nil {
		t.Skip("no cgroups here: ", strings.Join(s.Info(), "; "))
	}
	var xvfb []int
	for _, pid := range namespaceProcs(s.pidNS) {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(b)) == "Xvfb" {
			xvfb = append(xvfb, pid)
		}
	}
	procs := fmt.Sprint(s.cg.procs())
	if len(xvfb) != 1 || !strings.Contains(" "+strings.Trim(procs, "[]")+" ", fmt.Sprintf(" %d ", xvfb[0])) {
		t.Fatalf("Xvfb %v, cgroups hold %s", xvfb, procs)
	}
}
