package local_test

import (
	"os"
	"testing"

	"agentrun.dev/agentrun/internal/computer/sandboxhelper"
)

// TestMain: the sandboxes these tests start re-execute this test binary as their helper.
func TestMain(m *testing.M) {
	if code, ok := sandboxhelper.Main(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
