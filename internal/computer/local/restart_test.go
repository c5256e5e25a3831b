package local_test

import (
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/computer/computertest"
	"agentrun.dev/agentrun/internal/computer/local"
)

// TestServerProcess is the "server" of TestSandboxDiesWithServer.
func TestServerProcess(t *testing.T) { computertest.ServerProcess(t, local.New()) }

// TestSandboxDiesWithServer kills a server process holding a sandbox and checks that the
// sandbox's processes die with it (--die-with-parent and the PID namespace), and that a new
// sandbox around the same run folder finds the folder as it was.
func TestSandboxDiesWithServer(t *testing.T) {
	p := local.New()
	if a := p.Available(t.Context()); !a.Available {
		t.Skip(a.Reason)
	}
	computertest.SandboxDiesWithServer(t, p, 6000000, func(_, marker string) []string { return computertest.Sleepers(marker) }, 5*time.Second)
}
