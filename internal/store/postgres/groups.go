package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/store"
)

// AgentGroups (store.Groups). Every transaction that changes what a group admits or takes in
// (admission, batch creation, spec updates, cancel, delete) first locks the group's row FOR
// UPDATE, so those transactions are serialized per group across every server; runners never
// touch that row, and admission reads all members in one statement (one snapshot), in which a
// member that finished concurrently is either still unfinished (counted at its cap) or finished
// (counted at its spend, at most its cap): either way the cap is never overcommitted.

const groupCols = `SELECT name, uid, resource_version, generation, created_at, labels, spec, status FROM groups`

func scanGroup(row pgx.Row) (*api.AgentGroup, error) {
	var g api.AgentGroup
	var rv int64
	var created time.Time
	var labels, spec, status []byte
	if err := row.Scan(&g.Metadata.Name, &g.Metadata.UID, &rv, &g.Metadata.Generation, &created, &labels, &spec, &status); err != nil {
		return nil, notFound(err)
	}
	g.APIVersion, g.Kind = api.APIVersion, "AgentGroup"
	g.Metadata.ResourceVersion = strconv.FormatInt(rv, 10)
	ct := utc(created)
	g.Metadata.CreationTimestamp = &ct
	if err := json.Unmarshal(labels, &g.Metadata.Labels); err != nil {
		return nil, fmt.Errorf("decode group %s labels: %w", g.Metadata.Name, err)
	}
	if err := json.Unmarshal(spec, &g.Spec); err != nil {
		return nil, fmt.Errorf("decode group %s spec: %w", g.Metadata.Name, err)
	}
	if err := json.Unmarshal(status, &g.Status); err != nil {
		return nil, fmt.Errorf("decode group %s status: %w", g.Metadata.Name, err)
	}
	return &g, nil
}

func lockGroup(ctx context.Context, tx pgx.Tx, name string) (*api.AgentGroup, error) {
	return scanGroup(tx.QueryRow(ctx, groupCols+` WHERE name = $1 FOR UPDATE`, name))
}

func (s *Store) CreateGroup(ctx context.Context, g *api.AgentGroup) error {
	uid := newUID()
	var created time.Time
	err := s.tx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO groups (name, uid, resource_version, generation, created_at, labels, spec, status)
			VALUES ($1, $2, 1, 1, now(), $3, $4, $5) RETURNING created_at`,
			g.Metadata.Name, uid, mustJSON(g.Metadata.Labels), mustJSON(g.Spec), mustJSON(g.Status)).Scan(&created)
		if isUnique(err) {
			return store.ErrAlreadyExists
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("create group %s: %w", g.Metadata.Name, err)
	}
	g.Metadata.UID, g.Metadata.ResourceVersion, g.Metadata.Generation = uid, "1", 1
	ct := utc(created)
	g.Metadata.CreationTimestamp = &ct
	return nil
}

func (s *Store) GetGroup(ctx context.Context, name string) (*api.AgentGroup, error) {
	g, err := scanGroup(s.read.QueryRow(ctx, groupCols+` WHERE name = $1`, name))
	if err != nil {
		return nil, fmt.Errorf("get group %s: %w", name, err)
	}
	return g, nil
}

func (s *Store) ListGroups(ctx context.Context) ([]*api.AgentGroup, error) {
	rows, err := s.read.Query(ctx, groupCols+` ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	defer rows.Close()
	var out []*api.AgentGroup
	for rows.Next() {
		g, err := scanGroup(rows)
		if err != nil {
			return nil, fmt.Errorf("list groups: %w", err)
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	return out, nil
}

func (s *Store) UpdateGroup(ctx context.Context, g *api.AgentGroup, check func(old *api.AgentGroup) error) error {
	name := g.Metadata.Name
	var cur *api.AgentGroup
	var v store.Versions
	// g is changed only after the commit: tx may run the function again, which must see g as given.
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var err error
		if cur, err = lockGroup(ctx, tx, name); err != nil {
			return err
		}
		if v, err = store.UpdateGroupVersions(cur, g, check); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE groups SET resource_version = $2, generation = $3, labels = $4, spec = $5 WHERE name = $1`,
			name, v.ResourceVersion, v.Generation, mustJSON(g.Metadata.Labels), mustJSON(g.Spec)); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("update group %s: %w", name, err)
	}
	g.Metadata.UID, g.Metadata.CreationTimestamp = cur.Metadata.UID, cur.Metadata.CreationTimestamp
	g.Metadata.ResourceVersion, g.Metadata.Generation = v.String(), v.Generation
	g.Status = cur.Status
	s.wake.Poke()
	return nil
}

func (s *Store) SetGroupStatus(ctx context.Context, name, resourceVersion string, st api.AgentGroupStatus) (string, error) {
	var rv int64
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT resource_version FROM groups WHERE name = $1 FOR UPDATE`, name).Scan(&rv); err != nil {
			return notFound(err)
		}
		if resourceVersion != "" && resourceVersion != strconv.FormatInt(rv, 10) {
			return store.ErrConflict
		}
		rv++
		_, err := tx.Exec(ctx, `UPDATE groups SET status = $2, resource_version = $3 WHERE name = $1`, name, mustJSON(st), rv)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("set status of group %s: %w", name, err)
	}
	return strconv.FormatInt(rv, 10), nil
}

// ---- environments ----

func (s *Store) PutEnvironment(ctx context.Context, e *api.Environment) (bool, error) {
	created := false
	spec := mustJSON(e.Spec)
	err := s.tx(ctx, func(tx pgx.Tx) error {
		created = false
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('agentrun-env:' || $1))`, e.Metadata.Name+"@"+e.Spec.Version); err != nil {
			return err
		}
		var cur []byte
		err := tx.QueryRow(ctx, `SELECT spec FROM environments WHERE name = $1 AND version = $2`, e.Metadata.Name, e.Spec.Version).Scan(&cur)
		if err == nil {
			if string(cur) != spec {
				return fmt.Errorf("%s@%s is stored with other content; versions are immutable: %w", e.Metadata.Name, e.Spec.Version, store.ErrAlreadyExists)
			}
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		created = true
		_, err = tx.Exec(ctx, `INSERT INTO environments (name, version, uid, labels, spec, created_at) VALUES ($1, $2, $3, $4, $5, now())`,
			e.Metadata.Name, e.Spec.Version, newUID(), mustJSON(e.Metadata.Labels), spec)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("put environment %s@%s: %w", e.Metadata.Name, e.Spec.Version, err)
	}
	return created, nil
}

const envCols = `SELECT name, uid, labels, spec, created_at FROM environments`

func scanEnv(row pgx.Row) (*api.Environment, error) {
	var e api.Environment
	var labels, spec []byte
	var created time.Time
	if err := row.Scan(&e.Metadata.Name, &e.Metadata.UID, &labels, &spec, &created); err != nil {
		return nil, notFound(err)
	}
	e.APIVersion, e.Kind = api.APIVersion, "Environment"
	ct := utc(created)
	e.Metadata.CreationTimestamp = &ct
	if err := json.Unmarshal(labels, &e.Metadata.Labels); err != nil {
		return nil, fmt.Errorf("decode environment %s labels: %w", e.Metadata.Name, err)
	}
	if err := json.Unmarshal(spec, &e.Spec); err != nil {
		return nil, err
	}
	return &e, nil
}

func (s *Store) GetEnvironment(ctx context.Context, name, version string) (*api.Environment, error) {
	e, err := scanEnv(s.read.QueryRow(ctx, envCols+` WHERE name = $1 AND version = $2`, name, version))
	if err != nil {
		return nil, fmt.Errorf("get environment %s@%s: %w", name, version, err)
	}
	return e, nil
}

func (s *Store) ListEnvironments(ctx context.Context) ([]*api.Environment, error) {
	rows, err := s.read.Query(ctx, envCols+` ORDER BY name, version`)
	if err != nil {
		return nil, fmt.Errorf("list environments: %w", err)
	}
	defer rows.Close()
	var out []*api.Environment
	for rows.Next() {
		e, err := scanEnv(rows)
		if err != nil {
			return nil, fmt.Errorf("list environments: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list environments: %w", err)
	}
	return out, nil
}

func (s *Store) CancelGroup(ctx context.Context, name string) ([]string, error) {
	var requested []string
	err := s.tx(ctx, func(tx pgx.Tx) error {
		requested = requested[:0]
		g, err := lockGroup(ctx, tx, name)
		if err != nil {
			return err
		}
		if !g.Status.CancelRequested {
			g.Status.CancelRequested = true
			if _, err := tx.Exec(ctx, `UPDATE groups SET status = $2, resource_version = resource_version + 1 WHERE name = $1`, name, mustJSON(g.Status)); err != nil {
				return err
			}
		}
		var now time.Time
		if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
			return err
		}
		if _, err := s.admitTx(ctx, tx, g, now); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, pokeSQL+`, cancel_requested = true
			WHERE group_name = $1 AND admitted AND phase NOT IN `+finishedPhases+` RETURNING name`, name)
		if err != nil {
			return err
		}
		if requested, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		return notifyWork(ctx, tx, "")
	})
	if err != nil {
		return nil, fmt.Errorf("cancel group %s: %w", name, err)
	}
	s.wake.Poke()
	s.wake.Event()
	return requested, nil
}

func (s *Store) DeleteGroup(ctx context.Context, name string) ([]string, error) {
	var names []string
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if _, err := lockGroup(ctx, tx, name); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT name FROM runs WHERE group_name = $1 ORDER BY name FOR UPDATE`, name)
		if err != nil {
			return err
		}
		if names, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		b := &pgx.Batch{}
		for _, t := range []string{"steps", "run_events", "messages", "files", "credit_reservations"} {
			b.Queue(`DELETE FROM `+t+` WHERE run = ANY ($1::text[])`, names)
		}
		b.Queue(`DELETE FROM runs WHERE group_name = $1`, name)
		b.Queue(`DELETE FROM groups WHERE name = $1`, name)
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return nil, fmt.Errorf("delete group %s: %w", name, err)
	}
	return names, nil
}

const memberSQL = `SELECT name, task_key, group_seq, phase, COALESCE(status->>'reason', ''), admitted, lease_owner IS NOT NULL,
	depends_on, group_wait, cap_micros, cancel_requested, CASE WHEN NOT admitted THEN status END,
	COALESCE(status->'cost'->>'totalUSD', '')
	FROM runs WHERE group_name = $1 ORDER BY group_seq`

func scanMembers(rows pgx.Rows) ([]store.Member, error) {
	defer rows.Close()
	var out []store.Member
	for rows.Next() {
		var m store.Member
		var deps, status []byte
		var total string
		var capM int64
		if err := rows.Scan(&m.Name, &m.TaskKey, &m.Seq, &m.Phase, &m.Reason, &m.Admitted, &m.Leased, &deps, &m.Wait, &capM, &m.CancelRequested, &status, &total); err != nil {
			return nil, err
		}
		m.CapMicros = cost.Micros(capM)
		m.SpentMicros = store.SpentMicros(total, m.CapMicros)
		if err := json.Unmarshal(deps, &m.DependsOn); err != nil {
			return nil, fmt.Errorf("decode member %s dependsOn: %w", m.Name, err)
		}
		if status != nil {
			var st api.AgentRunStatus
			if err := json.Unmarshal(status, &st); err != nil {
				return nil, fmt.Errorf("decode run %s status: %w", m.Name, err)
			}
			m.Status = &st
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

func (s *Store) GroupMembers(ctx context.Context, group string) ([]store.Member, error) {
	rows, err := s.read.Query(ctx, memberSQL, group)
	if err != nil {
		return nil, fmt.Errorf("members of group %s: %w", group, err)
	}
	ms, err := scanMembers(rows)
	if err != nil {
		return nil, fmt.Errorf("members of group %s: %w", group, err)
	}
	return ms, nil
}

func (s *Store) GroupsToAdmit(ctx context.Context) ([]string, error) {
	rows, err := s.read.Query(ctx, `SELECT DISTINCT group_name FROM runs WHERE NOT admitted AND phase = 'Queued'`)
	if err != nil {
		return nil, fmt.Errorf("groups to admit: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("groups to admit: %w", err)
	}
	return out, nil
}

func (s *Store) AdmitGroup(ctx context.Context, group string, now time.Time) (int, error) {
	// A look without the write lock first: most passes change nothing, and then hold nothing.
	if store.NothingToAdmit(ctx, s, group, now) {
		return 0, nil
	}
	n := 0
	err := s.tx(ctx, func(tx pgx.Tx) error {
		n = 0
		g, err := lockGroup(ctx, tx, group)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		n, err = s.admitTx(ctx, tx, g, now)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("admit group %s: %w", group, err)
	}
	if n > 0 {
		s.wake.Poke()
	}
	s.wake.Event()
	return n, nil
}

// admitTx plans and applies admission with the group's row locked.
func (s *Store) admitTx(ctx context.Context, tx pgx.Tx, g *api.AgentGroup, now time.Time) (int, error) {
	rows, err := tx.Query(ctx, memberSQL, g.Metadata.Name)
	if err != nil {
		return 0, err
	}
	members, err := scanMembers(rows)
	if err != nil {
		return 0, err
	}
	admitted := 0
	for _, u := range store.PlanAdmission(g, members, now) {
		var n int64
		switch u.Kind() {
		case store.UpdateAdmit:
			admitted++
			tag, err := tx.Exec(ctx, `UPDATE runs SET admitted = true, group_wait = '', claimable_at = now(), status = $2, resource_version = resource_version + 1
				WHERE name = $1 AND NOT admitted`, u.Name, mustJSON(u.Status))
			if err != nil {
				return 0, err
			}
			n = tag.RowsAffected()
		case store.UpdateFinish:
			tag, err := tx.Exec(ctx, `UPDATE runs SET group_wait = '', claimable_at = NULL, status = $2, phase = $3, resource_version = resource_version + 1
				WHERE name = $1 AND NOT admitted AND lease_owner IS NULL`, u.Name, mustJSON(u.Status), u.Status.Phase)
			if err != nil {
				return 0, err
			}
			n = tag.RowsAffected()
		default:
			tag, err := tx.Exec(ctx, `UPDATE runs SET group_wait = $2, status = $3, resource_version = resource_version + 1 WHERE name = $1 AND NOT admitted`,
				u.Name, u.Wait, mustJSON(u.Status))
			if err != nil {
				return 0, err
			}
			n = tag.RowsAffected()
		}
		if n == 0 {
			return 0, fmt.Errorf("run %s changed during admission", u.Name)
		}
		if u.Event.Type != "" {
			var seq int64
			if err := tx.QueryRow(ctx, `UPDATE runs SET next_event = next_event + 1 WHERE name = $1 RETURNING next_event`, u.Name).Scan(&seq); err != nil {
				return 0, err
			}
			b := &pgx.Batch{}
			queueEvents(b, u.Name, seq, []api.Event{u.Event})
			b.Queue(`SELECT pg_notify($1, $2)`, chanEvents, u.Name)
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return 0, err
			}
		}
		if u.Kind() == store.UpdateFinish {
			if err := writeOutbox(ctx, tx, store.FinishOutbox(u.Name, &u.Status, now)); err != nil {
				return 0, err
			}
		}
	}
	if admitted > 0 {
		if err := notifyWork(ctx, tx, g.Metadata.Name); err != nil {
			return 0, err
		}
	}
	return admitted, nil
}

func (s *Store) CreateRuns(ctx context.Context, runs []*api.AgentRun, key, hash string) ([]*api.AgentRun, bool, error) {
	var out []*api.AgentRun
	replayed, claimable := false, false
	err := s.tx(ctx, func(tx pgx.Tx) error {
		out, replayed, claimable = nil, false, false
		if key != "" {
			// Batches with the same key wait for each other, so the second sees the first's result.
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('agentrun-idem:' || $1))`, key); err != nil {
				return err
			}
			var h string
			var result []byte
			err := tx.QueryRow(ctx, `SELECT hash, result FROM idempotency_keys WHERE key = $1`, key).Scan(&h, &result)
			if err == nil {
				if err := store.CheckBatchKey(key, h, hash); err != nil {
					return err
				}
				replayed = true
				return json.Unmarshal(result, &out)
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
		var now time.Time
		if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
			return err
		}
		groups := map[string]*store.BatchGroup{}
		for i, r := range runs {
			if err := insertRunTx(ctx, tx, r, groups, now); err != nil {
				return store.BatchItemError(i, len(runs), err)
			}
			if store.ClaimableOnCreate(r) {
				claimable = true
			}
			out = append(out, r)
		}
		if key != "" && len(out) > 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO idempotency_keys (key, hash, result) VALUES ($1, $2, $3)`, key, hash, mustJSON(out)); err != nil {
				return err
			}
		}
		if claimable {
			return notifyWork(ctx, tx, "")
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("create runs: %w", err)
	}
	if claimable {
		s.wake.Poke()
	}
	return out, replayed, nil
}

func insertRunTx(ctx context.Context, tx pgx.Tx, r *api.AgentRun, groups map[string]*store.BatchGroup, now time.Time) error {
	name := r.Metadata.Name
	claimable := store.ClaimableOnCreate(r)
	var m store.NewMember
	admitted := true
	if r.Spec.Group != "" {
		bg := groups[r.Spec.Group]
		if bg == nil {
			g, err := lockGroup(ctx, tx, r.Spec.Group)
			if errors.Is(err, store.ErrNotFound) {
				return store.GroupNotFound(r.Spec.Group)
			}
			if err != nil {
				return err
			}
			bg = &store.BatchGroup{Group: g}
			if err := tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE phase NOT IN `+finishedPhases+`), COALESCE(MAX(group_seq), 0) FROM runs WHERE group_name = $1`,
				r.Spec.Group).Scan(&bg.Unfinished, &bg.Seq); err != nil {
				return err
			}
			groups[r.Spec.Group] = bg
		}
		keys := map[string]bool{}
		if len(r.Spec.DependsOn) > 0 {
			rows, err := tx.Query(ctx, `SELECT task_key FROM runs WHERE group_name = $1 AND task_key = ANY ($2::text[])`, r.Spec.Group, r.Spec.DependsOn)
			if err != nil {
				return err
			}
			found, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			for _, k := range found {
				keys[k] = true
			}
		}
		var err error
		if m, err = bg.AddMember(r, keys); err != nil {
			return err
		}
		admitted = false
	} else {
		m.DependsOn = []string{}
		m.CapMicros = store.RunCapMicros(r)
	}
	uid := newUID()
	_, err := tx.Exec(ctx, `INSERT INTO runs (name, uid, agent, resource_version, created_at, labels, spec, status, phase, claimable_at,
			group_name, task_key, group_seq, admitted, cap_micros, depends_on, group_wait)
		VALUES ($1, $2, $3, 1, $4, $5, $6, $7, $8, CASE WHEN $9::boolean THEN $4::timestamptz END, $10, $11, $12, $13, $14, $15, $16)`,
		name, uid, r.Spec.Agent, now, mustJSON(r.Metadata.Labels), mustJSON(r.Spec), mustJSON(r.Status), r.Status.Phase, claimable,
		m.Group, m.TaskKey, m.Seq, admitted, int64(m.CapMicros), mustJSON(m.DependsOn), m.Wait)
	if err != nil {
		if isUnique(err) {
			return fmt.Errorf("run %s: %w", name, store.ErrAlreadyExists)
		}
		return err
	}
	r.Metadata.UID, r.Metadata.ResourceVersion, r.Metadata.Generation = uid, "1", 1
	ct := utc(now)
	r.Metadata.CreationTimestamp = &ct
	return nil
}
