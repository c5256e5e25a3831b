package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// finishedPhases is the SQL list of terminal phases (api.Finished).
const finishedPhases = `('Succeeded', 'Failed', 'Cancelled')`

// CreateRun stores a new run, claimable at once unless its phase is terminal, with its first
// timeline events. The insert joins the store's group commit (group.go) with the other writes
// waiting; other stores are told of a claimable run once it committed (notifyWorkSoon).
func (s *Store) CreateRun(ctx context.Context, r *api.AgentRun, first ...api.Event) error {
	name := r.Metadata.Name
	uid := newUID()
	claimable := !api.Finished(r.Status.Phase)
	var created time.Time
	err := s.submit(ctx, &commitReq{ctx: ctx, l: store.Lease{Run: name}, notifyWork: claimable, op: func(b *pgx.Batch, req *commitReq) {
		// ON CONFLICT DO NOTHING: a name taken is this write's answer (no row), not an error that
		// would abort the writes it is batched with. The events are inserted from the new row
		// only, so a taken name adds none to the run that has it.
		times, types, keys, msgs, data := eventArrays(first)
		b.Queue(`
			WITH r AS (
				INSERT INTO runs (name, uid, agent, resource_version, created_at, labels, spec, status, phase, claimable_at, next_event)
				VALUES ($1, $2, $3, 1, now(), $4, $5, $6, $7, CASE WHEN $8::boolean THEN now() END, $9)
				ON CONFLICT (name) DO NOTHING
				RETURNING created_at),
			e AS (
				INSERT INTO run_events (run, seq, time, type, step_key, message, data)
				SELECT $1, e.ord, COALESCE(e.time, now()), e.type, e.step_key, e.message, e.data::json
				FROM r, unnest($10::timestamptz[], $11::text[], $12::text[], $13::text[], $14::text[]) WITH ORDINALITY AS e (time, type, step_key, message, data, ord))
			SELECT created_at FROM r`,
			name, uid, r.Spec.Agent, mustJSON(r.Metadata.Labels), mustJSON(r.Spec), mustJSON(r.Status), r.Status.Phase, claimable,
			len(first), times, types, keys, msgs, data).
			Query(func(rows pgx.Rows) error {
				found := false
				for rows.Next() {
					found = true
					if err := rows.Scan(&created); err != nil {
						return err
					}
				}
				if err := rows.Err(); err != nil {
					return err
				}
				if !found {
					req.err = store.ErrAlreadyExists
				}
				return nil
			})
	}})
	if isUnique(err) {
		err = store.ErrAlreadyExists
	}
	if err != nil {
		return fmt.Errorf("create run %s: %w", name, err)
	}
	r.Metadata.UID = uid
	r.Metadata.ResourceVersion = "1"
	r.Metadata.Generation = 1
	ct := utc(created)
	r.Metadata.CreationTimestamp = &ct
	if claimable {
		s.wake.Poke()
	}
	if len(first) > 0 {
		s.wake.Event()
		s.events.add(name)
	}
	return nil
}

const runCols = `SELECT name, uid, resource_version, created_at, labels, spec, status, cancel_requested FROM runs`

// runReturning is runCols for a RETURNING clause.
const runReturning = ` RETURNING name, uid, resource_version, created_at, labels, spec, status, cancel_requested`

func scanRun(row pgx.Row) (*api.AgentRun, error) {
	var r api.AgentRun
	var rv int64
	var created time.Time
	var labels, spec, status []byte
	var cancel bool
	if err := row.Scan(&r.Metadata.Name, &r.Metadata.UID, &rv, &created, &labels, &spec, &status, &cancel); err != nil {
		return nil, notFound(err)
	}
	r.APIVersion, r.Kind = api.APIVersion, "AgentRun"
	r.Metadata.ResourceVersion = strconv.FormatInt(rv, 10)
	r.Metadata.Generation = 1
	ct := utc(created)
	r.Metadata.CreationTimestamp = &ct
	if err := json.Unmarshal(labels, &r.Metadata.Labels); err != nil {
		return nil, fmt.Errorf("decode run %s labels: %w", r.Metadata.Name, err)
	}
	if err := json.Unmarshal(spec, &r.Spec); err != nil {
		return nil, fmt.Errorf("decode run %s spec: %w", r.Metadata.Name, err)
	}
	if err := json.Unmarshal(status, &r.Status); err != nil {
		return nil, fmt.Errorf("decode run %s status: %w", r.Metadata.Name, err)
	}
	r.Status.CancelRequested = cancel && !api.Finished(r.Status.Phase)
	return &r, nil
}

func (s *Store) GetRun(ctx context.Context, name string) (*api.AgentRun, error) {
	r, err := scanRun(s.read.QueryRow(ctx, runCols+` WHERE name = $1`, name))
	if err != nil {
		return nil, fmt.Errorf("get run %s: %w", name, err)
	}
	return r, nil
}

func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) ([]*api.AgentRun, error) {
	q := runCols + ` WHERE true`
	var args []any
	if f.Agent != "" {
		args = append(args, f.Agent)
		q += ` AND agent = $` + strconv.Itoa(len(args))
	}
	if f.Phase != "" {
		args = append(args, f.Phase)
		q += ` AND phase = $` + strconv.Itoa(len(args))
	}
	if f.Group != "" {
		args = append(args, f.Group)
		q += ` AND group_name = $` + strconv.Itoa(len(args))
	}
	if f.Newest {
		q += ` ORDER BY created_at DESC, name DESC`
	} else {
		q += ` ORDER BY created_at, name`
	}
	if f.Limit > 0 {
		args = append(args, f.Limit)
		q += ` LIMIT $` + strconv.Itoa(len(args))
	}
	if f.Offset > 0 {
		args = append(args, f.Offset)
		q += ` OFFSET $` + strconv.Itoa(len(args))
	}
	rows, err := s.read.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var out []*api.AgentRun
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return out, nil
}

// CountRuns returns the number of runs in each phase (phases with none are absent).
func (s *Store) CountRuns(ctx context.Context) (map[string]int, error) {
	rows, err := s.read.Query(ctx, `SELECT phase, count(*) FROM runs GROUP BY phase`)
	if err != nil {
		return nil, fmt.Errorf("count runs: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var p string
		var n int64
		if err := rows.Scan(&p, &n); err != nil {
			return nil, fmt.Errorf("count runs: %w", err)
		}
		out[p] = int(n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count runs: %w", err)
	}
	return out, nil
}

// DeleteRun removes a run with its steps, events, messages and files.
func (s *Store) DeleteRun(ctx context.Context, name string) error {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM runs WHERE name = $1`, name)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.ErrNotFound
		}
		b := &pgx.Batch{}
		for _, t := range []string{"steps", "run_events", "messages", "files", "file_history", "credit_reservations"} {
			b.Queue(`DELETE FROM `+t+` WHERE run = $1`, name)
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return fmt.Errorf("delete run %s: %w", name, err)
	}
	return nil
}

// lockRun locks a run's row for the rest of tx and returns what the transitions read of it
// (store.RunRow); ErrNotFound if it is missing. Every write to a run takes this lock first, so
// writes to one run are serialized and its sequence counters never hand out a number twice.
func lockRun(ctx context.Context, tx pgx.Tx, name string) (store.RunRow, error) {
	var r store.RunRow
	var status []byte
	err := tx.QueryRow(ctx, `SELECT phase, status, lease_owner IS NOT NULL FROM runs WHERE name = $1 FOR UPDATE`, name).Scan(&r.Phase, &status, &r.Leased)
	if err != nil {
		return r, notFound(err)
	}
	if err := json.Unmarshal(status, &r.Status); err != nil {
		return r, fmt.Errorf("decode run %s status: %w", name, err)
	}
	return r, nil
}

// setStatus writes a status a transition returned (nil: none).
func setStatus(ctx context.Context, tx pgx.Tx, name string, st *api.AgentRunStatus) error {
	if st == nil {
		return nil
	}
	_, err := tx.Exec(ctx, `UPDATE runs SET status = $2, phase = $3 WHERE name = $1`, name, mustJSON(st), st.Phase)
	return err
}

// pokeSQL marks a run as needing attention: claimable now if unleased (a live lease holder
// learns of it from the poke counter), and a new resource version.
const pokeSQL = `UPDATE runs SET poke_seq = poke_seq + 1, claimable_at = now(), resource_version = resource_version + 1`

// RequestCancel marks a run for cancellation and pokes it.
func (s *Store) RequestCancel(ctx context.Context, name string) (*api.AgentRun, error) {
	var r *api.AgentRun
	err := s.tx(ctx, func(tx pgx.Tx) error {
		row, err := lockRun(ctx, tx, name)
		if err != nil {
			return err
		}
		if err := store.CancelRun(row); err != nil {
			return err
		}
		if r, err = scanRun(tx.QueryRow(ctx, pokeSQL+`, cancel_requested = true WHERE name = $1`+runReturning, name)); err != nil {
			return err
		}
		return notifyWork(ctx, tx, name)
	})
	if err != nil {
		return nil, fmt.Errorf("cancel run %s: %w", name, err)
	}
	s.wake.Poke()
	return r, nil
}

func (s *Store) ListMessages(ctx context.Context, run string, afterSeq int64) ([]api.Message, error) {
	rows, err := s.read.Query(ctx, `SELECT seq, key, payload, time, if_busy FROM messages WHERE run = $1 AND seq > $2 ORDER BY seq`, run, afterSeq)
	if err != nil {
		return nil, fmt.Errorf("list messages of %s: %w", run, err)
	}
	defer rows.Close()
	var out []api.Message
	for rows.Next() {
		var m api.Message
		var p []byte
		var t time.Time
		if err := rows.Scan(&m.Seq, &m.Key, &p, &t, &m.IfBusy); err != nil {
			return nil, fmt.Errorf("list messages of %s: %w", run, err)
		}
		m.Payload, m.Time = string(p), utc(t)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list messages of %s: %w", run, err)
	}
	return out, nil
}

// ResolveStep records a person's resolution on the step a NeedsResolution run waits on.
func (s *Store) ResolveStep(ctx context.Context, run, stepKey string, resolution api.Resolution, result []byte) error {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		row, err := lockRun(ctx, tx, run)
		if err != nil {
			return err
		}
		requeued, err := store.ResolveRun(row, stepKey, resolution)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE steps SET resolution = $3, resolution_result = $4 WHERE run = $1 AND key = $2 AND resolution = ''`,
			run, stepKey, string(resolution), nullJSON(result))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.ErrNotWaiting
		}
		if err := setStatus(ctx, tx, run, requeued); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, pokeSQL+` WHERE name = $1`, run); err != nil {
			return err
		}
		return notifyWork(ctx, tx, run)
	})
	if err != nil {
		return fmt.Errorf("resolve step %s of %s: %w", stepKey, run, err)
	}
	s.wake.Poke()
	return nil
}

// ---- journal and timeline ----

// queueEvents queues the inserts of evs, numbered first, first+1, ...
func queueEvents(b *pgx.Batch, run string, first int64, evs []api.Event) {
	for i, ev := range evs {
		var t any
		if !ev.Time.IsZero() {
			t = ev.Time
		}
		b.Queue(`INSERT INTO run_events (run, seq, time, type, step_key, message, data) VALUES ($1, $2, COALESCE($3::timestamptz, now()), $4, $5, $6, $7)`,
			run, first+int64(i), t, pgText(string(ev.Type)), pgText(ev.StepKey), pgText(ev.Message), nullJSON(ev.Data))
	}
}

// AppendEvents adds timeline events from outside a runner; seqs are assigned.
func (s *Store) AppendEvents(ctx context.Context, run string, evs []api.Event) error {
	if len(evs) == 0 {
		return nil
	}
	// One statement: the events take the run's next seqs. Other stores are told after the commit,
	// coalesced (see eventNotifier), as for a runner's commit: a NOTIFY in the transaction would
	// serialize its commit with every other notifying one.
	// The write joins the store's group commit (group.go) with the other writes waiting.
	err := s.submit(ctx, &commitReq{ctx: ctx, l: store.Lease{Run: run}, op: func(b *pgx.Batch, req *commitReq) {
		times, types, keys, msgs, data := eventArrays(evs)
		b.Queue(`
			WITH r AS (UPDATE runs SET next_event = next_event + $2 WHERE name = $1 RETURNING next_event)
			INSERT INTO run_events (run, seq, time, type, step_key, message, data)
			SELECT $1, r.next_event - $2 + e.ord, COALESCE(e.time, now()), e.type, e.step_key, e.message, e.data::json
			FROM r, unnest($3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::text[]) WITH ORDINALITY AS e (time, type, step_key, message, data, ord)`,
			run, len(evs), times, types, keys, msgs, data).Exec(func(tag pgconn.CommandTag) error {
			if tag.RowsAffected() == 0 {
				req.err = store.ErrNotFound
			}
			return nil
		})
	}})
	if err != nil {
		return fmt.Errorf("append events to %s: %w", run, err)
	}
	s.wake.Event()
	s.events.add(run)
	return nil
}

// stepCols reads a run's steps ($1) in order (scanSteps).
const stepCols = `SELECT seq, key, kind, state, title, attempt, args_hash, args, result, error, cost_micros,
		started_at, completed_at, resolution, resolution_result, copied_from FROM steps WHERE run = $1 ORDER BY seq`

func (s *Store) ListSteps(ctx context.Context, run string) ([]api.Step, error) {
	rows, err := s.read.Query(ctx, stepCols, run)
	if err != nil {
		return nil, fmt.Errorf("list steps of %s: %w", run, err)
	}
	out, err := scanSteps(rows)
	if err != nil {
		return nil, fmt.Errorf("list steps of %s: %w", run, err)
	}
	return out, nil
}

func scanSteps(rows pgx.Rows) ([]api.Step, error) {
	defer rows.Close()
	var out []api.Step
	for rows.Next() {
		var st api.Step
		var args, result, resResult []byte
		var started time.Time
		if err := rows.Scan(&st.Seq, &st.Key, &st.Kind, &st.State, &st.Title, &st.Attempt, &st.ArgsHash, &args, &result, &st.Error,
			&st.CostMicros, &started, &st.CompletedAt, &st.Resolution, &resResult, &st.CopiedFrom); err != nil {
			return nil, err
		}
		st.Args, st.Result, st.ResolutionResult = rawJSON(args), rawJSON(result), rawJSON(resResult)
		st.StartedAt = utc(started)
		st.CompletedAt = utcPtr(st.CompletedAt)
		out = append(out, st)
	}
	return out, rows.Err()
}

func (s *Store) ListEvents(ctx context.Context, run string, afterSeq int64, limit int) ([]api.Event, error) {
	q := `SELECT seq, time, type, step_key, message, data FROM run_events WHERE run = $1 AND seq > $2 ORDER BY seq`
	args := []any{run, afterSeq}
	if limit > 0 {
		q += ` LIMIT $3`
		args = append(args, limit)
	}
	rows, err := s.read.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list events of %s: %w", run, err)
	}
	defer rows.Close()
	var out []api.Event
	for rows.Next() {
		var ev api.Event
		var t time.Time
		var data []byte
		if err := rows.Scan(&ev.Seq, &t, &ev.Type, &ev.StepKey, &ev.Message, &data); err != nil {
			return nil, fmt.Errorf("list events of %s: %w", run, err)
		}
		ev.Time, ev.Data = utc(t), rawJSON(data)
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list events of %s: %w", run, err)
	}
	return out, nil
}
