package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

func (s *Store) CreateAgent(ctx context.Context, a *api.Agent) error {
	now := s.now()
	a.Metadata.UID = newUID()
	a.Metadata.ResourceVersion = "1"
	a.Metadata.Generation = 1
	ct := now.UTC().Truncate(time.Millisecond)
	a.Metadata.CreationTimestamp = &ct
	spec := mustJSON(a.Spec)
	err := s.tx(ctx, func(tx *sql.Tx) error {
		// A name used before keeps its old revisions (runs are pinned to them): number past them.
		var rev int64
		if err := s.txQueryRow(ctx, tx, `SELECT COALESCE(MAX(revision), 0) + 1 FROM agent_revisions WHERE agent = ?`, a.Metadata.Name).Scan(&rev); err != nil {
			return err
		}
		a.Status.Revision = rev
		_, err := s.txExec(ctx, tx, `INSERT INTO agents (name, uid, resource_version, generation, revision, created_at, labels, spec) VALUES (?, ?, 1, 1, ?, ?, ?, ?)`,
			a.Metadata.Name, a.Metadata.UID, rev, ms(now), mustJSON(a.Metadata.Labels), spec)
		if err != nil {
			if isUnique(err) {
				return fmt.Errorf("agent %q: %w", a.Metadata.Name, store.ErrAlreadyExists)
			}
			return err
		}
		_, err = s.txExec(ctx, tx, `INSERT INTO agent_revisions (agent, revision, spec, created_at) VALUES (?, ?, ?, ?)`, a.Metadata.Name, rev, spec, ms(now))
		return err
	})
	if err != nil {
		return fmt.Errorf("create agent %s: %w", a.Metadata.Name, err)
	}
	return nil
}

func (s *Store) UpdateAgent(ctx context.Context, a *api.Agent) error {
	name := a.Metadata.Name
	err := s.tx(ctx, func(tx *sql.Tx) error {
		cur, err := scanAgent(s.txQueryRow(ctx, tx, agentCols+` WHERE name = ?`, name))
		if err != nil {
			return err
		}
		v, err := store.UpdateAgentVersions(cur, a)
		if err != nil {
			return err
		}
		if v.SpecChanged {
			if _, err := s.txExec(ctx, tx, `INSERT INTO agent_revisions (agent, revision, spec, created_at) VALUES (?, ?, ?, ?)`, name, v.Revision, mustJSON(a.Spec), ms(s.now())); err != nil {
				return err
			}
		}
		if _, err := s.txExec(ctx, tx, `UPDATE agents SET resource_version = ?, generation = ?, revision = ?, labels = ?, spec = ? WHERE name = ?`,
			v.ResourceVersion, v.Generation, v.Revision, mustJSON(a.Metadata.Labels), mustJSON(a.Spec), name); err != nil {
			return err
		}
		a.Metadata.UID, a.Metadata.CreationTimestamp = cur.Metadata.UID, cur.Metadata.CreationTimestamp
		a.Metadata.ResourceVersion = v.String()
		a.Metadata.Generation = v.Generation
		a.Status.Revision = v.Revision
		return nil
	})
	if err != nil {
		return fmt.Errorf("update agent %s: %w", name, err)
	}
	return nil
}

const agentCols = `SELECT name, uid, resource_version, generation, revision, created_at, labels, spec FROM agents`

func scanAgent(row rowScanner) (*api.Agent, error) {
	var a api.Agent
	var rv, created int64
	var labels, spec string
	if err := row.Scan(&a.Metadata.Name, &a.Metadata.UID, &rv, &a.Metadata.Generation, &a.Status.Revision, &created, &labels, &spec); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, store.ErrNotFound
		}
		return nil, err
	}
	a.APIVersion, a.Kind = api.APIVersion, "Agent"
	a.Metadata.ResourceVersion = strconv.FormatInt(rv, 10)
	ct := fromMS(created)
	a.Metadata.CreationTimestamp = &ct
	if err := json.Unmarshal([]byte(labels), &a.Metadata.Labels); err != nil {
		return nil, fmt.Errorf("decode agent %s labels: %w", a.Metadata.Name, err)
	}
	if err := json.Unmarshal([]byte(spec), &a.Spec); err != nil {
		return nil, fmt.Errorf("decode agent %s spec: %w", a.Metadata.Name, err)
	}
	return &a, nil
}

func (s *Store) GetAgent(ctx context.Context, name string) (*api.Agent, error) {
	a, err := scanAgent(s.r.QueryRowContext(ctx, agentCols+` WHERE name = ?`, name))
	if err != nil {
		return nil, fmt.Errorf("get agent %s: %w", name, err)
	}
	return a, nil
}

func (s *Store) ListAgents(ctx context.Context) ([]*api.Agent, error) {
	rows, err := s.r.QueryContext(ctx, agentCols+` ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list agents: %w", err)
	}
	defer rows.Close()
	var out []*api.Agent
	for rows.Next() {
		a, err := scanAgent(rows)
		if err != nil {
			return nil, fmt.Errorf("list agents: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

func (s *Store) DeleteAgent(ctx context.Context, name string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM agents WHERE name = ?`, name)
	if err != nil {
		return fmt.Errorf("delete agent %s: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("delete agent %s: %w", name, store.ErrNotFound)
	}
	return nil
}

func (s *Store) GetAgentRevision(ctx context.Context, name string, revision int64) (*api.AgentSpec, error) {
	var spec string
	err := s.r.QueryRowContext(ctx, `SELECT spec FROM agent_revisions WHERE agent = ? AND revision = ?`, name, revision).Scan(&spec)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("agent %s revision %d: %w", name, revision, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("agent %s revision %d: %w", name, revision, err)
	}
	var sp api.AgentSpec
	if err := json.Unmarshal([]byte(spec), &sp); err != nil {
		return nil, fmt.Errorf("decode agent %s revision %d: %w", name, revision, err)
	}
	return &sp, nil
}
