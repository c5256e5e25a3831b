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
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/store"
)

// AgentGroups (store.Groups). SQLite has one writer connection, so every write transaction here
// holds the whole database: admission, batch creation and sealing are serialized by construction.

const groupCols = `SELECT name, uid, resource_version, generation, created_at, labels, spec, status FROM groups`

func scanGroup(row rowScanner) (*api.AgentGroup, error) {
	var g api.AgentGroup
	var rv, created int64
	var labels, spec, status string
	if err := row.Scan(&g.Metadata.Name, &g.Metadata.UID, &rv, &g.Metadata.Generation, &created, &labels, &spec, &status); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, store.ErrNotFound
		}
		return nil, err
	}
	g.APIVersion, g.Kind = api.APIVersion, "AgentGroup"
	g.Metadata.ResourceVersion = strconv.FormatInt(rv, 10)
	ct := fromMS(created)
	g.Metadata.CreationTimestamp = &ct
	if err := json.Unmarshal([]byte(labels), &g.Metadata.Labels); err != nil {
		return nil, fmt.Errorf("decode group %s labels: %w", g.Metadata.Name, err)
	}
	if err := json.Unmarshal([]byte(spec), &g.Spec); err != nil {
		return nil, fmt.Errorf("decode group %s spec: %w", g.Metadata.Name, err)
	}
	if err := json.Unmarshal([]byte(status), &g.Status); err != nil {
		return nil, fmt.Errorf("decode group %s status: %w", g.Metadata.Name, err)
	}
	return &g, nil
}

func (s *Store) CreateGroup(ctx context.Context, g *api.AgentGroup) error {
	now := s.now()
	g.Metadata.UID = newUID()
	g.Metadata.ResourceVersion = "1"
	g.Metadata.Generation = 1
	ct := now.UTC().Truncate(time.Millisecond)
	g.Metadata.CreationTimestamp = &ct
	_, err := s.w.ExecContext(ctx, `INSERT INTO groups (name, uid, resource_version, generation, created_at, labels, spec, status) VALUES (?, ?, 1, 1, ?, ?, ?, ?)`,
		g.Metadata.Name, g.Metadata.UID, ms(now), mustJSON(g.Metadata.Labels), mustJSON(g.Spec), mustJSON(g.Status))
	if err != nil {
		if isUnique(err) {
			return fmt.Errorf("create group %s: %w", g.Metadata.Name, store.ErrAlreadyExists)
		}
		return fmt.Errorf("create group %s: %w", g.Metadata.Name, fullErr(err))
	}
	return nil
}

func (s *Store) GetGroup(ctx context.Context, name string) (*api.AgentGroup, error) {
	g, err := scanGroup(s.r.QueryRowContext(ctx, groupCols+` WHERE name = ?`, name))
	if err != nil {
		return nil, fmt.Errorf("get group %s: %w", name, err)
	}
	return g, nil
}

func (s *Store) ListGroups(ctx context.Context) ([]*api.AgentGroup, error) {
	rows, err := s.r.QueryContext(ctx, groupCols+` ORDER BY name`)
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
	return out, rows.Err()
}

func (s *Store) UpdateGroup(ctx context.Context, g *api.AgentGroup, check func(old *api.AgentGroup) error) error {
	name := g.Metadata.Name
	err := s.tx(ctx, func(tx *sql.Tx) error {
		cur, err := scanGroup(s.txQueryRow(ctx, tx, groupCols+` WHERE name = ?`, name))
		if err != nil {
			return err
		}
		v, err := store.UpdateGroupVersions(cur, g, check)
		if err != nil {
			return err
		}
		if _, err := s.txExec(ctx, tx, `UPDATE groups SET resource_version = ?, generation = ?, labels = ?, spec = ? WHERE name = ?`,
			v.ResourceVersion, v.Generation, mustJSON(g.Metadata.Labels), mustJSON(g.Spec), name); err != nil {
			return err
		}
		g.Metadata.UID, g.Metadata.CreationTimestamp = cur.Metadata.UID, cur.Metadata.CreationTimestamp
		g.Metadata.ResourceVersion, g.Metadata.Generation = v.String(), v.Generation
		g.Status = cur.Status
		return nil
	})
	if err != nil {
		return fmt.Errorf("update group %s: %w", name, err)
	}
	s.wake.Poke() // a raised limit may admit runs
	return nil
}

func (s *Store) SetGroupStatus(ctx context.Context, name, resourceVersion string, st api.AgentGroupStatus) (string, error) {
	var rv int64
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.txQueryRow(ctx, tx, `SELECT resource_version FROM groups WHERE name = ?`, name).Scan(&rv); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		}
		if resourceVersion != "" && resourceVersion != strconv.FormatInt(rv, 10) {
			return store.ErrConflict
		}
		rv++
		_, err := s.txExec(ctx, tx, `UPDATE groups SET status = ?, resource_version = ? WHERE name = ?`, mustJSON(st), rv, name)
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
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var cur string
		err := s.txQueryRow(ctx, tx, `SELECT spec FROM environments WHERE name = ? AND version = ?`, e.Metadata.Name, e.Spec.Version).Scan(&cur)
		if err == nil {
			if cur != spec {
				return fmt.Errorf("%s@%s is stored with other content; versions are immutable: %w", e.Metadata.Name, e.Spec.Version, store.ErrAlreadyExists)
			}
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		created = true
		_, err = s.txExec(ctx, tx, `INSERT INTO environments (name, version, uid, labels, spec, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			e.Metadata.Name, e.Spec.Version, newUID(), mustJSON(e.Metadata.Labels), spec, ms(s.now()))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("put environment %s@%s: %w", e.Metadata.Name, e.Spec.Version, err)
	}
	return created, nil
}

const envCols = `SELECT name, uid, labels, spec, created_at FROM environments`

func scanEnv(row rowScanner) (*api.Environment, error) {
	var e api.Environment
	var labels, spec string
	var created int64
	if err := row.Scan(&e.Metadata.Name, &e.Metadata.UID, &labels, &spec, &created); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, store.ErrNotFound
		}
		return nil, err
	}
	e.APIVersion, e.Kind = api.APIVersion, "Environment"
	ct := fromMS(created)
	e.Metadata.CreationTimestamp = &ct
	if err := json.Unmarshal([]byte(labels), &e.Metadata.Labels); err != nil {
		return nil, fmt.Errorf("decode environment %s labels: %w", e.Metadata.Name, err)
	}
	if err := json.Unmarshal([]byte(spec), &e.Spec); err != nil {
		return nil, err
	}
	return &e, nil
}

func (s *Store) GetEnvironment(ctx context.Context, name, version string) (*api.Environment, error) {
	e, err := scanEnv(s.r.QueryRowContext(ctx, envCols+` WHERE name = ? AND version = ?`, name, version))
	if err != nil {
		return nil, fmt.Errorf("get environment %s@%s: %w", name, version, err)
	}
	return e, nil
}

func (s *Store) ListEnvironments(ctx context.Context) ([]*api.Environment, error) {
	rows, err := s.r.QueryContext(ctx, envCols+` ORDER BY name, version`)
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
	return out, rows.Err()
}

func (s *Store) CancelGroup(ctx context.Context, name string) ([]string, error) {
	var requested []string
	err := s.tx(ctx, func(tx *sql.Tx) error {
		requested = requested[:0]
		g, err := scanGroup(s.txQueryRow(ctx, tx, groupCols+` WHERE name = ?`, name))
		if err != nil {
			return err
		}
		if !g.Status.CancelRequested {
			g.Status.CancelRequested = true
			if _, err := s.txExec(ctx, tx, `UPDATE groups SET status = ?, resource_version = resource_version + 1 WHERE name = ?`, mustJSON(g.Status), name); err != nil {
				return err
			}
		}
		if _, err = s.admitTx(ctx, tx, g, s.now()); err != nil {
			return err
		}
		rows, err := s.txQuery(ctx, tx, `UPDATE runs SET cancel_requested = 1, poke_seq = poke_seq + 1, claimable_at = ?, resource_version = resource_version + 1
			WHERE group_name = ? AND admitted = 1 AND phase NOT IN ('Succeeded', 'Failed', 'Cancelled') RETURNING name`, ms(s.now()), name)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				return err
			}
			requested = append(requested, n)
		}
		return rows.Err()
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
	err := s.tx(ctx, func(tx *sql.Tx) error {
		names = names[:0]
		res, err := s.txExec(ctx, tx, `DELETE FROM groups WHERE name = ?`, name)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return store.ErrNotFound
		}
		rows, err := s.txQuery(ctx, tx, `SELECT name FROM runs WHERE group_name = ?`, name)
		if err != nil {
			return err
		}
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				rows.Close()
				return err
			}
			names = append(names, n)
		}
		rows.Close()
		for _, t := range []string{"steps", "run_events", "messages", "files", "credit_reservations"} {
			if _, err := s.txExec(ctx, tx, `DELETE FROM `+t+` WHERE run IN (SELECT name FROM runs WHERE group_name = ?)`, name); err != nil {
				return err
			}
		}
		if _, err := s.txExec(ctx, tx, `DELETE FROM runs WHERE group_name = ?`, name); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("delete group %s: %w", name, err)
	}
	return names, nil
}

// memberSQL reads every member of a group in one statement (one snapshot).
const memberSQL = `SELECT name, task_key, group_seq, phase, COALESCE(json_extract(status, '$.reason'), ''), admitted, lease_owner IS NOT NULL,
	depends_on, group_wait, cap_micros, cancel_requested, CASE WHEN admitted = 0 THEN status END,
	COALESCE(json_extract(status, '$.cost.totalUSD'), '')
	FROM runs WHERE group_name = ? ORDER BY group_seq`

func scanMembers(rows *sql.Rows) ([]store.Member, error) {
	defer rows.Close()
	var out []store.Member
	for rows.Next() {
		var m store.Member
		var admitted, leased, cancel int
		var deps, total string
		var status sql.NullString
		var capM int64
		if err := rows.Scan(&m.Name, &m.TaskKey, &m.Seq, &m.Phase, &m.Reason, &admitted, &leased, &deps, &m.Wait, &capM, &cancel, &status, &total); err != nil {
			return nil, err
		}
		m.Admitted, m.Leased, m.CancelRequested = admitted != 0, leased != 0, cancel != 0
		m.CapMicros = cost.Micros(capM)
		m.SpentMicros = store.SpentMicros(total, m.CapMicros)
		if err := json.Unmarshal([]byte(deps), &m.DependsOn); err != nil {
			return nil, fmt.Errorf("decode member %s dependsOn: %w", m.Name, err)
		}
		if status.Valid {
			var st api.AgentRunStatus
			if err := json.Unmarshal([]byte(status.String), &st); err != nil {
				return nil, fmt.Errorf("decode run %s status: %w", m.Name, err)
			}
			m.Status = &st
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

func (s *Store) GroupMembers(ctx context.Context, group string) ([]store.Member, error) {
	rows, err := s.r.QueryContext(ctx, memberSQL, group)
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
	rows, err := s.r.QueryContext(ctx, `SELECT DISTINCT group_name FROM runs WHERE admitted = 0 AND phase = 'Queued'`)
	if err != nil {
		return nil, fmt.Errorf("groups to admit: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

func (s *Store) AdmitGroup(ctx context.Context, group string, now time.Time) (int, error) {
	// A look without the write lock first: most passes change nothing, and then hold nothing.
	if store.NothingToAdmit(ctx, s, group, now) {
		return 0, nil
	}
	n := 0
	err := s.tx(ctx, func(tx *sql.Tx) error {
		g, err := scanGroup(s.txQueryRow(ctx, tx, groupCols+` WHERE name = ?`, group))
		if errors.Is(err, store.ErrNotFound) {
			return nil // deleted meanwhile
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

// admitTx plans and applies admission inside tx.
func (s *Store) admitTx(ctx context.Context, tx *sql.Tx, g *api.AgentGroup, now time.Time) (int, error) {
	rows, err := s.txQuery(ctx, tx, memberSQL, g.Metadata.Name)
	if err != nil {
		return 0, err
	}
	members, err := scanMembers(rows)
	if err != nil {
		return 0, err
	}
	admitted := 0
	for _, u := range store.PlanAdmission(g, members, now) {
		var res sql.Result
		switch u.Kind() {
		case store.UpdateAdmit:
			admitted++
			res, err = s.txExec(ctx, tx, `UPDATE runs SET admitted = 1, group_wait = '', claimable_at = ?, status = ?, resource_version = resource_version + 1
				WHERE name = ? AND admitted = 0`, ms(now), mustJSON(u.Status), u.Name)
		case store.UpdateFinish:
			res, err = s.txExec(ctx, tx, `UPDATE runs SET group_wait = '', claimable_at = NULL, status = ?, phase = ?, resource_version = resource_version + 1
				WHERE name = ? AND admitted = 0 AND lease_owner IS NULL`, mustJSON(u.Status), u.Status.Phase, u.Name)
		default:
			res, err = s.txExec(ctx, tx, `UPDATE runs SET group_wait = ?, status = ?, resource_version = resource_version + 1 WHERE name = ? AND admitted = 0`,
				u.Wait, mustJSON(u.Status), u.Name)
		}
		if err != nil {
			return 0, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return 0, fmt.Errorf("run %s changed during admission", u.Name)
		}
		if u.Event.Type != "" {
			if err := s.writeEvents(ctx, tx, u.Name, []api.Event{u.Event}); err != nil {
				return 0, err
			}
		}
		if u.Kind() == store.UpdateFinish {
			if err := s.writeOutbox(ctx, tx, store.FinishOutbox(u.Name, &u.Status, now)); err != nil {
				return 0, err
			}
		}
	}
	return admitted, nil
}

func (s *Store) CreateRuns(ctx context.Context, runs []*api.AgentRun, key, hash string) ([]*api.AgentRun, bool, error) {
	var out []*api.AgentRun
	replayed := false
	claimable := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		out, replayed, claimable = nil, false, false
		if key != "" {
			var h, result string
			err := s.txQueryRow(ctx, tx, `SELECT hash, result FROM idempotency_keys WHERE key = ?`, key).Scan(&h, &result)
			if err == nil {
				if err := store.CheckBatchKey(key, h, hash); err != nil {
					return err
				}
				replayed = true
				return json.Unmarshal([]byte(result), &out)
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		groups := map[string]*store.BatchGroup{}
		now := s.now()
		for i, r := range runs {
			if err := s.insertRunTx(ctx, tx, r, groups, now); err != nil {
				return store.BatchItemError(i, len(runs), err)
			}
			if store.ClaimableOnCreate(r) {
				claimable = true
			}
			out = append(out, r)
		}
		if key != "" && len(out) > 0 {
			if _, err := s.txExec(ctx, tx, `INSERT INTO idempotency_keys (key, hash, result, created_at) VALUES (?, ?, ?, ?)`, key, hash, mustJSON(out), ms(now)); err != nil {
				return err
			}
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

func (s *Store) insertRunTx(ctx context.Context, tx *sql.Tx, r *api.AgentRun, groups map[string]*store.BatchGroup, now time.Time) error {
	name := r.Metadata.Name
	var claimable any
	if store.ClaimableOnCreate(r) {
		claimable = ms(now)
	}
	var m store.NewMember
	admitted := 1
	if r.Spec.Group != "" {
		bg := groups[r.Spec.Group]
		if bg == nil {
			g, err := scanGroup(s.txQueryRow(ctx, tx, groupCols+` WHERE name = ?`, r.Spec.Group))
			if errors.Is(err, store.ErrNotFound) {
				return store.GroupNotFound(r.Spec.Group)
			}
			if err != nil {
				return err
			}
			bg = &store.BatchGroup{Group: g}
			if err := s.txQueryRow(ctx, tx, `SELECT count(*) FILTER (WHERE phase NOT IN ('Succeeded', 'Failed', 'Cancelled')), COALESCE(MAX(group_seq), 0) FROM runs WHERE group_name = ?`,
				r.Spec.Group).Scan(&bg.Unfinished, &bg.Seq); err != nil {
				return err
			}
			groups[r.Spec.Group] = bg
		}
		keys := map[string]bool{}
		if len(r.Spec.DependsOn) > 0 {
			q := `SELECT task_key FROM runs WHERE group_name = ? AND task_key IN (?` + strings.Repeat(",?", len(r.Spec.DependsOn)-1) + `)`
			args := []any{r.Spec.Group}
			for _, d := range r.Spec.DependsOn {
				args = append(args, d)
			}
			rows, err := s.txQuery(ctx, tx, q, args...)
			if err != nil {
				return err
			}
			for rows.Next() {
				var k string
				rows.Scan(&k)
				keys[k] = true
			}
			rows.Close()
		}
		var err error
		if m, err = bg.AddMember(r, keys); err != nil {
			return err
		}
		admitted = 0
	} else {
		m.DependsOn = []string{}
		m.CapMicros = store.RunCapMicros(r)
	}
	r.Metadata.UID = newUID()
	r.Metadata.ResourceVersion = "1"
	r.Metadata.Generation = 1
	ct := now.UTC().Truncate(time.Millisecond)
	r.Metadata.CreationTimestamp = &ct
	_, err := s.txExec(ctx, tx, `INSERT INTO runs (name, uid, agent, resource_version, created_at, labels, spec, status, phase, claimable_at,
		group_name, task_key, group_seq, admitted, cap_micros, depends_on, group_wait) VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		name, r.Metadata.UID, r.Spec.Agent, ms(now), mustJSON(r.Metadata.Labels), mustJSON(r.Spec), mustJSON(r.Status), r.Status.Phase, claimable,
		m.Group, m.TaskKey, m.Seq, admitted, int64(m.CapMicros), mustJSON(m.DependsOn), m.Wait)
	if err != nil {
		if isUnique(err) {
			return fmt.Errorf("run %s: %w", name, store.ErrAlreadyExists)
		}
		return err
	}
	return nil
}
