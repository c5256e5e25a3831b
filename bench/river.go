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
)

// RiverResult is the River burn-down (bench/river, its own Go module) on the same PostgreSQL.
type RiverResult struct {
	Version string     `json:"riverVersion"`
	Results []RiverRun `json:"results"`
}

// RiverRun is one River burn-down (see bench/river/main.go's Result).
type RiverRun struct {
	Profile             string  `json:"profile"`
	Clients             int     `json:"clients"`
	MaxWorkersPerClient int     `json:"maxWorkersPerClient"`
	FetchCooldownMs     float64 `json:"fetchCooldownMs"`
	FetchPollIntervalMs float64 `json:"fetchPollIntervalMs"`
	Jobs                int     `json:"jobs"`
	InsertPerSec        float64 `json:"insertPerSec"`
	Completed           int     `json:"completed"`
	WallMs              float64 `json:"wallMs"`
	JobsPerSec          float64 `json:"jobsPerSec"`
	FirstToLastMs       float64 `json:"firstToLastMs"`
	DBCompleted         int64   `json:"dbCompleted"`
	PostgresCPUMs       float64 `json:"postgresCpuMs"`
	SelfCPUMs           float64 `json:"selfCpuMs"`
	Commits             int64   `json:"commits"`
	WALSyncs            int64   `json:"walSyncs"`
	WALBytes            int64   `json:"walBytes"`
}

// runRiver builds bench/river (a nested module: River is never a dependency of agentrun) and runs
// its burn-downs with as many clients as the scale scenario has runners.
func runRiver(c config, root string) (*RiverResult, error) {
	modDir, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(modDir, "bench", "river")
	bin := filepath.Join(root, "river-burndown")
	progress("river: building %s", dir)
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("build %s: %w", dir, err)
	}
	var ks []string
	for _, k := range c.runnerCounts {
		ks = append(ks, strconv.Itoa(k))
	}
	cmd := exec.Command(bin, "-url", c.pg, "-jobs", strconv.Itoa(c.riverJobs), "-clients", strings.Join(ks, ","), "-profiles", c.riverProfiles,
		"-timeout", c.timeout.String())
	if c.keep {
		cmd.Args = append(cmd.Args, "-keep")
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("river burn-down: %w", err)
	}
	var r RiverResult
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &r); err != nil {
		return nil, fmt.Errorf("river burn-down output: %w: %q", err, out.String())
	}
	return &r, nil
}

func printRiver(r *RiverResult) {
	fmt.Println()
	fmt.Printf("== river: job-queue burn-down (github.com/riverqueue/river %s, no-op jobs, same PostgreSQL) ==\n", r.Version)
	fmt.Printf("  %-11s %7s %8s %9s %6s %9s %10s %10s %11s %11s %11s %11s\n", "profile", "clients", "workers", "cooldown", "jobs", "jobs/s", "wall ms", "1st→last", "insert/s", "PG cpu/job", "commits/job", "fsyncs/job")
	for _, x := range r.Results {
		fmt.Printf("  %-11s %7d %8d %7.0fms %6d %9.0f %10.0f %10.0f %11.0f %9.3fms %11.3f %11.3f\n", x.Profile, x.Clients, x.MaxWorkersPerClient, x.FetchCooldownMs, x.Jobs, x.JobsPerSec, x.WallMs, x.FirstToLastMs, x.InsertPerSec,
			x.PostgresCPUMs/float64(x.Jobs), float64(x.Commits)/float64(x.Jobs), float64(x.WALSyncs)/float64(x.Jobs))
	}
	fmt.Println("  clients: River clients in one process, each with its own pgx pool; workers: MaxWorkers per client;")
	fmt.Println("  default = River's defaults (FetchCooldown 100 ms, poll 1 s) with 100 workers; riverbench = River's own benchmark settings")
}

// Comparison sets our burn-down (one-step runs) beside River's (no-op jobs) per worker count.
type Comparison struct {
	Runners        int                `json:"runners"`
	OurRunsPerSec  float64            `json:"ourRunsPerSec"`
	RiverJobsPerS  map[string]float64 `json:"riverJobsPerSec"`
	RatioToRiver   map[string]float64 `json:"ratioToRiver"`
	OurCPUPerRunMs float64            `json:"ourCpuPerRunMs"`
}

func compare(scale []ScaleResult, river *RiverResult) []Comparison {
	var out []Comparison
	for _, s := range scale {
		if s.Backend != "postgres" || s.Backlog == nil {
			continue
		}
		cmp := Comparison{Runners: s.Runners, OurRunsPerSec: s.Backlog.RunsPerSec, RiverJobsPerS: map[string]float64{}, RatioToRiver: map[string]float64{},
			OurCPUPerRunMs: s.Backlog.TotalCPUPerRunMs}
		for _, x := range river.Results {
			if x.Clients == s.Runners && x.JobsPerSec > 0 {
				cmp.RiverJobsPerS[x.Profile] = x.JobsPerSec
				cmp.RatioToRiver[x.Profile] = round3(s.Backlog.RunsPerSec / x.JobsPerSec)
			}
		}
		out = append(out, cmp)
	}
	return out
}

func printComparison(cs []Comparison) {
	if len(cs) == 0 {
		return
	}
	fmt.Println()
	fmt.Println("== agentrun runs/s vs River jobs/s (burn-down, same PostgreSQL, same host) ==")
	for _, c := range cs {
		fmt.Printf("  %d runner(s)/client(s): agentrun %.1f runs/s", c.Runners, c.OurRunsPerSec)
		for _, p := range []string{"default", "riverbench"} {
			if v, ok := c.RiverJobsPerS[p]; ok {
				fmt.Printf("; River %s %.0f jobs/s (agentrun = %.3f×)", p, v, c.RatioToRiver[p])
			}
		}
		fmt.Println()
	}
	fmt.Println("  An agentrun run here is 2 streamed model calls over HTTP + 1 write tool (a new run folder and file, saved to")
	fmt.Println("  the store) + 7 fenced commits of one statement each (3 journal steps Started and Completed, the finish with")
	fmt.Println("  its lease release; events, status and files ride in them), grouped with other runs'; a River job is")
	fmt.Println("  a no-op function: fetched in batches and completed in batches by River's completer.")
}
