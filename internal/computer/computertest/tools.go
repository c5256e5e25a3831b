package computertest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/computer"
)

// SandboxTools runs a sandbox's tools through computer.Run on c, as the agent loop does:
// python3 through bash, a timeout, a background process listed, read and stopped, an unknown
// process id. It returns the call function for a provider's own checks after these.
func SandboxTools(t *testing.T, c computer.Computer) func(name, input string) (string, bool) {
	t.Helper()
	call := func(name, input string) (string, bool) {
		t.Helper()
		content, isErr, err := computer.Run(context.Background(), c, name, json.RawMessage(input))
		if err != nil {
			t.Fatalf("%s %s: %v", name, input, err)
		}
		return content, isErr
	}
	if out, isErr := call("bash", `{"command":"python3 --version"}`); isErr || !strings.HasPrefix(out, "exit code 0\nPython 3") {
		t.Fatalf("python3 --version: %q %v", out, isErr)
	}
	if out, isErr := call("bash", `{"command":"sleep 30","timeout_s":1}`); !isErr || !strings.Contains(out, "timed out") {
		t.Fatalf("timeout: %q %v", out, isErr)
	}
	out, _ := call("bash", `{"command":"echo hi; sleep 100","background":true}`)
	if !strings.Contains(out, "p1") {
		t.Fatalf("background: %q", out)
	}
	for i := 0; ; i++ {
		// Wait for the echo before stopping it.
		if out, _ := call("bash_output", `{"id":"p1"}`); strings.Contains(out, "hi\n") {
			break
		}
		if i == 100 {
			t.Fatal("no output from the background process")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out, _ := call("bash_list", `{}`); !strings.Contains(out, "p1\trunning") {
		t.Fatalf("list: %q", out)
	}
	if out, _ := call("bash_kill", `{"id":"p1"}`); !strings.Contains(out, "stopped") {
		t.Fatalf("kill: %q", out)
	}
	if out, _ := call("bash_output", `{"id":"p1"}`); !strings.Contains(out, "hi\n") || !strings.Contains(out, "killed by a signal") {
		t.Fatalf("output: %q", out)
	}
	if out, isErr := call("bash_output", `{"id":"p7"}`); !isErr || !strings.Contains(out, "p7") {
		t.Fatalf("unknown process: %q %v", out, isErr)
	}
	return call
}
