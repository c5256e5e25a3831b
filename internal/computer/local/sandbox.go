package local

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/computer/sandboxhelper"
)

// Sandbox is a running local sandbox. It implements computer.Sandbox: the
// calls into the sandbox are those of its helper's client; Sandbox adds the
// bwrap process and cgroups around it.
type Sandbox struct {
	*sandboxhelper.Client

	spec   computer.Spec
	limits computer.Limits
	cg     *cgroups
	net    *sandboxNet // its own network, with the network allowed
	info   []string
	pidNS  string // "pid:[inode]" of the sandbox's PID namespace

	cmd    *exec.Cmd
	stderr *sandboxhelper.TailBuffer

	closeOnce sync.Once
	closeErr  error
}

var _ computer.Sandbox = (*Sandbox)(nil)

func (s *Sandbox) Kind() computer.Kind { return computer.KindSandbox }
func (s *Sandbox) Info() []string      { return append([]string(nil), s.info...) }

// Close kills the sandbox (bwrap and, through --die-with-parent and the PID
// namespace, everything in it), then checks that no process of the sandbox
// is left and removes its cgroups.
func (s *Sandbox) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Sandbox) close() error {
	s.Client.Close()
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
	<-s.Done()
	if s.net != nil {
		if err := s.net.close(); err != nil {
			errs = append(errs, err)
		}
	}
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
