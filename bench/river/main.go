// Command river is the River job-queue burn-down that agentrun's bench compares itself with: N
// no-op jobs inserted with no client working, then K River clients started (each with its own pgx
// pool, as K processes would have), timed until every job has completed. It is its own Go module
// so that River is a dependency of the benchmark only, never of the agentrun server.
//
// Usage (normally run by `go run ./bench -scenario river` from the repository root):
//
//	cd bench/river && go run . -url postgres://postgres@127.0.0.1:5432/agentrun_test?sslmode=disable
//
// It prints progress on stderr and one JSON array of results on stdout.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// NoopArgs is the job: it does nothing.
type NoopArgs struct {
	N int `json:"n"`
}

func (NoopArgs) Kind() string { return "bench_noop" }

type noopWorker struct {
	river.WorkerDefaults[NoopArgs]
}

func (noopWorker) Work(ctx context.Context, j *river.Job[NoopArgs]) error { return nil }

// profile is a River client configuration.
type profile struct {
	Name              string
	MaxWorkers        int
	FetchCooldown     time.Duration
	FetchPollInterval time.Duration
}

var profiles = map[string]profile{
	// River's defaults (FetchCooldown 100 ms, FetchPollInterval 1 s) with 100 workers per client,
	// the figure River's documentation uses in its examples.
	"default": {Name: "default", MaxWorkers: 100, FetchCooldown: 100 * time.Millisecond, FetchPollInterval: time.Second},
	// The settings of River's own benchmark (cmd/river/riverbench): tuned for job throughput.
	"riverbench": {Name: "riverbench", MaxWorkers: 2000, FetchCooldown: 2 * time.Millisecond, FetchPollInterval: 20 * time.Millisecond},
}

// Result is one burn-down.
type Result struct {
	Profile             string  `json:"profile"`
	Clients             int     `json:"clients"`
	MaxWorkersPerClient int     `json:"maxWorkersPerClient"`
	FetchCooldownMs     float64 `json:"fetchCooldownMs"`
	FetchPollIntervalMs float64 `json:"fetchPollIntervalMs"`
	Jobs                int     `json:"jobs"`
	// InsertMs: InsertManyFast of every job (COPY, in batches of 5,000), before any client works.
	InsertMs     float64 `json:"insertMs"`
	InsertPerSec float64 `json:"insertPerSec"`
	// Completed: completion events received from the clients' subscriptions (each is sent after
	// the job's completion was written to the database by River's batching completer).
	Completed int `json:"completed"`
	// WallMs: clients started → the last completion event. JobsPerSec = Jobs / WallMs.
	WallMs     float64 `json:"wallMs"`
	JobsPerSec float64 `json:"jobsPerSec"`
	// FirstToLastMs: the first completion event → the last (client start-up excluded).
	FirstToLastMs float64 `json:"firstToLastMs"`
	// DBCompleted: river_job rows in state completed once the clients have stopped.
	DBCompleted   int64   `json:"dbCompleted"`
	PostgresCPUMs float64 `json:"postgresCpuMs,omitempty"`
	SelfCPUMs     float64 `json:"selfCpuMs,omitempty"`
	// Deltas of pg_stat_database (this database) and pg_stat_wal over the burn-down (approximate:
	// statistics arrive up to a second late).
	Commits  int64 `json:"commits"`
	WALSyncs int64 `json:"walSyncs"`
	WALBytes int64 `json:"walBytes"`
}

type pgCounters struct{ commits, walSyncs, walBytes int64 }

func readCounters(ctx context.Context, conn *pgx.Conn) pgCounters {
	var c pgCounters
	conn.Exec(ctx, "SELECT pg_stat_force_next_flush()")
	conn.Exec(ctx, "SELECT pg_stat_clear_snapshot()")
	conn.QueryRow(ctx, "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()").Scan(&c.commits)
	conn.QueryRow(ctx, "SELECT wal_sync, wal_bytes::bigint FROM pg_stat_wal").Scan(&c.walSyncs, &c.walBytes)
	return c
}

func main() {
	var (
		url      = flag.String("url", envOr("AGENTRUN_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/agentrun_test?sslmode=disable"), "PostgreSQL URL")
		jobs     = flag.Int("jobs", 2000, "no-op jobs per burn-down")
		clients  = flag.String("clients", "1,2,4", "River clients (comma-separated counts)")
		profs    = flag.String("profiles", "default,riverbench", "client configurations: default, riverbench")
		keep     = flag.Bool("keep", false, "keep the schemas")
		deadline = flag.Duration("timeout", 2*time.Minute, "give up on one burn-down after this long")
	)
	flag.Parse()
	var ks []int
	for _, s := range strings.Split(*clients, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || k < 1 {
			fatalf("-clients %q: comma-separated positive counts", *clients)
		}
		ks = append(ks, k)
	}
	var out []Result
	for _, pn := range strings.Split(*profs, ",") {
		p, ok := profiles[strings.TrimSpace(pn)]
		if !ok {
			fatalf("-profiles: unknown profile %q (default, riverbench)", pn)
		}
		for _, k := range ks {
			r, err := burnDown(*url, p, k, *jobs, *keep, *deadline)
			if err != nil {
				fatalf("%s, %d clients: %v", p.Name, k, err)
			}
			fmt.Fprintf(os.Stderr, "river: %s, %d client(s) × %d workers: %d jobs in %.0f ms = %.0f jobs/s\n", p.Name, k, p.MaxWorkers, r.Jobs, r.WallMs, r.JobsPerSec)
			out = append(out, *r)
		}
	}
	b, _ := json.Marshal(map[string]any{"riverVersion": riverVersion(), "results": out})
	fmt.Println(string(b))
}

func burnDown(url string, p profile, k, n int, keep bool, timeout time.Duration) (*Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	schema := fmt.Sprintf("bench_river_%d_%d", time.Now().Unix()%1e6, rand.IntN(1e6))
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, err
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return nil, err
	}
	if !keep {
		defer admin.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	}
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	insPool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, err
	}
	defer insPool.Close()
	mig, err := rivermigrate.New(riverpgxv5.New(insPool), &rivermigrate.Config{Schema: schema, Logger: quiet})
	if err != nil {
		return nil, err
	}
	if _, err := mig.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, noopWorker{})
	inserter, err := river.NewClient(riverpgxv5.New(insPool), &river.Config{Schema: schema, Logger: quiet, Workers: workers})
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	for done := 0; done < n; {
		batch := min(5000, n-done)
		params := make([]river.InsertManyParams, batch)
		for i := range params {
			params[i] = river.InsertManyParams{Args: NoopArgs{N: done + i}}
		}
		if _, err := inserter.InsertManyFast(ctx, params); err != nil {
			return nil, fmt.Errorf("insert: %w", err)
		}
		done += batch
	}
	insert := time.Since(t0)
	res := &Result{Profile: p.Name, Clients: k, MaxWorkersPerClient: p.MaxWorkers, FetchCooldownMs: ms(p.FetchCooldown),
		FetchPollIntervalMs: ms(p.FetchPollInterval), Jobs: n, InsertMs: ms(insert), InsertPerSec: round1(float64(n) / insert.Seconds())}

	type worker struct {
		pool   *pgxpool.Pool
		client *river.Client[pgx.Tx]
		events <-chan *river.Event
		cancel func()
	}
	ws := make([]worker, k)
	for i := range ws {
		pool, err := pgxpool.New(ctx, url)
		if err != nil {
			return nil, err
		}
		defer pool.Close()
		cl, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
			Schema: schema, Logger: quiet, Workers: workers,
			FetchCooldown: p.FetchCooldown, FetchPollInterval: p.FetchPollInterval,
			Queues: map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: p.MaxWorkers}},
		})
		if err != nil {
			return nil, err
		}
		ch, unsub := cl.SubscribeConfig(&river.SubscribeConfig{ChanSize: n + 1000,
			Kinds: []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled}})
		ws[i] = worker{pool: pool, client: cl, events: ch, cancel: unsub}
	}
	var mu sync.Mutex
	var first, last time.Time
	completed := 0
	other := 0
	allDone := make(chan struct{})
	for _, w := range ws {
		go func() {
			for ev := range w.events {
				now := time.Now()
				mu.Lock()
				if ev.Kind == river.EventKindJobCompleted {
					completed++
				} else {
					other++
				}
				if first.IsZero() {
					first = now
				}
				last = now
				if completed+other == n {
					close(allDone)
				}
				mu.Unlock()
			}
		}()
	}
	c0 := readCounters(ctx, admin)
	pg0, self0 := postgresCPU(), selfCPU()
	start := time.Now()
	for _, w := range ws {
		if err := w.client.Start(ctx); err != nil {
			return nil, fmt.Errorf("start client: %w", err)
		}
	}
	select {
	case <-allDone:
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		return nil, fmt.Errorf("%d of %d jobs completed after %s", completed, n, timeout)
	}
	res.PostgresCPUMs = ms(postgresCPU() - pg0)
	res.SelfCPUMs = ms(selfCPU() - self0)
	for _, w := range ws {
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		w.client.Stop(sctx)
		scancel()
		w.cancel()
	}
	time.Sleep(1100 * time.Millisecond) // let every backend's statistics arrive
	c1 := readCounters(context.Background(), admin)
	res.Commits, res.WALSyncs, res.WALBytes = c1.commits-c0.commits, c1.walSyncs-c0.walSyncs, c1.walBytes-c0.walBytes
	mu.Lock()
	res.Completed = completed
	res.WallMs = ms(last.Sub(start))
	res.JobsPerSec = round1(float64(completed) / last.Sub(start).Seconds())
	res.FirstToLastMs = ms(last.Sub(first))
	mu.Unlock()
	if err := admin.QueryRow(context.Background(), "SELECT count(*) FROM "+schema+".river_job WHERE state = 'completed'").Scan(&res.DBCompleted); err != nil {
		return nil, err
	}
	if other > 0 || res.DBCompleted != int64(n) {
		return res, fmt.Errorf("%d jobs failed or were cancelled; %d of %d completed in the database", other, res.DBCompleted, n)
	}
	return res, nil
}

func riverVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/riverqueue/river" {
				return d.Version
			}
		}
	}
	return "unknown"
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "river: "+format+"\n", args...)
	os.Exit(1)
}
