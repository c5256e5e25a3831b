package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// A message joins the group commit (group.go) as an op, which cannot read the run's row and
// then decide in the same batch: the statements are queued before any of them runs. So the
// message reads the row first, outside any transaction, applies store.MessageRun to what it
// read, and queues a write that applies only if the row still reads the same (phase, status,
// whether leased) once the batch holds its lock; if it does not, the message reads again. After
// messageTries such misses (a run whose status its runner keeps changing) it takes the run's row
// lock before it reads, in a transaction of its own, which always succeeds.
const messageTries = 3

// errRowMoved: the run's row changed between the message's read and its write, which therefore
// did nothing.
var errRowMoved = errors.New("the run changed while the message was written")

// messageWrite is one AddMessage: what it read of the run and its outcome.
type messageWrite struct {
	run, key, payload string
	ifBusy            api.IfBusy // as asked
	mode              api.IfBusy // as stored (store.MessageRunIfBusy)
	row               store.RunRow
	status            string // the status column as read, which the write must still find
	requeued          *api.AgentRunStatus

	msg     api.Message
	created bool
}

// AddMessage appends a message to a run and pokes it; a used key returns the first message.
func (s *Store) AddMessage(ctx context.Context, run, key, payload string) (api.Message, bool, error) {
	return s.AddMessageIfBusy(ctx, run, key, payload, "")
}

// AddMessageIfBusy is AddMessage with the message's ifBusy mode (store.MessageRunIfBusy).
func (s *Store) AddMessageIfBusy(ctx context.Context, run, key, payload string, ifBusy api.IfBusy) (api.Message, bool, error) {
	m := &messageWrite{run: run, key: key, payload: payload, ifBusy: ifBusy}
	err := errRowMoved
	for try := 0; try < messageTries && errors.Is(err, errRowMoved); try++ {
		err = s.addMessageGrouped(ctx, m)
	}
	if errors.Is(err, errRowMoved) {
		err = s.addMessageLocked(ctx, m)
	}
	if err != nil {
		return api.Message{}, false, fmt.Errorf("message run %s: %w", run, err)
	}
	if m.created {
		s.wake.Poke()
	}
	return m.msg, m.created, nil
}

// addMessageGrouped reads the run and, unless that answers the message, writes it in the group
// commit; errRowMoved if the run changed in between.
func (s *Store) addMessageGrouped(ctx context.Context, m *messageWrite) error {
	if done, err := m.read(ctx, s.read, false); done || err != nil {
		return err
	}
	return s.submit(ctx, &commitReq{ctx: ctx, l: store.Lease{Run: m.run}, op: func(b *pgx.Batch, req *commitReq) {
		// Queued again when the batch is retried or its members are committed one by one.
		req.notifyWork = false
		m.queue(b, func(err error) { req.err = err }, func() { req.notifyWork = true })
	}})
}

// addMessageLocked writes the message in a transaction that locks the run's row before it reads.
func (s *Store) addMessageLocked(ctx context.Context, m *messageWrite) error {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if done, err := m.read(ctx, tx, true); done || err != nil {
			return err
		}
		var opErr error
		b := &pgx.Batch{}
		m.queue(b, func(err error) { opErr = err }, func() {})
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		return opErr
	})
	if err == nil && m.created {
		s.notifyWorkSoon()
	}
	return err
}

// read loads the run's row and the message already under m.key, and answers m if that decides
// it (done): the message stored under the key, or the rule's refusal (store.MessageRun). lock
// takes the row's lock for the rest of q's transaction.
func (m *messageWrite) read(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, lock bool) (done bool, err error) {
	m.msg, m.created, m.requeued = api.Message{}, false, nil
	sql := `SELECT r.phase, r.status, r.lease_owner IS NOT NULL, m.seq, m.payload, m.time, m.if_busy
		FROM runs r LEFT JOIN messages m ON m.run = r.name AND m.key = $2 AND $2 <> ''
		WHERE r.name = $1`
	if lock {
		sql += ` FOR UPDATE OF r`
	}
	var status []byte
	var seq *int64
	var payload []byte
	var t *time.Time
	var used *string
	if err := q.QueryRow(ctx, sql, m.run, m.key).Scan(&m.row.Phase, &status, &m.row.Leased, &seq, &payload, &t, &used); err != nil {
		return false, notFound(err)
	}
	if seq != nil {
		m.msg = api.Message{Seq: *seq, Key: m.key, Payload: string(payload), Time: utc(*t), IfBusy: api.IfBusy(*used)}
		return true, nil
	}
	m.status = string(status)
	if err := json.Unmarshal(status, &m.row.Status); err != nil {
		return false, fmt.Errorf("decode run %s status: %w", m.run, err)
	}
	if m.requeued, m.mode, err = store.MessageRunIfBusy(m.row, m.ifBusy); err != nil {
		return true, err
	}
	return false, nil
}

// queue queues the message's statements. fail gets the write's own outcome when it did not
// apply (errRowMoved); created is called when the message was stored.
func (m *messageWrite) queue(b *pgx.Batch, fail func(error), created func()) {
	m.msg, m.created = api.Message{}, false
	// Lock the row first: the write's own statement then takes its snapshot under the lock and
	// sees every message committed before it, so a key used meanwhile is found, not a unique
	// violation that would abort the batch.
	b.Queue(`SELECT FROM runs WHERE name = $1 FOR UPDATE`, m.run)
	var status, phase any
	if m.requeued != nil {
		status, phase = mustJSON(m.requeued), m.requeued.Phase
	}
	b.Queue(`WITH r AS (`+pokeSQL+`, next_message = next_message + 1,
				status = COALESCE($6::json, status), phase = COALESCE($7::text, phase)
			WHERE name = $1 AND phase = $3 AND status::text = $4 AND (lease_owner IS NOT NULL) = $5
				AND NOT EXISTS (SELECT FROM messages WHERE run = $1 AND key = $2 AND $2 <> '')
			RETURNING next_message)
		INSERT INTO messages (run, seq, key, payload, time, if_busy) SELECT $1, r.next_message, $2, $8, now(), $9 FROM r
		RETURNING seq, time`,
		m.run, m.key, m.row.Phase, m.status, m.row.Leased, status, phase, []byte(m.payload), string(m.mode)).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var t time.Time
			if err := rows.Scan(&m.msg.Seq, &t); err != nil {
				return err
			}
			m.msg.Key, m.msg.Payload, m.msg.Time, m.msg.IfBusy, m.created = m.key, m.payload, utc(t), m.mode, true
			created()
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if !m.created && m.key == "" {
			fail(errRowMoved)
		}
		return nil
	})
	if m.key == "" {
		return
	}
	// Not stored: the key was used meanwhile (its message is the answer), or the row moved.
	b.Queue(`SELECT seq, payload, time, if_busy FROM messages WHERE run = $1 AND key = $2`, m.run, m.key).Query(func(rows pgx.Rows) error {
		found := false
		for rows.Next() {
			var p []byte
			var t time.Time
			var seq int64
			var used string
			if err := rows.Scan(&seq, &p, &t, &used); err != nil {
				return err
			}
			found = true
			if !m.created {
				m.msg = api.Message{Seq: seq, Key: m.key, Payload: string(p), Time: utc(t), IfBusy: api.IfBusy(used)}
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if !m.created && !found {
			fail(errRowMoved)
		}
		return nil
	})
}
