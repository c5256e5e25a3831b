package computer

import (
	"context"
	"strings"
	"testing"
)

// kindProvider is a provider whose desktop needs more than the provider itself.
type kindProvider struct{ fakeProvider }

func (p kindProvider) KindAvailable(ctx context.Context, kind Kind) Availability {
	if kind == KindDesktop {
		return Availability{Reason: "Xvfb not installed"}
	}
	return p.Available(ctx)
}

func TestRegistryKindAvailable(t *testing.T) {
	r := NewRegistry(kindProvider{fakeProvider{"local", []Kind{KindSandbox, KindDesktop}, Availability{Available: true}}})
	st := r.Status(context.Background())
	if len(st) != 1 || !st[0].Available || st[0].KindsUnavailable[KindDesktop] != "Xvfb not installed" || len(st[0].KindsUnavailable) != 1 {
		t.Fatalf("status %+v", st)
	}
	if _, err := r.Resolve(context.Background(), KindSandbox, "local"); err != nil {
		t.Fatalf("sandbox: %v", err)
	}
	if _, err := r.Resolve(context.Background(), KindDesktop, "local"); err == nil || !strings.Contains(err.Error(), "Xvfb not installed") {
		t.Fatalf("desktop by name: %v", err)
	}
	if _, err := r.Resolve(context.Background(), KindDesktop, "", "local"); err == nil || !strings.Contains(err.Error(), "Xvfb not installed") {
		t.Fatalf("desktop by preference: %v", err)
	}
	// A provider that is not a KindChecker is available for all its kinds when it is.
	if a := KindAvailable(context.Background(), fakeProvider{"x", []Kind{KindSandbox}, Availability{Available: true}}, KindSandbox); !a.Available {
		t.Fatalf("plain provider: %+v", a)
	}
}
