// Package sqlite is the embedded store backend: one SQLite file in the data folder, in WAL mode,
// with a single writer connection (so write transactions never contend) and a pool of readers.
// It implements store.Store and passes the shared conformance suite in store/storetest.
package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/store/wake"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Store is the SQLite backend.
type Store struct {
	w     *sql.DB // the single writer connection
	r     *sql.DB // readers
	now   func() time.Time
	wake  *wake.Waker
	stmts *stmtCache
	// commits feeds the group committer (commitLoop), which stops when closed is closed.
	commits   chan *commitReq
	closed    chan struct{}
	closeOnce sync.Once
	loopDone  chan struct{}
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database at path and applies migrations.
func Open(path string) (*Store, error) {
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(FULL)&_pragma=foreign_keys(ON)&_txlock=immediate"
	w, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	r, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=query_only(1)")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	r.SetMaxOpenConns(8)
	s := &Store{w: w, r: r, now: time.Now, wake: wake.New(), stmts: &stmtCache{db: w}, commits: make(chan *commitReq), closed: make(chan struct{}), loopDone: make(chan struct{})}
	if err := s.migrate(context.Background()); err != nil {
		w.Close()
		r.Close()
		return nil, err
	}
	go s.commitLoop()
	return s, nil
}

// Backend names the backend.
func (s *Store) Backend() string { return "sqlite" }

// Close stops the group committer and closes both pools.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	<-s.loopDone
	s.stmts.close()
	return errors.Join(s.r.Close(), s.w.Close())
}

var migrations = []string{
	// 1: the durable core.
	`CREATE TABLE agents (
		name TEXT PRIMARY KEY, uid TEXT NOT NULL, resource_version INTEGER NOT NULL,
		generation INTEGER NOT NULL, revision INTEGER NOT NULL, created_at INTEGER NOT NULL,
		labels TEXT NOT NULL, spec TEXT NOT NULL);
	CREATE TABLE agent_revisions (
		agent TEXT NOT NULL, revision INTEGER NOT NULL, spec TEXT NOT NULL, created_at INTEGER NOT NULL,
		PRIMARY KEY (agent, revision));
	CREATE TABLE runs (
		name TEXT PRIMARY KEY, uid TEXT NOT NULL, agent TEXT NOT NULL, resource_version INTEGER NOT NULL,
		created_at INTEGER NOT NULL, labels TEXT NOT NULL, spec TEXT NOT NULL, status TEXT NOT NULL,
		phase TEXT NOT NULL,
		lease_owner TEXT, lease_expires_at INTEGER, lease_generation INTEGER NOT NULL DEFAULT 0,
		claimable_at INTEGER, poke_seq INTEGER NOT NULL DEFAULT 0, cancel_requested INTEGER NOT NULL DEFAULT 0,
		next_step INTEGER NOT NULL DEFAULT 0, next_event INTEGER NOT NULL DEFAULT 0, next_message INTEGER NOT NULL DEFAULT 0);
	CREATE INDEX runs_claimable ON runs (claimable_at) WHERE lease_owner IS NULL AND claimable_at IS NOT NULL;
	CREATE INDEX runs_leased ON runs (lease_expires_at) WHERE lease_owner IS NOT NULL;
	CREATE INDEX runs_agent ON runs (agent, created_at);
	CREATE TABLE steps (
		run TEXT NOT NULL, seq INTEGER NOT NULL, key TEXT NOT NULL, kind TEXT NOT NULL, state TEXT NOT NULL,
		title TEXT NOT NULL, attempt INTEGER NOT NULL, args_hash TEXT NOT NULL, args TEXT, result TEXT,
		error TEXT NOT NULL, cost_micros INTEGER, started_at INTEGER NOT NULL, completed_at INTEGER,
		resolution TEXT NOT NULL DEFAULT '', resolution_result TEXT,
		PRIMARY KEY (run, seq), UNIQUE (run, key));
	CREATE TABLE run_events (
		run TEXT NOT NULL, seq INTEGER NOT NULL, time INTEGER NOT NULL, type TEXT NOT NULL,
		step_key TEXT NOT NULL, message TEXT NOT NULL, data TEXT, PRIMARY KEY (run, seq));
	CREATE TABLE messages (
		run TEXT NOT NULL, seq INTEGER NOT NULL, key TEXT NOT NULL, payload TEXT NOT NULL, time INTEGER NOT NULL,
		PRIMARY KEY (run, seq));
	CREATE UNIQUE INDEX messages_key ON messages (run, key) WHERE key <> '';`,
	// 2: run folder snapshots and the runner registry.
	`CREATE TABLE files (
		run TEXT NOT NULL, path TEXT NOT NULL, content BLOB NOT NULL, mode INTEGER NOT NULL,
		size INTEGER NOT NULL, updated_at INTEGER NOT NULL, PRIMARY KEY (run, path));
	CREATE TABLE runners (
		name TEXT PRIMARY KEY, version TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,
		started_at INTEGER NOT NULL, heartbeat_at INTEGER NOT NULL, runs_held INTEGER NOT NULL);`,
	// 3: the credits ledger, credit reservations and sealed secrets.
	`CREATE TABLE credits_account (id INTEGER PRIMARY KEY CHECK (id = 1), adds INTEGER NOT NULL, added INTEGER NOT NULL,
		charged INTEGER NOT NULL, unknown_charges INTEGER NOT NULL);
	INSERT INTO credits_account (id, adds, added, charged, unknown_charges) VALUES (1, 0, 0, 0, 0);
	CREATE TABLE credits_ledger (seq INTEGER PRIMARY KEY AUTOINCREMENT, time INTEGER NOT NULL, kind TEXT NOT NULL,
		amount INTEGER, run TEXT NOT NULL, run_uid TEXT NOT NULL, step_key TEXT NOT NULL, note TEXT NOT NULL);
	CREATE UNIQUE INDEX credits_ledger_charge ON credits_ledger (run_uid, step_key) WHERE kind = 'charge';
	CREATE TABLE credit_reservations (run TEXT NOT NULL, step_key TEXT NOT NULL, attempt INTEGER NOT NULL,
		amount INTEGER NOT NULL, time INTEGER NOT NULL, PRIMARY KEY (run, step_key));
	CREATE TABLE secrets (name TEXT PRIMARY KEY, sealed BLOB NOT NULL, keys TEXT NOT NULL, updated_at INTEGER NOT NULL);`,
	// 4: AgentGroups: members (not claimable until admitted), groups, batch idempotency keys.
	`ALTER TABLE runs ADD COLUMN group_name TEXT NOT NULL DEFAULT '';
	ALTER TABLE runs ADD COLUMN task_key TEXT NOT NULL DEFAULT '';
	ALTER TABLE runs ADD COLUMN group_seq INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE runs ADD COLUMN admitted INTEGER NOT NULL DEFAULT 1;
	ALTER TABLE runs ADD COLUMN cap_micros INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE runs ADD COLUMN depends_on TEXT NOT NULL DEFAULT '[]';
	ALTER TABLE runs ADD COLUMN group_wait TEXT NOT NULL DEFAULT '';
	CREATE INDEX runs_group ON runs (group_name, group_seq) WHERE group_name <> '';
	CREATE INDEX runs_unadmitted ON runs (group_name) WHERE admitted = 0;
	CREATE TABLE groups (
		name TEXT PRIMARY KEY, uid TEXT NOT NULL, resource_version INTEGER NOT NULL, generation INTEGER NOT NULL,
		created_at INTEGER NOT NULL, labels TEXT NOT NULL, spec TEXT NOT NULL, status TEXT NOT NULL);
	CREATE TABLE idempotency_keys (
		key TEXT PRIMARY KEY, hash TEXT NOT NULL, result TEXT NOT NULL, created_at INTEGER NOT NULL);`,
	// 5: evaluation environments, immutable per name and version.
	`CREATE TABLE environments (
		name TEXT NOT NULL, version TEXT NOT NULL, uid TEXT NOT NULL, labels TEXT NOT NULL, spec TEXT NOT NULL,
		created_at INTEGER NOT NULL, PRIMARY KEY (name, version));`,
}

func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for i, m := range migrations {
		v := i + 1
		err := s.tx(ctx, func(tx *sql.Tx) error {
			var n int
			if err := s.txQueryRow(ctx, tx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, v).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			// Several statements in one string: run directly, not through the statement cache.
			if _, err := tx.ExecContext(ctx, m); err != nil {
				return err
			}
			_, err := s.txExec(ctx, tx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, v, s.now().UnixMilli())
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate to version %d: %w", v, err)
		}
	}
	return nil
}

func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	s.stmts.prepareWanted(ctx)
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

func newUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshal %T: %v", v, err)) // our own types always marshal
	}
	return string(b)
}

func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// ---- agents ----

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

func isUnique(err error) bool {
	return err != nil && strings.Contains(err.Error(), "UNIQUE constraint failed") || err != nil && strings.Contains(err.Error(), "constraint failed: PRIMARY KEY")
}

func (s *Store) UpdateAgent(ctx context.Context, a *api.Agent) error {
	name := a.Metadata.Name
	err := s.tx(ctx, func(tx *sql.Tx) error {
		cur, err := scanAgent(s.txQueryRow(ctx, tx, agentCols+` WHERE name = ?`, name))
		if err != nil {
			return err
		}
		if a.Metadata.ResourceVersion != "" && a.Metadata.ResourceVersion != cur.Metadata.ResourceVersion {
			return fmt.Errorf("agent %q has resourceVersion %s, not %s: %w", name, cur.Metadata.ResourceVersion, a.Metadata.ResourceVersion, store.ErrConflict)
		}
		rv, _ := strconv.ParseInt(cur.Metadata.ResourceVersion, 10, 64)
		rv++
		gen, rev := cur.Metadata.Generation, cur.Status.Revision
		specChanged := !reflect.DeepEqual(normSpec(cur.Spec), normSpec(a.Spec))
		if specChanged {
			gen++
			rev++
			if _, err := s.txExec(ctx, tx, `INSERT INTO agent_revisions (agent, revision, spec, created_at) VALUES (?, ?, ?, ?)`, name, rev, mustJSON(a.Spec), ms(s.now())); err != nil {
				return err
			}
		}
		if _, err := s.txExec(ctx, tx, `UPDATE agents SET resource_version = ?, generation = ?, revision = ?, labels = ?, spec = ? WHERE name = ?`,
			rv, gen, rev, mustJSON(a.Metadata.Labels), mustJSON(a.Spec), name); err != nil {
			return err
		}
		a.Metadata.UID, a.Metadata.CreationTimestamp = cur.Metadata.UID, cur.Metadata.CreationTimestamp
		a.Metadata.ResourceVersion = strconv.FormatInt(rv, 10)
		a.Metadata.Generation = gen
		a.Status.Revision = rev
		return nil
	})
	if err != nil {
		return fmt.Errorf("update agent %s: %w", name, err)
	}
	return nil
}

// normSpec round-trips a spec through JSON so nil and empty slices compare equal.
func normSpec(sp api.AgentSpec) any {
	var v any
	json.Unmarshal([]byte(mustJSON(sp)), &v)
	return v
}

const agentCols = `SELECT name, uid, resource_version, generation, revision, created_at, labels, spec FROM agents`

type rowScanner interface{ Scan(...any) error }

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
	json.Unmarshal([]byte(labels), &a.Metadata.Labels)
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

// ---- runs ----

func (s *Store) CreateRun(ctx context.Context, r *api.AgentRun) error {
	now := s.now()
	r.Metadata.UID = newUID()
	r.Metadata.ResourceVersion = "1"
	r.Metadata.Generation = 1
	ct := now.UTC().Truncate(time.Millisecond)
	r.Metadata.CreationTimestamp = &ct
	var claimable any = ms(now)
	if api.Finished(r.Status.Phase) {
		claimable = nil
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO runs (name, uid, agent, resource_version, created_at, labels, spec, status, phase, claimable_at) VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?)`,
		r.Metadata.Name, r.Metadata.UID, r.Spec.Agent, ms(now), mustJSON(r.Metadata.Labels), mustJSON(r.Spec), mustJSON(r.Status), r.Status.Phase, claimable)
	if err != nil {
		if isUnique(err) {
			return fmt.Errorf("create run %s: %w", r.Metadata.Name, store.ErrAlreadyExists)
		}
		return fmt.Errorf("create run %s: %w", r.Metadata.Name, err)
	}
	s.wake.Poke()
	return nil
}

const runCols = `SELECT name, uid, resource_version, created_at, labels, spec, status, cancel_requested, lease_owner FROM runs`

func scanRun(row rowScanner) (*api.AgentRun, error) {
	var r api.AgentRun
	var rv, created int64
	var labels, spec, status string
	var cancel int
	var owner sql.NullString
	if err := row.Scan(&r.Metadata.Name, &r.Metadata.UID, &rv, &created, &labels, &spec, &status, &cancel, &owner); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, store.ErrNotFound
		}
		return nil, err
	}
	r.APIVersion, r.Kind = api.APIVersion, "AgentRun"
	r.Metadata.ResourceVersion = strconv.FormatInt(rv, 10)
	r.Metadata.Generation = 1
	ct := fromMS(created)
	r.Metadata.CreationTimestamp = &ct
	json.Unmarshal([]byte(labels), &r.Metadata.Labels)
	if err := json.Unmarshal([]byte(spec), &r.Spec); err != nil {
		return nil, fmt.Errorf("decode run %s spec: %w", r.Metadata.Name, err)
	}
	if err := json.Unmarshal([]byte(status), &r.Status); err != nil {
		return nil, fmt.Errorf("decode run %s status: %w", r.Metadata.Name, err)
	}
	r.Status.CancelRequested = cancel != 0 && !api.Finished(r.Status.Phase)
	return &r, nil
}

func (s *Store) GetRun(ctx context.Context, name string) (*api.AgentRun, error) {
	r, err := scanRun(s.r.QueryRowContext(ctx, runCols+` WHERE name = ?`, name))
	if err != nil {
		return nil, fmt.Errorf("get run %s: %w", name, err)
	}
	return r, nil
}

func (s *Store) ListRuns(ctx context.Context, f store.RunFilter) ([]*api.AgentRun, error) {
	q := runCols + ` WHERE 1=1`
	var args []any
	if f.Agent != "" {
		q += ` AND agent = ?`
		args = append(args, f.Agent)
	}
	if f.Phase != "" {
		q += ` AND phase = ?`
		args = append(args, f.Phase)
	}
	if f.Group != "" {
		q += ` AND group_name = ?`
		args = append(args, f.Group)
	}
	q += ` ORDER BY created_at, name`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
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
	return out, rows.Err()
}

func (s *Store) CountRuns(ctx context.Context) (map[string]int, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT phase, count(*) FROM runs GROUP BY phase`)
	if err != nil {
		return nil, fmt.Errorf("count runs: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var p string
		var n int
		if err := rows.Scan(&p, &n); err != nil {
			return nil, fmt.Errorf("count runs: %w", err)
		}
		out[p] = n
	}
	return out, rows.Err()
}

func (s *Store) DeleteRun(ctx context.Context, name string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, `DELETE FROM runs WHERE name = ?`, name)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return store.ErrNotFound
		}
		for _, t := range []string{"steps", "run_events", "messages", "files", "credit_reservations"} {
			if _, err := s.txExec(ctx, tx, `DELETE FROM `+t+` WHERE run = ?`, name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete run %s: %w", name, err)
	}
	return nil
}

// runPhase reads a run's phase inside tx; ErrNotFound if it is missing.
func runPhase(ctx context.Context, tx *sql.Tx, name string) (string, error) {
	var phase string
	err := tx.QueryRowContext(ctx, `SELECT phase FROM runs WHERE name = ?`, name).Scan(&phase)
	if errors.Is(err, sql.ErrNoRows) {
		return "", store.ErrNotFound
	}
	return phase, err
}

// requeueTx moves a parked run (no lease holder) that waits on what just arrived back to Queued,
// in the same transaction, so a reader never sees it still waiting on something already given.
func (s *Store) requeueTx(ctx context.Context, tx *sql.Tx, name, why string, from func(api.AgentRunStatus) bool) error {
	var status string
	var owner sql.NullString
	if err := s.txQueryRow(ctx, tx, `SELECT status, lease_owner FROM runs WHERE name = ?`, name).Scan(&status, &owner); err != nil {
		return err
	}
	if owner.Valid {
		return nil // the holder writes status
	}
	var st api.AgentRunStatus
	if err := json.Unmarshal([]byte(status), &st); err != nil {
		return err
	}
	if !from(st) {
		return nil
	}
	st.Phase, st.Reason, st.Message, st.WaitingOn = api.PhaseQueued, "", why, nil
	_, err := s.txExec(ctx, tx, `UPDATE runs SET status = ?, phase = ? WHERE name = ?`, mustJSON(st), st.Phase, name)
	return err
}

// poke marks a run as needing attention: claimable now if unleased, and noted for the holder.
func (s *Store) pokeTx(ctx context.Context, tx *sql.Tx, name string, extra string) error {
	_, err := s.txExec(ctx, tx, `UPDATE runs SET poke_seq = poke_seq + 1, claimable_at = ?`+extra+`, resource_version = resource_version + 1 WHERE name = ?`, ms(s.now()), name)
	return err
}

func (s *Store) RequestCancel(ctx context.Context, name string) (*api.AgentRun, error) {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		phase, err := runPhase(ctx, tx, name)
		if err != nil {
			return err
		}
		if api.Finished(phase) {
			return store.ErrFinished
		}
		return s.pokeTx(ctx, tx, name, `, cancel_requested = 1`)
	})
	if err != nil {
		return nil, fmt.Errorf("cancel run %s: %w", name, err)
	}
	s.wake.Poke()
	return s.GetRun(ctx, name)
}

func (s *Store) AddMessage(ctx context.Context, run, key, payload string) (api.Message, bool, error) {
	var msg api.Message
	created := false
	err := s.tx(ctx, func(tx *sql.Tx) error {
		phase, err := runPhase(ctx, tx, run)
		if err != nil {
			return err
		}
		if key != "" {
			var t int64
			err := s.txQueryRow(ctx, tx, `SELECT seq, payload, time FROM messages WHERE run = ? AND key = ?`, run, key).Scan(&msg.Seq, &msg.Payload, &t)
			if err == nil {
				msg.Key, msg.Time = key, fromMS(t)
				return nil
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		if api.Finished(phase) {
			return store.ErrFinished
		}
		now := s.now()
		if err := s.txQueryRow(ctx, tx, `UPDATE runs SET next_message = next_message + 1 WHERE name = ? RETURNING next_message`, run).Scan(&msg.Seq); err != nil {
			return err
		}
		if _, err := s.txExec(ctx, tx, `INSERT INTO messages (run, seq, key, payload, time) VALUES (?, ?, ?, ?, ?)`, run, msg.Seq, key, payload, ms(now)); err != nil {
			return err
		}
		msg.Key, msg.Payload, msg.Time = key, payload, now.UTC().Truncate(time.Millisecond)
		created = true
		if err := s.requeueTx(ctx, tx, run, "a message arrived; waiting for a runner to continue", store.WaitsOnMessage); err != nil {
			return err
		}
		return s.pokeTx(ctx, tx, run, "")
	})
	if err != nil {
		return api.Message{}, false, fmt.Errorf("message run %s: %w", run, err)
	}
	if created {
		s.wake.Poke()
	}
	return msg, created, nil
}

func (s *Store) ListMessages(ctx context.Context, run string, afterSeq int64) ([]api.Message, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT seq, key, payload, time FROM messages WHERE run = ? AND seq > ? ORDER BY seq`, run, afterSeq)
	if err != nil {
		return nil, fmt.Errorf("list messages of %s: %w", run, err)
	}
	defer rows.Close()
	var out []api.Message
	for rows.Next() {
		var m api.Message
		var t int64
		if err := rows.Scan(&m.Seq, &m.Key, &m.Payload, &t); err != nil {
			return nil, fmt.Errorf("list messages of %s: %w", run, err)
		}
		m.Time = fromMS(t)
		out = append(out, m)
	}
	return out, rows.Err()
}

func (s *Store) ResolveStep(ctx context.Context, run, stepKey, resolution string, result []byte) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var status string
		if err := s.txQueryRow(ctx, tx, `SELECT status FROM runs WHERE name = ?`, run).Scan(&status); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		}
		var st api.AgentRunStatus
		json.Unmarshal([]byte(status), &st)
		if !store.AwaitsResolution(st, stepKey) {
			return store.ErrNotWaiting
		}
		res, err := s.txExec(ctx, tx, `UPDATE steps SET resolution = ?, resolution_result = ? WHERE run = ? AND key = ? AND resolution = ''`, resolution, nullJSON(result), run, stepKey)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return store.ErrNotWaiting
		}
		if err := s.requeueTx(ctx, tx, run, "resolved ("+resolution+"); waiting for a runner to continue", func(st api.AgentRunStatus) bool { return store.AwaitsResolution(st, stepKey) }); err != nil {
			return err
		}
		return s.pokeTx(ctx, tx, run, "")
	})
	if err != nil {
		return fmt.Errorf("resolve step %s of %s: %w", stepKey, run, err)
	}
	s.wake.Poke()
	return nil
}

// ---- leases ----

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

func (s *Store) RenewLeases(ctx context.Context, leases []store.Lease, ttl time.Duration) ([]store.Lease, error) {
	var lost []store.Lease
	err := s.tx(ctx, func(tx *sql.Tx) error {
		lost = lost[:0]
		exp := ms(s.now().Add(ttl))
		for _, l := range leases {
			res, err := s.txExec(ctx, tx, `UPDATE runs SET lease_expires_at = ? WHERE name = ? AND lease_owner = ? AND lease_generation = ?`, exp, l.Run, l.Owner, l.Generation)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				lost = append(lost, l)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("renew %d leases: %w", len(leases), err)
	}
	return lost, nil
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
		return req.sig, fmt.Errorf("commit run %s (generation %d): %w", l.Run, l.Generation, req.err)
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
	if err := s.writeFiles(ctx, tx, l.Run, w.Files); err != nil {
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

func (s *Store) writeSteps(ctx context.Context, tx *sql.Tx, run string, steps []api.Step) error {
	for _, st := range steps {
		var completed any
		if st.CompletedAt != nil {
			completed = ms(*st.CompletedAt)
		}
		switch st.State {
		case api.StepStarted:
			res, err := s.txExec(ctx, tx, `UPDATE steps SET state = ?, attempt = ?, args_hash = ?, args = ?, result = NULL, error = '', started_at = ?, completed_at = NULL, cost_micros = NULL, resolution = '', resolution_result = NULL WHERE run = ? AND key = ?`,
				st.State, st.Attempt, st.ArgsHash, nullJSON(st.Args), ms(st.StartedAt), run, st.Key)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n > 0 {
				continue
			}
			var seq int64
			if err := s.txQueryRow(ctx, tx, `UPDATE runs SET next_step = next_step + 1 WHERE name = ? RETURNING next_step`, run).Scan(&seq); err != nil {
				return err
			}
			if _, err := s.txExec(ctx, tx, `INSERT INTO steps (run, seq, key, kind, state, title, attempt, args_hash, args, result, error, cost_micros, started_at, completed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				run, seq, st.Key, st.Kind, st.State, st.Title, st.Attempt, st.ArgsHash, nullJSON(st.Args), nullJSON(st.Result), st.Error, st.CostMicros, ms(st.StartedAt), completed); err != nil {
				return err
			}
		default:
			res, err := s.txExec(ctx, tx, `UPDATE steps SET state = ?, result = ?, error = ?, cost_micros = ?, completed_at = ? WHERE run = ? AND key = ?`,
				st.State, nullJSON(st.Result), st.Error, st.CostMicros, completed, run, st.Key)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return fmt.Errorf("step %s of %s: %s before Started", st.Key, run, st.State)
			}
		}
	}
	return nil
}

func (s *Store) writeEvents(ctx context.Context, tx *sql.Tx, run string, evs []api.Event) error {
	for _, ev := range evs {
		var seq int64
		if err := s.txQueryRow(ctx, tx, `UPDATE runs SET next_event = next_event + 1 WHERE name = ? RETURNING next_event`, run).Scan(&seq); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrNotFound
			}
			return err
		}
		t := ev.Time
		if t.IsZero() {
			t = s.now()
		}
		if _, err := s.txExec(ctx, tx, `INSERT INTO run_events (run, seq, time, type, step_key, message, data) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			run, seq, ms(t), ev.Type, ev.StepKey, ev.Message, nullJSON(ev.Data)); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) writeFiles(ctx context.Context, tx *sql.Tx, run string, files []store.FileWrite) error {
	now := ms(s.now())
	for _, f := range files {
		if f.Deleted {
			if _, err := s.txExec(ctx, tx, `DELETE FROM files WHERE run = ? AND path = ?`, run, f.Path); err != nil {
				return err
			}
			continue
		}
		content := f.Content
		if content == nil {
			content = []byte{}
		}
		if _, err := s.txExec(ctx, tx, `INSERT INTO files (run, path, content, mode, size, updated_at) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (run, path) DO UPDATE SET content = excluded.content, mode = excluded.mode, size = excluded.size, updated_at = excluded.updated_at`,
			run, f.Path, content, f.Mode, len(content), now); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) ListFiles(ctx context.Context, run string) ([]store.File, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT path, content, mode, size, updated_at FROM files WHERE run = ? ORDER BY path`, run)
	if err != nil {
		return nil, fmt.Errorf("list files of %s: %w", run, err)
	}
	defer rows.Close()
	var out []store.File
	for rows.Next() {
		var f store.File
		var t int64
		if err := rows.Scan(&f.Path, &f.Content, &f.Mode, &f.Size, &t); err != nil {
			return nil, fmt.Errorf("list files of %s: %w", run, err)
		}
		f.UpdatedAt = fromMS(t)
		out = append(out, f)
	}
	return out, rows.Err()
}

func (s *Store) ListFileInfos(ctx context.Context, run string) ([]store.File, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT path, mode, size, updated_at FROM files WHERE run = ? ORDER BY path`, run)
	if err != nil {
		return nil, fmt.Errorf("list file infos of %s: %w", run, err)
	}
	defer rows.Close()
	var out []store.File
	for rows.Next() {
		var f store.File
		var t int64
		if err := rows.Scan(&f.Path, &f.Mode, &f.Size, &t); err != nil {
			return nil, fmt.Errorf("list file infos of %s: %w", run, err)
		}
		f.UpdatedAt = fromMS(t)
		out = append(out, f)
	}
	return out, rows.Err()
}

func (s *Store) GetFile(ctx context.Context, run, path string) (store.File, error) {
	f := store.File{Path: path}
	var t int64
	err := s.r.QueryRowContext(ctx, `SELECT content, mode, size, updated_at FROM files WHERE run = ? AND path = ?`, run, path).Scan(&f.Content, &f.Mode, &f.Size, &t)
	if errors.Is(err, sql.ErrNoRows) {
		return store.File{}, fmt.Errorf("file %s of run %s: %w", path, run, store.ErrNotFound)
	}
	if err != nil {
		return store.File{}, fmt.Errorf("file %s of run %s: %w", path, run, err)
	}
	f.UpdatedAt = fromMS(t)
	return f, nil
}

func (s *Store) Heartbeat(ctx context.Context, r store.RunnerInfo) error {
	now := ms(s.now())
	_, err := s.w.ExecContext(ctx, `INSERT INTO runners (name, version, host, pid, started_at, heartbeat_at, runs_held) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET version = excluded.version, host = excluded.host, pid = excluded.pid, started_at = excluded.started_at,
		heartbeat_at = excluded.heartbeat_at, runs_held = excluded.runs_held`,
		r.Name, r.Version, r.Host, r.PID, ms(r.StartedAt), now, r.RunsHeld)
	if err != nil {
		return fmt.Errorf("heartbeat of runner %s: %w", r.Name, err)
	}
	return nil
}

func (s *Store) ListRunners(ctx context.Context) ([]store.RunnerInfo, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT name, version, host, pid, started_at, heartbeat_at, runs_held FROM runners ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list runners: %w", err)
	}
	defer rows.Close()
	var out []store.RunnerInfo
	for rows.Next() {
		var r store.RunnerInfo
		var st, hb int64
		if err := rows.Scan(&r.Name, &r.Version, &r.Host, &r.PID, &st, &hb, &r.RunsHeld); err != nil {
			return nil, fmt.Errorf("list runners: %w", err)
		}
		r.StartedAt, r.HeartbeatAt = fromMS(st), fromMS(hb)
		out = append(out, r)
	}
	return out, rows.Err()
}

func (s *Store) AppendEvents(ctx context.Context, run string, evs []api.Event) error {
	if err := s.tx(ctx, func(tx *sql.Tx) error { return s.writeEvents(ctx, tx, run, evs) }); err != nil {
		return fmt.Errorf("append events to %s: %w", run, err)
	}
	s.wake.Event()
	return nil
}

func (s *Store) ListSteps(ctx context.Context, run string) ([]api.Step, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT seq, key, kind, state, title, attempt, args_hash, args, result, error, cost_micros, started_at, completed_at, resolution, resolution_result FROM steps WHERE run = ? ORDER BY seq`, run)
	if err != nil {
		return nil, fmt.Errorf("list steps of %s: %w", run, err)
	}
	defer rows.Close()
	var out []api.Step
	for rows.Next() {
		var st api.Step
		var args, result, resResult sql.NullString
		var costM, completed sql.NullInt64
		var started int64
		if err := rows.Scan(&st.Seq, &st.Key, &st.Kind, &st.State, &st.Title, &st.Attempt, &st.ArgsHash, &args, &result, &st.Error, &costM, &started, &completed, &st.Resolution, &resResult); err != nil {
			return nil, fmt.Errorf("list steps of %s: %w", run, err)
		}
		if args.Valid {
			st.Args = json.RawMessage(args.String)
		}
		if result.Valid {
			st.Result = json.RawMessage(result.String)
		}
		if resResult.Valid {
			st.ResolutionResult = json.RawMessage(resResult.String)
		}
		if costM.Valid {
			v := costM.Int64
			st.CostMicros = &v
		}
		st.StartedAt = fromMS(started)
		if completed.Valid {
			t := fromMS(completed.Int64)
			st.CompletedAt = &t
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

func (s *Store) ListEvents(ctx context.Context, run string, afterSeq int64, limit int) ([]api.Event, error) {
	q := `SELECT seq, time, type, step_key, message, data FROM run_events WHERE run = ? AND seq > ? ORDER BY seq`
	args := []any{run, afterSeq}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list events of %s: %w", run, err)
	}
	defer rows.Close()
	var out []api.Event
	for rows.Next() {
		var ev api.Event
		var t int64
		var data sql.NullString
		if err := rows.Scan(&ev.Seq, &t, &ev.Type, &ev.StepKey, &ev.Message, &data); err != nil {
			return nil, fmt.Errorf("list events of %s: %w", run, err)
		}
		ev.Time = fromMS(t)
		if data.Valid {
			ev.Data = json.RawMessage(data.String)
		}
		out = append(out, ev)
	}
	return out, rows.Err()
}

func (s *Store) WaitWork(ctx context.Context, d time.Duration) {
	s.wake.WaitWork(ctx, d)
}

// WaitEvents blocks until an event is appended in this process, ctx ends, or d passes.
func (s *Store) WaitEvents(ctx context.Context, d time.Duration) {
	s.wake.WaitEvent(ctx, d)
}
