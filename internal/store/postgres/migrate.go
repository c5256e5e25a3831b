package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"agentrun.dev/agentrun/internal/store"
)

// migrations are applied in order; migration i+1 is recorded as version i+1 in
// schema_migrations. Never edit one that has shipped: add a new one.
//
// Names, keys and paths use the "C" collation so that ordering is by bytes, as in SQLite, and
// does not depend on the database's locale. JSON documents are stored as json (not jsonb), which
// keeps them byte for byte and accepts \u0000.
var migrations = []string{
	// 1: the durable core.
	`CREATE TABLE agents (
		name text COLLATE "C" PRIMARY KEY,
		uid text NOT NULL,
		resource_version bigint NOT NULL,
		generation bigint NOT NULL,
		revision bigint NOT NULL,
		created_at timestamptz NOT NULL,
		labels json NOT NULL,
		spec json NOT NULL);
	CREATE TABLE agent_revisions (
		agent text COLLATE "C" NOT NULL,
		revision bigint NOT NULL,
		spec json NOT NULL,
		created_at timestamptz NOT NULL,
		PRIMARY KEY (agent, revision));
	CREATE TABLE runs (
		name text COLLATE "C" PRIMARY KEY,
		uid text NOT NULL,
		agent text COLLATE "C" NOT NULL,
		resource_version bigint NOT NULL,
		created_at timestamptz NOT NULL,
		labels json NOT NULL,
		spec json NOT NULL,
		status json NOT NULL,
		phase text NOT NULL,
		lease_owner text,
		lease_expires_at timestamptz,
		lease_generation bigint NOT NULL DEFAULT 0,
		claimable_at timestamptz,
		poke_seq bigint NOT NULL DEFAULT 0,
		cancel_requested boolean NOT NULL DEFAULT false,
		next_step bigint NOT NULL DEFAULT 0,
		next_event bigint NOT NULL DEFAULT 0,
		next_message bigint NOT NULL DEFAULT 0);
	CREATE INDEX runs_claimable ON runs (claimable_at) WHERE lease_owner IS NULL AND claimable_at IS NOT NULL;
	CREATE INDEX runs_leased ON runs (lease_expires_at) WHERE lease_owner IS NOT NULL;
	CREATE INDEX runs_lease_owner ON runs (lease_owner) WHERE lease_owner IS NOT NULL;
	CREATE INDEX runs_agent ON runs (agent, created_at);
	CREATE INDEX runs_phase ON runs (phase, created_at);
	CREATE INDEX runs_created ON runs (created_at, name);
	CREATE TABLE steps (
		run text COLLATE "C" NOT NULL,
		seq bigint NOT NULL,
		key text COLLATE "C" NOT NULL,
		kind text NOT NULL,
		state text NOT NULL,
		title text NOT NULL,
		attempt integer NOT NULL,
		args_hash text NOT NULL,
		args json,
		result json,
		error text NOT NULL,
		cost_micros bigint,
		started_at timestamptz NOT NULL,
		completed_at timestamptz,
		resolution text NOT NULL DEFAULT '',
		resolution_result json,
		PRIMARY KEY (run, seq),
		UNIQUE (run, key));
	CREATE TABLE run_events (
		run text COLLATE "C" NOT NULL,
		seq bigint NOT NULL,
		time timestamptz NOT NULL,
		type text NOT NULL,
		step_key text NOT NULL,
		message text NOT NULL,
		data json,
		PRIMARY KEY (run, seq));
	CREATE TABLE messages (
		run text COLLATE "C" NOT NULL,
		seq bigint NOT NULL,
		key text COLLATE "C" NOT NULL,
		payload bytea NOT NULL,
		time timestamptz NOT NULL,
		PRIMARY KEY (run, seq));
	CREATE UNIQUE INDEX messages_key ON messages (run, key) WHERE key <> '';`,

	// 2: run folder snapshots (docs/architecture.md, "Run folders") and runner registrations.
	`CREATE TABLE files (
		run text COLLATE "C" NOT NULL,
		path text COLLATE "C" NOT NULL,
		content bytea NOT NULL,
		mode bigint NOT NULL,
		size bigint NOT NULL,
		updated_at timestamptz NOT NULL,
		PRIMARY KEY (run, path));
	CREATE TABLE runners (
		name text COLLATE "C" PRIMARY KEY,
		version text NOT NULL,
		host text NOT NULL,
		pid bigint NOT NULL,
		started_at timestamptz NOT NULL,
		heartbeat_at timestamptz NOT NULL,
		runs_held bigint NOT NULL);`,

	// 3: the credits ledger (with running totals in a single account row, locked by every
	// reservation so that concurrent runs can never reserve the same money), credit reservations
	// and sealed secrets.
	`CREATE TABLE credits_account (
		id integer PRIMARY KEY CHECK (id = 1),
		adds bigint NOT NULL,
		added bigint NOT NULL,
		charged bigint NOT NULL,
		unknown_charges bigint NOT NULL);
	INSERT INTO credits_account (id, adds, added, charged, unknown_charges) VALUES (1, 0, 0, 0, 0);
	CREATE TABLE credits_ledger (
		seq bigserial PRIMARY KEY,
		time timestamptz NOT NULL,
		kind text NOT NULL,
		amount bigint,
		run text COLLATE "C" NOT NULL,
		run_uid text NOT NULL,
		step_key text COLLATE "C" NOT NULL,
		note text NOT NULL);
	CREATE UNIQUE INDEX credits_ledger_charge ON credits_ledger (run_uid, step_key) WHERE kind = 'charge';
	CREATE TABLE credit_reservations (
		run text COLLATE "C" NOT NULL,
		step_key text COLLATE "C" NOT NULL,
		attempt integer NOT NULL,
		amount bigint NOT NULL,
		time timestamptz NOT NULL,
		PRIMARY KEY (run, step_key));
	CREATE TABLE secrets (
		name text COLLATE "C" PRIMARY KEY,
		sealed bytea NOT NULL,
		keys json NOT NULL,
		updated_at timestamptz NOT NULL);`,

	// 4: AgentGroups: members (not claimable until admitted), groups, batch idempotency keys.
	`ALTER TABLE runs ADD COLUMN group_name text COLLATE "C" NOT NULL DEFAULT '',
		ADD COLUMN task_key text COLLATE "C" NOT NULL DEFAULT '',
		ADD COLUMN group_seq bigint NOT NULL DEFAULT 0,
		ADD COLUMN admitted boolean NOT NULL DEFAULT true,
		ADD COLUMN cap_micros bigint NOT NULL DEFAULT 0,
		ADD COLUMN depends_on json NOT NULL DEFAULT '[]',
		ADD COLUMN group_wait text NOT NULL DEFAULT '';
	CREATE INDEX runs_group ON runs (group_name, group_seq) WHERE group_name <> '';
	CREATE INDEX runs_unadmitted ON runs (group_name) WHERE NOT admitted;
	CREATE TABLE groups (
		name text COLLATE "C" PRIMARY KEY,
		uid text NOT NULL,
		resource_version bigint NOT NULL,
		generation bigint NOT NULL,
		created_at timestamptz NOT NULL,
		labels json NOT NULL,
		spec json NOT NULL,
		status json NOT NULL);
	CREATE TABLE idempotency_keys (
		key text COLLATE "C" PRIMARY KEY,
		hash text NOT NULL,
		result json NOT NULL,
		created_at timestamptz NOT NULL DEFAULT now());`,

	// 5: evaluation environments, immutable per name and version.
	`CREATE TABLE environments (
		name text COLLATE "C" NOT NULL,
		version text COLLATE "C" NOT NULL,
		uid text NOT NULL,
		labels json NOT NULL,
		spec json NOT NULL,
		created_at timestamptz NOT NULL,
		PRIMARY KEY (name, version));`,

	// 6: agentrun_raise(code, message) raises an error with that SQLSTATE, so that a check inside
	// a pipelined commit (the lease fence, a step that must exist) aborts its transaction.
	`CREATE FUNCTION agentrun_raise(code text, msg text) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
	BEGIN
		RAISE EXCEPTION USING ERRCODE = code, MESSAGE = msg;
	END $$;`,
	// 7: Triggers and their fires, one row per trigger and key (a schedule slot, a delivery id).
	`CREATE TABLE triggers (
		name text COLLATE "C" PRIMARY KEY,
		uid text NOT NULL,
		resource_version bigint NOT NULL,
		generation bigint NOT NULL,
		created_at timestamptz NOT NULL,
		labels json NOT NULL,
		spec json NOT NULL);
	CREATE TABLE trigger_fires (
		trigger_name text COLLATE "C" NOT NULL,
		fire_key text COLLATE "C" NOT NULL,
		seq bigint NOT NULL,
		time timestamptz NOT NULL,
		source text NOT NULL,
		delivery_id text NOT NULL,
		scheduled_at timestamptz,
		run text COLLATE "C" NOT NULL,
		outcome text NOT NULL,
		message text NOT NULL,
		PRIMARY KEY (trigger_name, fire_key));
	CREATE INDEX trigger_fires_seq ON trigger_fires (trigger_name, seq);`,
	// 8: skills, numbered versions per name, each immutable; paths lists the files without their
	// contents (for listing), files holds them.
	`CREATE TABLE skills (
		name text COLLATE "C" NOT NULL,
		version integer NOT NULL,
		uid text NOT NULL,
		labels json NOT NULL,
		description text NOT NULL,
		digest text NOT NULL,
		paths json NOT NULL,
		files text NOT NULL,
		created_at timestamptz NOT NULL,
		PRIMARY KEY (name, version));`,
	// 9: learning agents' git repositories: objects by hash, and the commit main names.
	`CREATE TABLE learning_objects (
		agent text COLLATE "C" NOT NULL,
		hash text NOT NULL,
		type integer NOT NULL,
		data bytea NOT NULL,
		PRIMARY KEY (agent, hash));
	CREATE TABLE learning_refs (agent text COLLATE "C" PRIMARY KEY, main text NOT NULL);`,

	// 10: a run's next step number is runs.next_step, advanced by the commit that starts a step
	// (in its fence statement, with no statement of its own); it was the run's highest step seq,
	// read by a statement per step started. Runs and steps are updated in place many times (a
	// run's row by each of its commits, a step's row when it ends): pages left 30% free let most
	// of those updates stay on their page and touch no index (HOT updates).
	`UPDATE runs SET next_step = COALESCE((SELECT max(seq) FROM steps WHERE steps.run = runs.name), 0);
	ALTER TABLE runs SET (fillfactor = 70);
	ALTER TABLE steps SET (fillfactor = 70);`,
	// 11: outbound webhooks, what each subscribes to (an event and an agent, '' for all), and the
	// outbox: a delivery per webhook and event key, written with the event, and its attempts.
	`CREATE TABLE webhooks (
		name text COLLATE "C" PRIMARY KEY,
		uid text NOT NULL,
		resource_version bigint NOT NULL,
		generation bigint NOT NULL,
		created_at timestamptz NOT NULL,
		labels json NOT NULL,
		spec json NOT NULL);
	CREATE TABLE webhook_subs (
		webhook text COLLATE "C" NOT NULL,
		event text COLLATE "C" NOT NULL,
		agent text COLLATE "C" NOT NULL,
		PRIMARY KEY (event, agent, webhook));
	CREATE TABLE webhook_deliveries (
		seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		id text NOT NULL,
		webhook text COLLATE "C" NOT NULL,
		event_key text COLLATE "C" NOT NULL,
		type text NOT NULL,
		run text COLLATE "C" NOT NULL,
		agent text COLLATE "C" NOT NULL,
		trigger_name text COLLATE "C" NOT NULL,
		event_time timestamptz NOT NULL,
		data text NOT NULL,
		state text NOT NULL,
		attempts integer NOT NULL DEFAULT 0,
		next_at timestamptz,
		lease_owner text,
		lease_until timestamptz,
		created_at timestamptz NOT NULL,
		done_at timestamptz,
		UNIQUE (webhook, event_key));
	CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at) WHERE state = 'Pending';
	CREATE INDEX webhook_deliveries_done ON webhook_deliveries (done_at) WHERE state <> 'Pending';
	CREATE INDEX webhook_deliveries_hook ON webhook_deliveries (webhook, seq);
	CREATE TABLE webhook_attempts (
		delivery bigint NOT NULL,
		attempt integer NOT NULL,
		time timestamptz NOT NULL,
		status_code integer NOT NULL,
		error text NOT NULL,
		duration_ms bigint NOT NULL,
		delivered boolean NOT NULL,
		PRIMARY KEY (delivery, attempt));`,

	// 12: a message's ifBusy mode, stored when it reached a busy run ('' otherwise).
	`ALTER TABLE messages ADD COLUMN if_busy text NOT NULL DEFAULT '';`,
	// 13: forks: a step copied from another run, and the run folder's history (every save, tagged
	// with a step seq), so a fork finds the folder as of any step. A run's folder as saved before
	// this migration is its history's first version, at its last step.
	`ALTER TABLE steps ADD COLUMN copied_from text NOT NULL DEFAULT '';
	CREATE TABLE file_history (
		version bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		run text COLLATE "C" NOT NULL,
		tag bigint NOT NULL,
		path text COLLATE "C" NOT NULL,
		content bytea,
		mode bigint NOT NULL,
		deleted boolean NOT NULL);
	CREATE INDEX file_history_run ON file_history (run, version);
	INSERT INTO file_history (run, tag, path, content, mode, deleted)
		SELECT f.run, r.next_step, f.path, f.content, f.mode, false FROM files f JOIN runs r ON r.name = f.run ORDER BY f.run, f.path;`,
}

// migrateLockClass is the first key of the advisory lock that serializes migrations; the second
// is a hash of the schema, so stores in different schemas do not wait on each other.
const migrateLockClass = 0x61676e74 // "agnt"

// migrate applies the missing migrations in one transaction, holding a transaction-scoped
// advisory lock, so that when many processes start at once each migration is applied once and
// every process sees them all applied when Open returns.
func (s *Store) migrate(ctx context.Context) error {
	err := s.tx(ctx, func(tx pgx.Tx) error {
		var schema *string
		if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
			return err
		}
		if schema == nil {
			return fmt.Errorf("no schema to create tables in: the search_path names no existing schema")
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, hashtext($2))`, int32(migrateLockClass), *schema); err != nil {
			return fmt.Errorf("lock schema %s: %w", *schema, err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		// schema_writers names the agentrun that applied each migration, outside the numbered
		// migrations so that any version can read it (an older process says which one it needs).
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_writers (
			version integer PRIMARY KEY, agentrun_version text NOT NULL)`); err != nil {
			return err
		}
		sc, err := schemaVersion(ctx, tx)
		if err != nil {
			return err
		}
		if err := sc.Check(); err != nil {
			return err
		}
		current := sc.Version
		for i := current; i < len(migrations); i++ {
			v := i + 1
			if _, err := tx.Exec(ctx, migrations[i]); err != nil {
				return fmt.Errorf("version %d: %w", v, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, v); err != nil {
				return fmt.Errorf("version %d: %w", v, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_writers (version, agentrun_version) VALUES ($1, $2)
				ON CONFLICT (version) DO UPDATE SET agentrun_version = EXCLUDED.agentrun_version`, v, store.BinaryVersion); err != nil {
				return fmt.Errorf("version %d: %w", v, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrate postgres schema: %w", err)
	}
	return nil
}

// SchemaVersion reads the highest applied migration and the agentrun that applied it.
func (s *Store) SchemaVersion(ctx context.Context) (store.Schema, error) {
	sc, err := schemaVersion(ctx, s.pool)
	if err != nil {
		return sc, fmt.Errorf("postgres schema version: %w", readErr(ctx, err))
	}
	return sc, nil
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func schemaVersion(ctx context.Context, q querier) (store.Schema, error) {
	sc := store.Schema{Known: len(migrations)}
	if err := q.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&sc.Version); err != nil {
		return sc, err
	}
	var by *string
	err := q.QueryRow(ctx, `SELECT agentrun_version FROM schema_writers WHERE version = $1`, sc.Version).Scan(&by)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return sc, err
	}
	if by != nil {
		sc.WrittenBy = *by
	}
	return sc, nil
}
