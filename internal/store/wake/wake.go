// Package wake is the in-process broadcast both store backends use to wake waiters: runners
// waiting for claimable work and SSE streams waiting for timeline events. A change closes the
// current channel (waking every waiter at once) and replaces it.
package wake

import (
	"context"
	"sync"
	"time"
)

// Waker broadcasts "runs may be claimable" and "events may have been appended".
type Waker struct {
	mu     sync.Mutex
	work   chan struct{}
	events chan struct{}
}

// New returns a Waker.
func New() *Waker { return &Waker{work: make(chan struct{}), events: make(chan struct{})} }

// Poke wakes everyone waiting for work.
func (w *Waker) Poke() {
	w.mu.Lock()
	close(w.work)
	w.work = make(chan struct{})
	w.mu.Unlock()
}

// Event wakes everyone waiting for events.
func (w *Waker) Event() {
	w.mu.Lock()
	close(w.events)
	w.events = make(chan struct{})
	w.mu.Unlock()
}

// WaitWork blocks until Poke, ctx ends, or d passes.
func (w *Waker) WaitWork(ctx context.Context, d time.Duration) {
	w.mu.Lock()
	ch := w.work
	w.mu.Unlock()
	wait(ctx, ch, d)
}

// WaitEvent blocks until Event, ctx ends, or d passes.
func (w *Waker) WaitEvent(ctx context.Context, d time.Duration) {
	w.mu.Lock()
	ch := w.events
	w.mu.Unlock()
	wait(ctx, ch, d)
}

func wait(ctx context.Context, ch <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	}
}
