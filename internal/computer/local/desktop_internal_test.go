package local

import (
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/computer"
)

// TestDesktopMissingPrograms checks that without its programs a desktop is unavailable, saying
// which are missing and what to install, while a sandbox still is.
func TestDesktopMissingPrograms(t *testing.T) {
	saved := desktopPrograms
	t.Cleanup(func() { desktopPrograms = saved })
	desktopPrograms = append(append(desktopPrograms[:0:0], saved...), struct{ name, pkg string }{"no-such-x-program", "x11-nothing"})
	p := New()
	a := p.KindAvailable(t.Context(), computer.KindDesktop)
	if a.Available || !strings.Contains(a.Reason, "not installed: no-such-x-program: apt-get install x11-nothing") {
		t.Fatalf("desktop without a program: %+v", a)
	}
	if _, err := p.Create(t.Context(), computer.Spec{Run: "nox", Folder: t.TempDir(), Kind: computer.KindDesktop}); err == nil ||
		!strings.Contains(err.Error(), "no-such-x-program") {
		t.Fatalf("create a desktop without a program: %v", err)
	}
	if got, want := p.KindAvailable(t.Context(), computer.KindSandbox), p.Available(t.Context()); got != want {
		t.Fatalf("sandbox: %+v, provider %+v", got, want)
	}
	if a := p.KindAvailable(t.Context(), computer.KindBrowser); a.Available {
		t.Fatalf("browser: %+v", a)
	}
}
