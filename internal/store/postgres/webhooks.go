package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// Webhooks (store.Webhooks). ClaimDeliveries takes rows FOR UPDATE SKIP LOCKED, so servers
// claiming at once take different deliveries, and a row another claim leases is skipped until
// the lease runs out (on the database's clock, which every server shares).

const webhookCols = `SELECT name, uid, resource_version, generation, created_at, labels, spec FROM webhooks`

func scanWebhook(row pgx.Row) (*api.Webhook, error) {
	var w api.Webhook
	var rv int64
	var created time.Time
	var labels, spec []byte
	if err := row.Scan(&w.Metadata.Name, &w.Metadata.UID, &rv, &w.Metadata.Generation, &created, &labels, &spec); err != nil {
		return nil, notFound(err)
	}
	w.APIVersion, w.Kind = api.APIVersion, "Webhook"
	w.Metadata.ResourceVersion = strconv.FormatInt(rv, 10)
	ct := utc(created)
	w.Metadata.CreationTimestamp = &ct
	if err := json.Unmarshal(labels, &w.Metadata.Labels); err != nil {
		return nil, fmt.Errorf("decode webhook %s labels: %w", w.Metadata.Name, err)
	}
	if err := json.Unmarshal(spec, &w.Spec); err != nil {
		return nil, fmt.Errorf("decode webhook %s spec: %w", w.Metadata.Name, err)
	}
	return &w, nil
}

func writeSubs(ctx context.Context, tx pgx.Tx, name string, spec api.WebhookSpec) error {
	if _, err := tx.Exec(ctx, `DELETE FROM webhook_subs WHERE webhook = $1`, name); err != nil {
		return err
	}
	events, agents := store.WebhookSubscriptions(spec)
	_, err := tx.Exec(ctx, `INSERT INTO webhook_subs (webhook, event, agent) SELECT $1, e, a FROM unnest($2::text[], $3::text[]) AS u (e, a) ON CONFLICT DO NOTHING`, name, events, agents)
	return err
}

func (s *Store) CreateWebhook(ctx context.Context, w *api.Webhook) error {
	uid := newUID()
	var created time.Time
	err := s.tx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO webhooks (name, uid, resource_version, generation, created_at, labels, spec)
			VALUES ($1, $2, 1, 1, now(), $3, $4) RETURNING created_at`,
			w.Metadata.Name, uid, mustJSON(w.Metadata.Labels), mustJSON(w.Spec)).Scan(&created)
		if isUnique(err) {
			return store.ErrAlreadyExists
		}
		if err != nil {
			return err
		}
		return writeSubs(ctx, tx, w.Metadata.Name, w.Spec)
	})
	if err != nil {
		return fmt.Errorf("create webhook %s: %w", w.Metadata.Name, err)
	}
	w.Metadata.UID, w.Metadata.ResourceVersion, w.Metadata.Generation = uid, "1", 1
	ct := utc(created)
	w.Metadata.CreationTimestamp = &ct
	return nil
}

func (s *Store) UpdateWebhook(ctx context.Context, w *api.Webhook) error {
	name := w.Metadata.Name
	var cur *api.Webhook
	var v store.Versions
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		if cur, err = scanWebhook(tx.QueryRow(ctx, webhookCols+` WHERE name = $1 FOR UPDATE`, name)); err != nil {
			return err
		}
		if v, err = store.CheckWebhookUpdate(cur, w); err != nil {
			return err
		}
		if _, err = tx.Exec(ctx, `UPDATE webhooks SET resource_version = $2, generation = $3, labels = $4, spec = $5 WHERE name = $1`,
			name, v.ResourceVersion, v.Generation, mustJSON(w.Metadata.Labels), mustJSON(w.Spec)); err != nil {
			return err
		}
		return writeSubs(ctx, tx, name, w.Spec)
	})
	if err != nil {
		return fmt.Errorf("update webhook %s: %w", name, err)
	}
	w.Metadata.UID, w.Metadata.CreationTimestamp = cur.Metadata.UID, cur.Metadata.CreationTimestamp
	w.Metadata.ResourceVersion, w.Metadata.Generation = v.String(), v.Generation
	return nil
}

func (s *Store) GetWebhook(ctx context.Context, name string) (*api.Webhook, error) {
	w, err := scanWebhook(s.read.QueryRow(ctx, webhookCols+` WHERE name = $1`, name))
	if err != nil {
		return nil, fmt.Errorf("get webhook %s: %w", name, err)
	}
	return w, nil
}

func (s *Store) ListWebhooks(ctx context.Context) ([]*api.Webhook, error) {
	rows, err := s.read.Query(ctx, webhookCols+` ORDER BY name`)
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
	err := s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM webhooks WHERE name = $1`, name)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.ErrNotFound
		}
		for _, q := range []string{
			`DELETE FROM webhook_subs WHERE webhook = $1`,
			`DELETE FROM webhook_attempts WHERE delivery IN (SELECT seq FROM webhook_deliveries WHERE webhook = $1)`,
			`DELETE FROM webhook_deliveries WHERE webhook = $1`,
		} {
			if _, err := tx.Exec(ctx, q, name); err != nil {
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

// outboxSQL makes a delivery of one event to every webhook subscribed to its type and agent (a
// run's agent read from its row), once per webhook and event key; cond is a further condition
// (a commit's fence). $1 is the run ("" for a trigger's event).
func outboxSQL(cond string) string {
	return `INSERT INTO webhook_deliveries (id, webhook, event_key, type, run, agent, trigger_name, event_time, data, state, next_at, created_at)
		SELECT $2, sub.webhook, $3, $4, $1, a.agent, $5, $6, $7, 'Pending', now(), now()
		FROM (SELECT COALESCE((SELECT agent FROM runs WHERE name = $1 AND $1 <> ''), $8::text) AS agent) a
		JOIN webhook_subs sub ON sub.event = $4 AND (sub.agent = '' OR sub.agent = a.agent)
		WHERE ` + cond + ` ON CONFLICT (webhook, event_key) DO NOTHING`
}

func outboxArgs(ev store.OutboxEvent) []any {
	return []any{ev.Run, ev.ID, ev.Key, ev.Type, ev.Trigger, ev.Time, string(ev.Data), ev.Agent}
}

// writeOutbox writes evs' deliveries in tx.
func writeOutbox(ctx context.Context, tx pgx.Tx, evs []store.OutboxEvent) error {
	for _, ev := range evs {
		if _, err := tx.Exec(ctx, outboxSQL("true"), outboxArgs(ev)...); err != nil {
			return fmt.Errorf("webhook outbox: %w", err)
		}
	}
	return nil
}

// queueOutbox queues evs' deliveries in a commit's batch, under the member's fence.
func queueOutbox(b *pgx.Batch, l store.Lease, evs []store.OutboxEvent) {
	for _, ev := range evs {
		b.Queue(outboxSQL(fenceCond(9, 10)), append(outboxArgs(ev), l.Owner, l.Generation)...)
	}
}

func (s *Store) EnqueueDelivery(ctx context.Context, webhook string, ev store.OutboxEvent) (api.WebhookDelivery, error) {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (id, webhook, event_key, type, run, agent, trigger_name, event_time, data, state, next_at, created_at)
			SELECT $1, name, $3, $4, $5, $6, $7, $8, $9, 'Pending', now(), now() FROM webhooks WHERE name = $2`,
			ev.ID, webhook, ev.Key, ev.Type, ev.Run, ev.Agent, ev.Trigger, ev.Time, string(ev.Data))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return api.WebhookDelivery{}, fmt.Errorf("enqueue delivery to %s: %w", webhook, err)
	}
	t := ev.Time.UTC()
	return api.WebhookDelivery{ID: ev.ID, Webhook: webhook, Type: ev.Type, Run: ev.Run, Agent: ev.Agent, Trigger: ev.Trigger, Time: t, State: api.DeliveryPending, NextAttempt: &t}, nil
}

const deliveryCols = `seq, id, webhook, type, run, agent, trigger_name, event_time, data, state, attempts, next_at, created_at, lease_until`

func scanDelivery(row pgx.Row) (store.Delivery, int64, error) {
	var d store.Delivery
	var seq int64
	var at, created time.Time
	var next, lease *time.Time
	var data string
	if err := row.Scan(&seq, &d.ID, &d.Webhook, &d.Type, &d.Run, &d.Agent, &d.Trigger, &at, &data, &d.State, &d.Attempts, &next, &created, &lease); err != nil {
		return d, 0, err
	}
	d.Time, d.CreatedAt, d.Data = utc(at), utc(created), json.RawMessage(data)
	if next != nil && d.State == api.DeliveryPending {
		d.NextAttempt = utcPtr(next)
	}
	if lease != nil {
		d.LeaseUntil = utc(*lease)
	}
	return d, seq, nil
}

func (s *Store) ClaimDeliveries(ctx context.Context, owner string, max int, ttl time.Duration) ([]store.Delivery, error) {
	var out []store.Delivery
	err := s.tx(ctx, func(tx pgx.Tx) error {
		out = nil
		rows, err := tx.Query(ctx, `WITH c AS (
				SELECT seq FROM webhook_deliveries
				WHERE state = 'Pending' AND next_at <= now() AND (lease_until IS NULL OR lease_until <= now())
				ORDER BY next_at, seq LIMIT $3 FOR UPDATE SKIP LOCKED)
			UPDATE webhook_deliveries d SET lease_owner = $1, lease_until = now() + $2::interval
			FROM c WHERE d.seq = c.seq RETURNING `+prefixed("d.", deliveryCols), owner, ttl.String(), max)
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

// prefixed qualifies each column of a comma-separated list.
func prefixed(p, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

func (s *Store) FinishAttempt(ctx context.Context, owner string, d store.Delivery, a api.WebhookAttempt, next *time.Time) (bool, error) {
	ok := false
	err := s.tx(ctx, func(tx pgx.Tx) error {
		ok = false
		state := api.DeliveryPending
		switch {
		case a.Delivered:
			state = api.DeliveryDelivered
		case next == nil:
			state = api.DeliveryFailed
		}
		var seq int64
		err := tx.QueryRow(ctx, `UPDATE webhook_deliveries SET state = $1, attempts = attempts + 1, next_at = $2,
				done_at = CASE WHEN $1 = 'Pending' THEN NULL ELSE now() END, lease_owner = NULL, lease_until = NULL
			WHERE id = $3 AND webhook = $4 AND lease_owner = $5 AND state = 'Pending' RETURNING seq`, state, next, d.ID, d.Webhook, owner).Scan(&seq)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO webhook_attempts (delivery, attempt, time, status_code, error, duration_ms, delivered) VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (delivery, attempt) DO UPDATE SET time = EXCLUDED.time, status_code = EXCLUDED.status_code, error = EXCLUDED.error, duration_ms = EXCLUDED.duration_ms, delivered = EXCLUDED.delivered`,
			seq, a.Attempt, a.Time, a.StatusCode, pgText(a.Error), a.DurationMS, a.Delivered); err != nil {
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
	q := `SELECT ` + deliveryCols + ` FROM webhook_deliveries WHERE webhook = $1 ORDER BY seq DESC`
	args := []any{webhook}
	if limit > 0 {
		q += ` LIMIT $2`
		args = append(args, limit)
	}
	rows, err := s.read.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list deliveries of %s: %w", webhook, err)
	}
	var out []api.WebhookDelivery
	var seqs []int64
	index := map[int64]int{}
	for rows.Next() {
		d, seq, err := scanDelivery(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("list deliveries of %s: %w", webhook, err)
		}
		index[seq] = len(out)
		seqs = append(seqs, seq)
		out = append(out, d.WebhookDelivery)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(out) == 0 {
		return out, err
	}
	arows, err := s.read.Query(ctx, `SELECT delivery, attempt, time, status_code, error, duration_ms, delivered FROM webhook_attempts
		WHERE delivery = ANY($1) ORDER BY delivery, attempt`, seqs)
	if err != nil {
		return nil, fmt.Errorf("list attempts of %s: %w", webhook, err)
	}
	defer arows.Close()
	for arows.Next() {
		var seq int64
		var t time.Time
		var a api.WebhookAttempt
		if err := arows.Scan(&seq, &a.Attempt, &t, &a.StatusCode, &a.Error, &a.DurationMS, &a.Delivered); err != nil {
			return nil, fmt.Errorf("list attempts of %s: %w", webhook, err)
		}
		a.Time = utc(t)
		i := index[seq]
		out[i].History = append(out[i].History, a)
	}
	return out, arows.Err()
}

func (s *Store) PendingDeliveries(ctx context.Context) (map[string]int, error) {
	rows, err := s.read.Query(ctx, `SELECT webhook, count(*) FROM webhook_deliveries WHERE state = 'Pending' GROUP BY webhook`)
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
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var count int64
		err := tx.QueryRow(ctx, `WITH d AS (
				DELETE FROM webhook_deliveries WHERE seq IN (
					SELECT seq FROM webhook_deliveries WHERE state <> 'Pending' AND done_at < $1 ORDER BY done_at LIMIT $2)
				RETURNING seq),
			a AS (DELETE FROM webhook_attempts WHERE delivery IN (SELECT seq FROM d))
			SELECT count(*) FROM d`, before, max).Scan(&count)
		n = int(count)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune webhook deliveries: %w", err)
	}
	return n, nil
}
