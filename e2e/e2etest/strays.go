package e2etest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// NoStraysIn waits for the processes a killed server left working in its data folder dir to end,
// and kills what is still there after d. Pdeathsig ends a harness when its server dies, but not
// what the harness started in its own process group; until they notice, they can still write in
// the run folder or the harness's home, under a TempDir's removal, say.
func NoStraysIn(t *testing.T, dir string, d time.Duration) {
	t.Helper()
	dir, err := filepath.Abs(dir)
	if err != nil {
		return
	}
	pids := waitNone(func() []int { return processesIn(dir) }, d)
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	if len(pids) > 0 {
		t.Logf("killed %d processes still working in %s %v after the server", len(pids), dir, d)
		time.Sleep(100 * time.Millisecond) // the kernel closes their files as they go
	}
}

// waitNone calls list every 50 ms until it lists nothing or d has passed, and returns what it
// listed last.
func waitNone[T any](list func() []T, d time.Duration) []T {
	deadline := time.Now().Add(d)
	for {
		left := list()
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processesIn are this machine's processes whose working folder or HOME is inside dir (Linux's
// /proc; none elsewhere).
func processesIn(dir string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	inside := func(p string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		proc := filepath.Join("/proc", e.Name())
		if cwd, err := os.Readlink(filepath.Join(proc, "cwd")); err == nil && inside(cwd) {
			out = append(out, pid)
			continue
		}
		env, err := os.ReadFile(filepath.Join(proc, "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if home, ok := bytes.CutPrefix(kv, []byte("HOME=")); ok && inside(string(home)) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}
