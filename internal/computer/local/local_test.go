package local_test

import (
	"testing"

	"agentrun.dev/agentrun/internal/computer/computertest"
	"agentrun.dev/agentrun/internal/computer/local"
)

func TestConformance(t *testing.T) {
	computertest.RunSandbox(t, local.New())
}
