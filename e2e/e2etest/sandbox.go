package e2etest

import (
	"os/exec"
	"testing"

	"agentrun.dev/agentrun/internal/computer/local"
)

func NeedBwrap(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("sandbox tests skipped: bubblewrap not installed (apt-get install bubblewrap; .ci/run does)")
	}
}

// NeedNetworkSandbox skips unless a local sandbox with network (its own network namespace: needs
// slirp4netns, nsenter and ip besides bubblewrap) can be made here, saying what is missing.
func NeedNetworkSandbox(t *testing.T) {
	t.Helper()
	NeedBwrap(t)
	if a := local.New().NetworkAvailable(); !a.Available {
		t.Skip("network sandbox tests skipped: " + a.Reason)
	}
}
