// Command dbos is the DBOS Transact (Go) side of agentrun's durable-steps comparison: N workflows
// of K steps, each step one streamed model call over HTTP to the bench's scripted model server
// (the reply agentrun's model calls get), checkpointed by DBOS in PostgreSQL. It is its own Go
// module so that DBOS is a dependency of the benchmark only, never of the agentrun server.
//
// One process is one DBOS executor. With -processes P > 1 it starts P-1 copies of itself (each
// with -child), every executor starts its share of the N workflows at once (RunWorkflow without a
// queue: a goroutine each, DBOS's way to run many workflows at once in one process; a queue
// would add its polling interval, 1 s by default, to every dequeue), and the figures are the
// first start to the last completion over all executors.
//
// Usage (normally run by `go run ./bench -scenario durable` from the repository root):
//
//	cd bench/dbos && go run . -url postgres://... -model http://127.0.0.1:PORT -workflows 1000 -steps 10
//
// It prints progress on stderr and one JSON object on stdout.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/jackc/pgx/v5"
)

// Result is one burn-down over every executor.
type Result struct {
	Version   string `json:"dbosVersion"`
	Processes int    `json:"processes"`
	Workflows int    `json:"workflows"`
	Steps     int    `json:"stepsPerWorkflow"`
	Succeeded int    `json:"succeeded"`
	// WallMs: the first executor's first RunWorkflow → the last workflow's result, over all
	// executors (DBOS's launch and migrations excluded). StepsPerSec = Workflows × Steps / WallMs.
	WallMs      float64 `json:"wallMs"`
	StepsPerSec float64 `json:"stepsPerSec"`
	// CPU over the burn-down: the executors (their own rusage) and every postgres process on
	// this host (read before the first start and after the last result).
	ExecutorsCPUMs float64 `json:"executorsCpuMs"`
	PostgresCPUMs  float64 `json:"postgresCpuMs"`
	// Deltas of pg_stat_database (this database) and pg_stat_wal over the burn-down.
	Commits  int64 `json:"commits"`
	WALSyncs int64 `json:"walSyncs"`
	WALBytes int64 `json:"walBytes"`
	// OperationOutputs: rows in DBOS's operation_outputs afterwards (one per checkpointed step).
	OperationOutputs int64 `json:"operationOutputs"`
}

// childResult is what one executor reports to the parent (a line on stdout).
type childResult struct {
	Succeeded int    `json:"succeeded"`
	StartNs   int64  `json:"startNs"`
	EndNs     int64  `json:"endNs"`
	CPUNs     int64  `json:"cpuNs"`
	Err       string `json:"err,omitempty"`
}

var (
	modelURL string
	hc       *http.Client
)

// modelBody is one streamed Anthropic-format call with one user message: the scripted server's
// turn 0, answered as agentrun's workflow agent nodes are.
var modelBody = []byte(`{"model":"claude-sonnet-4-5","max_tokens":8192,"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"durable step"}]}]}`)

// callModel makes one streamed call and reads the reply to its end, returning its text.
func callModel(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", modelURL+"/v1/messages", bytes.NewReader(modelBody))
	if err != nil {
		return "", err
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set("x-api-key", "bench")
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("model call: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return "", fmt.Errorf("model call: %s: %s", resp.Status, b)
	}
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	stopped := false
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		var ev struct {
			Type  string `json:"type"`
			Delta struct {
				Text string `json:"text"`
			} `json:"delta"`
		}
		if json.Unmarshal(data, &ev) != nil {
			continue
		}
		switch ev.Type {
		case "content_block_delta":
			text.WriteString(ev.Delta.Text)
		case "message_stop":
			stopped = true
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("model stream: %w", err)
	}
	if !stopped {
		return "", errors.New("model stream ended without message_stop")
	}
	return text.String(), nil
}

var stepsPerWorkflow int

// durableWorkflow makes stepsPerWorkflow model calls, each a DBOS step (checkpointed in
// operation_outputs before the next starts).
func durableWorkflow(ctx dbos.Context, n int) (int, error) {
	total := 0
	for i := range stepsPerWorkflow {
		s, err := dbos.RunAsStep(ctx, callModel, dbos.WithStepName("model-"+strconv.Itoa(i)))
		if err != nil {
			return 0, err
		}
		total += len(s)
	}
	return total, nil
}

func main() {
	var (
		url       = flag.String("url", envOr("AGENTRUN_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/agentrun_test?sslmode=disable"), "PostgreSQL URL")
		model     = flag.String("model", "", "the scripted model server's base URL (required)")
		workflows = flag.Int("workflows", 1000, "workflows in all")
		steps     = flag.Int("steps", 10, "model-call steps per workflow")
		processes = flag.Int("processes", 1, "DBOS executors (processes) sharing the workflows")
		schema    = flag.String("schema", "", "DBOS system schema (default: a fresh one, dropped afterwards)")
		child     = flag.Int("child", -1, "internal: run as executor number N of -processes (started by the parent)")
		keep      = flag.Bool("keep", false, "keep the schema")
		timeout   = flag.Duration("timeout", 5*time.Minute, "give up after this long")
	)
	flag.Parse()
	if *model == "" || *workflows < 1 || *steps < 1 || *processes < 1 {
		fatalf("-model is required; -workflows, -steps and -processes must be positive")
	}
	modelURL, stepsPerWorkflow = strings.TrimRight(*model, "/"), *steps
	// Plain HTTP/1.1 keeps one connection per call in flight, as agentrun's provider client does
	// against this server; the default pool's 2 idle connections per host would reconnect.
	hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4096, MaxIdleConns: 4096,
		DialContext: (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext}}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if *child >= 0 {
		r := runExecutor(ctx, *url, *schema, share(*workflows, *processes, *child), *child)
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
		if r.Err != "" {
			os.Exit(1)
		}
		return
	}
	res, err := parent(ctx, *url, *schema, *workflows, *steps, *processes, *keep, *timeout)
	if err != nil {
		fatalf("%v", err)
	}
	b, _ := json.Marshal(res)
	fmt.Println(string(b))
}

// share is executor i's part of n workflows over p executors.
func share(n, p, i int) int {
	s := n / p
	if i < n%p {
		s++
	}
	return s
}

func parent(ctx context.Context, url, schema string, n, k, p int, keep bool, timeout time.Duration) (*Result, error) {
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer admin.Close(context.Background())
	if schema == "" {
		schema = fmt.Sprintf("bench_dbos_%d_%d", time.Now().Unix()%1e6, rand.IntN(1e6))
		if !keep {
			defer admin.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
		}
	}
	// Create the system schema once (DBOS's migrations), so that executors start on it at once.
	if err := migrate(ctx, url, schema); err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	c0 := readCounters(ctx, admin)
	pg0 := postgresCPU()
	type out struct {
		r   childResult
		err error
	}
	outs := make([]out, p)
	var wg sync.WaitGroup
	for i := range p {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.CommandContext(ctx, self, "-url", url, "-model", modelURL, "-workflows", strconv.Itoa(n), "-steps", strconv.Itoa(k),
				"-processes", strconv.Itoa(p), "-schema", schema, "-child", strconv.Itoa(i), "-timeout", timeout.String())
			var stdout bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
			runErr := cmd.Run()
			var r childResult
			if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &r); err != nil {
				outs[i].err = fmt.Errorf("executor %d: %v; output %q: %w", i, runErr, stdout.String(), err)
				return
			}
			if r.Err != "" {
				outs[i].err = fmt.Errorf("executor %d: %s", i, r.Err)
			}
			outs[i].r = r
		}()
	}
	wg.Wait()
	pgCPU := postgresCPU() - pg0
	time.Sleep(1100 * time.Millisecond) // let every backend's statistics arrive
	c1 := readCounters(context.Background(), admin)
	res := &Result{Version: dbosVersion(), Processes: p, Workflows: n, Steps: k, PostgresCPUMs: ms(pgCPU),
		Commits: c1.commits - c0.commits, WALSyncs: c1.walSyncs - c0.walSyncs, WALBytes: c1.walBytes - c0.walBytes}
	var start, end int64
	var cpu time.Duration
	for _, o := range outs {
		if o.err != nil {
			return nil, o.err
		}
		res.Succeeded += o.r.Succeeded
		if start == 0 || o.r.StartNs < start {
			start = o.r.StartNs
		}
		end = max(end, o.r.EndNs)
		cpu += time.Duration(o.r.CPUNs)
	}
	res.ExecutorsCPUMs = ms(cpu)
	wall := time.Duration(end - start)
	res.WallMs = ms(wall)
	res.StepsPerSec = round1(float64(res.Succeeded*k) / wall.Seconds())
	if err := admin.QueryRow(context.Background(), "SELECT count(*) FROM "+schema+".operation_outputs").Scan(&res.OperationOutputs); err != nil {
		return res, fmt.Errorf("count operation_outputs: %w", err)
	}
	if res.Succeeded != n || res.OperationOutputs < int64(n*k) {
		return res, fmt.Errorf("%d of %d workflows succeeded, %d of %d steps checkpointed", res.Succeeded, n, res.OperationOutputs, n*k)
	}
	fmt.Fprintf(os.Stderr, "dbos: %d executor(s): %d workflows × %d steps in %.0f ms = %.0f steps/s\n", p, n, k, res.WallMs, res.StepsPerSec)
	return res, nil
}

func quiet() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// silent drops DBOS's logs: the migration executor's shutdown reports its own cancelled
// background loops as errors.
func silent() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// migrate launches DBOS once on the schema (which runs its migrations) and shuts it down.
func migrate(ctx context.Context, url, schema string) error {
	dc, err := dbos.NewContext(ctx, dbos.Config{AppName: "agentrun-bench", DatabaseURL: url, DatabaseSchema: schema, Logger: silent()})
	if err != nil {
		return fmt.Errorf("dbos context: %w", err)
	}
	dbos.RegisterWorkflow(dc, durableWorkflow)
	if err := dbos.Launch(dc); err != nil {
		return fmt.Errorf("dbos launch: %w", err)
	}
	return dbos.Shutdown(dc, 10*time.Second)
}

// runExecutor launches one DBOS executor, starts n workflows at once and waits for every result.
func runExecutor(ctx context.Context, url, schema string, n, id int) childResult {
	fail := func(err error) childResult { return childResult{Err: err.Error()} }
	dc, err := dbos.NewContext(ctx, dbos.Config{AppName: "agentrun-bench", DatabaseURL: url, DatabaseSchema: schema, Logger: quiet(),
		ExecutorID: fmt.Sprintf("bench-%d", id), SkipMigrations: true})
	if err != nil {
		return fail(fmt.Errorf("dbos context: %w", err))
	}
	dbos.RegisterWorkflow(dc, durableWorkflow)
	if err := dbos.Launch(dc); err != nil {
		return fail(fmt.Errorf("dbos launch: %w", err))
	}
	defer dbos.Shutdown(dc, 10*time.Second)
	// A warm-up call, so that the first workflow does not pay the model client's first dial alone.
	if _, err := callModel(ctx); err != nil {
		return fail(err)
	}
	cpu0 := selfCPU()
	r := childResult{StartNs: time.Now().UnixNano()}
	handles := make([]dbos.WorkflowHandle[int], 0, n)
	for i := range n {
		h, err := dbos.RunWorkflow(dc, durableWorkflow, i)
		if err != nil {
			return fail(fmt.Errorf("start workflow %d: %w", i, err))
		}
		handles = append(handles, h)
	}
	var firstErr error
	for _, h := range handles {
		if _, err := h.GetResult(); err != nil {
			firstErr = cmpOr(firstErr, err)
			continue
		}
		r.Succeeded++
	}
	r.EndNs = time.Now().UnixNano()
	r.CPUNs = int64(selfCPU() - cpu0)
	if firstErr != nil {
		r.Err = firstErr.Error()
	}
	return r
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

type pgCounters struct{ commits, walSyncs, walBytes int64 }

func readCounters(ctx context.Context, conn *pgx.Conn) pgCounters {
	var c pgCounters
	conn.Exec(ctx, "SELECT pg_stat_force_next_flush()")
	conn.Exec(ctx, "SELECT pg_stat_clear_snapshot()")
	conn.QueryRow(ctx, "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()").Scan(&c.commits)
	conn.QueryRow(ctx, "SELECT wal_sync, wal_bytes::bigint FROM pg_stat_wal").Scan(&c.walSyncs, &c.walBytes)
	return c
}

func dbosVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/dbos-inc/dbos-transact-golang" {
				return d.Version
			}
		}
	}
	return "unknown"
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "dbos: "+format+"\n", args...)
	os.Exit(1)
}
