package local

import (
	"slices"
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
	// The reason lists what is missing and the packages to install, whichever of the real
	// programs this machine has: the made-up one always, an installed one never.
	_, rest, ok := strings.Cut(a.Reason, "not installed: ")
	listed, install, ok2 := strings.Cut(rest, ": apt-get install ")
	if a.Available || !ok || !ok2 {
		t.Fatalf("desktop without a program: %+v", a)
	}
	missing := strings.Split(listed, ", ")
	if !slices.Contains(missing, "no-such-x-program") || !slices.Contains(strings.Fields(install), "x11-nothing") {
		t.Fatalf("desktop without a program: the reason %q does not name it and its package", a.Reason)
	}
	for _, prog := range saved {
		if got, want := slices.Contains(missing, prog.name), !onSandboxPath(prog.name); got != want {
			t.Errorf("the reason %q lists %s as missing: %v, want %v", a.Reason, prog.name, got, want)
		}
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
