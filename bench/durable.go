package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/model/fake"
)

// DurableResult is the durable scenario: the same N × K durable model-call steps on agentrun and
// on DBOS Transact (bench/dbos, its own module), same PostgreSQL, same scripted model server,
// measured in pairs (agentrun, then DBOS) for each runner count.
type DurableResult struct {
	Runs       int                 `json:"runs"`
	Steps      int                 `json:"stepsPerRun"`
	Rounds     []DurablePair       `json:"rounds"`
	Comparison []DurableComparison `json:"comparison"`
}

// DurablePair is one agentrun measurement and the DBOS one right after it.
type DurablePair struct {
	Runners int          `json:"runners"`
	Ours    *DurableSide `json:"agentrun"`
	DBOS    *DurableSide `json:"dbos"`
	LoadAvg string       `json:"loadAvg"`
}

// DurableSide is one system's burn-down of N runs (workflows) of K model-call steps.
type DurableSide struct {
	Runs      int `json:"runs"`
	Succeeded int `json:"succeeded"`
	// WallMs: agentrun, the first run's startedAt → the last run's finishedAt (runs were queued
	// with no runner up; runner start-up excluded); DBOS, the first RunWorkflow → the last result
	// (launch excluded, the workflows' own inserts included).
	WallMs      float64 `json:"wallMs"`
	StepsPerSec float64 `json:"stepsPerSec"`
	// Commits: pg_stat_database.xact_commit over the burn-down, read-only transactions included
	// (approximate: other sessions on the database count too; for agentrun, the bench's own
	// polling of the run counts, 20 reads a second, does).
	Commits        int64   `json:"commits"`
	CommitsPerStep float64 `json:"commitsPerStep"`
	// CPU: every process of the system (agentrun: server and runners; DBOS: its executors), every
	// postgres process on the host, and the bench (the scripted model server answering).
	CPUMs        float64 `json:"cpuMs"`
	PostgresMs   float64 `json:"postgresCpuMs"`
	CPUPerStepMs float64 `json:"cpuPerStepMs"`
	WALSyncs     int64   `json:"walSyncs"`
	// Parts of CPUMs, CPU-ms: agentrun's server (serve --no-runner, answering the bench's polls)
	// and runners, DBOS's executors, and the bench process (the scripted model server).
	SystemMs float64 `json:"systemCpuMs"`
	BenchMs  float64 `json:"benchCpuMs"`
	// CoresBusy = CPUMs / WallMs: on a machine shared with other work, the share of its CPUs the
	// system got, which sets its steps/s as much as its CPU per step does.
	CoresBusy float64 `json:"coresBusy"`
	// HoldsBack: times an agentrun runner stopped claiming because it was behind (--max-lag).
	HoldsBack int `json:"holdsBack,omitempty"`
}

// DurableComparison is the figure: per runner count, the mean over rounds.
type DurableComparison struct {
	Runners            int     `json:"runners"`
	OurStepsPerSec     float64 `json:"ourStepsPerSec"`
	DBOSStepsPerSec    float64 `json:"dbosStepsPerSec"`
	RatioToDBOS        float64 `json:"ratioToDBOS"`
	OurCommitsPerStep  float64 `json:"ourCommitsPerStep"`
	DBOSCommitsPerStep float64 `json:"dbosCommitsPerStep"`
	OurCPUPerStepMs    float64 `json:"ourCPUPerStepMs"`
	DBOSCPUPerStepMs   float64 `json:"dbosCPUPerStepMs"`
}

// durableScript answers every model call with a short streamed text (turn 0 of a fresh
// conversation: each workflow agent node, and each DBOS step, sends one user message).
func durableScript() *fake.Script {
	return &fake.Script{Entries: []fake.Entry{{Name: "durable", Match: "*", Turns: []fake.Turn{{Text: "done"}}}}}
}

// durableWorkflow is a chain of k agent nodes, each one model call answered without tools: a
// run of k durable model-call steps.
func durableWorkflow(k int) string {
	steps := make([]string, k)
	for i := range steps {
		steps[i] = fmt.Sprintf(`{"node": "agent", "label": "s%d", "instructions": "durable step", "as": "s%d"}`, i, i)
	}
	return `{"v": 2, "name": "durable", "schemas": {"In": {"type": "object"}, "Out": {"type": "object"}},
  "input": {"schemaId": "In"}, "output": {"schemaId": "Out"}, "root": {"node": "chain", "steps": [` + strings.Join(steps, ",") + `]}}`
}

func runDurable(c config, root string) (*DurableResult, error) {
	var bin string
	if c.durableDBOS {
		var err error
		if bin, err = buildDBOS(root); err != nil {
			return nil, err
		}
	}
	res := &DurableResult{Runs: c.durableRuns, Steps: c.durableSteps}
	for round := 0; round < c.durableRounds; round++ {
		for _, k := range c.runnerCounts {
			p := DurablePair{Runners: k, LoadAvg: loadAvg()}
			ours, err := durableOurs(c, root, k, round)
			if err != nil {
				return res, fmt.Errorf("agentrun, %d runners: %w", k, err)
			}
			p.Ours = ours
			if !c.durableDBOS {
				p.DBOS = &DurableSide{}
				res.Rounds = append(res.Rounds, p)
				continue
			}
			d, err := durableDBOS(c, root, bin, k)
			if err != nil {
				return res, fmt.Errorf("dbos, %d executors: %w", k, err)
			}
			p.DBOS = d
			progress("durable: %d runner(s): agentrun %.0f steps/s, DBOS %.0f steps/s (load %s)", k, ours.StepsPerSec, d.StepsPerSec, p.LoadAvg)
			res.Rounds = append(res.Rounds, p)
		}
	}
	for _, k := range c.runnerCounts {
		var cmp DurableComparison
		n := 0.0
		for _, p := range res.Rounds {
			if p.Runners != k {
				continue
			}
			n++
			cmp.OurStepsPerSec += p.Ours.StepsPerSec
			cmp.DBOSStepsPerSec += p.DBOS.StepsPerSec
			cmp.OurCommitsPerStep += p.Ours.CommitsPerStep
			cmp.DBOSCommitsPerStep += p.DBOS.CommitsPerStep
			cmp.OurCPUPerStepMs += p.Ours.CPUPerStepMs
			cmp.DBOSCPUPerStepMs += p.DBOS.CPUPerStepMs
		}
		if n == 0 {
			continue
		}
		cmp.Runners = k
		cmp.OurStepsPerSec, cmp.DBOSStepsPerSec = round1(cmp.OurStepsPerSec/n), round1(cmp.DBOSStepsPerSec/n)
		cmp.OurCommitsPerStep, cmp.DBOSCommitsPerStep = round3(cmp.OurCommitsPerStep/n), round3(cmp.DBOSCommitsPerStep/n)
		cmp.OurCPUPerStepMs, cmp.DBOSCPUPerStepMs = round3(cmp.OurCPUPerStepMs/n), round3(cmp.DBOSCPUPerStepMs/n)
		if cmp.DBOSStepsPerSec > 0 {
			cmp.RatioToDBOS = round3(cmp.OurStepsPerSec / cmp.DBOSStepsPerSec)
		}
		res.Comparison = append(res.Comparison, cmp)
	}
	return res, nil
}

// durableOurs burns down N queued runs of the K-node workflow with k PostgreSQL runners.
func durableOurs(c config, root string, k, round int) (*DurableSide, error) {
	sch, err := newSchema(c.pg, "bench_durable")
	if err != nil {
		return nil, err
	}
	defer sch.drop(c.keep)
	w, err := startWorld(c, root, fmt.Sprintf("durable-%d-pg-%d", round, k), durableScript(), c.workers, worldOpts{storeURL: sch.url, noRunner: true})
	if err != nil {
		return nil, err
	}
	defer w.stop()
	const agent = "bench-durable"
	spec := map[string]any{"tools": []string{}, "perRunMaxCostUSD": "1000.00", "model": map[string]any{"name": benchModel},
		"workflow": json.RawMessage(durableWorkflow(c.durableSteps))}
	if err := w.do("PUT", "/v2/agents/"+agent, map[string]any{"metadata": map[string]any{"name": agent}, "spec": spec}, nil); err != nil {
		return nil, fmt.Errorf("agent %s: %w", agent, err)
	}
	n := c.durableRuns
	progress("durable: %s, queueing %d runs of %d model calls with no runner up", w.name, n, c.durableSteps)
	if _, _, err := createRuns(w, agent, n, c.workers, func(i int) map[string]any {
		return map[string]any{"input": map[string]any{"content": fmt.Sprintf(`{"n": %d}`, i)}}
	}); err != nil {
		return nil, err
	}
	pg0 := pgCountersAt(c.pg, false)
	cpu0 := w.cpu()
	var pprofAddr string
	if c.pprofDir != "" {
		if pprofAddr, err = freeAddr(); err != nil {
			return nil, err
		}
		w.runnerEnv = map[string][]string{"r1": {"AGENTRUN_PPROF_ADDR=" + pprofAddr}}
	}
	var procs []*proc
	for i := 1; i <= k; i++ {
		args := []string{"--max-runs", strconv.Itoa(max(5000, n))}
		if c.durableMaxLag != "" {
			args = append(args, "--max-lag", c.durableMaxLag)
		}
		p, err := w.startRunner(fmt.Sprintf("r%d", i), args...)
		if err != nil {
			return nil, err
		}
		procs = append(procs, p)
	}
	// A CPU profile of r1's first 10 s and an execution trace of 2 s from 5 s in (what a step
	// waits on: pool acquires, the group committer, the network).
	prof := make(chan error, 2)
	if pprofAddr != "" {
		base := filepath.Join(c.pprofDir, fmt.Sprintf("durable-pg-%d-r1", k))
		go func() {
			// From 5 s in: every run claimed, the burn-down in its steady state.
			time.Sleep(5 * time.Second)
			prof <- saveProfile(pprofAddr, "trace", base+".trace", 2)
		}()
		go func() { prof <- saveProfile(pprofAddr, "profile", base+".cpu.pprof", 10) }()
	} else {
		prof <- nil
		prof <- nil
	}
	progress("durable: %s, burning the backlog down", w.name)
	err = w.waitCounts("durable backlog", c.timeout, func(m map[string]int) (bool, string) {
		return ended(m) >= n, fmt.Sprintf("%d/%d runs ended", ended(m), n)
	})
	cpu := cpuSince(cpu0, w.cpu())
	pg1 := pgCountersAt(c.pg, true)
	for range 2 {
		if perr := <-prof; perr != nil {
			progress("durable: profile of r1: %v", perr)
		}
	}
	if err != nil {
		return nil, err
	}
	runs, err := w.listRuns(agent)
	if err != nil {
		return nil, err
	}
	s := &DurableSide{Runs: n, CPUMs: round1(cpu.total()), PostgresMs: round1(cpu.PostgresMs), Commits: pg1.commits - pg0.commits, WALSyncs: pg1.walSyncs - pg0.walSyncs,
		SystemMs: round1(cpu.server() + cpu.RunnersMs), BenchMs: round1(cpu.BenchMs)}
	succeeded, first, last, failMsg := succeededSpan(runs)
	s.Succeeded = succeeded
	steps := float64(n * c.durableSteps)
	if !last.IsZero() {
		s.WallMs = msf(last.Sub(first))
		s.StepsPerSec = round1(float64(succeeded*c.durableSteps) / last.Sub(first).Seconds())
	}
	s.CommitsPerStep = round3(float64(s.Commits) / steps)
	s.CPUPerStepMs = round3(cpu.total() / steps)
	if s.WallMs > 0 {
		s.CoresBusy = round3(s.CPUMs / s.WallMs)
	}
	for _, p := range procs {
		b, _ := os.ReadFile(p.logPath)
		s.HoldsBack += bytes.Count(b, []byte("runner is behind"))
	}
	if succeeded != n {
		return s, fmt.Errorf("%d of %d runs succeeded; first other: %s", succeeded, n, failMsg)
	}
	return s, nil
}

// durableDBOS runs bench/dbos with k executors against a fresh scripted model server.
func durableDBOS(c config, root, bin string, k int) (*DurableSide, error) {
	srv, url, err := fake.Start(durableScript())
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	self0 := selfCPU()
	cmd := exec.Command(bin, "-url", c.pg, "-model", url, "-workflows", strconv.Itoa(c.durableRuns), "-steps", strconv.Itoa(c.durableSteps),
		"-processes", strconv.Itoa(k), "-timeout", c.timeout.String())
	if c.keep {
		cmd.Args = append(cmd.Args, "-keep")
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	progress("durable: DBOS, %d executor(s), %d workflows of %d steps", k, c.durableRuns, c.durableSteps)
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("bench/dbos: %w", err)
	}
	benchCPU := msf(selfCPU() - self0)
	var r struct {
		Succeeded      int     `json:"succeeded"`
		WallMs         float64 `json:"wallMs"`
		StepsPerSec    float64 `json:"stepsPerSec"`
		ExecutorsCPUMs float64 `json:"executorsCpuMs"`
		PostgresCPUMs  float64 `json:"postgresCpuMs"`
		Commits        int64   `json:"commits"`
		WALSyncs       int64   `json:"walSyncs"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &r); err != nil {
		return nil, fmt.Errorf("bench/dbos output: %w: %q", err, out.String())
	}
	steps := float64(c.durableRuns * c.durableSteps)
	total := r.ExecutorsCPUMs + r.PostgresCPUMs + benchCPU
	d := &DurableSide{Runs: c.durableRuns, Succeeded: r.Succeeded, WallMs: r.WallMs, StepsPerSec: r.StepsPerSec, Commits: r.Commits,
		CommitsPerStep: round3(float64(r.Commits) / steps), CPUMs: round1(total), PostgresMs: r.PostgresCPUMs,
		CPUPerStepMs: round3(total / steps), WALSyncs: r.WALSyncs, SystemMs: r.ExecutorsCPUMs, BenchMs: round1(benchCPU)}
	if d.WallMs > 0 {
		d.CoresBusy = round3(d.CPUMs / d.WallMs)
	}
	return d, nil
}

// buildDBOS builds bench/dbos (a nested module: DBOS is never a dependency of agentrun).
func buildDBOS(root string) (string, error) {
	modDir, err := moduleRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(modDir, "bench", "dbos")
	bin := filepath.Join(root, "dbos-burndown")
	progress("durable: building %s", dir)
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("build %s: %w", dir, err)
	}
	return bin, nil
}

func printDurable(r *DurableResult) {
	fmt.Println()
	fmt.Printf("== durable: %d runs × %d model-call steps, agentrun (workflow of %d agent nodes, PostgreSQL runners) vs DBOS Transact (bench/dbos) ==\n", r.Runs, r.Steps, r.Steps)
	fmt.Printf("  %-9s %7s %9s %9s %12s %12s %11s %11s %11s %10s %8s %9s\n", "system", "runners", "steps/s", "wall ms", "commits/step", "cpu ms/step", "PG ms/step", "sys ms/step", "bench ms/st", "cores busy", "load", "held back")
	for _, p := range r.Rounds {
		for _, x := range []struct {
			name string
			s    *DurableSide
		}{{"agentrun", p.Ours}, {"dbos", p.DBOS}} {
			steps := float64(r.Runs * r.Steps)
			fmt.Printf("  %-9s %7d %9.0f %9.0f %12.3f %12.3f %11.3f %11.3f %11.3f %10.2f %8s %9d\n", x.name, p.Runners, x.s.StepsPerSec, x.s.WallMs, x.s.CommitsPerStep, x.s.CPUPerStepMs,
				x.s.PostgresMs/steps, x.s.SystemMs/steps, x.s.BenchMs/steps, x.s.CoresBusy, strings.Fields(p.LoadAvg + " -")[0], x.s.HoldsBack)
		}
	}
	for _, c := range r.Comparison {
		fmt.Printf("  %d runner(s)/executor(s): agentrun %.0f steps/s, DBOS %.0f steps/s: %.3f× DBOS\n", c.Runners, c.OurStepsPerSec, c.DBOSStepsPerSec, c.RatioToDBOS)
	}
	fmt.Println("  A step: one streamed model call over HTTP to the scripted server, checkpointed in PostgreSQL before the next")
	fmt.Println("  starts. agentrun: runs queued over the API first, then runners started; DBOS: every workflow started at once")
	fmt.Println("  (RunWorkflow, no queue) in each executor. CPU: all the system's processes + every postgres process + the bench;")
	fmt.Println("  cores busy = that CPU / wall: on a machine shared with other work, the share of the CPUs each system got.")
}
