package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/store/postgres"
	"agentrun.dev/agentrun/internal/store/sqlite"
)

// ClaimResult is one claim-throughput measurement: Runs queued runs drained by Claimers
// goroutines calling store.ClaimRuns(owner, Batch, ttl) on one Store until none is left.
type ClaimResult struct {
	Backend  string `json:"backend"`
	Claimers int    `json:"claimers"`
	Runs     int    `json:"runs"`
	Batch    int    `json:"batch"`
	// InsertPerSec: CreateRun calls per second while queueing the runs (8 goroutines).
	InsertPerSec float64 `json:"insertPerSec"`
	Claimed      int     `json:"claimed"`
	Calls        int     `json:"calls"`
	// EmptyCalls returned no run while runs were left (locked by another claimer: SKIP LOCKED).
	EmptyCalls   int     `json:"emptyCalls"`
	WallMs       float64 `json:"wallMs"`
	ClaimsPerSec float64 `json:"claimsPerSec"`
	// Call is one ClaimRuns call; FirstTenth/LastTenth are the mean call time over the first and
	// last tenth of the calls (a claim that costs more with a longer queue shows here).
	Call       Dist    `json:"call"`
	FirstTenth float64 `json:"callMeanFirstTenthMs"`
	LastTenth  float64 `json:"callMeanLastTenthMs"`
	// Plan is EXPLAIN (ANALYZE, BUFFERS) of the claim statement on the full queue (PostgreSQL),
	// inside a rolled-back transaction.
	Plan []string `json:"plan,omitempty"`
	// PlanDrained is the same once every run is leased: nothing is claimable, so what it costs is
	// the price of a claim that finds nothing (an idle runner's poll) on a table of this size.
	PlanDrained []string `json:"planDrained,omitempty"`
	// CPU over the drain, in CPU-milliseconds: this process (the store client) and PostgreSQL.
	SelfCPUMs     float64 `json:"selfCpuMs"`
	PostgresCPUMs float64 `json:"postgresCpuMs,omitempty"`
}

func runClaim(c config, root string) ([]ClaimResult, error) {
	var out []ClaimResult
	for _, k := range c.claimers {
		r, err := claimPG(c, k)
		if r != nil {
			out = append(out, *r)
		}
		if err != nil {
			return out, fmt.Errorf("postgres, %d claimers: %w", k, err)
		}
	}
	r, err := claimSQLite(c, root)
	if r != nil {
		out = append(out, *r)
	}
	if err != nil {
		return out, fmt.Errorf("sqlite: %w", err)
	}
	return out, nil
}

func claimPG(c config, claimers int) (*ClaimResult, error) {
	sch, err := newSchema(c.pg, "bench_claim")
	if err != nil {
		return nil, err
	}
	defer sch.drop(c.keep)
	ctx := context.Background()
	// One Store (one pgx pool) for every claimer, with a connection each.
	u := sch.url + fmt.Sprintf("&pool_max_conns=%d", max(claimers, 8))
	st, err := postgres.Open(ctx, u)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	res := &ClaimResult{Backend: "postgres", Claimers: claimers, Runs: c.claimRuns, Batch: c.claimBatch}
	progress("claim: postgres, queueing %d runs (schema %s)", c.claimRuns, sch.name)
	if res.InsertPerSec, err = queueRuns(ctx, st, c.claimRuns); err != nil {
		return nil, err
	}
	// Fresh statistics, as autovacuum would have them on a table that has been this size a while.
	sch.query(func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, "ANALYZE runs")
		return err
	})
	res.Plan = explainClaim(sch, c.claimBatch)
	progress("claim: postgres, %d claimer(s), batch %d", claimers, c.claimBatch)
	if err := drain(ctx, st, res, claimers); err != nil {
		return res, err
	}
	res.PlanDrained = explainClaim(sch, c.claimBatch)
	return res, nil
}

func claimSQLite(c config, root string) (*ClaimResult, error) {
	dir := filepath.Join(root, "claim-sqlite")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	defer func() {
		if !c.keep {
			os.RemoveAll(dir)
		}
	}()
	st, err := sqlite.Open(filepath.Join(dir, "agentrun.db"))
	if err != nil {
		return nil, err
	}
	defer st.Close()
	ctx := context.Background()
	res := &ClaimResult{Backend: "sqlite", Claimers: 1, Runs: c.claimRuns, Batch: c.claimBatch}
	progress("claim: sqlite, queueing %d runs in %s (%s)", c.claimRuns, dir, fsType(dir))
	if res.InsertPerSec, err = queueRuns(ctx, st, c.claimRuns); err != nil {
		return nil, err
	}
	progress("claim: sqlite, 1 claimer, batch %d", c.claimBatch)
	return res, drain(ctx, st, res, 1)
}

// queueRuns creates n claimable runs through the Store API, 8 at a time, and returns creates/s.
func queueRuns(ctx context.Context, st store.Store, n int) (float64, error) {
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	t0 := time.Now()
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				r := &api.AgentRun{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "AgentRun"}}
				r.Metadata.Name = fmt.Sprintf("claim-%06d", i)
				r.Spec.Agent = "bench"
				r.Status.Phase = api.PhaseQueued
				if err := st.CreateRun(ctx, r); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	return round1(float64(n) / time.Since(t0).Seconds()), nil
}

// drain runs k claimers against st until every queued run is claimed, and checks that each run
// was claimed exactly once.
func drain(ctx context.Context, st store.Store, res *ClaimResult, k int) error {
	var mu sync.Mutex
	seen := make(map[string]string, res.Runs)
	var calls []time.Duration
	var claimed atomic.Int64
	var empty atomic.Int64
	var firstErr error
	var wg sync.WaitGroup
	pg0, self0 := postgresCPU(), selfCPU()
	t0 := time.Now()
	deadline := t0.Add(2 * time.Minute)
	for g := 0; g < k; g++ {
		owner := fmt.Sprintf("claimer-%d", g)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			defer func() { mu.Lock(); calls = append(calls, mine...); mu.Unlock() }()
			for claimed.Load() < int64(res.Runs) && time.Now().Before(deadline) {
				s := time.Now()
				ls, err := st.ClaimRuns(ctx, owner, res.Batch, time.Hour)
				mine = append(mine, time.Since(s))
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				if len(ls) == 0 {
					empty.Add(1)
					continue
				}
				claimed.Add(int64(len(ls)))
				mu.Lock()
				for _, l := range ls {
					if prev, dup := seen[l.Run]; dup && firstErr == nil {
						firstErr = fmt.Errorf("run %s claimed twice (by %s, then %s)", l.Run, prev, owner)
					}
					seen[l.Run] = owner
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	wall := time.Since(t0)
	res.SelfCPUMs = msf(selfCPU() - self0)
	if st.Backend() == "postgres" {
		res.PostgresCPUMs = msf(postgresCPU() - pg0)
	}
	res.Claimed, res.Calls, res.EmptyCalls = len(seen), len(calls), int(empty.Load())
	res.WallMs = msf(wall)
	res.ClaimsPerSec = round1(float64(len(seen)) / wall.Seconds())
	res.Call = dist(calls)
	// calls is grouped by claimer; for the first/last tenth the order within each claimer is
	// what matters, and with one claimer it is exact.
	if n := len(calls) / 10; n > 0 && k == 1 {
		res.FirstTenth = dist(calls[:n]).Mean
		res.LastTenth = dist(calls[len(calls)-n:]).Mean
	}
	if firstErr != nil {
		return firstErr
	}
	if len(seen) != res.Runs {
		return fmt.Errorf("claimed %d of %d runs", len(seen), res.Runs)
	}
	return nil
}

func explainClaim(sch *pgSchema, batch int) []string {
	var plan []string
	sch.query(func(ctx context.Context, conn *pgx.Conn) error {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) "+postgres.ClaimSQL, "explain", int64(time.Hour/time.Microsecond), batch)
		if err != nil {
			plan = []string{"EXPLAIN failed: " + err.Error()}
			return err
		}
		for rows.Next() {
			var line string
			rows.Scan(&line)
			plan = append(plan, line)
		}
		return rows.Err()
	})
	return plan
}

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }

func printClaim(rs []ClaimResult) {
	fmt.Println()
	fmt.Println("== claim: store.ClaimRuns throughput (in-process, one Store, queued runs drained) ==")
	fmt.Printf("  %-9s %8s %6s %6s %10s %10s %7s %7s %9s %9s %9s %11s %9s\n", "backend", "claimers", "runs", "batch", "claims/s", "wall ms", "calls", "empty", "call p50", "call p99", "call max", "1st/last10%", "PG cpu ms")
	for _, r := range rs {
		tenth := "-"
		if r.FirstTenth > 0 {
			tenth = fmt.Sprintf("%.1f/%.1f", r.FirstTenth, r.LastTenth)
		}
		fmt.Printf("  %-9s %8d %6d %6d %10.1f %10.1f %7d %7d %9.2f %9.2f %9.2f %11s %9.0f\n", r.Backend, r.Claimers, r.Runs, r.Batch, r.ClaimsPerSec, r.WallMs,
			r.Calls, r.EmptyCalls, r.Call.P50, r.Call.P99, r.Call.Max, tenth, r.PostgresCPUMs)
	}
	for _, r := range rs {
		if r.InsertPerSec > 0 {
			fmt.Printf("  (queueing: %s CreateRun %.0f/s with 8 goroutines)\n", r.Backend, r.InsertPerSec)
		}
	}
	for _, r := range rs {
		if len(r.Plan) > 0 {
			fmt.Printf("  EXPLAIN ANALYZE of one claim of %d on %d queued runs (postgres):\n", r.Batch, r.Runs)
			for _, l := range r.Plan {
				fmt.Printf("    %s\n", l)
			}
			fmt.Printf("  the same once all %d runs are leased (nothing claimable: an idle runner's poll):\n", r.Runs)
			for _, l := range r.PlanDrained {
				if strings.Contains(l, "Scan") || strings.Contains(l, "Execution Time") || strings.Contains(l, "Sort Method") {
					fmt.Printf("    %s\n", strings.TrimSpace(l))
				}
			}
			break
		}
	}
}
