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
	// CoresBusy is (server + bench CPU) / observed wall time; compare with GOMAXPROCS/NumCPU.
	CoresBusy float64 `json:"coresBusy"`
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

	progress("e2e: creating %d trivial runs with %d workers at %s", c.runs, c.workers, w.url)
	res := &E2EResult{Runs: c.runs, Workers: c.workers, StepsPerRun: len(steps)}
	idx := make(chan int)
	var mu sync.Mutex
	var createDs []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	cpu0 := w.cpu()
	t0 := time.Now()
	for k := 0; k < c.workers; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				s := time.Now()
				_, err := w.startRun("bench-e2e", fmt.Sprintf("trivial run %d", i))
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
	for i := 0; i < c.runs; i++ {
		idx <- i
	}
	close(idx)
	wg.Wait()
	created := time.Since(t0)
	if firstErr != nil {
		return nil, fmt.Errorf("create runs: %w", firstErr)
	}
	res.CreateMs = msf(created)
	res.CreatePerSec = float64(c.runs) / created.Seconds()
	res.CreateReq = dist(createDs)
	progress("e2e: %d runs created in %.0f ms; waiting for them to finish", c.runs, res.CreateMs)

	deadline := t0.Add(c.timeout)
	lastProgress := time.Now()
	var runs []api.AgentRun
	for {
		runs, err = w.listRuns("bench-e2e")
		if err != nil {
			return nil, err
		}
		done := 0
		for _, r := range runs {
			if api.Finished(r.Status.Phase) || r.Status.Phase == api.PhaseNeedsResolution {
				done++
			}
		}
		if done >= c.runs {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d runs finished after %s", done, c.runs, c.timeout)
		}
		if time.Since(lastProgress) > 3*time.Second {
			lastProgress = time.Now()
			progress("e2e: %d/%d runs finished", done, c.runs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	observed := time.Since(t0)
	res.ObservedMs = msf(observed)
	res.CPU = cpuSince(cpu0, w.cpu())
	res.ServerCPUPerRunMs = round3(res.CPU.server() / float64(c.runs))
	res.CoresBusy = math.Round((res.CPU.server()+res.CPU.BenchMs)/res.ObservedMs*100) / 100

	var lat, queue, exec []time.Duration
	var last time.Time
	var failMsg string
	for _, r := range runs {
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
		return res, fmt.Errorf("%d of %d runs did not succeed; first: %s", res.Failed, c.runs, failMsg)
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
	if r.CPU.server() > 0 {
		fmt.Printf("  CPU: server %.0f ms user + %.0f ms sys (%.2f ms/run); bench client + model server %.0f ms; %.2f cores busy on average\n",
			r.CPU.ServerUserMs, r.CPU.ServerSysMs, r.ServerCPUPerRunMs, r.CPU.BenchMs, r.CoresBusy)
	}
}
