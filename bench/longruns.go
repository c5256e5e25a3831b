package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
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
	// LatencyJitterMs is -long-jitter: each model call's latency varied by up to this either way.
	LatencyJitterMs float64 `json:"latencyJitterMs,omitempty"`
	// ActiveMs: first startedAt → last finishedAt; StepsPerSec = Steps / ActiveMs.
	ActiveMs    float64 `json:"activeMs"`
	StepsPerSec float64 `json:"stepsPerSec"`
	// Added is, per run and turn, the time from one model request's arrival plus the scripted
	// latency to the run's next model request: the reply's streaming and commit, one tool step
	// and the next model step's intent, i.e. what agentrun adds to one turn of two steps.
	Added Dist `json:"addedPerTurnMs"`
	// AddedP99ByTurn is Added's p99 over each turn of every run (index 0: from the first model
	// request to the second): where in a run's life the tail is.
	AddedP99ByTurn []float64 `json:"addedP99ByTurnMs,omitempty"`
	// AddedP99BySecond is Added's p99 over the turns whose reply was due (request arrival plus
	// the scripted latency) in each second since the first model request: when in the
	// measurement the tail is (a lease renewal, a collection, a checkpoint shows as a second
	// of its own).
	AddedP99BySecond []float64 `json:"addedP99BySecondMs,omitempty"`
	// RepliesDuePer50ms is how many replies fell due (request arrival plus the scripted
	// latency) in each 50 ms window of the measurement, as a distribution over the windows
	// (ms fields hold counts): runs started together with one fixed latency reply together, and a
	// window far above the mean is a burst the runner works through one reply after another.
	RepliesDuePer50ms Dist `json:"repliesDuePer50ms"`
	// MostDueByTurn is, for each turn (index 0: the replies to the runs' first requests), the
	// most of that turn's replies due in one 50 ms window: whether a burst is there from the
	// start (the runs were started together) and whether the runner's work spreads it or
	// gathers it as the turns go on.
	MostDueByTurn []int `json:"mostDueByTurn,omitempty"`
	// FirstRequestsMs is the time from the first run's first model request to the last run's:
	// how spread out the runs started.
	FirstRequestsMs float64 `json:"firstRequestsMs,omitempty"`
	// RunPositionShare is the share of the turns above the added p90 that fall on the runs
	// with the highest mean added time (the tenth of the runs): 0.1 if the tail falls on any
	// run, near 1 if the same runs are always at the back of a burst.
	RunPositionShare float64 `json:"runPositionShare"`
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
	// What an active run holds, without the garbage collector's headroom: 8 s or more after the
	// runs were created and with at least half of them active (LiveSampleActive), r1 is made to
	// collect and its heap in use and goroutine stacks are read (runtime MemStats; three reads,
	// the median), less the same read before any run, per active run. The RSS figures above also hold what the
	// collector lets grow between cycles (GOGC=100: up to the live heap again) and what it has
	// freed but not yet returned.
	LiveSampleActive    int     `json:"liveSampleActive,omitempty"`
	LiveHeapPerActiveKB float64 `json:"liveHeapPerActiveKB,omitempty"`
	StackPerActiveKB    float64 `json:"stackPerActiveKB,omitempty"`
	LivePerActiveKB     float64 `json:"livePerActiveKB,omitempty"`
	GoroutinesPerActive float64 `json:"goroutinesPerActive,omitempty"`
	// From the runners' logs: runs they stopped because a lease renewal did not come in time
	// (self-fenced), leases lost to another runner, and times a runner started holding back.
	// Waits splits a turn's added time by r1's own histograms (one runner only).
	Waits      *TurnWaits `json:"turnWaits,omitempty"`
	SelfFenced int        `json:"selfFenced"`
	LeasesLost int        `json:"leasesLost"`
	HoldsBack  int        `json:"holdsBack"`
	PG         *PGProfile `json:"postgres,omitempty"`
}

func longScript(turns int, latency, jitter time.Duration) *fake.Script {
	var ts []fake.Turn
	for i := 0; i < turns-1; i++ {
		ts = append(ts, fake.Turn{ToolCalls: []fake.ToolCall{{Name: "ls", Input: json.RawMessage(`{"path":"."}`)}}})
	}
	ts = append(ts, fake.Turn{Text: "done"})
	return &fake.Script{DefaultLatency: fake.Duration(latency), LatencyJitter: fake.Duration(jitter), Entries: []fake.Entry{{Name: "long", Match: "*", Turns: ts}}}
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
	w, err := startWorld(c, root, fmt.Sprintf("long-%d-pg-%d", n, k), longScript(c.longTurns, c.longLatency, c.longJitter), c.workers, worldOpts{storeURL: sch.url, noRunner: true})
	if err != nil {
		return nil, err
	}
	defer w.stop()
	if err := w.createAgent("bench-long", []string{"ls"}); err != nil {
		return nil, err
	}
	t0 := time.Now()
	var procs []*proc
	// r1 always serves the profiler: the live memory per active run is read from it (a forced
	// GC, then the runtime's MemStats), and with -pprof-dir its profiles are saved.
	pprofAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	w.runnerEnv = map[string][]string{"r1": {"AGENTRUN_PPROF_ADDR=" + pprofAddr}}
	if c.pprofDir != "" {
		// The heap profile attributes what a run holds to within a few kB (the profiling slows
		// the runner: its run's figures are not comparable).
		w.runnerEnv["r1"] = append(w.runnerEnv["r1"], "AGENTRUN_PPROF_MEMRATE=4096")
	}
	// r1's own histograms say where a turn waits (Waits).
	metricsAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	for i := 1; i <= k; i++ {
		// Every run may be active on one runner at once (the default --max-runs is 5,000).
		args := []string{"--max-runs", strconv.Itoa(max(5000, n))}
		if i == 1 {
			args = append(args, "--metrics-addr", metricsAddr)
		}
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
	res := &LongResult{Runners: k, Runs: n, ModelCalls: c.longTurns, ToolCalls: c.longTurns - 1, IdleRSSKB: rss("VmRSS"),
		LatencyJitterMs: msf(c.longJitter)}
	idleLive, err := liveMemory(pprofAddr)
	if err != nil {
		return nil, fmt.Errorf("live memory of r1 before the runs: %w", err)
	}
	met0, err := readMetrics(metricsAddr)
	if err != nil {
		return nil, fmt.Errorf("metrics of r1 before the runs: %w", err)
	}
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
	samp := startPGSampler(c.pg, c.pgSample)
	cpu0 := w.cpu()
	progress("long: %s, creating %d runs of %d model calls (%s each, varied by up to %s either way)", w.name, n, c.longTurns, c.longLatency, c.longJitter)
	_, _, err = createRuns(w, "bench-long", n, c.workers, trivialBody("long run"))
	created := time.Now()
	var profiled sync.Once
	profile := func(active int) {
		// Most runs are in their turns, waiting on the model: what each active run holds. With
		// more than one runner, how many of the active runs r1 holds is not known: not read.
		// What is in flight at one instant (a batch of commits, a burst of replies) varies:
		// three reads 1.5 s apart, and the median of them.
		if k == 1 {
			var reads []live
			for i := 0; i < liveReads; i++ {
				if i > 0 {
					time.Sleep(1500 * time.Millisecond)
				}
				l, lerr := liveMemory(pprofAddr)
				if lerr != nil {
					progress("long: live memory of r1: %v", lerr)
					return
				}
				reads = append(reads, l)
			}
			sort.Slice(reads, func(i, j int) bool { return reads[i].heap+reads[i].stack < reads[j].heap+reads[j].stack })
			live := reads[len(reads)/2]
			res.LiveSampleActive = active
			res.LiveHeapPerActiveKB = round1(float64(live.heap-idleLive.heap) / 1024 / float64(active))
			res.StackPerActiveKB = round1(float64(live.stack-idleLive.stack) / 1024 / float64(active))
			res.LivePerActiveKB = round1(res.LiveHeapPerActiveKB + res.StackPerActiveKB)
			res.GoroutinesPerActive = round1(float64(live.goroutines-idleLive.goroutines) / float64(active))
		}
		if c.pprofDir == "" {
			return
		}
		base := filepath.Join(c.pprofDir, fmt.Sprintf("long-%d-pg-%d-r1", n, k))
		for _, kind := range []string{"heap", "goroutine"} {
			if perr := saveProfile(pprofAddr, kind, base+"."+kind+".pprof", 0); perr != nil {
				progress("long: %s of r1: %v", kind, perr)
			}
		}
		// Where r1's CPU goes with the runs active, and an execution trace of a second of it
		// (what a turn waits on: a CPU, the committer, the network).
		// The bench process (the scripted model server, its TLS) shares the machine's CPUs
		// with r1 and PostgreSQL: its own profile over the same 5 s says what it takes.
		stopSelf := selfCPUProfile(filepath.Join(c.pprofDir, fmt.Sprintf("long-%d-pg-%d-bench.cpu.pprof", n, k)))
		if perr := saveProfile(pprofAddr, "profile", base+".cpu.pprof", 5); perr != nil {
			progress("long: CPU profile of r1: %v", perr)
		}
		stopSelf()
		if perr := saveProfile(pprofAddr, "trace", base+".trace", 1); perr != nil {
			progress("long: trace of r1: %v", perr)
		}
	}
	if err == nil {
		err = w.waitCounts("long runs", c.timeout, func(m map[string]int) (bool, string) {
			res.PeakActive = max(res.PeakActive, m[string(api.PhaseRunning)])
			if a := m[string(api.PhaseRunning)]; time.Since(created) > 8*time.Second && a*2 >= n {
				profiled.Do(func() { wg.Add(1); go func() { defer wg.Done(); profile(a) }() })
			}
			return ended(m) >= n, fmt.Sprintf("%d/%d runs ended, %d running", ended(m), n, m[string(api.PhaseRunning)])
		})
	}
	close(stop)
	wg.Wait()
	if err != nil {
		return res, err
	}
	res.CPU = cpuSince(cpu0, w.cpu())
	if k == 1 {
		met1, merr := readMetrics(metricsAddr)
		if merr != nil {
			return res, fmt.Errorf("metrics of r1 after the runs: %w", merr)
		}
		res.Waits = turnWaits(met0, met1, n*c.longTurns, c.longLatency)
	}
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

	// Each run's model requests, the first of each turn, by conversation: when each arrived and
	// the latency it was scripted (with -long-jitter, each its own).
	type request struct {
		at      time.Time
		latency time.Duration
	}
	byRun := map[string]map[int]request{}
	for _, call := range w.model.Calls() {
		m := byRun[call.FirstUser]
		if m == nil {
			m = map[int]request{}
			byRun[call.FirstUser] = m
		}
		if r, ok := m[call.Turn]; !ok || call.Time.Before(r.at) {
			m[call.Turn] = request{call.Time, call.Latency}
		}
	}
	var added []time.Duration
	var byTurn, bySecond [][]time.Duration
	var firstCall time.Time
	for _, m := range byRun {
		for _, r := range m {
			if firstCall.IsZero() || r.at.Before(firstCall) {
				firstCall = r.at
			}
		}
	}
	// One walk over each run's turns: the added times (all, by turn, by second, by run) and the
	// replies due per 50 ms window (Dist's ms fields then hold counts).
	var windows []time.Duration
	dueByTurn := map[int]map[int]int{} // turn → 50 ms window → replies due
	var lastFirst time.Time
	var runTurns [][]time.Duration // each run's added times
	var runMeans []time.Duration
	for _, m := range byRun {
		turns := make([]int, 0, len(m))
		for t := range m {
			turns = append(turns, t)
		}
		sort.Ints(turns)
		var ds []time.Duration
		var sum time.Duration
		for i, t := range turns {
			due := m[t].at.Add(m[t].latency).Sub(firstCall)
			w := int(due / (50 * time.Millisecond))
			for len(windows) <= w {
				windows = append(windows, 0)
			}
			windows[w] += time.Millisecond
			if dueByTurn[t] == nil {
				dueByTurn[t] = map[int]int{}
			}
			dueByTurn[t][w]++
			if t == 0 && m[t].at.After(lastFirst) {
				lastFirst = m[t].at
			}
			if i == 0 || t != turns[i-1]+1 {
				continue
			}
			prev := m[turns[i-1]]
			d := m[t].at.Sub(prev.at) - prev.latency
			added = append(added, d)
			ds = append(ds, d)
			sum += d
			for len(byTurn) < t {
				byTurn = append(byTurn, nil)
			}
			byTurn[t-1] = append(byTurn[t-1], d)
			sec := int(prev.at.Add(prev.latency).Sub(firstCall) / time.Second)
			for len(bySecond) <= sec {
				bySecond = append(bySecond, nil)
			}
			bySecond[sec] = append(bySecond[sec], d)
		}
		if len(ds) > 0 {
			runTurns = append(runTurns, ds)
			runMeans = append(runMeans, sum/time.Duration(len(ds)))
		}
	}
	res.Added = dist(added)
	res.RepliesDuePer50ms = dist(windows)
	if !lastFirst.IsZero() {
		res.FirstRequestsMs = msf(lastFirst.Sub(firstCall))
	}
	for t := 0; len(dueByTurn[t]) > 0; t++ {
		most := 0
		for _, c := range dueByTurn[t] {
			most = max(most, c)
		}
		res.MostDueByTurn = append(res.MostDueByTurn, most)
	}
	// Whether the tail is the same runs each turn: the share of it on the slowest tenth.
	if len(runTurns) >= 10 {
		order := make([]int, len(runTurns))
		for i := range order {
			order[i] = i
		}
		sort.Slice(order, func(a, b int) bool { return runMeans[order[a]] > runMeans[order[b]] })
		top := map[int]bool{}
		for _, i := range order[:len(order)/10] {
			top[i] = true
		}
		p90 := time.Duration(res.Added.P90 * float64(time.Millisecond))
		var tail, inTop int
		for i, ds := range runTurns {
			for _, d := range ds {
				if d > p90 {
					tail++
					if top[i] {
						inTop++
					}
				}
			}
		}
		if tail > 0 {
			res.RunPositionShare = round3(float64(inTop) / float64(tail))
		}
	}
	for _, ds := range byTurn {
		res.AddedP99ByTurn = append(res.AddedP99ByTurn, dist(ds).P99)
	}
	for _, ds := range bySecond {
		res.AddedP99BySecond = append(res.AddedP99BySecond, dist(ds).P99)
	}
	if res.Waits != nil {
		w := res.Waits
		w.OtherMs = round3(res.Added.Mean - w.CommitsPerTurn*w.CommitMeanMs - w.ToolMeanMs - w.ModelBeyondLatencyMs)
	}
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
		if len(r.AddedP99ByTurn) > 0 {
			parts := make([]string, len(r.AddedP99ByTurn))
			for i, v := range r.AddedP99ByTurn {
				parts[i] = fmt.Sprintf("%.0f", v)
			}
			fmt.Printf("  %d runs, %d runner(s): added p99 by turn, ms: %s\n", r.Runs, r.Runners, strings.Join(parts, " "))
		}
		fmt.Printf("  %d runs, %d runner(s): replies due per 50 ms: mean %.0f, p99 %.0f, most %.0f; the slowest tenth of the runs hold %.0f%% of the turns above the added p90\n",
			r.Runs, r.Runners, r.RepliesDuePer50ms.Mean, r.RepliesDuePer50ms.P99, r.RepliesDuePer50ms.Max, 100*r.RunPositionShare)
		if len(r.MostDueByTurn) > 0 {
			parts := make([]string, len(r.MostDueByTurn))
			for i, v := range r.MostDueByTurn {
				parts[i] = strconv.Itoa(v)
			}
			fmt.Printf("  %d runs, %d runner(s): the runs' first model requests arrived over %.0f ms; most replies due in one 50 ms window, by turn: %s\n", r.Runs, r.Runners, r.FirstRequestsMs, strings.Join(parts, " "))
		}
		if len(r.AddedP99BySecond) > 0 {
			parts := make([]string, len(r.AddedP99BySecond))
			for i, v := range r.AddedP99BySecond {
				parts[i] = fmt.Sprintf("%.0f", v)
			}
			fmt.Printf("  %d runs, %d runner(s): added p99 by second of the measurement (reply due), ms: %s\n", r.Runs, r.Runners, strings.Join(parts, " "))
		}
		if w := r.Waits; w != nil {
			fmt.Printf("  %d runs, %d runner(s): a turn's added %.1f ms (mean) = %.2f commits x %.1f ms (p99 <= %.0f ms) + tool %.1f ms + model call beyond its latency %.1f ms + the rest %.1f ms (encoding, scheduling, waiting for a CPU; below zero when sending the request, which the model call's time holds, began before the arrival the added time counts from)\n",
				r.Runs, r.Runners, r.Added.Mean, w.CommitsPerTurn, w.CommitMeanMs, w.CommitP99Ms, w.ToolMeanMs, w.ModelBeyondLatencyMs, w.OtherMs)
		}
		if r.LiveSampleActive > 0 {
			fmt.Printf("  %d runs, %d runner(s): r1 holds %.1f kB per active run after a collection (heap %.1f kB, goroutine stacks %.1f kB, %.1f goroutines), read with %d runs active\n",
				r.Runs, r.Runners, r.LivePerActiveKB, r.LiveHeapPerActiveKB, r.StackPerActiveKB, r.GoroutinesPerActive, r.LiveSampleActive)
		}
		if r.PG != nil {
			fmt.Printf("  PostgreSQL, %d runs, %d runner(s): %s\n", r.Runs, r.Runners, r.PG.summary(r.Runs))
		}
	}
}

// liveReads is how many times the long scenario reads r1's live memory (the median is kept).
const liveReads = 3

// live is what the runtime of a process says it holds after a collection.
type live struct{ heap, stack, goroutines int64 }

// liveMemory has the process serving pprof at addr collect (gc=1) and reads its heap in use and
// goroutine stacks from the heap profile's MemStats, and its goroutine count.
func liveMemory(addr string) (live, error) {
	var l live
	get := func(path string) (string, error) {
		b, err := pprofGet(addr, path, 30*time.Second)
		return string(b), err
	}
	heap, err := get("heap?gc=1&debug=1")
	if err != nil {
		return l, err
	}
	for _, line := range strings.Split(heap, "\n") {
		var v int64
		if _, err := fmt.Sscanf(line, "# HeapAlloc = %d", &v); err == nil {
			l.heap = v
		} else if _, err := fmt.Sscanf(line, "# Stack = %d", &v); err == nil {
			l.stack = v
		}
	}
	if l.heap == 0 || l.stack == 0 {
		return l, fmt.Errorf("no HeapAlloc or Stack in the heap profile's MemStats")
	}
	gr, err := get("goroutine?debug=1")
	if err != nil {
		return l, err
	}
	if _, err := fmt.Sscanf(gr, "goroutine profile: total %d", &l.goroutines); err != nil {
		return l, fmt.Errorf("goroutine profile: %w", err)
	}
	return l, nil
}

// TurnWaits is where a long run's turn spends the time agentrun adds, from the runner's own
// histograms (agentrun_journal_write_seconds, agentrun_step_seconds{kind="tool"},
// agentrun_model_call_seconds) over the measurement: the commits a turn makes and how long one
// takes (from handing the write to the store to its commit; p99 is the upper bound of its
// histogram bucket), a tool step's effect, and how much longer a model call took than the
// scripted latency (sending the request, streaming and reading the reply). OtherMs is the mean
// added time less those: encoding, the runner's own work, and waiting for a CPU (below zero when
// the request's sending, which the model call's time holds, began before its arrival, from
// which the added time counts).
type TurnWaits struct {
	CommitsPerTurn       float64 `json:"commitsPerTurn"`
	CommitMeanMs         float64 `json:"commitMeanMs"`
	CommitP99Ms          float64 `json:"commitP99Ms"`
	ToolMeanMs           float64 `json:"toolMeanMs"`
	ModelBeyondLatencyMs float64 `json:"modelBeyondLatencyMs"`
	OtherMs              float64 `json:"otherMs"`
}

// readMetrics reads a runner's /metrics as series name (with its labels, as written) → value.
func readMetrics(addr string) (map[string]float64, error) {
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, nil
}

// turnWaits is TurnWaits from two reads of /metrics around turns model calls of scripted
// latency (OtherMs is set by the caller, which has the added time).
func turnWaits(m0, m1 map[string]float64, turns int, latency time.Duration) *TurnWaits {
	d := func(k string) float64 { return m1[k] - m0[k] }
	ms := func(sum, count string) float64 {
		if c := d(count); c > 0 {
			return d(sum) / c * 1000
		}
		return 0
	}
	w := &TurnWaits{
		CommitMeanMs: round3(ms("agentrun_journal_write_seconds_sum", "agentrun_journal_write_seconds_count")),
		ToolMeanMs:   round3(ms(`agentrun_step_seconds_sum{kind="tool"}`, `agentrun_step_seconds_count{kind="tool"}`)),
	}
	if turns > 0 {
		w.CommitsPerTurn = round3(d("agentrun_journal_write_seconds_count") / float64(turns))
	}
	var modelSum, modelCount float64
	for k := range m1 {
		switch {
		case strings.HasPrefix(k, "agentrun_model_call_seconds_sum"):
			modelSum += d(k)
		case strings.HasPrefix(k, "agentrun_model_call_seconds_count"):
			modelCount += d(k)
		}
	}
	if modelCount > 0 {
		w.ModelBeyondLatencyMs = round3(modelSum/modelCount*1000 - msf(latency))
	}
	// p99: the smallest bucket bound holding 99% of the commits.
	total := d("agentrun_journal_write_seconds_count")
	var bounds []float64
	for k := range m1 {
		if rest, ok := strings.CutPrefix(k, `agentrun_journal_write_seconds_bucket{le="`); ok {
			if le, err := strconv.ParseFloat(strings.TrimSuffix(rest, `"}`), 64); err == nil {
				bounds = append(bounds, le)
			}
		}
	}
	sort.Float64s(bounds)
	for _, le := range bounds {
		if total > 0 && d(fmt.Sprintf(`agentrun_journal_write_seconds_bucket{le="%g"}`, le)) >= 0.99*total {
			w.CommitP99Ms = le * 1000
			break
		}
	}
	return w
}

// selfCPUProfile profiles this process's CPU into path until the returned func is called (a
// failure is reported and profiles nothing).
func selfCPUProfile(path string) func() {
	f, err := os.Create(path)
	if err != nil {
		progress("bench CPU profile: %v", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		progress("bench CPU profile: %v", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
