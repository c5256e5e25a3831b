package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"agentrun.dev/agentrun/internal/store"
)

func (s *Store) ClaimRuns(ctx context.Context, owner string, max int, ttl time.Duration) ([]store.Lease, error) {
	if max <= 0 {
		return nil, nil
	}
	var out []store.Lease
	err := s.tx(ctx, func(tx *sql.Tx) error {
		now := s.now()
		exp := now.Add(ttl)
		rows, err := s.txQuery(ctx, tx, `
			UPDATE runs SET lease_owner = ?, lease_expires_at = ?, lease_generation = lease_generation + 1
			WHERE name IN (
				SELECT name FROM (
					SELECT name, claimable_at AS t FROM runs WHERE lease_owner IS NULL AND claimable_at IS NOT NULL AND claimable_at <= ? AND admitted = 1
					UNION ALL
					SELECT name, lease_expires_at AS t FROM runs WHERE lease_owner IS NOT NULL AND lease_expires_at < ?
				) ORDER BY t LIMIT ?)
			RETURNING name, lease_generation, poke_seq`, owner, ms(exp), ms(now), ms(now), max)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			l := store.Lease{Owner: owner, ExpiresAt: exp}
			if err := rows.Scan(&l.Run, &l.Generation, &l.PokeSeq); err != nil {
				return err
			}
			out = append(out, l)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("claim runs for %s: %w", owner, err)
	}
	return out, nil
}

func (s *Store) ExpireLeases(ctx context.Context, owner string) (int, error) {
	res, err := s.w.ExecContext(ctx, `UPDATE runs SET lease_expires_at = ? WHERE lease_owner = ?`, ms(s.now())-1, owner)
	if err != nil {
		return 0, fmt.Errorf("expire leases of %s: %w", owner, err)
	}
	n, _ := res.RowsAffected()
	if n > 0 {
		s.wake.Poke()
	}
	return int(n), nil
}

// renewChunk bounds the leases one renewal transaction extends: the writer is the commits' too,
// and a renewal cut short keeps the chunks committed before.
const renewChunk = 500

// RenewLeases extends the leases a chunk at a time, in the order given; see store.Store.
func (s *Store) RenewLeases(ctx context.Context, leases []store.Lease, ttl time.Duration) (renewed, lost []store.Lease, err error) {
	for start := 0; start < len(leases); start += renewChunk {
		chunk := leases[start:min(start+renewChunk, len(leases))]
		var ok, gone []store.Lease
		err := s.tx(ctx, func(tx *sql.Tx) error {
			ok, gone = ok[:0], gone[:0]
			exp := ms(s.now().Add(ttl))
			for _, l := range chunk {
				res, err := s.txExec(ctx, tx, `UPDATE runs SET lease_expires_at = ? WHERE name = ? AND lease_owner = ? AND lease_generation = ?`, exp, l.Run, l.Owner, l.Generation)
				if err != nil {
					return err
				}
				if n, _ := res.RowsAffected(); n == 0 {
					gone = append(gone, l)
				} else {
					ok = append(ok, l)
				}
			}
			return nil
		})
		if err != nil {
			return renewed, lost, fmt.Errorf("renew %d leases (%d renewed, %d lost before): %w", len(leases), len(renewed), len(lost), err)
		}
		renewed, lost = append(renewed, ok...), append(lost, gone...)
	}
	return renewed, lost, nil
}

// Commit applies w under the lease. Commits from many runs are grouped: a single goroutine takes
// every commit waiting at that moment and applies them in one transaction (one fsync), each inside
// its own savepoint, so a fenced or failed write is rolled back alone. A caller returns only after
// the transaction holding its write has committed, so an acknowledged step is durable.
func (s *Store) Commit(ctx context.Context, l store.Lease, w store.Write) (store.Signals, error) {
	req := &commitReq{l: l, w: w, done: make(chan struct{})}
	select {
	case s.commits <- req:
	case <-s.closed:
		return store.Signals{}, fmt.Errorf("commit run %s: store closed", l.Run)
	case <-ctx.Done():
		return store.Signals{}, fmt.Errorf("commit run %s: %w", l.Run, ctx.Err())
	}
	// Once queued the write may commit, so wait for the outcome whatever ctx says.
	<-req.done
	if req.err != nil {
		return req.sig, fmt.Errorf("commit run %s (generation %d): %w", l.Run, l.Generation, fullErr(req.err))
	}
	if w.Release {
		s.wake.Poke()
	}
	if len(w.Events) > 0 {
		s.wake.Event()
	}
	return req.sig, nil
}

type commitReq struct {
	l    store.Lease
	w    store.Write
	sig  store.Signals
	err  error
	done chan struct{}
}

// maxGroup bounds the writes grouped into one transaction.
const maxGroup = 256

// commitLoop owns group commits until the store closes.
func (s *Store) commitLoop() {
	defer close(s.loopDone)
	for {
		var first *commitReq
		select {
		case first = <-s.commits:
		case <-s.closed:
			return
		}
		batch := []*commitReq{first}
	drain:
		for len(batch) < maxGroup {
			select {
			case r := <-s.commits:
				batch = append(batch, r)
			default:
				break drain
			}
		}
		s.commitBatch(batch)
	}
}

func (s *Store) commitBatch(batch []*commitReq) {
	ctx := context.Background()
	finish := func(err error) {
		for _, r := range batch {
			if r.err == nil && err != nil {
				r.err = err
			}
			close(r.done)
		}
	}
	s.stmts.prepareWanted(ctx)
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		finish(err)
		return
	}
	for i, r := range batch {
		sp := fmt.Sprintf("w%d", i)
		if _, err := s.txExec(ctx, tx, "SAVEPOINT "+sp); err != nil {
			tx.Rollback()
			finish(err)
			return
		}
		r.sig, r.err = s.applyWrite(ctx, tx, r.l, r.w)
		if r.err != nil {
			if _, err := s.txExec(ctx, tx, "ROLLBACK TO "+sp); err != nil {
				tx.Rollback()
				finish(err)
				return
			}
		}
		if _, err := s.txExec(ctx, tx, "RELEASE "+sp); err != nil {
			tx.Rollback()
			finish(err)
			return
		}
	}
	finish(tx.Commit())
}

// applyWrite applies one runner write inside tx, fenced by the lease generation.
func (s *Store) applyWrite(ctx context.Context, tx *sql.Tx, l store.Lease, w store.Write) (store.Signals, error) {
	var sig store.Signals
	var cancel int
	var uid string
	err := s.txQueryRow(ctx, tx, `SELECT cancel_requested, poke_seq, uid FROM runs WHERE name = ? AND lease_owner = ? AND lease_generation = ?`, l.Run, l.Owner, l.Generation).Scan(&cancel, &sig.PokeSeq, &uid)
	if errors.Is(err, sql.ErrNoRows) {
		return sig, store.ErrFenced
	}
	if err != nil {
		return sig, err
	}
	sig.CancelRequested = cancel != 0
	if err := s.writeSteps(ctx, tx, l.Run, w.Steps); err != nil {
		return sig, err
	}
	if err := s.writeEvents(ctx, tx, l.Run, w.Events); err != nil {
		return sig, err
	}
	if err := s.writeFiles(ctx, tx, l.Run, w.HistoryStep(), w.Files); err != nil {
		return sig, err
	}
	if err := s.writeCharges(ctx, tx, l.Run, uid, w.Charges); err != nil {
		return sig, err
	}
	if w.Status != nil {
		if _, err := s.txExec(ctx, tx, `UPDATE runs SET status = ?, phase = ?, resource_version = resource_version + 1 WHERE name = ?`, mustJSON(w.Status), w.Status.Phase, l.Run); err != nil {
			return sig, err
		}
	}
	// The events this write reports to webhooks go to the outbox in the same transaction.
	if err := s.writeOutbox(ctx, tx, store.RunOutbox(l.Run, l.PokeSeq, w, s.now())); err != nil {
		return sig, err
	}
	if w.Release {
		if _, err := s.txExec(ctx, tx, `DELETE FROM credit_reservations WHERE run = ?`, l.Run); err != nil {
			return sig, err
		}
		var wake any
		if w.WakeAt != nil {
			wake = ms(*w.WakeAt)
		}
		// A poke after the claim means something arrived the holder may not have seen; a
		// finished run is never claimable again.
		if _, err := s.txExec(ctx, tx, `UPDATE runs SET lease_owner = NULL, lease_expires_at = NULL,
			claimable_at = CASE WHEN phase IN ('Succeeded', 'Failed', 'Cancelled') THEN NULL WHEN poke_seq <> ? THEN ? ELSE ? END WHERE name = ?`, l.PokeSeq, ms(s.now()), wake, l.Run); err != nil {
			return sig, err
		}
	}
	return sig, nil
}
