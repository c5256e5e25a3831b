package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// defaultPG is the PostgreSQL the PostgreSQL scenarios use when neither -pg nor
// AGENTRUN_TEST_POSTGRES_URL says otherwise.
const defaultPG = "postgres://postgres@127.0.0.1:5432/agentrun_test?sslmode=disable"

// pgSchema is a fresh schema for one measurement, so that every one starts from empty tables;
// url selects it through the connection's search_path (as e2e/e2etest/cluster.go does).
type pgSchema struct {
	base, name, url string
}

func newSchema(base, prefix string) (*pgSchema, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL (-pg %s): %w", redactPG(base), err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("%s_%d_%d", prefix, time.Now().Unix()%1e6, rand.IntN(1e6))
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		return nil, fmt.Errorf("create schema %s: %w", name, err)
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	q.Set("search_path", name)
	q.Set("application_name", benchApp)
	u.RawQuery = q.Encode()
	return &pgSchema{base: base, name: name, url: u.String()}, nil
}

// drop removes the schema and everything in it (unless -keep).
func (s *pgSchema) drop(keep bool) {
	if s == nil {
		return
	}
	if keep {
		progress("kept PostgreSQL schema %s", s.name)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.base)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	conn.Exec(ctx, "DROP SCHEMA "+s.name+" CASCADE")
}

// query runs fn on a connection to the schema.
func (s *pgSchema) query(fn func(ctx context.Context, conn *pgx.Conn) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return fn(ctx, conn)
}

func redactPG(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}

// PGInfo is the PostgreSQL server the scenarios ran on.
type PGInfo struct {
	URL               string `json:"url"`
	Version           string `json:"version"`
	SynchronousCommit string `json:"synchronousCommit"`
	Fsync             string `json:"fsync"`
	SharedBuffers     string `json:"sharedBuffers"`
	MaxConnections    string `json:"maxConnections"`
	DataDir           string `json:"dataDir,omitempty"`
	DataFS            string `json:"dataFS,omitempty"`
	// Local: a postgres process is visible on this host (its CPU is then counted).
	Local bool `json:"local"`
}

func pgInfo(base string) (*PGInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL (-pg %s): %w", redactPG(base), err)
	}
	defer conn.Close(ctx)
	in := &PGInfo{URL: redactPG(base)}
	conn.QueryRow(ctx, "SHOW server_version").Scan(&in.Version)
	conn.QueryRow(ctx, "SHOW synchronous_commit").Scan(&in.SynchronousCommit)
	conn.QueryRow(ctx, "SHOW fsync").Scan(&in.Fsync)
	conn.QueryRow(ctx, "SHOW shared_buffers").Scan(&in.SharedBuffers)
	conn.QueryRow(ctx, "SHOW max_connections").Scan(&in.MaxConnections)
	if conn.QueryRow(ctx, "SHOW data_directory").Scan(&in.DataDir) == nil && in.DataDir != "" {
		in.DataFS = fsType(in.DataDir)
	}
	in.Local = postgresCPU() > 0
	return in, nil
}

// benchApp is the application_name the bench's agentrun processes connect with (the store keeps
// a name given in the URL), so that the sampler tells their backends from anyone else's.
const benchApp = "agentrun-bench"

// pgSampler samples pg_stat_activity every 10 ms while a measurement runs: what the bench's
// backends are doing (on CPU, waiting for a lock, for a WAL flush, for the client...). With
// pg_stat_database and pg_stat_wal read before and after, it says where PostgreSQL time goes.
type pgSampler struct {
	stop, done chan struct{}
	samples    int
	states     map[string]int
	others     int
	notify     int
	lockQuery  map[string]int
	before     pgCounters
	base       string
}

// PGProfile is what the sampler saw over a measurement.
type PGProfile struct {
	Samples int `json:"samples"`
	// Backends is the mean number of the bench's backends in each state at a sample:
	// "active/CPU" runs a statement, "active/Lock:..." waits for a lock, "active/IO:WALSync"
	// for a WAL flush, "idle in transaction/Client:ClientRead" for the client mid-transaction.
	Backends map[string]float64 `json:"backends"`
	// OtherActive is the mean number of other sessions' active backends (someone else's load).
	OtherActive float64 `json:"otherActive"`
	// NotifyLockWaiters is the mean number of backends waiting for the lock PostgreSQL takes at
	// the commit of any transaction that called NOTIFY (AccessExclusiveLock on object 0 of
	// pg_database, held through the commit's WAL flush), which serializes those commits.
	NotifyLockWaiters float64 `json:"notifyLockWaiters"`
	// LockWaits is the mean number of the bench's backends waiting for a heavyweight lock, by
	// lock and statement (the statement's first 70 characters).
	LockWaits map[string]float64 `json:"lockWaits,omitempty"`
	// Per-measurement deltas of pg_stat_database (this database) and pg_stat_wal (the cluster);
	// statistics reach these views up to a second late, so they are approximate.
	Commits    int64 `json:"commits"`
	WALRecords int64 `json:"walRecords"`
	WALBytes   int64 `json:"walBytes"`
	WALSyncs   int64 `json:"walSyncs"`
	WALWrites  int64 `json:"walWrites"`
}

type pgCounters struct {
	commits, walRecords, walBytes, walSyncs, walWrites int64
}

func readPGCounters(ctx context.Context, conn *pgx.Conn) pgCounters {
	var c pgCounters
	// Statistics are flushed by each backend at most once a second; ask for ours now.
	conn.Exec(ctx, "SELECT pg_stat_force_next_flush()")
	conn.Exec(ctx, "SELECT pg_stat_clear_snapshot()")
	conn.QueryRow(ctx, "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()").Scan(&c.commits)
	conn.QueryRow(ctx, "SELECT wal_records, wal_bytes::bigint, wal_sync, wal_write FROM pg_stat_wal").Scan(&c.walRecords, &c.walBytes, &c.walSyncs, &c.walWrites)
	return c
}

// startPGSampler samples pg_stat_activity every interval. A sample is three queries (1-2 ms of
// a backend each time, on a 2 vCPU machine), counted in PostgreSQL's CPU with the runs': every
// 100 ms they are a small share of it (in a paired run, sampling every 10 ms moved no figure
// beyond the noise).
func startPGSampler(base string, every time.Duration) *pgSampler {
	s := &pgSampler{stop: make(chan struct{}), done: make(chan struct{}), states: map[string]int{}, lockQuery: map[string]int{}, base: base}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		close(s.done)
		return s
	}
	s.before = readPGCounters(ctx, conn)
	go func() {
		defer close(s.done)
		defer conn.Close(ctx)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
			rows, err := conn.Query(ctx, `SELECT application_name LIKE $1, state,
					COALESCE(wait_event_type || ':' || wait_event, 'CPU'), count(*)
				FROM pg_stat_activity
				WHERE backend_type = 'client backend' AND state IS NOT NULL AND state <> 'idle' AND pid <> pg_backend_pid()
				GROUP BY 1, 2, 3`, benchApp+"%")
			if err != nil {
				return
			}
			s.samples++
			for rows.Next() {
				var ours bool
				var state, wait string
				var n int
				if rows.Scan(&ours, &state, &wait, &n) != nil {
					continue
				}
				if !ours {
					if state == "active" {
						s.others += n
					}
					continue
				}
				s.states[state+"/"+wait] += n
			}
			rows.Close()
			var waiters int
			if conn.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'object' AND classid = 'pg_database'::regclass
				AND objid = 0 AND NOT granted`).Scan(&waiters) == nil {
				s.notify += waiters
			}
			// Which statements wait for heavyweight locks.
			rows, err = conn.Query(ctx, `SELECT wait_event || ': ' || left(regexp_replace(query, '\s+', ' ', 'g'), 70), count(*)
				FROM pg_stat_activity WHERE application_name LIKE $1 AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()
				GROUP BY 1`, benchApp+"%")
			if err != nil {
				return
			}
			for rows.Next() {
				var q string
				var n int
				if rows.Scan(&q, &n) == nil {
					s.lockQuery[q] += n
				}
			}
			rows.Close()
		}
	}()
	return s
}

// finish stops the sampler and returns its profile.
func (s *pgSampler) finish() *PGProfile {
	select {
	case <-s.done:
	default:
		close(s.stop)
		<-s.done
	}
	p := &PGProfile{Samples: s.samples, Backends: map[string]float64{}}
	if s.samples == 0 {
		return p
	}
	for k, n := range s.states {
		p.Backends[k] = round3(float64(n) / float64(s.samples))
	}
	p.OtherActive = round3(float64(s.others) / float64(s.samples))
	p.NotifyLockWaiters = round3(float64(s.notify) / float64(s.samples))
	p.LockWaits = map[string]float64{}
	for k, n := range s.lockQuery {
		if v := round3(float64(n) / float64(s.samples)); v >= 0.01 {
			p.LockWaits[k] = v
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if conn, err := pgx.Connect(ctx, s.base); err == nil {
		// Let every backend's pending statistics arrive.
		time.Sleep(1100 * time.Millisecond)
		a := readPGCounters(ctx, conn)
		conn.Close(ctx)
		p.Commits = a.commits - s.before.commits
		p.WALRecords = a.walRecords - s.before.walRecords
		p.WALBytes = a.walBytes - s.before.walBytes
		p.WALSyncs = a.walSyncs - s.before.walSyncs
		p.WALWrites = a.walWrites - s.before.walWrites
	}
	return p
}

// summary is the profile in one line, per unit of work (n runs or jobs).
func (p *PGProfile) summary(n int) string {
	if p == nil || p.Samples == 0 {
		return "(no PostgreSQL samples)"
	}
	type kv struct {
		k string
		v float64
	}
	var kvs []kv
	for k, v := range p.Backends {
		kvs = append(kvs, kv{k, v})
	}
	sort.Slice(kvs, func(i, j int) bool { return kvs[i].v > kvs[j].v })
	var b strings.Builder
	fmt.Fprintf(&b, "per run: %.1f transactions, %.1f WAL records, %.0f WAL bytes, %.2f WAL fsyncs; backends busy on average:",
		float64(p.Commits)/float64(n), float64(p.WALRecords)/float64(n), float64(p.WALBytes)/float64(n), float64(p.WALSyncs)/float64(n))
	for i, x := range kvs {
		if i == 6 || x.v < 0.02 {
			break
		}
		fmt.Fprintf(&b, " %s %.2f", x.k, x.v)
	}
	fmt.Fprintf(&b, "; waiting for the NOTIFY commit lock: %.2f", p.NotifyLockWaiters)
	kvs = kvs[:0]
	for k, v := range p.LockWaits {
		kvs = append(kvs, kv{k, v})
	}
	sort.Slice(kvs, func(i, j int) bool { return kvs[i].v > kvs[j].v })
	for i, x := range kvs {
		if i == 3 || x.v < 0.05 {
			break
		}
		fmt.Fprintf(&b, "\n      lock wait %.2f  %s", x.v, x.k)
	}
	if p.OtherActive >= 0.02 {
		fmt.Fprintf(&b, " (other sessions active: %.2f)", p.OtherActive)
	}
	return b.String()
}

// pgCountersAt reads pg_stat_database and pg_stat_wal on a short-lived connection; with settle,
// after waiting for every backend's pending statistics. Unlike startPGSampler it adds no
// transactions of its own in between (the sampler's queries count as commits).
func pgCountersAt(base string, settle bool) pgCounters {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return pgCounters{}
	}
	defer conn.Close(ctx)
	if settle {
		time.Sleep(1100 * time.Millisecond)
	}
	return readPGCounters(ctx, conn)
}
