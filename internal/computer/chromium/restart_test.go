package chromium_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/computer/chromium"
	"agentrun.dev/agentrun/internal/computer/computertest"
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
	// The browser's profile goes under TMPDIR: its path finds its processes.
	computertest.KillServerProcess(t, []string{"AGENTRUN_TEST_SERVER_FOLDER=" + t.TempDir(), "TMPDIR=" + tmp},
		func() []string { return using(tmp) }, 10*time.Second)
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
