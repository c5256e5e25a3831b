package server

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoAgentLoopInTheAPI fails when the HTTP layer depends on the agent loop again: what it
// needs of a run's model and folder lives in internal/model and internal/runfolder, so the API
// can be served (and tested) without the loop that drives runs.
func TestNoAgentLoopInTheAPI(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go tool to list the package's dependencies: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 20 {
		t.Fatalf("go list -deps listed %d packages: %q", len(deps), out)
	}
	for _, d := range deps {
		if d == "agentrun.dev/agentrun/internal/agent" {
			t.Error("internal/server depends on internal/agent")
		}
	}
}
