// Command bench measures agentrun and prints its figures; it is not a test and asserts nothing
// about timing (docs/architecture.md, "Tests and benchmarks").
//
// Scenarios:
//
//   - journal: one run of -steps tool steps against the real server (per-step overhead from the
//     journal's own timestamps and from wall clock), plus an in-process micro-benchmark of
//     journal.Do on the SQLite store, with a raw fsync probe of the same filesystem for reference.
//   - e2e: -runs trivial runs (one write tool step, then a text answer) created concurrently over
//     the HTTP API; throughput and per-run latency.
//   - claim: store.ClaimRuns throughput draining -claim-runs queued runs, in-process, with 1, 2, 4
//     claimers on PostgreSQL and 1 on SQLite.
//   - scale: trivial runs with `serve --no-runner` and 1, 2, 4 `agentrun runner` processes on
//     PostgreSQL, and `serve` on SQLite: a burn-down of a backlog, then runs created live.
//   - river: River's job-queue burn-down on the same PostgreSQL (bench/river, its own module).
//   - takeover: a runner SIGKILLed mid-turn; lease expiry to the first step on another runner.
//   - durable: N runs of K model-call steps on agentrun's PostgreSQL runners beside N DBOS
//     Transact workflows of K steps (bench/dbos, its own module), in pairs.
//   - memory: RSS of the runner's process with -keepalive keep-alive runs waiting for a message.
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
	"slices"
	"strconv"
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

	pg              string
	claimRuns       int
	claimBatch      int
	claimers        []int
	runnerCounts    []int
	scaleRuns       int
	riverJobs       int
	riverProfiles   string
	takeoverSamples int
	takeoverTTL     time.Duration
	takeoverDefault bool
	keepAlive       int
	memBackends     []string
	settle          int
	computers       int
	pprofDir        string
	longRuns        []int
	longTurns       int
	longLatency     time.Duration
	longJitter      time.Duration
	longMaxLag      string
	pgSample        time.Duration
	modelTLS        bool
	durableRuns     int
	durableSteps    int
	durableRounds   int
	durableDBOS     bool
	durableMaxLag   string
}

// scenarios in the order they run; "all" is every one, "pg" every one on PostgreSQL.
var scenarios = []string{"journal", "e2e", "workflow", "claim", "scale", "river", "takeover", "memory", "computers", "long", "durable", "console"}

var pgScenarios = map[string]bool{"claim": true, "scale": true, "river": true, "takeover": true, "memory": true, "long": true, "durable": true}

func main() {
	var c config
	var claimers, runners, memBackends, longRuns string
	flag.StringVar(&c.scenario, "scenario", "all", "comma-separated: "+strings.Join(scenarios, ", ")+"; or all, or pg (the PostgreSQL ones)")
	flag.IntVar(&c.runs, "runs", 500, "e2e: number of trivial runs")
	flag.IntVar(&c.workers, "workers", 16, "e2e, scale, memory: concurrent HTTP clients creating runs")
	flag.IntVar(&c.steps, "steps", 200, "journal: tool steps in the long run")
	flag.IntVar(&c.perTurn, "per-turn", 1, "journal: tool calls per model turn (1..50; 1 means -steps turns)")
	flag.StringVar(&c.tool, "tool", "ls", "journal: tool the long run calls (ls: read-only, no fsync of its own; write: fsyncs the file and folder)")
	flag.IntVar(&c.micro, "micro", 2000, "journal: journal.Do calls in the in-process micro-benchmark (0 skips it)")
	flag.StringVar(&c.bin, "bin", "", "agentrun binary (default: go build ./cmd/agentrun into a temp folder)")
	flag.StringVar(&c.tmp, "tmp", "", "parent folder of the temporary data folders (default $TMPDIR); its filesystem decides the fsync cost")
	flag.BoolVar(&c.shm, "shm", true, "journal: repeat the micro-benchmark on /dev/shm (tmpfs, fsync is free) when it exists, to show the fsync share")
	flag.DurationVar(&c.timeout, "timeout", 10*time.Minute, "give up on a scenario after this long")
	flag.BoolVar(&c.keep, "keep", false, "keep the temporary data folders (their server.log) and PostgreSQL schemas for inspection")
	flag.BoolVar(&c.serverLogs, "server-debug", false, "run the server with --log-level debug (slower; for diagnosis)")

	pgDefault := os.Getenv("AGENTRUN_TEST_POSTGRES_URL")
	if pgDefault == "" {
		pgDefault = defaultPG
	}
	flag.StringVar(&c.pg, "pg", pgDefault, "PostgreSQL URL for claim, scale, river, takeover and memory (each measurement gets a fresh schema); default $AGENTRUN_TEST_POSTGRES_URL or "+defaultPG)
	flag.IntVar(&c.claimRuns, "claim-runs", 5000, "claim: queued runs to drain")
	flag.IntVar(&c.claimBatch, "claim-batch", 64, "claim: runs per ClaimRuns call (the runner's batch)")
	flag.StringVar(&claimers, "claimers", "1,2,4", "claim: concurrent claimers on PostgreSQL (SQLite always 1)")
	flag.StringVar(&runners, "runners", "1,2,4", "scale: runner processes on PostgreSQL (SQLite: its one in-process runner); river: clients")
	flag.IntVar(&c.scaleRuns, "scale-runs", 1000, "scale: trivial runs per measurement (backlog and live each)")
	flag.IntVar(&c.riverJobs, "river-jobs", 10000, "river: no-op jobs per burn-down")
	flag.StringVar(&c.riverProfiles, "river-profiles", "default,riverbench", "river: client settings: default (River's defaults, 100 workers), riverbench (River's benchmark settings)")
	flag.IntVar(&c.takeoverSamples, "takeover-samples", 5, "takeover: samples with the short lease TTL")
	flag.DurationVar(&c.takeoverTTL, "takeover-ttl", 3*time.Second, "takeover: the short lease TTL (runner --lease-ttl)")
	flag.BoolVar(&c.takeoverDefault, "takeover-default", true, "takeover: also one sample with the default 30 s lease")
	flag.IntVar(&c.keepAlive, "keepalive", 10000, "memory: keep-alive runs left waiting for a message")
	flag.StringVar(&memBackends, "memory-backends", "sqlite,postgres", "memory: sqlite (serve, one process), postgres (a runner process)")
	flag.IntVar(&c.computers, "computers", 20, "computers: sandboxes made with each available provider")
	flag.StringVar(&c.pprofDir, "pprof-dir", "", "scale: save a 10 s CPU profile and a 2 s execution trace of the first PostgreSQL runner (r1), started with the backlog burn-down, to DIR/scale-pg-K-r1.cpu.pprof and .trace")
	flag.StringVar(&longRuns, "long-runs", "1000", "long: runs active at once (comma-separated list), each on every -runners count")
	flag.IntVar(&c.longTurns, "long-turns", 21, "long: model calls per run (each but the last answered with one ls call)")
	flag.DurationVar(&c.longLatency, "long-latency", time.Second, "long: the scripted model server's latency per call")
	flag.DurationVar(&c.longJitter, "long-jitter", 0, "long: vary each call's latency uniformly by up to this much either way (the script's latency_jitter; 0: every call takes -long-latency, so runs started together answer together)")
	flag.BoolVar(&c.modelTLS, "model-tls", false, "serve the scripted model server over HTTPS with HTTP/2, as the vendors do (the agentrun processes trust its certificate through SSL_CERT_FILE); plain HTTP/1.1 makes one connection per call in flight")
	flag.DurationVar(&c.pgSample, "pg-sample", 100*time.Millisecond, "scale, long, e2e: how often PostgreSQL's backends are sampled (pg_stat_activity: three queries, counted in PostgreSQL's CPU)")
	flag.StringVar(&c.longMaxLag, "long-max-lag", "", "long: the runners' --max-lag (empty: the runner's default, 50ms; 0: a runner never holds back on scheduling lag, so all -long-runs may be active at once)")
	flag.IntVar(&c.durableRuns, "durable-runs", 1000, "durable: runs (agentrun) and workflows (DBOS) per measurement")
	flag.IntVar(&c.durableSteps, "durable-steps", 10, "durable: model-call steps per run and per workflow")
	flag.IntVar(&c.durableRounds, "durable-rounds", 1, "durable: pairs (agentrun, then DBOS) per -runners count; the comparison is their mean")
	flag.BoolVar(&c.durableDBOS, "durable-dbos", true, "durable: measure DBOS too (false: agentrun alone, for profiling)")
	flag.StringVar(&c.durableMaxLag, "durable-max-lag", "", "durable: the runners' --max-lag (empty: the runner's default, 50ms; 0: never hold back on scheduling lag)")
	flag.IntVar(&c.settle, "settle", 5, "memory: seconds to wait after every run waits before reading RSS again")
	flag.Parse()

	want := map[string]bool{}
	for _, s := range strings.Split(c.scenario, ",") {
		switch s = strings.TrimSpace(s); s {
		case "all":
			for _, x := range scenarios {
				want[x] = true
			}
		case "pg":
			for x := range pgScenarios {
				want[x] = true
			}
		default:
			if !slices.Contains(scenarios, s) {
				fatalf("-scenario %q: use %s, all or pg", s, strings.Join(scenarios, ", "))
			}
			want[s] = true
		}
	}
	if c.perTurn < 1 || c.perTurn > 50 {
		fatalf("-per-turn %d: must be 1..50 (the agent's default maxToolCalls is 50)", c.perTurn)
	}
	if c.tool != "ls" && c.tool != "write" {
		fatalf("-tool %q: use ls or write", c.tool)
	}
	if c.steps < 1 || c.runs < 1 || c.workers < 1 || c.claimRuns < 1 || c.claimBatch < 1 || c.scaleRuns < 1 || c.riverJobs < 1 || c.keepAlive < 1 || c.computers < 1 ||
		c.durableRuns < 1 || c.durableSteps < 1 || c.durableRounds < 1 {
		fatalf("-steps, -runs, -workers, -claim-runs, -claim-batch, -scale-runs, -river-jobs -keepalive and -durable-* must be positive")
	}
	c.claimers = intList("-claimers", claimers)
	c.runnerCounts = intList("-runners", runners)
	c.longRuns = intList("-long-runs", longRuns)
	if c.longTurns < 1 {
		fatalf("-long-turns %d: at least 1", c.longTurns)
	}
	for _, b := range strings.Split(memBackends, ",") {
		if b = strings.TrimSpace(b); b != "sqlite" && b != "postgres" {
			fatalf("-memory-backends %q: sqlite and/or postgres", memBackends)
		}
		c.memBackends = append(c.memBackends, strings.TrimSpace(b))
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
	m.FolderMs = folderCost(root, 200)
	fmt.Printf("agentrun bench  %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("  go %s  %s/%s  GOMAXPROCS=%d  NumCPU=%d  cpu=%q  memory %d MB  load average %s\n", m.GoVersion, m.OS, m.Arch, m.GOMAXPROCS, m.NumCPU, m.CPU, m.MemMB, m.LoadAvg)
	fmt.Printf("  store backend: %s  data on %s (%s); a run folder with one file costs %.3f ms there now\n", m.Store, m.DataDir, m.DataFS, m.FolderMs)
	fmt.Printf("  binary: %s\n", c.bin)

	out := map[string]any{"machine": m}
	ok := true
	fail := func(name string, err error) {
		fmt.Fprintf(os.Stderr, "bench: %s scenario: %v\n", name, err)
		out[name+"Error"] = err.Error()
		ok = false
	}
	needPG := false
	for s := range want {
		needPG = needPG || pgScenarios[s]
	}
	if needPG {
		info, err := pgInfo(c.pg)
		if err != nil {
			// Every PostgreSQL scenario needs it: say so once and skip them.
			fail("postgres", err)
			for s := range pgScenarios {
				delete(want, s)
			}
		} else {
			out["postgres"] = info
			fmt.Printf("  postgres %s at %s  synchronous_commit=%s fsync=%s shared_buffers=%s max_connections=%s  data %s (%s)  same host: %v\n",
				info.Version, info.URL, info.SynchronousCommit, info.Fsync, info.SharedBuffers, info.MaxConnections, info.DataDir, info.DataFS, info.Local)
		}
	}
	if want["journal"] {
		r, err := runJournal(c, root)
		if err != nil {
			fail("journal", err)
		}
		if r != nil {
			printJournal(r)
			out["journal"] = r
		}
	}
	if want["e2e"] {
		r, err := runE2E(c, root)
		if err != nil {
			fail("e2e", err)
		}
		if r != nil {
			printE2E(r)
			out["e2e"] = r
		}
	}
	if want["workflow"] {
		r, err := runWorkflowBench(c, root)
		if err != nil {
			fail("workflow", err)
		}
		if r != nil {
			printWorkflow(r)
			out["workflow"] = r
		}
	}
	if want["claim"] {
		r, err := runClaim(c, root)
		if err != nil {
			fail("claim", err)
		}
		if len(r) > 0 {
			printClaim(r)
			out["claim"] = r
		}
	}
	var scale []ScaleResult
	if want["scale"] {
		r, err := runScale(c, root)
		if err != nil {
			fail("scale", err)
		}
		if len(r) > 0 {
			printScale(r)
			out["scale"] = r
			scale = r
		}
	}
	if want["river"] {
		r, err := runRiver(c, root)
		if err != nil {
			fail("river", err)
		}
		if r != nil {
			printRiver(r)
			out["river"] = r
			if cmp := compare(scale, r); len(cmp) > 0 {
				printComparison(cmp)
				out["comparison"] = cmp
			}
		}
	}
	if want["takeover"] {
		r, err := runTakeover(c, root)
		if err != nil {
			fail("takeover", err)
		}
		if r != nil {
			printTakeover(r)
			out["takeover"] = r
		}
	}
	if want["memory"] {
		r, err := runMemory(c, root)
		if err != nil {
			fail("memory", err)
		}
		if len(r) > 0 {
			printMemory(r)
			out["memory"] = r
		}
	}
	if want["long"] {
		r, err := runLong(c, root)
		if err != nil {
			fail("long", err)
		}
		if len(r) > 0 {
			printLong(r)
			out["long"] = r
		}
	}
	if want["durable"] {
		r, err := runDurable(c, root)
		if err != nil {
			fail("durable", err)
		}
		if r != nil {
			printDurable(r)
			out["durable"] = r
		}
	}
	if want["computers"] {
		r, err := runComputers(c, root)
		if err != nil {
			fail("computers", err)
		}
		if len(r) > 0 {
			printComputers(r)
			out["computers"] = r
		}
	}
	if want["console"] {
		r, err := runConsole(c, root)
		if err != nil {
			fail("console", err)
		}
		if r != nil {
			printConsole(r)
			out["console"] = r
		}
	}
	out["loadAvgEnd"] = loadAvg()
	fmt.Printf("\n  load average at the end: %s\n", out["loadAvgEnd"])
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

func intList(flagName, s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fatalf("%s %q: comma-separated positive counts", flagName, s)
		}
		out = append(out, n)
	}
	return out
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
	MemMB      int64  `json:"memMB"`
	// LoadAvg is /proc/loadavg when the bench started: other work on the machine skews every figure.
	LoadAvg string `json:"loadAvg,omitempty"`
	// FolderMs is what one new run folder with one file costs on the data filesystem when the
	// bench starts (mkdir + create + write, 200 times): every run of the scale scenarios pays it
	// once. On ext4 it is several times its usual cost for about 30 s after many files were
	// deleted (the allocator skips recently deleted inodes), e.g. right after another bench.
	FolderMs float64 `json:"folderMs"`
}

// folderCost times n run-folder-like creations (a directory holding one small file) in a fresh
// folder under dir and removes them again.
func folderCost(dir string, n int) float64 {
	d, err := os.MkdirTemp(dir, "fs-cost-")
	if err != nil {
		return 0
	}
	defer os.RemoveAll(d)
	t := time.Now()
	for i := range n {
		sub := filepath.Join(d, strconv.Itoa(i))
		if os.Mkdir(sub, 0o755) != nil || os.WriteFile(filepath.Join(sub, "f"), []byte("x"), 0o644) != nil {
			return 0
		}
	}
	return round3(msf(time.Since(t)) / float64(n))
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func machine(dataDir string) Machine {
	m := Machine{GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, GOMAXPROCS: runtime.GOMAXPROCS(0),
		NumCPU: runtime.NumCPU(), Store: storeBackend(), DataDir: dataDir, DataFS: fsType(dataDir), LoadAvg: loadAvg()}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				if f := strings.Fields(v); len(f) > 0 {
					kb, _ := strconv.ParseInt(f[0], 10, 64)
					m.MemMB = kb / 1024
				}
			}
		}
	}
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
