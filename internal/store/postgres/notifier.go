package postgres

import (
	"context"
	"sync"
	"time"
)

// eventNotifier tells other processes that runs have new timeline events, after the commits that
// wrote them and coalesced: at most one NOTIFY statement per interval for every run with news.
// PostgreSQL serializes the commits of transactions that sent NOTIFY (a cluster-wide lock held
// through the commit's flush), so notifying inside every runner commit made runner commits run one
// at a time; events only wake SSE followers, for whom a few tens of milliseconds do not matter.
type eventNotifier struct {
	s       *Store
	mu      sync.Mutex
	pending map[string]bool
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

const notifyEvery = 25 * time.Millisecond

func newEventNotifier(s *Store) *eventNotifier {
	n := &eventNotifier{s: s, pending: map[string]bool{}, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go n.loop()
	return n
}

// add queues a notification for each run.
func (n *eventNotifier) add(runs ...string) {
	n.mu.Lock()
	for _, r := range runs {
		n.pending[r] = true
	}
	n.mu.Unlock()
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

func (n *eventNotifier) loop() {
	defer close(n.done)
	for {
		select {
		case <-n.stop:
			n.flush()
			return
		case <-n.kick:
		}
		// Let commits arriving together share one statement.
		select {
		case <-n.stop:
		case <-time.After(notifyEvery):
		}
		n.flush()
	}
}

func (n *eventNotifier) flush() {
	n.mu.Lock()
	runs := make([]string, 0, len(n.pending))
	for r := range n.pending {
		runs = append(runs, r)
	}
	n.pending = map[string]bool{}
	n.mu.Unlock()
	if len(runs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Best effort: followers also poll, so a lost notification delays them by a poll at most.
	n.s.pool.Exec(ctx, `SELECT pg_notify($1, r) FROM unnest($2::text[]) AS r`, chanEvents, runs)
}

func (n *eventNotifier) close() {
	close(n.stop)
	<-n.done
}
