package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"agentrun.dev/agentrun/internal/store"
)

var _ store.Resealer = (*Store)(nil)

// inUseLockClass is the first key of the advisory lock that every serve and runner process holds
// shared while it uses the store and that a reseal takes exclusively; the second is a hash of the
// schema (as migrateLockClass's), so stores in different schemas do not see each other.
const inUseLockClass = 0x61727573 // "arus"

// inUsePing is how often the holding connection is checked; a dropped one is reconnected and the
// lock taken again.
const inUsePing = 10 * time.Second

// inUseHold owns the dedicated connection that holds the in-use lock (session-scoped: the
// database lets go of it when the connection ends, however the process died).
type inUseHold struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (h *inUseHold) stop() {
	h.cancel()
	<-h.done
}

// HoldInUse opens a connection outside the pool, takes the shared in-use lock on it (waiting, and
// saying so, while a reseal holds it exclusively) and keeps it until the store closes.
func (s *Store) HoldInUse(ctx context.Context, waiting func()) error {
	if s.inUse != nil {
		return nil
	}
	cfg := s.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] += " (in use)"
	conn, err := lockInUse(ctx, cfg, waiting)
	if err != nil {
		return err
	}
	hctx, cancel := context.WithCancel(context.Background())
	h := &inUseHold{cancel: cancel, done: make(chan struct{})}
	s.inUse = h
	go func() {
		defer close(h.done)
		backoff := minBackoff
		for {
			if conn == nil {
				if !sleep(hctx, backoff) {
					return
				}
				if conn, err = lockInUse(hctx, cfg, nil); err != nil {
					conn = nil
					backoff = min(2*backoff, maxBackoff)
					continue
				}
				backoff = minBackoff
			}
			if !sleep(hctx, inUsePing) {
				closeConn(conn)
				return
			}
			pctx, pcancel := context.WithTimeout(hctx, pingTimeout)
			err := conn.Ping(pctx)
			pcancel()
			if err != nil {
				closeConn(conn)
				conn = nil
			}
		}
	}()
	return nil
}

// lockInUse connects and takes the shared in-use lock, waiting for it after calling waiting.
func lockInUse(ctx context.Context, cfg *pgx.ConnConfig, waiting func()) (*pgx.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	conn, err := pgx.ConnectConfig(dctx, cfg)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("hold the store in use: %w", err)
	}
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock_shared($1, hashtext(current_schema()))`, int32(inUseLockClass)).Scan(&ok); err != nil {
		closeConn(conn)
		return nil, fmt.Errorf("hold the store in use: %w", err)
	}
	if !ok {
		if waiting != nil {
			waiting()
		}
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock_shared($1, hashtext(current_schema()))`, int32(inUseLockClass)); err != nil {
			closeConn(conn)
			return nil, fmt.Errorf("waiting for a secrets reseal to end: %w", err)
		}
	}
	return conn, nil
}

// ResealSecrets rotates every sealed value in one transaction that first takes the in-use lock
// exclusively (without waiting): it fails naming the sessions that hold it shared.
func (s *Store) ResealSecrets(ctx context.Context, reseal func(name string, sealed []byte) ([]byte, error), written func(done, total int)) (int, error) {
	var n int
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var ok bool
		if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1, hashtext(current_schema()))`, int32(inUseLockClass)).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w%s: stop the server and every runner on this store, then reseal", store.ErrInUse, pgHolders(ctx, tx))
		}
		rows, err := tx.Query(ctx, `SELECT name, sealed FROM secrets ORDER BY name FOR UPDATE`)
		if err != nil {
			return err
		}
		var vals []store.Sealed
		for rows.Next() {
			var v store.Sealed
			if err := rows.Scan(&v.Name, &v.Value); err != nil {
				rows.Close()
				return err
			}
			vals = append(vals, v)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		n, err = store.ResealAll(vals, reseal, func(name string, sealed []byte) error {
			_, err := tx.Exec(ctx, `UPDATE secrets SET sealed = $2 WHERE name = $1`, name, sealed)
			return err
		}, written)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("reseal secrets: %w", err)
	}
	return n, nil
}

// pgHolders says how many sessions hold the in-use lock and where from (" (held by 2 agentrun
// processes, connected from 10.0.0.5, 10.0.0.6)"), or "" when the database does not say.
func pgHolders(ctx context.Context, tx pgx.Tx) string {
	rows, err := tx.Query(ctx, `SELECT coalesce(host(a.client_addr), 'a local socket')
		FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1::int4::oid
		  AND l.objid = hashtext(current_schema())::oid AND l.objsubid = 2 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		ORDER BY a.backend_start`, int32(inUseLockClass))
	if err != nil {
		return ""
	}
	defer rows.Close()
	var from []string
	for rows.Next() {
		var addr string
		if rows.Scan(&addr) == nil {
			from = append(from, addr)
		}
	}
	switch len(from) {
	case 0:
		return ""
	case 1:
		return " (held by 1 agentrun process, connected from " + from[0] + ")"
	}
	return fmt.Sprintf(" (held by %d agentrun processes, connected from %s)", len(from), strings.Join(from, ", "))
}
