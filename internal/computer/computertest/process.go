package computertest

import (
	"bufio"
	"os"
	execpkg "os/exec"
	"strings"
	"testing"
	"time"
)

// KillServerProcess checks that what a provider starts dies with the process that started it. It
// runs this test binary again as a "server" (-test.run=^TestServerProcess$, with env added), which
// makes a computer and prints "ready"; then alive must report its processes on the host. The server
// is killed with SIGKILL, and alive must come back empty within d.
func KillServerProcess(t *testing.T, env []string, alive func() []string, d time.Duration) {
	t.Helper()
	cmd := execpkg.Command(os.Args[0], "-test.run=^TestServerProcess$")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		t.Fatalf("server process: %q", line)
	}
	// The computer's process may still be on its way (a shell about to exec it) on a busy machine.
	for wait := time.Now().Add(10 * time.Second); len(alive()) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(wait) {
			t.Fatal("no process of the computer is visible on the host")
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(d)
	for len(alive()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("processes survived their server: %v", alive())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
