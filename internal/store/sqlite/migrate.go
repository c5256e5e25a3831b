package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"agentrun.dev/agentrun/internal/store"
)

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
	// 6: Triggers and their fires, one row per trigger and key (a schedule slot, a delivery id).
	`CREATE TABLE triggers (
		name TEXT PRIMARY KEY, uid TEXT NOT NULL, resource_version INTEGER NOT NULL, generation INTEGER NOT NULL,
		created_at INTEGER NOT NULL, labels TEXT NOT NULL, spec TEXT NOT NULL);
	CREATE TABLE trigger_fires (
		trigger_name TEXT NOT NULL, fire_key TEXT NOT NULL, seq INTEGER NOT NULL, time INTEGER NOT NULL,
		source TEXT NOT NULL, delivery_id TEXT NOT NULL, scheduled_at INTEGER, run TEXT NOT NULL,
		outcome TEXT NOT NULL, message TEXT NOT NULL, PRIMARY KEY (trigger_name, fire_key));
	CREATE INDEX trigger_fires_seq ON trigger_fires (trigger_name, seq);`,
	// 7: skills, numbered versions per name, each immutable; paths lists the files without their
	// contents (for listing), files holds them.
	`CREATE TABLE skills (
		name TEXT NOT NULL, version INTEGER NOT NULL, uid TEXT NOT NULL, labels TEXT NOT NULL,
		description TEXT NOT NULL, digest TEXT NOT NULL, paths TEXT NOT NULL, files TEXT NOT NULL,
		created_at INTEGER NOT NULL, PRIMARY KEY (name, version));`,
	// 8: learning agents' git repositories: objects by hash, and the commit main names.
	`CREATE TABLE learning_objects (
		agent TEXT NOT NULL, hash TEXT NOT NULL, type INTEGER NOT NULL, data BLOB NOT NULL,
		PRIMARY KEY (agent, hash));
	CREATE TABLE learning_refs (agent TEXT PRIMARY KEY, main TEXT NOT NULL);`,
	// 9: outbound webhooks, what each subscribes to (an event and an agent, '' for all), and the
	// outbox: a delivery per webhook and event key, written with the event, and its attempts.
	`CREATE TABLE webhooks (
		name TEXT PRIMARY KEY, uid TEXT NOT NULL, resource_version INTEGER NOT NULL, generation INTEGER NOT NULL,
		created_at INTEGER NOT NULL, labels TEXT NOT NULL, spec TEXT NOT NULL);
	CREATE TABLE webhook_subs (webhook TEXT NOT NULL, event TEXT NOT NULL, agent TEXT NOT NULL, PRIMARY KEY (event, agent, webhook));
	CREATE TABLE webhook_deliveries (
		seq INTEGER PRIMARY KEY, id TEXT NOT NULL, webhook TEXT NOT NULL, event_key TEXT NOT NULL, type TEXT NOT NULL,
		run TEXT NOT NULL, agent TEXT NOT NULL, trigger_name TEXT NOT NULL, event_time INTEGER NOT NULL, data TEXT NOT NULL,
		state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, next_at INTEGER, lease_owner TEXT, lease_until INTEGER,
		created_at INTEGER NOT NULL, done_at INTEGER, UNIQUE (webhook, event_key));
	CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at) WHERE state = 'Pending';
	CREATE INDEX webhook_deliveries_done ON webhook_deliveries (done_at) WHERE state <> 'Pending';
	CREATE INDEX webhook_deliveries_hook ON webhook_deliveries (webhook, seq);
	CREATE TABLE webhook_attempts (
		delivery INTEGER NOT NULL, attempt INTEGER NOT NULL, time INTEGER NOT NULL, status_code INTEGER NOT NULL,
		error TEXT NOT NULL, duration_ms INTEGER NOT NULL, delivered INTEGER NOT NULL, PRIMARY KEY (delivery, attempt));`,
	// 10: a message's ifBusy mode, stored when it reached a busy run ('' otherwise).
	`ALTER TABLE messages ADD COLUMN if_busy TEXT NOT NULL DEFAULT '';`,
	// 11: forks: a step copied from another run, and the run folder's history (every save, tagged
	// with a step seq), so a fork finds the folder as of any step. A run's folder as saved before
	// this migration is its history's first version, at its last step.
	`ALTER TABLE steps ADD COLUMN copied_from TEXT NOT NULL DEFAULT '';
	CREATE TABLE file_history (
		version INTEGER PRIMARY KEY AUTOINCREMENT, run TEXT NOT NULL, tag INTEGER NOT NULL, path TEXT NOT NULL,
		content BLOB, mode INTEGER NOT NULL, deleted INTEGER NOT NULL);
	CREATE INDEX file_history_run ON file_history (run, version);
	INSERT INTO file_history (run, tag, path, content, mode, deleted)
		SELECT f.run, r.next_step, f.path, f.content, f.mode, 0 FROM files f JOIN runs r ON r.name = f.run ORDER BY f.run, f.path;`,
}

func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	// schema_writers names the agentrun that applied each migration, outside the numbered
	// migrations so that any version can read it (an older process says which one it needs).
	if _, err := s.w.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_writers (version INTEGER PRIMARY KEY, agentrun_version TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	sc, err := s.schemaVersion(ctx, s.w)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := sc.Check(); err != nil {
		return fmt.Errorf("open sqlite store: %w", err)
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
			if _, err := s.txExec(ctx, tx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, v, s.now().UnixMilli()); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO schema_writers (version, agentrun_version) VALUES (?, ?)`, v, store.BinaryVersion)
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate to version %d: %w", v, err)
		}
	}
	return nil
}

// SchemaVersion reads the highest applied migration and the agentrun that applied it.
func (s *Store) SchemaVersion(ctx context.Context) (store.Schema, error) {
	sc, err := s.schemaVersion(ctx, s.r)
	if err != nil {
		return sc, fmt.Errorf("sqlite schema version: %w", err)
	}
	return sc, nil
}

func (s *Store) schemaVersion(ctx context.Context, db *sql.DB) (store.Schema, error) {
	sc := store.Schema{Known: len(migrations)}
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&sc.Version); err != nil {
		return sc, err
	}
	var by sql.NullString
	// The table is missing on a store no process of this release opened yet: no writer named.
	err := db.QueryRowContext(ctx, `SELECT agentrun_version FROM schema_writers WHERE version = ?`, sc.Version).Scan(&by)
	if err != nil && !errors.Is(err, sql.ErrNoRows) && !strings.Contains(err.Error(), "no such table") {
		return sc, err
	}
	sc.WrittenBy = by.String
	return sc, nil
}
