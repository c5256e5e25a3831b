package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/model/fake"
	"agentrun.dev/agentrun/internal/store/sqlite"
)

// JournalResult is the journal scenario's figures.
type JournalResult struct {
	Run   *LongRun `json:"run,omitempty"`
	Micro []Micro  `json:"micro,omitempty"`
}

// LongRun is one run of many tool steps through the real server.
type LongRun struct {
	Tool         string `json:"tool"`
	ToolsPerTurn int    `json:"toolsPerTurn"`
	Steps        int    `json:"steps"` // every journal step
	ToolSteps    int    `json:"toolSteps"`
	ModelSteps   int    `json:"modelSteps"`
	Phase        string `json:"phase"`
	// Wall clock (nanosecond resolution, from status.startedAt/finishedAt and the client).
	RunWallMs        float64 `json:"runWallMs"`        // status.startedAt → status.finishedAt
	CreateToFinishMs float64 `json:"createToFinishMs"` // creationTimestamp → finishedAt
	ClientWallMs     float64 `json:"clientWallMs"`     // POST → Succeeded seen by polling (10 ms polls)
	WallPerStepMs    float64 `json:"wallPerStepMs"`    // runWall / steps
	WallPerToolMs    float64 `json:"wallPerToolStepMs"`
	// From the journal's timestamps (millisecond resolution in the store).
	Gap           Dist            `json:"gap"` // previous step's completedAt → this step's startedAt
	GapByKind     map[string]Dist `json:"gapByTransition"`
	Duration      map[string]Dist `json:"durationByKind"`
	GapFirstTenth float64         `json:"gapMeanFirstTenthMs"`
	GapLastTenth  float64         `json:"gapMeanLastTenthMs"`
	// From the scripted model server's arrival times (nanosecond resolution): the time between
	// consecutive model requests, i.e. one turn = 1 model step + ToolsPerTurn tool steps.
	TurnCycle Dist `json:"turnCycle"`
	// Mean turn cycle over the first and last tenth of the turns: growth means per-step cost rises
	// with the conversation's length.
	TurnCycleFirstTenth float64 `json:"turnCycleMeanFirstTenthMs"`
	TurnCycleLastTenth  float64 `json:"turnCycleMeanLastTenthMs"`
	// CPU over the run (POST → Succeeded seen): the server process, and this process (client
	// polling plus the scripted model server).
	CPU CPU `json:"cpu"`
}

// Micro is the in-process journal.Do micro-benchmark on one filesystem.
type Micro struct {
	Dir  string `json:"dir"`
	FS   string `json:"fs"`
	N    int    `json:"n"`
	Do   Dist   `json:"do"` // one journal.Do with a no-op fn = 2 fenced commits
	Rate int    `json:"doPerSec"`
	// Fsync is a raw write+fsync of 100 bytes to a file in the same folder: the floor of one
	// durable commit there.
	Fsync Dist `json:"fsync"`
}

func storeBackend() string {
	dir, err := os.MkdirTemp("", "agentrun-bench-probe-")
	if err != nil {
		return "unknown"
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(filepath.Join(dir, "agentrun.db"))
	if err != nil {
		return "unknown"
	}
	defer st.Close()
	return st.Backend() + " (internal/store/sqlite, as `agentrun serve` opens it)"
}

func runJournal(c config, root string) (*JournalResult, error) {
	res := &JournalResult{}
	lr, err := longRun(c, root)
	if lr != nil {
		res.Run = lr
	}
	if err != nil {
		return res, err
	}
	if c.micro > 0 {
		dirs := []string{root}
		if c.shm && fsType(root) != "tmpfs" {
			if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
				dirs = append(dirs, "/dev/shm")
			}
		}
		for _, parent := range dirs {
			d, err := os.MkdirTemp(parent, "agentrun-bench-micro-")
			if err != nil {
				return res, err
			}
			progress("journal micro-benchmark: %d journal.Do calls in %s (%s)", c.micro, parent, fsType(d))
			m, err := microJournal(d, c.micro)
			if !c.keep || parent == "/dev/shm" {
				os.RemoveAll(d)
			}
			if err != nil {
				return res, fmt.Errorf("micro-benchmark in %s: %w", parent, err)
			}
			m.Dir = parent
			res.Micro = append(res.Micro, *m)
		}
	}
	return res, nil
}

// longRunScript: turn t makes perTurn calls of tool (until steps calls are made), then one text.
func longRunScript(steps, perTurn int, tool string) *fake.Script {
	var turns []fake.Turn
	for made := 0; made < steps; {
		var t fake.Turn
		for k := 0; k < perTurn && made < steps; k++ {
			in := `{"path":"."}`
			if tool == "write" {
				in = fmt.Sprintf(`{"path":"f%d.txt","content":"step %d"}`, made, made)
			}
			t.ToolCalls = append(t.ToolCalls, fake.ToolCall{Name: tool, Input: json.RawMessage(in)})
			made++
		}
		turns = append(turns, t)
	}
	turns = append(turns, fake.Turn{Text: "done"})
	return &fake.Script{Entries: []fake.Entry{{Name: "long", Match: "*", Turns: turns}}}
}

func longRun(c config, root string) (*LongRun, error) {
	sc := longRunScript(c.steps, c.perTurn, c.tool)
	w, err := startWorld(c, root, "journal", sc, 4)
	if err != nil {
		return nil, err
	}
	defer w.stop()
	if err := w.createAgent("bench-journal", []string{c.tool}); err != nil {
		return nil, err
	}
	progress("journal: one run of %d %s steps (%d per turn) at %s", c.steps, c.tool, c.perTurn, w.url)
	cpu0 := w.cpu()
	t0 := time.Now()
	name, err := w.startRun("bench-journal", "benchmark: many tool steps")
	if err != nil {
		return nil, err
	}
	deadline := t0.Add(c.timeout)
	lastProgress := t0
	var run api.AgentRun
	for {
		run, err = w.getRun(name)
		if err != nil {
			return nil, err
		}
		if api.Finished(run.Status.Phase) || run.Status.Phase == api.PhaseNeedsResolution || run.Status.Phase == api.PhaseWaiting {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("run %s still %s after %s", name, run.Status.Phase, c.timeout)
		}
		if time.Since(lastProgress) > 3*time.Second {
			lastProgress = time.Now()
			progress("journal: run %s %s, %d turns so far", name, run.Status.Phase, len(run.Status.Turns))
		}
		time.Sleep(10 * time.Millisecond)
	}
	client := time.Since(t0)
	cpu := cpuSince(cpu0, w.cpu())
	if run.Status.Phase != api.PhaseSucceeded {
		return nil, fmt.Errorf("run %s ended %s (%s: %s)\nserver log:\n%s", name, run.Status.Phase, run.Status.Reason, run.Status.Message, w.logTail())
	}
	steps, err := w.steps(name)
	if err != nil {
		return nil, err
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i].Seq < steps[j].Seq })
	lr := &LongRun{Tool: c.tool, ToolsPerTurn: c.perTurn, Steps: len(steps), Phase: string(run.Status.Phase), ClientWallMs: msf(client),
		GapByKind: map[string]Dist{}, Duration: map[string]Dist{}, CPU: cpu}
	if run.Status.StartedAt != nil && run.Status.FinishedAt != nil {
		lr.RunWallMs = msf(run.Status.FinishedAt.Sub(*run.Status.StartedAt))
	}
	if run.Metadata.CreationTimestamp != nil && run.Status.FinishedAt != nil {
		lr.CreateToFinishMs = msf(run.Status.FinishedAt.Sub(*run.Metadata.CreationTimestamp))
	}
	var gaps []time.Duration
	byTrans := map[string][]time.Duration{}
	durs := map[string][]time.Duration{}
	for i, s := range steps {
		switch s.Kind {
		case "tool":
			lr.ToolSteps++
		case "model":
			lr.ModelSteps++
		}
		if s.CompletedAt != nil {
			durs[string(s.Kind)] = append(durs[string(s.Kind)], s.CompletedAt.Sub(s.StartedAt))
		}
		if i > 0 && steps[i-1].CompletedAt != nil {
			g := s.StartedAt.Sub(*steps[i-1].CompletedAt)
			gaps = append(gaps, g)
			tr := string(steps[i-1].Kind + "→" + s.Kind)
			byTrans[tr] = append(byTrans[tr], g)
		}
	}
	lr.Gap = dist(gaps)
	for k, v := range byTrans {
		lr.GapByKind[k] = dist(v)
	}
	for k, v := range durs {
		lr.Duration[k] = dist(v)
	}
	if n := len(gaps) / 10; n > 0 {
		lr.GapFirstTenth = dist(gaps[:n]).Mean
		lr.GapLastTenth = dist(gaps[len(gaps)-n:]).Mean
	}
	if lr.Steps > 0 {
		lr.WallPerStepMs = round3(lr.RunWallMs / float64(lr.Steps))
	}
	if lr.ToolSteps > 0 {
		lr.WallPerToolMs = round3(lr.RunWallMs / float64(lr.ToolSteps))
	}
	var cycles []time.Duration
	calls := w.model.Calls()
	for i := 1; i < len(calls); i++ {
		cycles = append(cycles, calls[i].Time.Sub(calls[i-1].Time))
	}
	lr.TurnCycle = dist(cycles)
	if n := len(cycles) / 10; n > 0 {
		lr.TurnCycleFirstTenth = dist(cycles[:n]).Mean
		lr.TurnCycleLastTenth = dist(cycles[len(cycles)-n:]).Mean
	}
	return lr, nil
}

// microJournal times journal.Do with a no-op fn on a fresh SQLite store in dir.
func microJournal(dir string, n int) (*Micro, error) {
	ctx := context.Background()
	st, err := sqlite.Open(filepath.Join(dir, "agentrun.db"))
	if err != nil {
		return nil, err
	}
	defer st.Close()
	run := &api.AgentRun{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "AgentRun"}}
	run.Metadata.Name = "bench-micro"
	run.Spec.Agent = "bench"
	run.Status.Phase = api.PhaseQueued
	if err := st.CreateRun(ctx, run); err != nil {
		return nil, err
	}
	leases, err := st.ClaimRuns(ctx, "bench", 1, time.Hour)
	if err != nil {
		return nil, err
	}
	if len(leases) != 1 {
		return nil, fmt.Errorf("claimed %d runs, want 1", len(leases))
	}
	j, err := journal.Open(ctx, st, leases[0])
	if err != nil {
		return nil, err
	}
	noop := func(context.Context) (any, *int64, error) { return map[string]bool{"ok": true}, nil, nil }
	do := func(i int) error {
		_, err := j.Do(ctx, journal.Spec{Key: fmt.Sprintf("s%d/tool/0", i), Kind: "tool", Title: "noop",
			Args: map[string]any{"tool": "noop", "i": i}}, noop)
		return err
	}
	const warm = 20
	for i := 0; i < warm; i++ {
		if err := do(i); err != nil {
			return nil, err
		}
	}
	ds := make([]time.Duration, 0, n)
	t0 := time.Now()
	last := t0
	for i := 0; i < n; i++ {
		s := time.Now()
		if err := do(warm + i); err != nil {
			return nil, err
		}
		ds = append(ds, time.Since(s))
		if time.Since(last) > 3*time.Second {
			last = time.Now()
			progress("journal micro-benchmark: %d/%d", i+1, n)
		}
	}
	total := time.Since(t0)
	m := &Micro{FS: fsType(dir), N: n, Do: dist(ds), Rate: int(float64(n) / total.Seconds())}
	// Check the journal holds what was written (a benchmark of writes that did not happen is worthless).
	steps, err := st.ListSteps(ctx, run.Metadata.Name)
	if err != nil {
		return nil, err
	}
	if len(steps) != n+warm || steps[len(steps)-1].State != api.StepCompleted {
		return nil, fmt.Errorf("journal holds %d steps, want %d completed", len(steps), n+warm)
	}
	fs, err := fsyncProbe(dir, 200)
	if err != nil {
		return nil, err
	}
	m.Fsync = fs
	return m, nil
}

// fsyncProbe times n small appends each followed by fsync in dir.
func fsyncProbe(dir string, n int) (Dist, error) {
	f, err := os.Create(filepath.Join(dir, "fsync-probe"))
	if err != nil {
		return Dist{}, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 100)
	ds := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		s := time.Now()
		if _, err := f.Write(buf); err != nil {
			return Dist{}, err
		}
		if err := f.Sync(); err != nil {
			return Dist{}, err
		}
		ds = append(ds, time.Since(s))
	}
	return dist(ds), nil
}

func printJournal(r *JournalResult) {
	fmt.Println()
	fmt.Println("== journal: per-step overhead ==")
	if lr := r.Run; lr != nil {
		fmt.Printf("  one run: %d steps (%d %s tool, %d model; %d tool call(s) per turn), %s\n", lr.Steps, lr.ToolSteps, lr.Tool, lr.ModelSteps, lr.ToolsPerTurn, lr.Phase)
		fmt.Printf("  run wall (startedAt→finishedAt) %.1f ms; created→finished %.1f ms; client-observed %.1f ms\n", lr.RunWallMs, lr.CreateToFinishMs, lr.ClientWallMs)
		fmt.Printf("  wall per step %.3f ms; wall per tool step %.3f ms\n", lr.WallPerStepMs, lr.WallPerToolMs)
		if lr.CPU.server() > 0 {
			fmt.Printf("  CPU during the run: server %.0f ms user + %.0f ms sys; bench client + model server %.0f ms\n", lr.CPU.ServerUserMs, lr.CPU.ServerSysMs, lr.CPU.BenchMs)
		}
		fmt.Println("  from the journal's timestamps (store keeps milliseconds: sub-ms values read as 0 or 1):")
		printDistHeader("ms")
		fmt.Print(lr.Gap.row("gap between steps (all)"))
		keys := make([]string, 0, len(lr.GapByKind))
		for k := range lr.GapByKind {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Print(lr.GapByKind[k].row("gap " + k))
		}
		keys = keys[:0]
		for k := range lr.Duration {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Print(lr.Duration[k].row("duration of " + k + " step"))
		}
		fmt.Printf("  gap mean, first tenth of the run %.3f ms, last tenth %.3f ms\n", lr.GapFirstTenth, lr.GapLastTenth)
		fmt.Println("  from the model server's request arrival times (ns resolution):")
		printDistHeader("ms")
		fmt.Print(lr.TurnCycle.row(fmt.Sprintf("turn cycle (1 model + %d tool)", lr.ToolsPerTurn)))
		if lr.TurnCycleFirstTenth > 0 {
			fmt.Printf("  turn cycle mean, first tenth of the turns %.3f ms, last tenth %.3f ms\n", lr.TurnCycleFirstTenth, lr.TurnCycleLastTenth)
		}
	}
	for _, m := range r.Micro {
		fmt.Printf("  in-process journal.Do (no-op fn, 2 fenced commits each) on %s (%s): %d/s\n", m.Dir, m.FS, m.Rate)
		printDistHeader("ms")
		fmt.Print(m.Do.row("journal.Do"))
		fmt.Print(m.Fsync.row("raw write+fsync, same folder"))
	}
}
