package harness

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/api"
)

// Every driver is a name validation accepts, and every non-builtin name validation accepts has a
// driver: the two lists cannot drift apart.
func TestDriversMatchAPIHarnesses(t *testing.T) {
	var want []string
	for _, h := range api.Harnesses {
		if h != "builtin" {
			want = append(want, string(h))
		}
	}
	slices.Sort(want)
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("drivers %v, api.Harnesses (without builtin) %v", got, want)
	}
}

// A package found in AGENTRUN_HARNESS_CACHE is used without npm; one found nowhere with no npm on
// PATH fails at once with a reason naming npm.
func TestInstalledFromCacheAndNoNPM(t *testing.T) {
	p := claude{}.Package()
	cache := t.TempDir()
	bin := filepath.Join(cache, "claude-agent@"+p.Version, "node_modules", ".bin", "claude")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	t.Setenv(CacheEnv, cache)
	got, err := Install(context.Background(), t.TempDir(), p, func(string) { t.Error("progress for an installed package") })
	if err != nil || got != bin {
		t.Fatalf("Install from cache = %q, %v; want %q", got, err, bin)
	}
	caps := Capabilities(t.TempDir())
	if len(caps) < 2 || caps[1].Name != "claude-agent" || !caps[1].Available || caps[1].Installed == "" || caps[1].Version != ClaudeVersion {
		t.Fatalf("capabilities %+v", caps)
	}

	t.Setenv(CacheEnv, "")
	t.Setenv("PATH", t.TempDir())
	_, err = Install(context.Background(), t.TempDir(), p, func(string) {})
	if err == nil || !strings.Contains(err.Error(), "npm") {
		t.Fatalf("Install without npm: %v", err)
	}
	if c := Capabilities(t.TempDir()); c[1].Available || !strings.Contains(c[1].Why, "npm") {
		t.Fatalf("capabilities without npm %+v", c[1])
	}
}

// A harness that exits with an error before answering is an ExitError carrying its last stderr
// lines; StartCommand's env is exactly the one given.
func TestExitErrorKeepsStderrTail(t *testing.T) {
	t.Setenv("SECRET_KEY", "sk-server")
	c, err := StartCommand(context.Background(), "sh", "/bin/sh", []string{"-c", `echo "env: $SECRET_KEY"; echo first >&2; echo boom >&2; exit 3`}, []string{"PATH=/usr/bin:/bin"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	line := <-c.Lines
	if line != "env: " {
		t.Fatalf("stdout %q: the server's environment leaked", line)
	}
	for range c.Lines {
	}
	e := c.Exit("exited before answering")
	if !strings.Contains(e.Error(), "exit status 3") || !slices.Equal(e.Tail, []string{"first", "boom"}) {
		t.Fatalf("exit error %q tail %q", e.Error(), e.Tail)
	}
}
