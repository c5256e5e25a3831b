package computertest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	execpkg "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/computer"
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

// ServerProcess is the body of a sandbox provider's TestServerProcess, the "server" that
// SandboxDiesWithServer starts: it makes a sandbox around AGENTRUN_TEST_SERVER_FOLDER with a
// background "sleep MARKER" and a file kept.txt, prints "ready" and waits to be killed. Run any
// other way it skips.
func ServerProcess(t *testing.T, p computer.Provider) {
	folder, marker := os.Getenv("AGENTRUN_TEST_SERVER_FOLDER"), os.Getenv("AGENTRUN_TEST_MARKER")
	if folder == "" || marker == "" {
		t.Skip("run by SandboxDiesWithServer")
	}
	fail := func(err error) {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	c, err := p.Create(context.Background(), computer.Spec{Run: "server-" + marker, Folder: folder, Kind: computer.KindSandbox})
	if err != nil {
		fail(err)
	}
	s := c.(computer.Sandbox)
	if _, err := s.Start(context.Background(), "sleep "+marker, computer.ExecOptions{}); err != nil {
		fail(err)
	}
	if _, err := s.Exec(context.Background(), "echo kept > kept.txt", computer.ExecOptions{}); err != nil {
		fail(err)
	}
	fmt.Println("ready")
	time.Sleep(time.Minute)
}

// SandboxDiesWithServer kills a server process holding a sandbox of p (the package's
// TestServerProcess must call ServerProcess) and checks that everything alive(run, marker) lists
// of it goes within d, then that a new sandbox around the same run folder (the recreation after a
// restart) finds the folder as it was. markerBase keeps packages testing at once apart.
func SandboxDiesWithServer(t *testing.T, p computer.Provider, markerBase int, alive func(run, marker string) []string, d time.Duration) {
	t.Helper()
	folder := t.TempDir()
	marker := strconv.Itoa(markerBase + int(time.Now().UnixNano()%1000000))
	run := "server-" + marker
	KillServerProcess(t, []string{"AGENTRUN_TEST_SERVER_FOLDER=" + folder, "AGENTRUN_TEST_MARKER=" + marker},
		func() []string { return alive(run, marker) }, d)
	c, err := p.Create(t.Context(), computer.Spec{Run: run, Folder: folder, Kind: computer.KindSandbox})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.(computer.Sandbox).Exec(t.Context(), "cat kept.txt", computer.ExecOptions{})
	if err != nil || r.Stdout != "kept\n" {
		t.Fatalf("recreated sandbox reads %q, %v", r.Stdout, err)
	}
}

// Sleepers lists live host processes running "sleep marker".
func Sleepers(marker string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && string(b) == "sleep\x00"+marker+"\x00" {
			out = append(out, "process "+e.Name())
		}
	}
	return out
}
