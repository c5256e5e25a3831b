package computer

import (
	"context"
	"sync"
	"testing"
)

type countingProvider struct {
	mu      sync.Mutex
	created int
	closed  int
}

type countedComputer struct{ p *countingProvider }

func (c countedComputer) Kind() Kind     { return KindSandbox }
func (c countedComputer) Info() []string { return nil }
func (c countedComputer) Close() error {
	c.p.mu.Lock()
	c.p.closed++
	c.p.mu.Unlock()
	return nil
}

func (p *countingProvider) Name() string  { return "counting" }
func (p *countingProvider) Kinds() []Kind { return []Kind{KindSandbox} }
func (p *countingProvider) Available(context.Context) Availability {
	return Availability{Available: true}
}
func (p *countingProvider) Create(context.Context, Spec) (Computer, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.created++
	return countedComputer{p}, nil
}

func TestLive(t *testing.T) {
	p := &countingProvider{}
	l := &Live{Registry: NewRegistry(p)}
	ctx := context.Background()
	spec := Spec{Run: "r1", Folder: "/f", Kind: KindSandbox}
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := l.Get(ctx, "counting", spec); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if p.created != 1 {
		t.Fatalf("10 concurrent Gets created %d computers", p.created)
	}
	c, _ := l.Get(ctx, "counting", spec)
	l.Forget("r1", c)
	if _, err := l.Get(ctx, "counting", spec); err != nil || p.created != 2 {
		t.Fatalf("after Forget: created %d, %v", p.created, err)
	}
	spec.Network = true
	if _, err := l.Get(ctx, "counting", spec); err != nil || p.created != 3 || p.closed != 1 {
		t.Fatalf("after a spec change: created %d closed %d, %v", p.created, p.closed, err)
	}
	if _, err := l.Get(ctx, "counting", Spec{Run: "r2", Kind: KindSandbox}); err != nil {
		t.Fatal(err)
	}
	if err := l.CloseAll(); err != nil || p.closed != 3 {
		t.Fatalf("CloseAll: closed %d, %v", p.closed, err)
	}
	if _, err := l.Get(ctx, "nope", spec); err == nil {
		t.Fatal("unknown provider")
	}
}
