package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// CreateAgent stores a new agent. A name used before keeps its old revisions (runs are pinned to
// them), so the new agent's first revision numbers past them.
func (s *Store) CreateAgent(ctx context.Context, a *api.Agent) error {
	name := a.Metadata.Name
	uid := newUID()
	spec := mustJSON(a.Spec)
	var rev int64
	var created time.Time
	err := s.tx(ctx, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `
			INSERT INTO agents (name, uid, resource_version, generation, revision, created_at, labels, spec)
			SELECT $1, $2, 1, 1, COALESCE(MAX(revision), 0) + 1, now(), $3, $4 FROM agent_revisions WHERE agent = $1
			RETURNING revision, created_at`,
			name, uid, mustJSON(a.Metadata.Labels), spec).Scan(&rev, &created)
		if err != nil {
			if isUnique(err) {
				return fmt.Errorf("agent %q: %w", name, store.ErrAlreadyExists)
			}
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO agent_revisions (agent, revision, spec, created_at) VALUES ($1, $2, $3, $4)`, name, rev, spec, created)
		return err
	})
	if err != nil {
		return fmt.Errorf("create agent %s: %w", name, err)
	}
	a.Metadata.UID = uid
	a.Metadata.ResourceVersion = "1"
	a.Metadata.Generation = 1
	ct := utc(created)
	a.Metadata.CreationTimestamp = &ct
	a.Status.Revision = rev
	return nil
}

// UpdateAgent replaces an agent's spec and labels; a changed spec makes a new revision.
func (s *Store) UpdateAgent(ctx context.Context, a *api.Agent) error {
	name := a.Metadata.Name
	var out *api.Agent
	err := s.tx(ctx, func(tx pgx.Tx) error {
		cur, err := scanAgent(tx.QueryRow(ctx, agentCols+` WHERE name = $1 FOR UPDATE`, name))
		if err != nil {
			return err
		}
		v, err := store.UpdateAgentVersions(cur, a)
		if err != nil {
			return err
		}
		if v.SpecChanged {
			if _, err := tx.Exec(ctx, `INSERT INTO agent_revisions (agent, revision, spec, created_at) VALUES ($1, $2, $3, now())`, name, v.Revision, mustJSON(a.Spec)); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE agents SET resource_version = $2, generation = $3, revision = $4, labels = $5, spec = $6 WHERE name = $1`,
			name, v.ResourceVersion, v.Generation, v.Revision, mustJSON(a.Metadata.Labels), mustJSON(a.Spec)); err != nil {
			return err
		}
		cur.Metadata.ResourceVersion = v.String()
		cur.Metadata.Generation = v.Generation
		cur.Status.Revision = v.Revision
		out = cur
		return nil
	})
	if err != nil {
		return fmt.Errorf("update agent %s: %w", name, err)
	}
	a.Metadata.UID, a.Metadata.CreationTimestamp = out.Metadata.UID, out.Metadata.CreationTimestamp
	a.Metadata.ResourceVersion = out.Metadata.ResourceVersion
	a.Metadata.Generation = out.Metadata.Generation
	a.Status.Revision = out.Status.Revision
	return nil
}

const agentCols = `SELECT name, uid, resource_version, generation, revision, created_at, labels, spec FROM agents`

func scanAgent(row pgx.Row) (*api.Agent, error) {
	var a api.Agent
	var rv int64
	var created time.Time
	var labels, spec []byte
	if err := row.Scan(&a.Metadata.Name, &a.Metadata.UID, &rv, &a.Metadata.Generation, &a.Status.Revision, &created, &labels, &spec); err != nil {
		return nil, notFound(err)
	}
	a.APIVersion, a.Kind = api.APIVersion, "Agent"
	a.Metadata.ResourceVersion = strconv.FormatInt(rv, 10)
	ct := utc(created)
	a.Metadata.CreationTimestamp = &ct
	if err := json.Unmarshal(labels, &a.Metadata.Labels); err != nil {
		return nil, fmt.Errorf("decode agent %s labels: %w", a.Metadata.Name, err)
	}
	if err := json.Unmarshal(spec, &a.Spec); err != nil {
		return nil, fmt.Errorf("decode agent %s spec: %w", a.Metadata.Name, err)
	}
	return &a, nil
}

func (s *Store) GetAgent(ctx context.Context, name string) (*api.Agent, error) {
	a, err := scanAgent(s.read.QueryRow(ctx, agentCols+` WHERE name = $1`, name))
	if err != nil {
		return nil, fmt.Errorf("get agent %s: %w", name, err)
	}
	return a, nil
}

func (s *Store) ListAgents(ctx context.Context) ([]*api.Agent, error) {
	rows, err := s.read.Query(ctx, agentCols+` ORDER BY name`)
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
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list agents: %w", err)
	}
	return out, nil
}

// DeleteAgent removes the agent; its revisions stay for the runs pinned to them.
func (s *Store) DeleteAgent(ctx context.Context, name string) error {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM agents WHERE name = $1`, name)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete agent %s: %w", name, err)
	}
	return nil
}

// GetAgentRevision returns one revision's spec. Revisions are immutable and never deleted (a
// reused name numbers its revisions past the old ones), so the specs read are kept in memory:
// every drive of a run reads its agent's revision, and a runner drives many runs of few agents.
func (s *Store) GetAgentRevision(ctx context.Context, name string, revision int64) (*api.AgentSpec, error) {
	key := revKey{name, revision}
	spec, ok := s.revs.get(key)
	if !ok {
		err := s.read.QueryRow(ctx, `SELECT spec FROM agent_revisions WHERE agent = $1 AND revision = $2`, name, revision).Scan(&spec)
		if err != nil {
			return nil, fmt.Errorf("agent %s revision %d: %w", name, revision, notFound(err))
		}
		s.revs.put(key, spec)
	}
	var sp api.AgentSpec
	if err := json.Unmarshal(spec, &sp); err != nil {
		return nil, fmt.Errorf("decode agent %s revision %d: %w", name, revision, err)
	}
	return &sp, nil
}

type revKey struct {
	agent    string
	revision int64
}

// revCache holds agent revision specs as stored (JSON, decoded afresh for each caller, who may
// change what it gets). It forgets everything when it has maxRevs.
type revCache struct {
	mu sync.Mutex
	m  map[revKey][]byte
}

const maxRevs = 4096

func (c *revCache) get(k revKey) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.m[k]
	return b, ok
}

func (c *revCache) put(k revKey, spec []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxRevs {
		c.m = map[revKey][]byte{}
	}
	c.m[k] = spec
}
