package local_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/computer/local"
)

// TestServerProcess is the "server" of TestSandboxDiesWithServer: it makes a
// sandbox with a background process and waits to be killed.
func TestServerProcess(t *testing.T) {
	folder := os.Getenv("AGENTRUN_TEST_SERVER_FOLDER")
	if folder == "" {
		t.Skip("run by TestSandboxDiesWithServer")
	}
	c, err := local.New().Create(context.Background(), computer.Spec{Run: "server", Folder: folder})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	s := c.(computer.Sandbox)
	marker := os.Getenv("AGENTRUN_TEST_MARKER")
	if _, err := s.Start(context.Background(), "sleep "+marker, computer.ExecOptions{}); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	if _, err := s.Exec(context.Background(), "echo kept > kept.txt", computer.ExecOptions{}); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	time.Sleep(time.Minute)
}

// TestSandboxDiesWithServer kills a server process holding a sandbox and
// checks that the sandbox's processes die with it, and that a new sandbox
// around the same run folder (the recreation after a restart) finds the
// folder as it was.
func TestSandboxDiesWithServer(t *testing.T) {
	p := local.New()
	if a := p.Available(t.Context()); !a.Available {
		t.Skip(a.Reason)
	}
	folder := t.TempDir()
	marker := strconv.Itoa(6000000 + int(time.Now().UnixNano()%1000000))
	cmd := exec.Command(os.Args[0], "-test.run=^TestServerProcess$")
	cmd.Env = append(os.Environ(), "AGENTRUN_TEST_SERVER_FOLDER="+folder, "AGENTRUN_TEST_MARKER="+marker)
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
	if len(sleepers(marker)) == 0 {
		t.Fatal("the sandbox's background process is not visible on the host")
	}
	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for len(sleepers(marker)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("sandbox processes survived their server: %v", sleepers(marker))
		}
		time.Sleep(50 * time.Millisecond)
	}

	c, err := p.Create(t.Context(), computer.Spec{Run: "server", Folder: folder})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.(computer.Sandbox).Exec(t.Context(), "cat kept.txt", computer.ExecOptions{})
	if err != nil || r.Stdout != "kept\n" {
		t.Fatalf("recreated sandbox reads %q, %v", r.Stdout, err)
	}
}

// sleepers lists live host processes running "sleep marker".
func sleepers(marker string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && string(b) == "sleep\x00"+marker+"\x00" {
			out = append(out, e.Name())
		}
	}
	return out
}
