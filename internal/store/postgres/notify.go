package postgres

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"agentrun.dev/agentrun/internal/store/wake"
)

// WaitWork blocks until runs may have become claimable (a create, poke, release or lease expiry
// in this process, or a notification from another), or until ctx ends or d passes.
func (s *Store) WaitWork(ctx context.Context, d time.Duration) {
	s.wake.WaitWork(ctx, d)
}

// WaitEvents blocks until a timeline event may have been appended (here or by another process),
// or ctx ends, or d passes.
func (s *Store) WaitEvents(ctx context.Context, d time.Duration) {
	s.wake.WaitEvent(ctx, d)
}

// Listener timing.
const (
	// listenIdle is how long the listener waits for a notification before it checks, with a
	// round trip, that its connection is still alive (a dropped network may give no error).
	listenIdle  = 30 * time.Second
	pingTimeout = 5 * time.Second
	minBackoff  = 100 * time.Millisecond
	maxBackoff  = 5 * time.Second
	dialTimeout = 10 * time.Second
)

// listener owns the Store's dedicated LISTEN connection: one goroutine waits for notifications
// and turns them into local wake-ups, reconnecting with backoff if the connection drops. Every
// reconnection wakes all waiters, since notifications sent meanwhile were lost.
type listener struct {
	cfg    *pgx.ConnConfig
	wake   *wake.Waker
	cancel context.CancelFunc
	done   chan struct{}

	mu  sync.Mutex
	pid uint32 // backend pid of the current connection, 0 while disconnected
	// gen counts the connection's changes (connected, lost): a cache valid while no notification
	// can have been missed is valid for one generation (creditsCache).
	gen uint64
	// creditsOn is set by an agentrun_credits notification of this schema.
	creditsOn *atomic.Bool
	// text, when set, is handed each agentrun_text payload of schema (Store.OnText).
	text   atomic.Pointer[func([]byte)]
	schema atomic.Pointer[string]
}

// startListener connects and listens before it returns, so that no notification committed after
// Open returns is missed, then hands the connection to its goroutine.
func startListener(ctx context.Context, cfg *pgx.ConnConfig, w *wake.Waker, creditsOn *atomic.Bool) (*listener, error) {
	l := &listener{cfg: cfg, wake: w, done: make(chan struct{}), creditsOn: creditsOn}
	conn, err := l.connect(ctx)
	if err != nil {
		return nil, err
	}
	lctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	go l.run(lctx, conn)
	return l, nil
}

func (l *listener) connect(ctx context.Context) (*pgx.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, l.cfg)
	if err != nil {
		return nil, err
	}
	for _, ch := range []string{chanWork, chanEvents, chanText, chanCredits} {
		if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{ch}.Sanitize()); err != nil {
			conn.Close(context.Background())
			return nil, err
		}
	}
	var schema string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	l.schema.Store(&schema)
	l.setPID(conn.PgConn().PID())
	return conn, nil
}

func (l *listener) setPID(pid uint32) {
	l.mu.Lock()
	if l.pid != pid {
		l.gen++
	}
	l.pid = pid
	l.mu.Unlock()
}

// generation is the connection's generation and whether it is connected now.
func (l *listener) generation() (uint64, bool) {
	if l == nil {
		return 0, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gen, l.pid != 0
}

// backendPID is the listening connection's backend pid (0 while disconnected); for tests.
func (l *listener) backendPID() uint32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pid
}

func (l *listener) stop() {
	l.cancel()
	<-l.done
}

func (l *listener) run(ctx context.Context, conn *pgx.Conn) {
	defer close(l.done)
	defer func() {
		if conn != nil {
			closeConn(conn)
		}
		l.setPID(0)
	}()
	backoff := minBackoff
	for {
		if conn == nil {
			if !sleep(ctx, backoff) {
				return
			}
			var err error
			if conn, err = l.connect(ctx); err != nil {
				conn = nil
				backoff = min(2*backoff, maxBackoff)
				continue
			}
			backoff = minBackoff
			// Whatever was notified while we were away is lost: let every waiter look again.
			l.wake.Poke()
			l.wake.Event()
		}
		if err := l.receive(ctx, conn); err != nil {
			if ctx.Err() != nil {
				return
			}
			closeConn(conn)
			conn = nil
			l.setPID(0)
		}
	}
}

// receive waits for one notification (or listenIdle) on conn and acts on it. An error means the
// connection is no longer usable.
func (l *listener) receive(ctx context.Context, conn *pgx.Conn) error {
	wctx, cancel := context.WithTimeout(ctx, listenIdle)
	n, err := conn.WaitForNotification(wctx)
	cancel()
	if err != nil {
		if ctx.Err() != nil || !pgconn.Timeout(err) || conn.IsClosed() {
			return err
		}
		// Idle: make sure the connection is still there.
		pctx, cancel := context.WithTimeout(ctx, pingTimeout)
		defer cancel()
		return conn.Ping(pctx)
	}
	switch n.Channel {
	case chanWork:
		l.wake.Poke()
	case chanEvents:
		l.wake.Event()
	case chanCredits:
		if mine := l.schema.Load(); l.creditsOn != nil && mine != nil && n.Payload == *mine {
			l.creditsOn.Store(true)
		}
	case chanText:
		sch, payload, ok := strings.Cut(n.Payload, "\n")
		if fn, mine := l.text.Load(), l.schema.Load(); ok && fn != nil && mine != nil && sch == *mine {
			(*fn)([]byte(payload))
		}
	}
	return nil
}

func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}

// sleep waits d, or returns false when ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
