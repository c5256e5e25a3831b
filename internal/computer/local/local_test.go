package local_test

import (
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/computer/computertest"
	"agentrun.dev/agentrun/internal/computer/local"
)

func TestConformance(t *testing.T) {
	computertest.RunSandbox(t, local.New())
}

// TestTools runs the sandbox tools through computer.Run on a real sandbox,
// as the agent loop will.
func TestTools(t *testing.T) {
	p := local.New()
	if a := p.Available(t.Context()); !a.Available {
		t.Skip(a.Reason)
	}
	c, err := p.Create(t.Context(), computer.Spec{Run: "tools", Folder: t.TempDir(), Kind: computer.KindSandbox})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	call := computertest.SandboxTools(t, c)
	// The helper keeps a bounded number of background processes.
	for i := 0; i < 32; i++ {
		if out, isErr := call("bash", `{"command":"sleep 100","background":true}`); isErr {
			t.Fatalf("background process %d: %q", i, out)
		}
	}
	if out, isErr := call("bash", `{"command":"sleep 100","background":true}`); !isErr || !strings.Contains(out, "32 background processes are running") {
		t.Fatalf("33rd background process: %q %v", out, isErr)
	}
}
