package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// Webhooks (store.Webhooks). The single writer connection serializes claims, so a delivery is
// claimed by one caller at a time.

const webhookCols = `SELECT name, uid, resource_version, generation, created_at, labels, spec FROM webhooks`

func scanWebhook(row rowScanner) (*api.Webhook, error) {
	var w api.Webhook
	var rv, created int64
	var labels, spec string
	if err := row.Scan(&w.Metadata.Name, &w.Metadata.UID, &rv, &w.Metadata.Generation, &created, &labels, &spec); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, store.ErrNotFound
		}
		return nil, err
	}
	w.APIVersion, w.Kind = api.APIVersion, "Webhook"
	w.Metadata.ResourceVersion = strconv.FormatInt(rv, 10)
	ct := fromMS(created)
	w.Metadata.CreationTimestamp = &ct
	if err := json.Unmarshal([]byte(labels), &w.Metadata.Labels); err != nil {
		return nil, fmt.Errorf("decode webhook %s labels: %w", w.Metadata.Name, err)
	}
	if err := json.Unmarshal([]byte(spec), &w.Spec); err != nil {
		return nil, fmt.Errorf("decode webhook %s spec: %w", w.Metadata.Name, err)
	}
	return &w, nil
}

func (s *Store) writeSubs(ctx context.Context, tx *sql.Tx, name string, spec api.WebhookSpec) error {
	if _, err := s.txExec(ctx, tx, `DELETE FROM webhook_subs WHERE webhook = ?`, name); err != nil {
		return err
	}
	events, agents := store.WebhookSubscriptions(spec)
	for i := range events {
		if _, err := s.txExec(ctx, tx, `INSERT OR IGNORE INTO webhook_subs (webhook, event, agent) VALUES (?, ?, ?)`, name, events[i], agents[i]); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) CreateWebhook(ctx context.Context, w *api.Webhook) error {
	now := s.now()
	w.Metadata.UID = newUID()
	w.Metadata.ResourceVersion = "1"
	w.Metadata.Generation = 1
	ct := now.UTC().Truncate(time.Millisecond)
	w.Metadata.CreationTimestamp = &ct
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := s.txExec(ctx, tx, `INSERT INTO webhooks (name, uid, resource_version, generation, created_at, labels, spec) VALUES (?, ?, 1, 1, ?, ?, ?)`,
			w.Metadata.Name, w.Metadata.UID, ms(now), mustJSON(w.Metadata.Labels), mustJSON(w.Spec)); err != nil {
			if isUnique(err) {
				return store.ErrAlreadyExists
			}
			return err
		}
		return s.writeSubs(ctx, tx, w.Metadata.Name, w.Spec)
	})
	if err != nil {
		return fmt.Errorf("create webhook %s: %w", w.Metadata.Name, err)
	}
	return nil
}

func (s *Store) UpdateWebhook(ctx context.Context, w *api.Webhook) error {
	name := w.Metadata.Name
	err := s.tx(ctx, func(tx *sql.Tx) error {
		cur, err := scanWebhook(s.txQueryRow(ctx, tx, webhookCols+` WHERE name = ?`, name))
		if err != nil {
			return err
		}
		v, err := store.CheckWebhookUpdate(cur, w)
		if err != nil {
			return err
		}
		if _, err := s.txExec(ctx, tx, `UPDATE webhooks SET resource_version = ?, generation = ?, labels = ?, spec = ? WHERE name = ?`,
			v.ResourceVersion, v.Generation, mustJSON(w.Metadata.Labels), mustJSON(w.Spec), name); err != nil {
			return err
		}
		if err := s.writeSubs(ctx, tx, name, w.Spec); err != nil {
			return err
		}
		w.Metadata.UID, w.Metadata.CreationTimestamp = cur.Metadata.UID, cur.Metadata.CreationTimestamp
		w.Metadata.ResourceVersion, w.Metadata.Generation = v.String(), v.Generation
		return nil
	})
	if err != nil {
		return fmt.Errorf("update webhook %s: %w", name, err)
	}
	return nil
}

func (s *Store) GetWebhook(ctx context.Context, name string) (*api.Webhook, error) {
	w, err := scanWebhook(s.r.QueryRowContext(ctx, webhookCols+` WHERE name = ?`, name))
	if err != nil {
		return nil, fmt.Errorf("get webhook %s: %w", name, err)
	}
	return w, nil
}

func (s *Store) ListWebhooks(ctx context.Context) ([]*api.Webhook, error) {
	rows, err := s.r.QueryContext(ctx, webhookCols+` ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list webhooks: %w", err)
	}
	defer rows.Close()
	var out []*api.Webhook
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, fmt.Errorf("list webhooks: %w", err)
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

func (s *Store) DeleteWebhook(ctx context.Context, name string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, `DELETE FROM webhooks WHERE name = ?`, name)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return store.ErrNotFound
		}
		for _, q := range []string{
			`DELETE FROM webhook_subs WHERE webhook = ?`,
			`DELETE FROM webhook_attempts WHERE delivery IN (SELECT seq FROM webhook_deliveries WHERE webhook = ?)`,
			`DELETE FROM webhook_deliveries WHERE webhook = ?`,
		} {
			if _, err := s.txExec(ctx, tx, q, name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete webhook %s: %w", name, err)
	}
	return nil
}

// writeOutbox makes, in tx, a delivery of each event to every webhook subscribed to its type and
// agent (a run's agent read from its row), once per webhook and event key.
func (s *Store) writeOutbox(ctx context.Context, tx *sql.Tx, evs []store.OutboxEvent) error {
	now := ms(s.now())
	for _, ev := range evs {
		if _, err := s.txExec(ctx, tx, `INSERT INTO webhook_deliveries (id, webhook, event_key, type, run, agent, trigger_name, event_time, data, state, next_at, created_at)
			SELECT ?, sub.webhook, ?, ?, ?, a.agent, ?, ?, ?, 'Pending', ?, ?
			FROM (SELECT COALESCE((SELECT agent FROM runs WHERE name = ? AND ? <> ''), ?) AS agent) a
			JOIN webhook_subs sub ON sub.event = ? AND (sub.agent = '' OR sub.agent = a.agent)
			WHERE true ON CONFLICT (webhook, event_key) DO NOTHING`,
			ev.ID, ev.Key, ev.Type, ev.Run, ev.Trigger, ms(ev.Time), string(ev.Data), now, now, ev.Run, ev.Run, ev.Agent, ev.Type); err != nil {
			return fmt.Errorf("webhook outbox: %w", err)
		}
	}
	return nil
}

func (s *Store) EnqueueDelivery(ctx context.Context, webhook string, ev store.OutboxEvent) (api.WebhookDelivery, error) {
	var d api.WebhookDelivery
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var one int
		if err := s.txQueryRow(ctx, tx, `SELECT 1 FROM webhooks WHERE name = ?`, webhook).Scan(&one); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		}
		now := ms(s.now())
		_, err := s.txExec(ctx, tx, `INSERT INTO webhook_deliveries (id, webhook, event_key, type, run, agent, trigger_name, event_time, data, state, next_at, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'Pending', ?, ?)`,
			ev.ID, webhook, ev.Key, ev.Type, ev.Run, ev.Agent, ev.Trigger, ms(ev.Time), string(ev.Data), now, now)
		return err
	})
	if err != nil {
		return d, fmt.Errorf("enqueue delivery to %s: %w", webhook, err)
	}
	t := fromMS(ms(ev.Time))
	return api.WebhookDelivery{ID: ev.ID, Webhook: webhook, Type: ev.Type, Run: ev.Run, Agent: ev.Agent, Trigger: ev.Trigger, Time: t, State: api.DeliveryPending, NextAttempt: &t}, nil
}

const deliveryCols = `seq, id, webhook, type, run, agent, trigger_name, event_time, data, state, attempts, next_at, created_at, lease_until`

func scanDelivery(row rowScanner) (store.Delivery, int64, error) {
	var d store.Delivery
	var seq, at, created int64
	var next, lease sql.NullInt64
	var data string
	if err := row.Scan(&seq, &d.ID, &d.Webhook, &d.Type, &d.Run, &d.Agent, &d.Trigger, &at, &data, &d.State, &d.Attempts, &next, &created, &lease); err != nil {
		return d, 0, err
	}
	d.Time, d.CreatedAt, d.Data = fromMS(at), fromMS(created), json.RawMessage(data)
	if next.Valid && d.State == api.DeliveryPending {
		t := fromMS(next.Int64)
		d.NextAttempt = &t
	}
	if lease.Valid {
		d.LeaseUntil = fromMS(lease.Int64)
	}
	return d, seq, nil
}

func (s *Store) ClaimDeliveries(ctx context.Context, owner string, max int, ttl time.Duration) ([]store.Delivery, error) {
	var out []store.Delivery
	err := s.tx(ctx, func(tx *sql.Tx) error {
		out = nil
		now := s.now()
		rows, err := s.txQuery(ctx, tx, `UPDATE webhook_deliveries SET lease_owner = ?, lease_until = ?
			WHERE seq IN (SELECT seq FROM webhook_deliveries WHERE state = 'Pending' AND next_at <= ? AND (lease_until IS NULL OR lease_until <= ?) ORDER BY next_at, seq LIMIT ?)
			RETURNING `+deliveryCols, owner, ms(now.Add(ttl)), ms(now), ms(now), max)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			d, _, err := scanDelivery(rows)
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("claim webhook deliveries: %w", err)
	}
	return out, nil
}

func (s *Store) FinishAttempt(ctx context.Context, owner string, d store.Delivery, a api.WebhookAttempt, next *time.Time) (bool, error) {
	ok := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		ok = false
		state, nextAt, done := api.DeliveryPending, any(nil), any(nil)
		switch {
		case a.Delivered:
			state, done = api.DeliveryDelivered, ms(s.now())
		case next == nil:
			state, done = api.DeliveryFailed, ms(s.now())
		default:
			nextAt = ms(*next)
		}
		var seq int64
		err := s.txQueryRow(ctx, tx, `UPDATE webhook_deliveries SET state = ?, attempts = attempts + 1, next_at = ?, done_at = ?, lease_owner = NULL, lease_until = NULL
			WHERE id = ? AND webhook = ? AND lease_owner = ? AND state = 'Pending' RETURNING seq`, state, nextAt, done, d.ID, d.Webhook, owner).Scan(&seq)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := s.txExec(ctx, tx, `INSERT OR REPLACE INTO webhook_attempts (delivery, attempt, time, status_code, error, duration_ms, delivered) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			seq, a.Attempt, ms(a.Time), a.StatusCode, a.Error, a.DurationMS, a.Delivered); err != nil {
			return err
		}
		ok = true
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("record attempt of delivery %s to %s: %w", d.ID, d.Webhook, err)
	}
	return ok, nil
}

func (s *Store) ListDeliveries(ctx context.Context, webhook string, limit int) ([]api.WebhookDelivery, error) {
	q := `SELECT ` + deliveryCols + ` FROM webhook_deliveries WHERE webhook = ? ORDER BY seq DESC`
	args := []any{webhook}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list deliveries of %s: %w", webhook, err)
	}
	var out []api.WebhookDelivery
	var seqs []string
	index := map[int64]int{}
	for rows.Next() {
		d, seq, err := scanDelivery(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("list deliveries of %s: %w", webhook, err)
		}
		index[seq] = len(out)
		seqs = append(seqs, strconv.FormatInt(seq, 10))
		out = append(out, d.WebhookDelivery)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(out) == 0 {
		return out, err
	}
	// seqs are integers this function formatted: safe to inline.
	arows, err := s.r.QueryContext(ctx, `SELECT delivery, attempt, time, status_code, error, duration_ms, delivered FROM webhook_attempts
		WHERE delivery IN (`+strings.Join(seqs, ",")+`) ORDER BY delivery, attempt`)
	if err != nil {
		return nil, fmt.Errorf("list attempts of %s: %w", webhook, err)
	}
	defer arows.Close()
	for arows.Next() {
		var seq, t int64
		var a api.WebhookAttempt
		if err := arows.Scan(&seq, &a.Attempt, &t, &a.StatusCode, &a.Error, &a.DurationMS, &a.Delivered); err != nil {
			return nil, fmt.Errorf("list attempts of %s: %w", webhook, err)
		}
		a.Time = fromMS(t)
		i := index[seq]
		out[i].History = append(out[i].History, a)
	}
	return out, arows.Err()
}

func (s *Store) PendingDeliveries(ctx context.Context) (map[string]int, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT webhook, count(*) FROM webhook_deliveries WHERE state = 'Pending' GROUP BY webhook`)
	if err != nil {
		return nil, fmt.Errorf("count pending deliveries: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var w string
		var n int
		if err := rows.Scan(&w, &n); err != nil {
			return nil, fmt.Errorf("count pending deliveries: %w", err)
		}
		out[w] = n
	}
	return out, rows.Err()
}

func (s *Store) PruneDeliveries(ctx context.Context, before time.Time, max int) (int, error) {
	n := 0
	err := s.tx(ctx, func(tx *sql.Tx) error {
		sel := `SELECT seq FROM webhook_deliveries WHERE state <> 'Pending' AND done_at < ? ORDER BY done_at LIMIT ?`
		if _, err := s.txExec(ctx, tx, `DELETE FROM webhook_attempts WHERE delivery IN (`+sel+`)`, ms(before), max); err != nil {
			return err
		}
		res, err := s.txExec(ctx, tx, `DELETE FROM webhook_deliveries WHERE seq IN (`+sel+`)`, ms(before), max)
		if err != nil {
			return err
		}
		m, _ := res.RowsAffected()
		n = int(m)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("prune webhook deliveries: %w", err)
	}
	return n, nil
}
