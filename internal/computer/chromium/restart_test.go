package chromium_test

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
	"agentrun.dev/agentrun/internal/computer/chromium"
)

// TestServerProcess is the "server" of TestBrowserDiesWithServer.
func TestServerProcess(t *testing.T) {
	folder := os.Getenv("AGENTRUN_TEST_SERVER_FOLDER")
	if folder == "" {
		t.Skip("run by TestBrowserDiesWithServer")
	}
	if _, err := chromium.New().Create(context.Background(), computer.Spec{Run: "server", Folder: folder}); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	time.Sleep(time.Minute)
}

// TestBrowserDiesWithServer kills a server process holding a browser and
// checks that no process of the browser is left.
func TestBrowserDiesWithServer(t *testing.T) {
	if a := chromium.New().Available(t.Context()); !a.Available {
		t.Skip(a.Reason)
	}
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestServerProcess$")
	// The browser's profile goes under TMPDIR: its path finds its processes.
	cmd.Env = append(os.Environ(), "AGENTRUN_TEST_SERVER_FOLDER="+t.TempDir(), "TMPDIR="+tmp)
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
	if len(using(tmp)) == 0 {
		t.Fatal("no browser process visible on the host")
	}
	cmd.Process.Kill()
	cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for len(using(tmp)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("browser processes survived their server: %v", using(tmp))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// using lists live host processes whose command line mentions dir.
func using(dir string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err == nil && strings.Contains(string(b), dir) && !strings.Contains(string(st), ") Z ") {
			line := strings.ReplaceAll(string(b), "\x00", " ")
			out = append(out, e.Name()+" "+line[:min(len(line), 80)])
		}
	}
	return out
}
