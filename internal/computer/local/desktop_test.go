package local_test

import (
	"testing"

	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/computer/computertest"
	"agentrun.dev/agentrun/internal/computer/local"
)

// TestDesktopConformance runs the desktop checks (the sandbox's among them) on local desktops.
// It is skipped, with the reason, where bubblewrap or the X programs (Xvfb, xdotool, xwd) are
// missing; the input and pixel checks skip themselves without xev or xsetroot.
func TestDesktopConformance(t *testing.T) {
	p := local.New()
	if a := p.KindAvailable(t.Context(), computer.KindDesktop); !a.Available {
		t.Skip("local desktops not available here: " + a.Reason)
	}
	computertest.RunDesktop(t, p)
}
