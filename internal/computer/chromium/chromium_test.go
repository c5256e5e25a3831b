package chromium_test

import (
	"testing"

	"agentrun.dev/agentrun/internal/computer/chromium"
	"agentrun.dev/agentrun/internal/computer/computertest"
)

func TestConformance(t *testing.T) {
	computertest.RunBrowser(t, chromium.New())
}
