package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/model/fake"
)

// MemResult is the memory of the process that runs the runner, before and after Runs keep-alive
// runs have finished their first turn and wait for a message (Waiting/Message).
type MemResult struct {
	Backend string `json:"backend"`
	// Process: "serve" (SQLite: API and runner in one process) or "runner" (PostgreSQL: a
	// runner process beside `serve --no-runner`).
	Process string `json:"process"`
	Runs    int    `json:"runs"`
	Waiting int    `json:"waiting"`
	// RSS from /proc/PID/status, in kB: before (one warm-up run waiting), when every run was
	// seen waiting, and SettleSec later (the Go runtime returns freed heap to the OS lazily).
	RSSBeforeKB  int64 `json:"rssBeforeKB"`
	RSSAfterKB   int64 `json:"rssAfterKB"`
	RSSSettledKB int64 `json:"rssSettledKB"`
	SettleSec    int   `json:"settleSec"`
	// RSSHalfKB is the settled RSS when the first half of the runs waited; MarginalPerRunKB is
	// (settled - half) / second half: what one more waiting run costs once the process has
	// grown to handle the load (state kept per run shows here; heap grown for the load does not).
	RSSHalfKB        int64   `json:"rssHalfKB"`
	MarginalPerRunKB float64 `json:"marginalPerRunKB"`
	// HWMKB is the peak RSS (VmHWM) over the process's life, reached while the runs were driven.
	HWMKB int64 `json:"hwmKB"`
	// PerRunKB is (after - before) / runs; PerRunSettledKB is (settled - before) / runs.
	PerRunKB        float64 `json:"perRunKB"`
	PerRunSettledKB float64 `json:"perRunSettledKB"`
	ThreadsBefore   int64   `json:"threadsBefore"`
	ThreadsAfter    int64   `json:"threadsAfter"`
	// ActiveRuns is the runner's agentrun_runner_active_runs gauge once every run waits: runs
	// it is driving (each holds a goroutine and a lease).
	ActiveRuns int `json:"activeRuns"`
	// CreateMs: the POSTs; AllWaitingMs: first POST → every run seen Waiting (settling excluded).
	CreateMs     float64 `json:"createMs"`
	AllWaitingMs float64 `json:"allWaitingMs"`
}

func chatScript() *fake.Script {
	return &fake.Script{Entries: []fake.Entry{{Name: "chat", Match: "*", Turns: []fake.Turn{{Text: "hello"}}}}}
}

func runMemory(c config, root string) ([]MemResult, error) {
	var out []MemResult
	for _, b := range c.memBackends {
		var r *MemResult
		var err error
		switch b {
		case "sqlite":
			r, err = memSQLite(c, root)
		case "postgres":
			r, err = memPG(c, root)
		}
		if r != nil {
			out = append(out, *r)
		}
		if err != nil {
			return out, fmt.Errorf("%s: %w", b, err)
		}
	}
	return out, nil
}

func memSQLite(c config, root string) (*MemResult, error) {
	w, err := startWorld(c, root, "memory-sqlite", chatScript(), c.workers)
	if err != nil {
		return nil, err
	}
	defer w.stop()
	res := &MemResult{Backend: "sqlite", Process: "serve", Runs: c.keepAlive}
	return res, measureWaiting(c, w, res, w.srv.pid, w.url+"/metrics")
}

func memPG(c config, root string) (*MemResult, error) {
	sch, err := newSchema(c.pg, "bench_memory")
	if err != nil {
		return nil, err
	}
	defer sch.drop(c.keep)
	w, err := startWorld(c, root, "memory-pg", chatScript(), c.workers, worldOpts{storeURL: sch.url, noRunner: true})
	if err != nil {
		return nil, err
	}
	defer w.stop()
	since := time.Now()
	r, err := w.startRunner("m1", "--metrics-addr", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	if err := w.waitRunners(since, r); err != nil {
		return nil, err
	}
	metricsURL := ""
	for deadline := time.Now().Add(10 * time.Second); metricsURL == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(r.logPath)
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			if u, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "metrics:"); ok {
				metricsURL = strings.TrimSpace(u)
			}
		}
	}
	res := &MemResult{Backend: "postgres", Process: "runner", Runs: c.keepAlive}
	return res, measureWaiting(c, w, res, r.pid, metricsURL)
}

// measureWaiting creates res.Runs keep-alive runs and measures pid's memory before and after
// they all wait for a message.
func measureWaiting(c config, w *world, res *MemResult, pid int, metricsURL string) error {
	if err := w.createAgent("bench-chat", []string{}); err != nil {
		return err
	}
	keepAlive := func(i int) map[string]any {
		return map[string]any{"input": map[string]any{"content": fmt.Sprintf("chat %d", i)}, "keep_alive": true}
	}
	// One warm-up run, so that first-use costs (connections, caches) are in the baseline.
	if _, _, err := createRuns(w, "bench-chat", 1, 1, keepAlive); err != nil {
		return err
	}
	if err := waitWaiting(w, 1, time.Minute); err != nil {
		return err
	}
	time.Sleep(time.Second)
	before := procStatus(pid)
	res.RSSBeforeKB, res.ThreadsBefore = before["VmRSS"], before["Threads"]
	progress("memory: %s, %d keep-alive runs in two halves (runner RSS %d kB before)", w.name, res.Runs, res.RSSBeforeKB)
	half := res.Runs / 2
	var busy time.Duration
	for k, n := range []int{half, res.Runs - half} {
		t0 := time.Now()
		_, created, err := createRuns(w, "bench-chat", n, c.workers, func(i int) map[string]any { return keepAlive(k*half + i) })
		if err != nil {
			return err
		}
		res.CreateMs += msf(created)
		if err := waitWaiting(w, 1+half+k*(res.Runs-half), c.timeout); err != nil {
			return err
		}
		busy += time.Since(t0)
		if k == 0 {
			progress("memory: %d runs waiting; settling %d s", half, c.settle)
			time.Sleep(time.Duration(c.settle) * time.Second)
			res.RSSHalfKB = procStatus(pid)["VmRSS"]
		}
	}
	res.AllWaitingMs = msf(busy)
	after := procStatus(pid)
	res.RSSAfterKB, res.ThreadsAfter, res.HWMKB = after["VmRSS"], after["Threads"], after["VmHWM"]
	counts, err := w.phaseCounts()
	if err != nil {
		return err
	}
	res.Waiting = counts[string(api.PhaseWaiting)] - 1
	res.SettleSec = c.settle
	progress("memory: every run waiting; RSS %d kB; settling %d s", res.RSSAfterKB, c.settle)
	time.Sleep(time.Duration(c.settle) * time.Second)
	res.RSSSettledKB = procStatus(pid)["VmRSS"]
	res.PerRunKB = round3(float64(res.RSSAfterKB-res.RSSBeforeKB) / float64(res.Runs))
	res.PerRunSettledKB = round3(float64(res.RSSSettledKB-res.RSSBeforeKB) / float64(res.Runs))
	res.MarginalPerRunKB = round3(float64(res.RSSSettledKB-res.RSSHalfKB) / float64(res.Runs-half))
	res.ActiveRuns = -1
	if metricsURL != "" {
		if v, err := gauge(w.hc, metricsURL, "agentrun_runner_active_runs"); err == nil {
			res.ActiveRuns = int(v)
		}
	}
	if res.Waiting != res.Runs {
		return fmt.Errorf("%d of %d runs waiting", res.Waiting, res.Runs)
	}
	return nil
}

// waitWaiting waits until n runs are Waiting; any run that ended instead is an error.
func waitWaiting(w *world, n int, timeout time.Duration) error {
	var bad map[string]int
	err := w.waitCounts("memory", timeout, func(m map[string]int) (bool, string) {
		if ended(m) > 0 {
			bad = m
			return true, ""
		}
		return m[string(api.PhaseWaiting)] >= n, fmt.Sprintf("%d/%d runs waiting", m[string(api.PhaseWaiting)], n)
	})
	if err == nil && bad != nil {
		err = fmt.Errorf("keep-alive runs ended instead of waiting: %v", bad)
	}
	return err
}

// gauge reads one unlabelled sample from a Prometheus text page.
func gauge(hc *http.Client, url, name string) (float64, error) {
	resp, err := hc.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("%s not in %s", name, url)
}

func printMemory(rs []MemResult) {
	fmt.Println()
	fmt.Println("== memory: keep-alive runs waiting for a message (Waiting/Message), RSS of the process running the runner ==")
	fmt.Printf("  %-9s %-7s %6s %11s %11s %11s %11s %8s %8s %9s %9s %8s %7s %8s\n", "backend", "process", "runs", "RSS before", "at half", "RSS after", "settled", "peak",
		"kB/run", "settled", "marginal", "threads", "active", "runs/s")
	for _, r := range rs {
		fmt.Printf("  %-9s %-7s %6d %8d kB %8d kB %8d kB %8d kB %5d MB %8.2f %9.2f %9.2f %4d→%-3d %7d %8.0f\n", r.Backend, r.Process, r.Runs, r.RSSBeforeKB, r.RSSHalfKB, r.RSSAfterKB, r.RSSSettledKB,
			r.HWMKB/1024, r.PerRunKB, r.PerRunSettledKB, r.MarginalPerRunKB, r.ThreadsBefore, r.ThreadsAfter, r.ActiveRuns, float64(r.Runs)/(r.AllWaitingMs/1000))
	}
	fmt.Println("  kB/run = (after - before) / runs; settled: the same after the settle time; marginal = (settled - at half) / second half;")
	fmt.Println("  active = the runner's agentrun_runner_active_runs gauge (runs holding a goroutine and a lease) with every run waiting")
}
