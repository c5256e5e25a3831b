// Command bench measures agentrun and prints its figures; it is not a test and asserts nothing
// about timing (design.md section 12: "Benchmarks live in bench/ and print their figures").
//
// Scenarios:
//
//   - journal: one run of -steps tool steps against the real server (per-step overhead from the
//     journal's own timestamps and from wall clock), plus an in-process micro-benchmark of
//     journal.Do on the SQLite store, with a raw fsync probe of the same filesystem for reference.
//   - e2e: -runs trivial runs (one write tool step, then a text answer) created concurrently over
//     the HTTP API; throughput and per-run latency.
//
// Usage: go run ./bench -scenario all   (see bench/README.md)
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

type config struct {
	scenario   string
	runs       int
	steps      int
	perTurn    int
	tool       string
	workers    int
	micro      int
	bin        string
	tmp        string
	shm        bool
	timeout    time.Duration
	keep       bool
	serverLogs bool
}

func main() {
	var c config
	flag.StringVar(&c.scenario, "scenario", "all", "journal, e2e or all")
	flag.IntVar(&c.runs, "runs", 500, "e2e: number of trivial runs")
	flag.IntVar(&c.workers, "workers", 16, "e2e: concurrent HTTP clients creating runs")
	flag.IntVar(&c.steps, "steps", 200, "journal: tool steps in the long run")
	flag.IntVar(&c.perTurn, "per-turn", 1, "journal: tool calls per model turn (1..50; 1 means -steps turns)")
	flag.StringVar(&c.tool, "tool", "ls", "journal: tool the long run calls (ls: read-only, no fsync of its own; write: fsyncs the file and folder)")
	flag.IntVar(&c.micro, "micro", 2000, "journal: journal.Do calls in the in-process micro-benchmark (0 skips it)")
	flag.StringVar(&c.bin, "bin", "", "agentrun binary (default: go build ./cmd/agentrun into a temp folder)")
	flag.StringVar(&c.tmp, "tmp", "", "parent folder of the temporary data folders (default $TMPDIR); its filesystem decides the fsync cost")
	flag.BoolVar(&c.shm, "shm", true, "journal: repeat the micro-benchmark on /dev/shm (tmpfs, fsync is free) when it exists, to show the fsync share")
	flag.DurationVar(&c.timeout, "timeout", 10*time.Minute, "give up on a scenario after this long")
	flag.BoolVar(&c.keep, "keep", false, "keep the temporary data folders (their server.log) for inspection")
	flag.BoolVar(&c.serverLogs, "server-debug", false, "run the server with --log-level debug (slower; for diagnosis)")
	flag.Parse()

	switch c.scenario {
	case "journal", "e2e", "all":
	default:
		fatalf("-scenario %q: use journal, e2e or all", c.scenario)
	}
	if c.perTurn < 1 || c.perTurn > 50 {
		fatalf("-per-turn %d: must be 1..50 (the agent's default maxToolCalls is 50)", c.perTurn)
	}
	if c.tool != "ls" && c.tool != "write" {
		fatalf("-tool %q: use ls or write", c.tool)
	}
	if c.steps < 1 || c.runs < 1 || c.workers < 1 {
		fatalf("-steps, -runs and -workers must be positive")
	}
	if c.tmp == "" {
		c.tmp = os.TempDir()
	}

	root, err := os.MkdirTemp(c.tmp, "agentrun-bench-")
	if err != nil {
		fatalf("temp folder: %v", err)
	}
	if !c.keep {
		defer os.RemoveAll(root)
	} else {
		defer fmt.Fprintf(os.Stderr, "bench: kept %s\n", root)
	}

	if c.bin == "" {
		c.bin = buildBinary(root)
	} else if abs, err := filepath.Abs(c.bin); err == nil {
		c.bin = abs
	}

	m := machine(c.tmp)
	fmt.Printf("agentrun bench  %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("  go %s  %s/%s  GOMAXPROCS=%d  NumCPU=%d  cpu=%q\n", m.GoVersion, m.OS, m.Arch, m.GOMAXPROCS, m.NumCPU, m.CPU)
	fmt.Printf("  store backend: %s  data on %s (%s)\n", m.Store, m.DataDir, m.DataFS)
	fmt.Printf("  binary: %s\n", c.bin)

	out := map[string]any{"machine": m}
	ok := true
	if c.scenario == "journal" || c.scenario == "all" {
		r, err := runJournal(c, root)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: journal scenario: %v\n", err)
			out["journalError"] = err.Error()
			ok = false
		}
		if r != nil {
			printJournal(r)
			out["journal"] = r
		}
	}
	if c.scenario == "e2e" || c.scenario == "all" {
		r, err := runE2E(c, root)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: e2e scenario: %v\n", err)
			out["e2eError"] = err.Error()
			ok = false
		}
		if r != nil {
			printE2E(r)
			out["e2e"] = r
		}
	}
	b, _ := json.Marshal(out)
	fmt.Println()
	fmt.Println(string(b))
	if !ok {
		if !c.keep {
			os.RemoveAll(root)
		}
		os.Exit(1)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(2)
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}

// buildBinary builds ./cmd/agentrun of the module bench lives in.
func buildBinary(root string) string {
	modDir, err := moduleRoot()
	if err != nil {
		fatalf("find the module: %v (pass -bin)", err)
	}
	bin := filepath.Join(root, "agentrun")
	progress("building %s/cmd/agentrun", modDir)
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/agentrun")
	cmd.Dir = modDir
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fatalf("build agentrun: %v", err)
	}
	return bin
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside a Go module")
	}
	return filepath.Dir(gomod), nil
}

// Machine is the basics printed with the figures.
type Machine struct {
	GoVersion  string `json:"goVersion"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	NumCPU     int    `json:"numCPU"`
	CPU        string `json:"cpu,omitempty"`
	Store      string `json:"store"`
	DataDir    string `json:"dataDir"`
	DataFS     string `json:"dataFS"`
}

func machine(dataDir string) Machine {
	m := Machine{GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, GOMAXPROCS: runtime.GOMAXPROCS(0),
		NumCPU: runtime.NumCPU(), Store: storeBackend(), DataDir: dataDir, DataFS: fsType(dataDir)}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}
