package postgres

import (
	"context"
	"sync"
	"time"
)

// The model's live text between processes (store.TextRelay): a runner's deltas go out as
// NOTIFY agentrun_text, coalesced like the event notifications (one statement per interval for
// all of them, since NOTIFY serializes the commits that send it), and every store's listener hands
// what arrives to the function OnText set. Lossy by design: a full queue drops, a dropped
// connection loses what was sent meanwhile, and nothing is stored. A notification reaches every
// listener of the database, so each payload starts with the sender's schema and a line break, and
// a store takes only its own schema's (two deployments may share a database).

const (
	chanText = "agentrun_text"
	// textEvery is how often queued deltas are sent; textQueue how many may wait.
	textEvery = 50 * time.Millisecond
	textQueue = 512
)

type textNotifier struct {
	s       *Store
	mu      sync.Mutex
	pending []string
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

// SendText queues payload for the other processes' stores (dropped when the queue is full).
func (s *Store) SendText(payload []byte) {
	s.textOnce.Do(func() {
		s.text = &textNotifier{s: s, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
		go s.text.loop()
	})
	n := s.text
	n.mu.Lock()
	if len(n.pending) < textQueue {
		n.pending = append(n.pending, string(payload))
	}
	n.mu.Unlock()
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// OnText sets the function every agentrun_text notification is handed to (nil: none).
func (s *Store) OnText(fn func(payload []byte)) {
	if fn == nil {
		s.lis.text.Store(nil)
		return
	}
	s.lis.text.Store(&fn)
}

func (n *textNotifier) loop() {
	defer close(n.done)
	for {
		select {
		case <-n.stop:
			return
		case <-n.kick:
		}
		select {
		case <-n.stop:
			return
		case <-time.After(textEvery):
		}
		n.mu.Lock()
		batch := n.pending
		n.pending = nil
		n.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		// WITH ORDINALITY keeps the pieces in the order they were queued.
		n.s.pool.Exec(ctx, `SELECT pg_notify($1, current_schema() || E'\n' || p) FROM unnest($2::text[]) WITH ORDINALITY AS t(p, i) ORDER BY i`, chanText, batch)
		cancel()
	}
}

func (n *textNotifier) close() {
	close(n.stop)
	<-n.done
}
