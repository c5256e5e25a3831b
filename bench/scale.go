package main

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// ScaleResult is end-to-end throughput of trivial runs (model → write → model → answer) on one
// store with some runners: a backlog burned down, then runs created while the runners are up.
type ScaleResult struct {
	Backend string `json:"backend"`
	// Runners: runner processes beside `serve --no-runner` (postgres), or the one in-process
	// runner of `serve` (sqlite).
	Runners int        `json:"runners"`
	Backlog *Burn      `json:"backlog,omitempty"`
	Live    *E2EResult `json:"live,omitempty"`
}

// Burn is a burn-down: Runs runs created over HTTP with no runner up, then the runners started.
type Burn struct {
	Runs      int `json:"runs"`
	Succeeded int `json:"succeeded"`
	// CreatePerSec: POST /v2/agents/NAME/runs per second while queueing (no runner up).
	CreatePerSec float64 `json:"createPerSec"`
	// WallMs: runner processes started (exec; for sqlite the server restarted with its runner) →
	// the last run's finishedAt. RunsPerSec = Runs / WallMs: what River's burn-down measures.
	WallMs     float64 `json:"wallMs"`
	RunsPerSec float64 `json:"runsPerSec"`
	// ActiveMs: the first run's startedAt → the last run's finishedAt (process start-up excluded).
	ActiveMs         float64 `json:"activeMs"`
	ActiveRunsPerSec float64 `json:"activeRunsPerSec"`
	CPU              CPU     `json:"cpu"`
	TotalCPUPerRunMs float64 `json:"totalCpuPerRunMs"`
	CoresBusy        float64 `json:"coresBusy"`
	// PG is what PostgreSQL did over the burn-down (PostgreSQL worlds).
	PG *PGProfile `json:"postgres,omitempty"`
}

func runScale(c config, root string) ([]ScaleResult, error) {
	var out []ScaleResult
	for _, k := range c.runnerCounts {
		r, err := scalePG(c, root, k)
		if r != nil {
			out = append(out, *r)
		}
		if err != nil {
			return out, fmt.Errorf("postgres, %d runners: %w", k, err)
		}
	}
	r, err := scaleSQLite(c, root)
	if r != nil {
		out = append(out, *r)
	}
	if err != nil {
		return out, fmt.Errorf("sqlite: %w", err)
	}
	return out, nil
}

func scalePG(c config, root string, k int) (*ScaleResult, error) {
	sch, err := newSchema(c.pg, "bench_scale")
	if err != nil {
		return nil, err
	}
	defer sch.drop(c.keep)
	w, err := startWorld(c, root, fmt.Sprintf("scale-pg-%d", k), trivialScript(), c.workers, worldOpts{storeURL: sch.url, noRunner: true})
	if err != nil {
		return nil, err
	}
	defer w.stop()
	res := &ScaleResult{Backend: "postgres", Runners: k}
	var prof chan error
	res.Backlog, err = burnDown(c, w, c.scaleRuns, func() error {
		var addr string
		if c.pprofDir != "" {
			a, err := freeAddr()
			if err != nil {
				return err
			}
			addr = a
			w.runnerEnv = map[string][]string{"r1": {"AGENTRUN_PPROF_ADDR=" + addr}}
		}
		for i := 1; i <= k; i++ {
			if _, err := w.startRunner(fmt.Sprintf("r%d", i)); err != nil {
				return err
			}
		}
		if addr != "" {
			prof = make(chan error, 2)
			go func() {
				prof <- saveProfile(addr, "profile", filepath.Join(c.pprofDir, fmt.Sprintf("scale-pg-%d-r1.cpu.pprof", k)), 10)
			}()
			go func() {
				// An execution trace of the first seconds shows what the runs wait on (pool
				// acquires, the group committer, the network), which a CPU profile does not.
				prof <- saveProfile(addr, "trace", filepath.Join(c.pprofDir, fmt.Sprintf("scale-pg-%d-r1.trace", k)), 2)
			}()
		}
		return nil
	})
	if prof != nil {
		// The live phase waits for the profile, so that it covers the burn-down only.
		for range 2 {
			if perr := <-prof; perr != nil {
				progress("scale: profile of r1: %v", perr)
			}
		}
	}
	if err != nil {
		return res, err
	}
	res.Live, err = measureLive(c, w, "bench-live", c.scaleRuns, c.workers, 3)
	return res, err
}

func scaleSQLite(c config, root string) (*ScaleResult, error) {
	w, err := startWorld(c, root, "scale-sqlite", trivialScript(), c.workers, worldOpts{noRunner: true})
	if err != nil {
		return nil, err
	}
	defer w.stop()
	res := &ScaleResult{Backend: "sqlite", Runners: 1}
	res.Backlog, err = burnDown(c, w, c.scaleRuns, func() error {
		// SQLite has one process: restart the server with its runner.
		w.stopServer()
		w.opts.noRunner = false
		return w.startServer()
	})
	if err != nil {
		return res, err
	}
	res.Live, err = measureLive(c, w, "bench-live", c.scaleRuns, c.workers, 3)
	return res, err
}

// burnDown creates n runs of agent bench-backlog with no runner up, calls start (which starts the
// runners), and times until they have all ended.
func burnDown(c config, w *world, n int, start func() error) (*Burn, error) {
	for _, a := range []string{"bench-backlog", "bench-live"} {
		if err := w.createAgent(a, []string{"write"}); err != nil {
			return nil, err
		}
	}
	progress("scale: %s, queueing %d runs with no runner up", w.name, n)
	_, created, err := createRuns(w, "bench-backlog", n, c.workers, trivialBody("backlog run"))
	if err != nil {
		return nil, err
	}
	b := &Burn{Runs: n, CreatePerSec: round1(float64(n) / created.Seconds())}
	var samp *pgSampler
	if w.opts.storeURL != "" {
		samp = startPGSampler(c.pg, c.pgSample)
	}
	cpu0 := w.cpu()
	pid0 := w.srv.pid
	t0 := time.Now()
	if err := start(); err != nil {
		return nil, err
	}
	if w.srv.pid != pid0 { // a restarted server (sqlite) counts from zero
		cpu0.serverUser, cpu0.serverSys = 0, 0
	}
	progress("scale: %s, burning the backlog down", w.name)
	err = w.waitCounts("scale backlog", c.timeout, func(m map[string]int) (bool, string) {
		return ended(m) >= n, fmt.Sprintf("%d/%d runs ended", ended(m), n)
	})
	if err != nil {
		return nil, err
	}
	observed := time.Since(t0)
	b.CPU = cpuSince(cpu0, w.cpu())
	if samp != nil {
		b.PG = samp.finish()
	}
	b.TotalCPUPerRunMs = round3(b.CPU.total() / float64(n))
	b.CoresBusy = math.Round(b.CPU.total()/msf(observed)*100) / 100
	runs, err := w.listRuns("bench-backlog")
	if err != nil {
		return nil, err
	}
	var first, last time.Time
	var failMsg string
	b.Succeeded, first, last, failMsg = succeededSpan(runs)
	if !last.IsZero() {
		b.WallMs = msf(last.Sub(t0))
		b.RunsPerSec = round1(float64(b.Succeeded) / last.Sub(t0).Seconds())
		b.ActiveMs = msf(last.Sub(first))
		b.ActiveRunsPerSec = round1(float64(b.Succeeded) / last.Sub(first).Seconds())
	}
	if b.Succeeded != n {
		return b, fmt.Errorf("%d of %d backlog runs succeeded; first other: %s", b.Succeeded, n, failMsg)
	}
	return b, nil
}

func printScale(rs []ScaleResult) {
	fmt.Println()
	fmt.Println("== scale: trivial runs (model → write → model → answer, 3 journal steps) by store and runners ==")
	fmt.Println("  backlog: N runs queued with no runner up, then the runners started; runs/s over runner start → last finish")
	fmt.Printf("  %-9s %7s %6s %9s %10s %11s %12s %11s %10s\n", "backend", "runners", "runs", "runs/s", "wall ms", "active r/s", "queue POST/s", "cpu ms/run", "cores busy")
	for _, r := range rs {
		if b := r.Backlog; b != nil {
			fmt.Printf("  %-9s %7d %6d %9.1f %10.0f %11.1f %12.1f %11.2f %10.2f\n", r.Backend, r.Runners, b.Runs, b.RunsPerSec, b.WallMs, b.ActiveRunsPerSec, b.CreatePerSec, b.TotalCPUPerRunMs, b.CoresBusy)
		}
	}
	fmt.Println("  live: N runs created by HTTP clients while the runners are up; runs/s over first POST → last finish; latency created → finished")
	fmt.Printf("  %-9s %7s %6s %9s %8s %9s %9s %9s %11s %10s\n", "backend", "runners", "runs", "runs/s", "POST/s", "p50 ms", "p99 ms", "max ms", "cpu ms/run", "cores busy")
	for _, r := range rs {
		if l := r.Live; l != nil {
			perRun := l.TotalCPUPerRunMs
			if perRun == 0 {
				perRun = round3(l.CPU.total() / float64(l.Runs))
			}
			fmt.Printf("  %-9s %7d %6d %9.1f %8.1f %9.1f %9.1f %9.1f %11.2f %10.2f\n", r.Backend, r.Runners, l.Runs, l.RunsPerSec, l.CreatePerSec, l.Latency.P50, l.Latency.P99, l.Latency.Max, perRun, l.CoresBusy)
		}
	}
	for _, r := range rs {
		if b := r.Backlog; b != nil && b.PG != nil {
			fmt.Printf("  PostgreSQL, backlog, %d runner(s): %s\n", r.Runners, b.PG.summary(b.Runs))
		}
		if l := r.Live; l != nil && l.PG != nil {
			fmt.Printf("  PostgreSQL, live, %d runner(s): %s\n", r.Runners, l.PG.summary(l.Runs))
		}
	}
	for _, r := range rs {
		if b := r.Backlog; b != nil {
			printCPU(fmt.Sprintf("CPU, backlog, %s, %d runner(s)", r.Backend, r.Runners), b.CPU, b.Runs, b.CoresBusy)
		}
		if l := r.Live; l != nil {
			printCPU(fmt.Sprintf("CPU, live, %s, %d runner(s)", r.Backend, r.Runners), l.CPU, l.Runs, l.CoresBusy)
		}
	}
}

// freeAddr returns a loopback address with a port free at the time of the call.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// saveProfile fetches a CPU profile ("profile") or an execution trace ("trace") of secs seconds,
// or a snapshot ("heap", "goroutine": secs 0), from the pprof server at addr and writes it to path.
func saveProfile(addr, kind, path string, secs int) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	u := kind
	if secs > 0 {
		u += fmt.Sprintf("?seconds=%d", secs)
	}
	b, err := pprofGet(addr, u, time.Duration(secs+30)*time.Second)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return err
	}
	progress("scale: %s of r1 saved to %s", kind, path)
	return nil
}

// pprofGet is GET /debug/pprof/PATH at addr, retried until the server answers (for up to 10 s:
// a process just started may not listen yet); timeout bounds each request.
func pprofGet(addr, path string, timeout time.Duration) ([]byte, error) {
	hc := &http.Client{Timeout: timeout}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := hc.Get("http://" + addr + "/debug/pprof/" + path)
		if err != nil {
			if time.Now().After(deadline) {
				return nil, err
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("GET %s: %s: %s", path, resp.Status, b)
		}
		return b, err
	}
}
