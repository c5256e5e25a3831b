package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/model/fake"
)

// LongResult is many long runs at once on PostgreSQL: each run makes -long-turns model calls that
// take -long-latency at the scripted server, each but the last answered with one `ls` call, so
// that most runs are active together (waiting on the model) as real agents' runs are.
type LongResult struct {
	Runners   int `json:"runners"`
	Runs      int `json:"runs"`
	Succeeded int `json:"succeeded"`
	// ModelCalls and ToolCalls per run; Steps = journal steps of all runs (model + tool).
	ModelCalls int `json:"modelCalls"`
	ToolCalls  int `json:"toolCalls"`
	Steps      int `json:"steps"`
	// ActiveMs: first startedAt → last finishedAt; StepsPerSec = Steps / ActiveMs.
	ActiveMs    float64 `json:"activeMs"`
	StepsPerSec float64 `json:"stepsPerSec"`
	// Added is, per run and turn, the time from one model request's arrival plus the scripted
	// latency to the run's next model request: the reply's streaming and commit, one tool step
	// and the next model step's intent, i.e. what agentrun adds to one turn of two steps.
	Added Dist `json:"addedPerTurnMs"`
	// CPU over the whole measurement, and per journal step.
	CPU                CPU     `json:"cpu"`
	RunnerCPUPerStepMs float64 `json:"runnerCpuPerStepMs"`
	PGCPUPerStepMs     float64 `json:"postgresCpuPerStepMs"`
	// RSS of the runner processes (summed), kB: idle before any run, peak while runs were active,
	// and (peak - idle) / runs.
	IdleRSSKB   int64   `json:"idleRssKB"`
	PeakRSSKB   int64   `json:"peakRssKB"`
	RSSPerRunKB float64 `json:"rssPerRunKB"`
	// PeakActive is the most runs in phase Running at once (read every 50 ms): a runner that is
	// behind claims no more (--max-lag), so with many runs queued it can be below Runs.
	// RSSPerActiveKB = (peak - idle) / PeakActive.
	PeakActive     int     `json:"peakActive"`
	RSSPerActiveKB float64 `json:"rssPerActiveKB"`
	// From the runners' logs: runs they stopped because a lease renewal did not come in time
	// (self-fenced), leases lost to another runner, and times a runner started holding back.
	SelfFenced int        `json:"selfFenced"`
	LeasesLost int        `json:"leasesLost"`
	HoldsBack  int        `json:"holdsBack"`
	PG         *PGProfile `json:"postgres,omitempty"`
}

func longScript(turns int, latency time.Duration) *fake.Script {
	var ts []fake.Turn
	for i := 0; i < turns-1; i++ {
		ts = append(ts, fake.Turn{ToolCalls: []fake.ToolCall{{Name: "ls", Input: json.RawMessage(`{"path":"."}`)}}})
	}
	ts = append(ts, fake.Turn{Text: "done"})
	return &fake.Script{DefaultLatency: fake.Duration(latency), Entries: []fake.Entry{{Name: "long", Match: "*", Turns: ts}}}
}

func runLong(c config, root string) ([]LongResult, error) {
	var out []LongResult
	for _, n := range c.longRuns {
		for _, k := range c.runnerCounts {
			r, err := longPG(c, root, n, k)
			if r != nil {
				out = append(out, *r)
			}
			if err != nil {
				return out, fmt.Errorf("%d runs, %d runners: %w", n, k, err)
			}
		}
	}
	return out, nil
}

func longPG(c config, root string, n, k int) (*LongResult, error) {
	sch, err := newSchema(c.pg, "bench_long")
	if err != nil {
		return nil, err
	}
	defer sch.drop(c.keep)
	w, err := startWorld(c, root, fmt.Sprintf("long-%d-pg-%d", n, k), longScript(c.longTurns, c.longLatency), c.workers, worldOpts{storeURL: sch.url, noRunner: true})
	if err != nil {
		return nil, err
	}
	defer w.stop()
	if err := w.createAgent("bench-long", []string{"ls"}); err != nil {
		return nil, err
	}
	t0 := time.Now()
	var procs []*proc
	var pprofAddr string
	if c.pprofDir != "" {
		a, err := freeAddr()
		if err != nil {
			return nil, err
		}
		pprofAddr = a
		w.runnerEnv = map[string][]string{"r1": {"AGENTRUN_PPROF_ADDR=" + a}}
	}
	for i := 1; i <= k; i++ {
		// Every run may be active on one runner at once (the default --max-runs is 5,000).
		args := []string{"--max-runs", strconv.Itoa(max(5000, n))}
		if c.longMaxLag != "" {
			args = append(args, "--max-lag", c.longMaxLag)
		}
		p, err := w.startRunner(fmt.Sprintf("r%d", i), args...)
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
	}
	if err := w.waitRunners(t0, procs...); err != nil {
		return nil, err
	}
	rss := func(field string) int64 {
		var sum int64
		for _, p := range procs {
			sum += procStatus(p.pid)[field]
		}
		return sum
	}
	res := &LongResult{Runners: k, Runs: n, ModelCalls: c.longTurns, ToolCalls: c.longTurns - 1, IdleRSSKB: rss("VmRSS")}
	res.Steps = n * (res.ModelCalls + res.ToolCalls)

	// Sample the runners' RSS while the runs are active (VmHWM would include start-up).
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tk := time.NewTicker(250 * time.Millisecond)
		defer tk.Stop()
		for {
			if v := rss("VmRSS"); v > res.PeakRSSKB {
				res.PeakRSSKB = v
			}
			select {
			case <-stop:
				return
			case <-tk.C:
			}
		}
	}()
	samp := startPGSampler(c.pg)
	cpu0 := w.cpu()
	progress("long: %s, creating %d runs of %d model calls (%s each)", w.name, n, c.longTurns, c.longLatency)
	_, _, err = createRuns(w, "bench-long", n, c.workers, trivialBody("long run"))
	if err == nil && pprofAddr != "" {
		// Every run is created and most are waiting on the model: what each active run holds.
		base := filepath.Join(c.pprofDir, fmt.Sprintf("long-%d-pg-%d-r1", n, k))
		for _, kind := range []string{"heap", "goroutine"} {
			if perr := saveProfile(pprofAddr, kind, base+"."+kind+".pprof", 0); perr != nil {
				progress("long: %s of r1: %v", kind, perr)
			}
		}
	}
	if err == nil {
		err = w.waitCounts("long runs", c.timeout, func(m map[string]int) (bool, string) {
			res.PeakActive = max(res.PeakActive, m[string(api.PhaseRunning)])
			return ended(m) >= n, fmt.Sprintf("%d/%d runs ended, %d running", ended(m), n, m[string(api.PhaseRunning)])
		})
	}
	close(stop)
	wg.Wait()
	if err != nil {
		return res, err
	}
	res.CPU = cpuSince(cpu0, w.cpu())
	res.PG = samp.finish()
	res.RSSPerRunKB = round1(float64(res.PeakRSSKB-res.IdleRSSKB) / float64(n))
	if res.PeakActive > 0 {
		res.RSSPerActiveKB = round1(float64(res.PeakRSSKB-res.IdleRSSKB) / float64(res.PeakActive))
	}
	for _, p := range procs {
		b, _ := os.ReadFile(p.logPath)
		res.SelfFenced += bytes.Count(b, []byte("self-fencing run"))
		res.LeasesLost += bytes.Count(b, []byte("lease lost to another runner"))
		res.HoldsBack += bytes.Count(b, []byte("runner is behind"))
	}
	res.RunnerCPUPerStepMs = round3(res.CPU.RunnersMs / float64(res.Steps))
	res.PGCPUPerStepMs = round3(res.CPU.PostgresMs / float64(res.Steps))

	runs, err := w.listRuns("bench-long")
	if err != nil {
		return res, err
	}
	var first, last time.Time
	var failMsg string
	res.Succeeded, first, last, failMsg = succeededSpan(runs)
	if !last.IsZero() {
		res.ActiveMs = msf(last.Sub(first))
		res.StepsPerSec = round1(float64(res.Succeeded*(res.ModelCalls+res.ToolCalls)) / last.Sub(first).Seconds())
	}

	// Each run's model requests, the first of each turn, by conversation.
	byRun := map[string]map[int]time.Time{}
	for _, call := range w.model.Calls() {
		m := byRun[call.FirstUser]
		if m == nil {
			m = map[int]time.Time{}
			byRun[call.FirstUser] = m
		}
		if t, ok := m[call.Turn]; !ok || call.Time.Before(t) {
			m[call.Turn] = call.Time
		}
	}
	var added []time.Duration
	for _, m := range byRun {
		turns := make([]int, 0, len(m))
		for t := range m {
			turns = append(turns, t)
		}
		sort.Ints(turns)
		for i := 1; i < len(turns); i++ {
			if turns[i] == turns[i-1]+1 {
				added = append(added, m[turns[i]].Sub(m[turns[i-1]])-c.longLatency)
			}
		}
	}
	res.Added = dist(added)
	if res.Succeeded != n {
		return res, fmt.Errorf("%d of %d long runs succeeded; first other: %s", res.Succeeded, n, failMsg)
	}
	return res, nil
}

func printLong(rs []LongResult) {
	fmt.Println()
	fmt.Println("== long: many long runs at once on PostgreSQL (model call with scripted latency → ls → ... → answer) ==")
	fmt.Println("  added: model request arrival + latency → the run's next model request (reply, its commit, one tool step, next intent)")
	fmt.Printf("  %6s %7s %6s %9s %10s %10s %10s %10s %11s %11s %10s %11s %12s\n", "runs", "runners", "steps", "steps/s", "active ms", "added p50", "added p99", "added max", "runner ms/st", "pg ms/step", "kB RSS/run", "peak active", "kB RSS/active")
	for _, r := range rs {
		fmt.Printf("  %6d %7d %6d %9.1f %10.0f %10.1f %10.1f %10.1f %11.3f %11.3f %10.1f %11d %12.1f\n", r.Runs, r.Runners, r.Steps, r.StepsPerSec, r.ActiveMs,
			r.Added.P50, r.Added.P99, r.Added.Max, r.RunnerCPUPerStepMs, r.PGCPUPerStepMs, r.RSSPerRunKB, r.PeakActive, r.RSSPerActiveKB)
	}
	for _, r := range rs {
		fmt.Printf("  %d runs, %d runner(s): runner RSS idle %.1f MB, peak %.1f MB; %d runs self-fenced, %d leases lost, held back %d times\n", r.Runs, r.Runners,
			float64(r.IdleRSSKB)/1024, float64(r.PeakRSSKB)/1024, r.SelfFenced, r.LeasesLost, r.HoldsBack)
		if r.PG != nil {
			fmt.Printf("  PostgreSQL, %d runs, %d runner(s): %s\n", r.Runs, r.Runners, r.PG.summary(r.Runs))
		}
	}
}
