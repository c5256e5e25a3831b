package e2etest

import (
	"context"
	"os/exec"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// RunToExit runs the binary with args and env and answers its exit code and output; a process
// still running after 30 s fails the test (it was meant to refuse).
func RunToExit(t *testing.T, e *Env, args []string, extraEnv ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, BinPath, args...)
	cmd.Env = append(e.BaseEnv(), extraEnv...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%v still running after 30 s, want it to refuse to start:\n%s", args, out)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}
