package agent

import (
	"context"
	"testing"

	"agentrun.dev/agentrun/internal/computer"
)

// fakeProvider makes fake computers of one kind; browsers have a screen, sandboxes none.
type fakeProvider struct {
	name string
	kind computer.Kind
}

func (p fakeProvider) Name() string           { return p.name }
func (p fakeProvider) Kinds() []computer.Kind { return []computer.Kind{p.kind} }
func (p fakeProvider) Available(context.Context) computer.Availability {
	return computer.Availability{Available: true}
}
func (p fakeProvider) Create(ctx context.Context, spec computer.Spec) (computer.Computer, error) {
	if p.kind == computer.KindBrowser {
		return &fakeScreen{fakeComputer{kind: p.kind}}, nil
	}
	return &fakeComputer{kind: p.kind}, nil
}

type fakeComputer struct{ kind computer.Kind }

func (c *fakeComputer) Kind() computer.Kind { return c.kind }
func (c *fakeComputer) Info() []string      { return nil }
func (c *fakeComputer) Close() error        { return nil }

type fakeScreen struct{ fakeComputer }

func (s *fakeScreen) Frame(context.Context) ([]byte, int, int, error) {
	return []byte{0xff, 0xd8}, 1, 1, nil
}
func (s *fakeScreen) ClickAt(context.Context, int, int) error { return nil }
func (s *fakeScreen) TypeText(context.Context, string) error  { return nil }
func (s *fakeScreen) Key(context.Context, string) error       { return nil }

// The engine shows the screen of a run's browser while it is live here, and nothing for a run
// without one, a sandbox, or a computer closed.
func TestEngineScreen(t *testing.T) {
	t.Parallel()
	e := &Engine{Computers: computer.NewRegistry(fakeProvider{"fake-browser", computer.KindBrowser}, fakeProvider{"fake-sandbox", computer.KindSandbox})}
	if _, ok := e.Screen("r1"); ok {
		t.Fatal("a screen before any computer was made")
	}
	live := e.liveComputers()
	b, err := live.Get(t.Context(), "fake-browser", computer.Spec{Run: "r1", Folder: t.TempDir(), Kind: computer.KindBrowser})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := live.Get(t.Context(), "fake-sandbox", computer.Spec{Run: "r2", Folder: t.TempDir(), Kind: computer.KindSandbox}); err != nil {
		t.Fatal(err)
	}
	if s, ok := e.Screen("r1"); !ok || s != b.(computer.Screen) {
		t.Errorf("Screen(r1) = %v, %v; want the run's browser", s, ok)
	}
	if _, ok := e.Screen("r2"); ok {
		t.Error("a sandbox has a screen")
	}
	if _, ok := e.Screen("r3"); ok {
		t.Error("a run without a computer here has a screen")
	}
	if err := live.Close("r1"); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Screen("r1"); ok {
		t.Error("a closed browser still has a screen")
	}
}
