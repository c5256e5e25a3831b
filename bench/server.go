package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/model/fake"
)

// proc is one agentrun child process (a server or a runner) with its log file.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	logf    *os.File
	exited  chan struct{}
	// pid is the process to measure (for the server, server.json's pid, which differs from
	// cmd's when -bin is a wrapper script).
	pid int
	// cpu is the process's user+system CPU time over its life, set once it has exited.
	cpu time.Duration
}

// startProc starts bin with args and env, its output going to logPath.
func startProc(name, bin string, args, env []string, logPath string) (*proc, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, logf: logf, exited: make(chan struct{}), pid: cmd.Process.Pid}
	go func() {
		cmd.Wait()
		if ps := cmd.ProcessState; ps != nil {
			p.cpu = ps.UserTime() + ps.SystemTime()
		}
		logf.Close()
		close(p.exited)
	}()
	return p, nil
}

func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop ends the process (SIGTERM, then SIGKILL after 10 s) and waits for it.
func (p *proc) stop() {
	if p == nil || p.cmd == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// kill sends SIGKILL and waits until the process is gone.
func (p *proc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

func (p *proc) logTail() string {
	b, _ := os.ReadFile(p.logPath)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// procStatus reads fields of /proc/PID/status (VmRSS, VmHWM, Threads...), in kB where a size.
func procStatus(pid int) map[string]int64 {
	out := map[string]int64{}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fs := strings.Fields(v)
		if len(fs) == 0 {
			continue
		}
		if n, err := strconv.ParseInt(fs[0], 10, 64); err == nil {
			out[k] = n
		}
	}
	return out
}

// worldOpts says how a world's server runs.
type worldOpts struct {
	// storeURL is AGENTRUN_STORE_URL for the server and its runners ("": SQLite in the data folder).
	storeURL string
	// noRunner starts the server with --no-runner (runners are started with startRunner).
	noRunner bool
	// reuse keeps an existing data folder (a restart) instead of requiring a fresh one.
	reuse bool
}

// world is one scenario's data folder, scripted model server, `agentrun serve` process and (on
// PostgreSQL) runner processes.
type world struct {
	c        config
	name     string
	dir      string
	opts     worldOpts
	model    *fake.Server
	modelURL string
	// caFile: the scripted server's certificate, when it serves HTTPS (-model-tls).
	caFile  string
	sealKey string
	srv     *proc
	runners []*proc
	url     string
	token   string
	hc      *http.Client
	// serverCPU is the server process's user+system CPU time over its life, set by stop.
	serverCPU time.Duration
	// runnerEnv is extra environment for the runner of that name (AGENTRUN_PPROF_ADDR for
	// -pprof-dir): w.env drops every AGENTRUN_ variable of the bench's own environment.
	runnerEnv map[string][]string
}

// startWorld starts the scripted model server (zero latency) and `agentrun serve --data DIR`.
func startWorld(c config, root, name string, sc *fake.Script, conns int, opts ...worldOpts) (*world, error) {
	var o worldOpts
	if len(opts) > 0 {
		o = opts[0]
	}
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	var srv *fake.Server
	var modelURL string
	var certPEM []byte
	var err error
	if c.modelTLS {
		srv, modelURL, certPEM, err = fake.StartTLS(sc)
	} else {
		srv, modelURL, err = fake.Start(sc)
	}
	if err != nil {
		return nil, err
	}
	w := &world{c: c, name: name, opts: o, model: srv, modelURL: modelURL}
	if o.storeURL != "" {
		// Every process of one deployment shares the seal key (each would otherwise generate its own).
		var k [32]byte
		rand.Read(k[:])
		w.sealKey = base64.StdEncoding.EncodeToString(k[:])
	}
	w.dir = filepath.Join(root, name)
	if err := os.MkdirAll(w.dir, 0o700); err != nil {
		srv.Close()
		return nil, err
	}
	if certPEM != nil {
		// The agentrun processes trust the scripted server's certificate (and only it) as Go
		// programs do on Linux: SSL_CERT_FILE replaces the system's roots.
		w.caFile = filepath.Join(w.dir, "model-ca.pem")
		if err := os.WriteFile(w.caFile, certPEM, 0o600); err != nil {
			srv.Close()
			return nil, err
		}
	}
	w.hc = &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConns: conns + 4, MaxIdleConnsPerHost: conns + 4}}
	if err := w.startServer(); err != nil {
		w.stop()
		return nil, err
	}
	return w, nil
}

// env is the environment of the world's agentrun processes: this process's, without agentrun and
// model-vendor settings, plus the scripted model server and the store.
func (w *world) env(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AGENTRUN_") || strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "OPENAI_") || strings.HasPrefix(k, "OPENROUTER_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "AGENTRUN_HOME="+home, "ANTHROPIC_API_KEY=bench-key", "ANTHROPIC_BASE_URL="+w.modelURL)
	if w.opts.storeURL != "" {
		env = append(env, "AGENTRUN_STORE_URL="+w.opts.storeURL, "AGENTRUN_SEAL_KEY="+w.sealKey)
	}
	if w.caFile != "" {
		env = append(env, "SSL_CERT_FILE="+w.caFile)
	}
	return env
}

func (w *world) logLevel() string {
	if w.c.serverLogs {
		return "debug"
	}
	return "warn"
}

// startServer starts (or restarts) `agentrun serve` on the world's data folder and waits until it
// answers.
func (w *world) startServer() error {
	os.Remove(filepath.Join(w.dir, "server.json"))
	args := []string{"serve", "--listen", "127.0.0.1:0", "--data", w.dir, "--log-level", w.logLevel()}
	if w.opts.noRunner {
		args = append(args, "--no-runner")
	}
	logName := "server.log"
	if w.srv != nil {
		logName = fmt.Sprintf("server-%d.log", time.Now().UnixNano())
	}
	p, err := startProc("server", w.c.bin, args, w.env(w.dir), filepath.Join(w.dir, logName))
	if err != nil {
		return err
	}
	w.srv = p
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var info struct {
			URL string `json:"url"`
			PID int    `json:"pid"`
		}
		b, err := os.ReadFile(filepath.Join(w.dir, "server.json"))
		// server.json was removed above, so one in the folder is this server's (its pid may differ
		// from cmd's when -bin is a wrapper script, e.g. one that runs the server under strace).
		if err == nil && json.Unmarshal(b, &info) == nil && info.URL != "" {
			if resp, err := w.hc.Get(info.URL + "/healthz"); err == nil {
				resp.Body.Close()
				w.url = info.URL
				if info.PID > 0 {
					p.pid = info.PID
				}
				tok, _ := os.ReadFile(filepath.Join(w.dir, "token"))
				w.token = strings.TrimSpace(string(tok))
				return nil
			}
		}
		select {
		case <-p.exited:
			return fmt.Errorf("server exited at start:\n%s", p.logTail())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("server did not come up in 30s:\n%s", p.logTail())
}

// stopServer stops the server process only (the model server and runners stay).
func (w *world) stopServer() {
	if w.srv != nil {
		w.srv.stop()
		w.serverCPU += w.srv.cpu
		w.srv = nil
	}
}

// startRunner starts `agentrun runner --name NAME` with its own data folder (no shared disk) on the
// world's store. It does not wait for it; see waitRunners.
func (w *world) startRunner(name string, extra ...string) (*proc, error) {
	data := filepath.Join(w.dir, "runner-"+name)
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, err
	}
	args := append([]string{"runner", "--name", name, "--data", data, "--log-level", w.logLevel()}, extra...)
	p, err := startProc(name, w.c.bin, args, append(w.env(data), w.runnerEnv[name]...), filepath.Join(w.dir, "runner-"+name+".log"))
	if err != nil {
		return nil, err
	}
	w.runners = append(w.runners, p)
	return p, nil
}

// waitRunners waits until GET /v2/runners lists every named runner with a heartbeat at or after since.
func (w *world) waitRunners(since time.Time, procs ...*proc) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var out struct {
			Items []struct {
				Name        string    `json:"name"`
				HeartbeatAt time.Time `json:"heartbeatAt"`
			} `json:"items"`
		}
		if err := w.do("GET", "/v2/runners", nil, &out); err != nil {
			return err
		}
		up := 0
		for _, p := range procs {
			for _, it := range out.Items {
				if it.Name == p.name && !it.HeartbeatAt.Before(since.Add(-time.Second)) {
					up++
					break
				}
			}
		}
		if up == len(procs) {
			return nil
		}
		for _, p := range procs {
			if !p.alive() {
				return fmt.Errorf("runner %s exited at start:\n%s", p.name, p.logTail())
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d runners registered after 30s", up, len(procs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stopRunners stops every runner process (SIGTERM) and forgets them.
func (w *world) stopRunners() {
	for _, p := range w.runners {
		p.stop()
	}
	w.runners = nil
}

// stop ends the runners, the server and the model server.
func (w *world) stop() {
	w.stopRunners()
	w.stopServer()
	if w.model != nil {
		w.model.Close()
		w.model = nil
	}
}

// cpuSample is CPU time used so far (zero where unknown).
type cpuSample struct{ serverUser, serverSys, runners, postgres, self time.Duration }

func (w *world) cpu() cpuSample {
	var c cpuSample
	if w.srv != nil {
		c.serverUser, c.serverSys, _ = procCPU(w.srv.pid)
	}
	for _, p := range w.runners {
		if p.alive() {
			u, s, _ := procCPU(p.pid)
			c.runners += u + s
		} else {
			c.runners += p.cpu
		}
	}
	if w.opts.storeURL != "" {
		c.postgres = postgresCPU()
	}
	c.self = selfCPU()
	return c
}

// CPU is the CPU time used over a measured window, in CPU-milliseconds.
type CPU struct {
	ServerUserMs float64 `json:"serverUserMs"`
	ServerSysMs  float64 `json:"serverSysMs"`
	// RunnersMs is the runner processes (PostgreSQL worlds), user+system.
	RunnersMs float64 `json:"runnersMs,omitempty"`
	// PostgresMs is every process named postgres on this host (backends and the postmaster's
	// reaped children), user+system.
	PostgresMs float64 `json:"postgresMs,omitempty"`
	// BenchMs is this process: the HTTP client and the scripted model server.
	BenchMs float64 `json:"benchMs"`
}

func cpuSince(a, b cpuSample) CPU {
	return CPU{ServerUserMs: msf(b.serverUser - a.serverUser), ServerSysMs: msf(b.serverSys - a.serverSys),
		RunnersMs: msf(b.runners - a.runners), PostgresMs: msf(b.postgres - a.postgres), BenchMs: msf(b.self - a.self)}
}

func (c CPU) server() float64 { return c.ServerUserMs + c.ServerSysMs }

func (c CPU) total() float64 { return c.server() + c.RunnersMs + c.PostgresMs + c.BenchMs }

func (w *world) logTail() string {
	if w.srv == nil {
		return ""
	}
	return w.srv.logTail()
}

// do makes an API request; a non-2xx answer is an error. out (if non-nil) receives the JSON body.
func (w *world) do(method, path string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		j, _ := json.Marshal(body)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, w.url+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+w.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, bytes.TrimSpace(data))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s %s: decode: %w", method, path, err)
		}
	}
	return nil
}

// benchModel is the model the bench's agents name. An agent that names no model is routed: each
// prompt first makes a routing call (a journal step, and a model call the scripted server leaves
// unanswered), which is not part of the runs measured here.
const benchModel = "claude-sonnet-4-5"

// createAgent creates an agent with the given tools through the seed's {"definition"} shape. The
// cost cap is raised so that no figure depends on the price table.
func (w *world) createAgent(id string, tools []string) error {
	return w.do("POST", "/v2/agents", map[string]any{"definition": map[string]any{
		"id": id, "tools": tools, "perRunMaxCostUSD": "1000.00", "maxToolCalls": 1000, "model": map[string]any{"name": benchModel}}}, nil)
}

// startRun starts a run of the agent and returns its name.
func (w *world) startRun(agent, input string) (string, error) {
	return w.startRunBody(agent, map[string]any{"input": map[string]any{"content": input}})
}

// startRunBody is POST /v2/agents/AGENT/runs with the seed's body shape.
func (w *world) startRunBody(agent string, body map[string]any) (string, error) {
	var run api.AgentRun
	if err := w.do("POST", "/v2/agents/"+agent+"/runs", body, &run); err != nil {
		return "", err
	}
	if run.Metadata.Name == "" {
		return "", errors.New("created run has no name")
	}
	return run.Metadata.Name, nil
}

func (w *world) getRun(name string) (api.AgentRun, error) {
	var r api.AgentRun
	err := w.do("GET", "/v2/agentruns/"+name, nil, &r)
	return r, err
}

func (w *world) steps(name string) ([]api.Step, error) {
	var out struct {
		Items []api.Step `json:"items"`
	}
	err := w.do("GET", "/v2/agentruns/"+name+"/steps", nil, &out)
	return out.Items, err
}

func (w *world) events(name string) ([]api.Event, error) {
	var out struct {
		Items []api.Event `json:"items"`
	}
	err := w.do("GET", "/v2/agentruns/"+name+"/events", nil, &out)
	return out.Items, err
}

func (w *world) listRuns(agent string) ([]api.AgentRun, error) {
	var out struct {
		Items []api.AgentRun `json:"items"`
	}
	err := w.do("GET", "/v2/agentruns?agent="+agent, nil, &out)
	return out.Items, err
}

// succeededSpan counts the runs that succeeded and the span they ran in (the first start and the
// last finish among them); failMsg describes the first run that did not succeed ("" if none).
func succeededSpan(runs []api.AgentRun) (succeeded int, first, last time.Time, failMsg string) {
	for _, r := range runs {
		if r.Status.Phase != api.PhaseSucceeded {
			if failMsg == "" {
				failMsg = fmt.Sprintf("%s: %s (%s: %s)", r.Metadata.Name, r.Status.Phase, r.Status.Reason, r.Status.Message)
			}
			continue
		}
		succeeded++
		if st := r.Status.StartedAt; st != nil && (first.IsZero() || st.Before(first)) {
			first = *st
		}
		if f := r.Status.FinishedAt; f != nil && f.After(last) {
			last = *f
		}
	}
	return succeeded, first, last, failMsg
}

// phaseCounts reads the run counts by phase from GET /metrics (agentrun_runs{phase="..."}), a
// cheap GROUP BY in the store, to watch thousands of runs without listing them.
func (w *world) phaseCounts() (map[string]int, error) {
	req, err := http.NewRequest("GET", w.url+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+w.token)
	resp, err := w.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET /metrics: HTTP %d", resp.StatusCode)
	}
	out := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, `agentrun_runs{phase="`)
		if !ok {
			continue
		}
		phase, val, ok := strings.Cut(rest, `"} `)
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err == nil {
			out[phase] = int(f)
		}
	}
	return out, sc.Err()
}

// waitCounts polls phaseCounts until done(counts) or the timeout; it reports progress every 3 s.
func (w *world) waitCounts(what string, timeout time.Duration, done func(map[string]int) (bool, string)) error {
	deadline := time.Now().Add(timeout)
	last := time.Now()
	for {
		counts, err := w.phaseCounts()
		if err != nil {
			return err
		}
		ok, desc := done(counts)
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: still %s after %s", what, desc, timeout)
		}
		if time.Since(last) > 3*time.Second {
			last = time.Now()
			progress("%s: %s", what, desc)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ended is how many runs have stopped moving: finished, or waiting for a person to resolve a step.
func ended(counts map[string]int) int {
	return counts[string(api.PhaseSucceeded)] + counts[string(api.PhaseFailed)] + counts[string(api.PhaseCancelled)] + counts[string(api.PhaseNeedsResolution)]
}
