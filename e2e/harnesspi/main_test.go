package harnesspi

import (
	"testing"

	"agentrun.dev/agentrun/e2e/e2etest"
)

// TestMain makes this test binary also the agentrun binary the tests start (e2etest.Main).
func TestMain(m *testing.M) { e2etest.Main(m) }
