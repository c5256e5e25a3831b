package main

import (
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/model/fake"
)

// E2EResult is the throughput scenario's figures.
type E2EResult struct {
	Runs      int `json:"runs"`
	Workers   int `json:"workers"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	// StepsPerRun is the journal length of one run (model, tool, model).
	StepsPerRun int `json:"stepsPerRun"`
	// MakespanMs: first POST (client clock) → the last run's status.finishedAt (server clock, same host).
	MakespanMs float64 `json:"makespanMs"`
	RunsPerSec float64 `json:"runsPerSec"`
	// ObservedMs: first POST → the poll (every 100 ms) that saw every run finished.
	ObservedMs float64 `json:"observedMs"`
	// CreateMs: first POST → last POST answered; CreatePerSec is runs created per second.
	CreateMs     float64 `json:"createMs"`
	CreatePerSec float64 `json:"createPerSec"`
	CreateReq    Dist    `json:"createRequest"` // one POST /v2/agents/NAME/runs, client side
	Latency      Dist    `json:"latency"`       // creationTimestamp → status.finishedAt
	Queue        Dist    `json:"queue"`         // creationTimestamp → status.startedAt
	Exec         Dist    `json:"exec"`          // status.startedAt → status.finishedAt
	// CPU over the measured window (first POST → all seen finished), in CPU-milliseconds:
	// the agentrun server process, and this process (HTTP client plus the scripted model server).
	CPU               CPU     `json:"cpu"`
	ServerCPUPerRunMs float64 `json:"serverCpuPerRunMs"`
	// TotalCPUPerRunMs is all the CPU counted (server, runners, PostgreSQL, bench) per run.
	TotalCPUPerRunMs float64 `json:"totalCpuPerRunMs,omitempty"`
	// CoresBusy is all the CPU counted / observed wall time; compare with GOMAXPROCS/NumCPU.
	CoresBusy float64 `json:"coresBusy"`
	// PG is what PostgreSQL did over the measurement (PostgreSQL worlds).
	PG *PGProfile `json:"postgres,omitempty"`
}

func trivialScript() *fake.Script {
	return &fake.Script{Entries: []fake.Entry{{Name: "trivial", Match: "*", Turns: []fake.Turn{
		{ToolCalls: []fake.ToolCall{{Name: "write", Input: json.RawMessage(`{"path":"out.txt","content":"hello"}`)}}},
		{Text: "done"},
	}}}}
}

func runE2E(c config, root string) (*E2EResult, error) {
	w, err := startWorld(c, root, "e2e", trivialScript(), c.workers)
	if err != nil {
		return nil, err
	}
	defer w.stop()
	for _, a := range []string{"bench-warm", "bench-e2e"} {
		if err := w.createAgent(a, []string{"write"}); err != nil {
			return nil, err
		}
	}
	// One warm-up run on another agent, so that first-use costs do not land in the figures.
	warm, err := w.startRun("bench-warm", "warm-up")
	if err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		r, err := w.getRun(warm)
		if err != nil {
			return nil, err
		}
		if api.Finished(r.Status.Phase) {
			if r.Status.Phase != api.PhaseSucceeded {
				return nil, fmt.Errorf("warm-up run ended %s (%s: %s)", r.Status.Phase, r.Status.Reason, r.Status.Message)
			}
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("warm-up run still %s after a minute", r.Status.Phase)
		}
	}
	steps, err := w.steps(warm)
	if err != nil {
		return nil, err
	}

	return measureLive(c, w, "bench-e2e", c.runs, c.workers, len(steps))
}

// createRuns creates n runs of agent with workers concurrent clients; it returns each POST's
// client-side time and the time for all of them.
func createRuns(w *world, agent string, n, workers int, body func(i int) map[string]any) ([]time.Duration, time.Duration, error) {
	idx := make(chan int)
	var mu sync.Mutex
	var createDs []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	t0 := time.Now()
	for k := 0; k < workers; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				s := time.Now()
				_, err := w.startRunBody(agent, body(i))
				d := time.Since(s)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				createDs = append(createDs, d)
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < n; i++ {
		idx <- i
	}
	close(idx)
	wg.Wait()
	if firstErr != nil {
		return nil, 0, fmt.Errorf("create runs: %w", firstErr)
	}
	return createDs, time.Since(t0), nil
}

func trivialBody(prefix string) func(int) map[string]any {
	return func(i int) map[string]any {
		return map[string]any{"input": map[string]any{"content": fmt.Sprintf("%s %d", prefix, i)}}
	}
}

// measureLive creates runs trivial runs of agent with workers concurrent clients while the
// runners are up, waits for them all to end (watching the run counts by phase), then reads them
// back for throughput and latency.
func measureLive(c config, w *world, agent string, runs, workers, stepsPerRun int) (*E2EResult, error) {
	counts0, err := w.phaseCounts()
	if err != nil {
		return nil, err
	}
	base := ended(counts0)
	progress("e2e: creating %d trivial runs of %s with %d workers at %s", runs, agent, workers, w.url)
	res := &E2EResult{Runs: runs, Workers: workers, StepsPerRun: stepsPerRun}
	var samp *pgSampler
	if w.opts.storeURL != "" {
		samp = startPGSampler(c.pg, c.pgSample)
	}
	cpu0 := w.cpu()
	t0 := time.Now()
	createDs, created, err := createRuns(w, agent, runs, workers, trivialBody("trivial run"))
	if err != nil {
		return nil, err
	}
	res.CreateMs = msf(created)
	res.CreatePerSec = float64(runs) / created.Seconds()
	res.CreateReq = dist(createDs)
	progress("e2e: %d runs created in %.0f ms; waiting for them to finish", runs, res.CreateMs)

	err = w.waitCounts("e2e", t0.Add(c.timeout).Sub(time.Now()), func(m map[string]int) (bool, string) {
		return ended(m)-base >= runs, fmt.Sprintf("%d/%d runs ended", ended(m)-base, runs)
	})
	if err != nil {
		return nil, err
	}
	observed := time.Since(t0)
	res.ObservedMs = msf(observed)
	res.CPU = cpuSince(cpu0, w.cpu())
	if samp != nil {
		res.PG = samp.finish()
	}
	res.ServerCPUPerRunMs = round3(res.CPU.server() / float64(runs))
	res.CoresBusy = math.Round(res.CPU.total()/res.ObservedMs*100) / 100
	if res.CPU.RunnersMs > 0 || res.CPU.PostgresMs > 0 {
		res.TotalCPUPerRunMs = round3(res.CPU.total() / float64(runs))
	}
	runList, err := w.listRuns(agent)
	if err != nil {
		return nil, err
	}
	if len(runList) != runs {
		return nil, fmt.Errorf("listed %d runs of %s, created %d", len(runList), agent, runs)
	}

	var lat, queue, exec []time.Duration
	var last time.Time
	var failMsg string
	for _, r := range runList {
		if r.Status.Phase != api.PhaseSucceeded {
			res.Failed++
			if failMsg == "" {
				failMsg = fmt.Sprintf("%s: %s (%s: %s)", r.Metadata.Name, r.Status.Phase, r.Status.Reason, r.Status.Message)
			}
			continue
		}
		res.Succeeded++
		st := r.Status
		if st.FinishedAt == nil || r.Metadata.CreationTimestamp == nil {
			continue
		}
		if st.FinishedAt.After(last) {
			last = *st.FinishedAt
		}
		lat = append(lat, st.FinishedAt.Sub(*r.Metadata.CreationTimestamp))
		if st.StartedAt != nil {
			queue = append(queue, st.StartedAt.Sub(*r.Metadata.CreationTimestamp))
			exec = append(exec, st.FinishedAt.Sub(*st.StartedAt))
		}
	}
	res.Latency, res.Queue, res.Exec = dist(lat), dist(queue), dist(exec)
	if !last.IsZero() {
		mk := last.Sub(t0)
		res.MakespanMs = msf(mk)
		res.RunsPerSec = float64(int(float64(res.Succeeded)/mk.Seconds()*10+0.5)) / 10
	}
	res.CreatePerSec = float64(int(res.CreatePerSec*10+0.5)) / 10
	if res.Failed > 0 {
		return res, fmt.Errorf("%d of %d runs did not succeed; first: %s", res.Failed, runs, failMsg)
	}
	return res, nil
}

func printE2E(r *E2EResult) {
	fmt.Println()
	fmt.Println("== e2e: trivial runs (model → write → model → answer) ==")
	fmt.Printf("  %d runs (%d steps each), %d HTTP workers: %d succeeded, %d failed\n", r.Runs, r.StepsPerRun, r.Workers, r.Succeeded, r.Failed)
	fmt.Printf("  throughput %.1f runs/s (first create → last finishedAt %.0f ms; seen by polling at %.0f ms)\n", r.RunsPerSec, r.MakespanMs, r.ObservedMs)
	fmt.Printf("  creating: %.1f runs/s (all %d POSTs answered in %.0f ms)\n", r.CreatePerSec, r.Runs, r.CreateMs)
	printDistHeader("ms")
	fmt.Print(r.Latency.row("run latency created→finished"))
	fmt.Print(r.Queue.row("  of which created→started"))
	fmt.Print(r.Exec.row("  of which started→finished"))
	fmt.Print(r.CreateReq.row("POST .../runs (client side)"))
	printCPU("CPU", r.CPU, r.Runs, r.CoresBusy)
}

// printCPU prints where the CPU went over a measured window of runs runs.
func printCPU(label string, c CPU, runs int, coresBusy float64) {
	if c.server() == 0 {
		return
	}
	fmt.Printf("  %s: server %.0f ms user + %.0f ms sys (%.2f ms/run)", label, c.ServerUserMs, c.ServerSysMs, c.server()/float64(runs))
	if c.RunnersMs > 0 {
		fmt.Printf("; runners %.0f ms (%.2f ms/run)", c.RunnersMs, c.RunnersMs/float64(runs))
	}
	if c.PostgresMs > 0 {
		fmt.Printf("; postgres %.0f ms (%.2f ms/run)", c.PostgresMs, c.PostgresMs/float64(runs))
	}
	fmt.Printf("; bench client + model server %.0f ms; %.2f cores busy on average\n", c.BenchMs, coresBusy)
}
