package computer

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Live keeps the computers of the runs one runner executes, one per run, so
// the agent loop can ask for a run's computer on every tool call: the first
// call (the journaled creation step, or the first call after a restart, when
// that step replays as completed) creates it around the run folder, later
// ones get the same computer, and one that died (ErrClosed from a call) is
// dropped and made again on the next Get.
type Live struct {
	Registry *Registry

	mu   sync.Mutex
	runs map[string]*liveEntry
}

type liveEntry struct {
	mu       sync.Mutex // held while creating
	provider string
	spec     Spec
	c        Computer
}

// Get returns run's computer, creating it with provider (a name in Registry)
// when there is none yet. Asking again with another provider or kind closes
// the old computer and makes a new one.
func (l *Live) Get(ctx context.Context, provider string, spec Spec) (Computer, error) {
	if spec.Run == "" {
		return nil, errors.New("computer spec without a run name")
	}
	l.mu.Lock()
	if l.runs == nil {
		l.runs = map[string]*liveEntry{}
	}
	e := l.runs[spec.Run]
	if e == nil {
		e = &liveEntry{}
		l.runs[spec.Run] = e
	}
	l.mu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.c != nil && e.provider == provider && e.spec.Kind == spec.Kind && e.spec.Folder == spec.Folder &&
		e.spec.Network == spec.Network && e.spec.Limits == spec.Limits {
		return e.c, nil
	}
	if e.c != nil {
		e.c.Close()
		e.c = nil
	}
	p, ok := l.Registry.Get(provider)
	if !ok {
		return nil, fmt.Errorf("unknown computer provider %q", provider)
	}
	c, err := p.Create(ctx, spec)
	if err != nil {
		return nil, err
	}
	e.provider, e.spec, e.c = provider, spec, c
	return c, nil
}

// Forget drops run's computer without closing it, if it is still c: for a
// computer that died (calls return ErrClosed), so the next Get makes a new
// one. Close it too, to release what it holds.
func (l *Live) Forget(run string, c Computer) {
	l.mu.Lock()
	e := l.runs[run]
	l.mu.Unlock()
	if e == nil {
		return
	}
	e.mu.Lock()
	if e.c == c {
		e.c = nil
	}
	e.mu.Unlock()
}

// Close closes run's computer (the run ended, or its lease was lost) and
// forgets it.
func (l *Live) Close(run string) error {
	l.mu.Lock()
	e := l.runs[run]
	delete(l.runs, run)
	l.mu.Unlock()
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.c == nil {
		return nil
	}
	err := e.c.Close()
	e.c = nil
	return err
}

// Take forgets run's computer and returns it (nil when there is none), for the caller to close
// outside its own locks; the next Get makes a new one.
func (l *Live) Take(run string) Computer {
	l.mu.Lock()
	e := l.runs[run]
	delete(l.runs, run)
	l.mu.Unlock()
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.c
	e.c = nil
	return c
}

// CloseAll closes every computer (the runner stops).
func (l *Live) CloseAll() error {
	l.mu.Lock()
	runs := make([]string, 0, len(l.runs))
	for r := range l.runs {
		runs = append(runs, r)
	}
	l.mu.Unlock()
	var errs []error
	for _, r := range runs {
		if err := l.Close(r); err != nil {
			errs = append(errs, fmt.Errorf("close computer of run %s: %w", r, err))
		}
	}
	return errors.Join(errs...)
}

// Peek returns run's computer if one is alive, without creating one.
func (l *Live) Peek(run string) Computer {
	l.mu.Lock()
	e := l.runs[run]
	l.mu.Unlock()
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.c
}

// Runs lists the runs that have a computer here.
func (l *Live) Runs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.runs))
	for r := range l.runs {
		out = append(out, r)
	}
	return out
}
