package local_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/computer/computertest"
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
	computertest.KillServerProcess(t, []string{"AGENTRUN_TEST_SERVER_FOLDER=" + folder, "AGENTRUN_TEST_MARKER=" + marker},
		func() []string { return sleepers(marker) }, 5*time.Second)

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
