package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/model/fake"
)

// world is one scenario's fresh data folder, scripted model server and `agentrun serve` process.
type world struct {
	dir    string
	model  *fake.Server
	proc   *exec.Cmd
	logf   *os.File
	exited chan struct{}
	url    string
	token  string
	hc     *http.Client
	// serverCPU is the server process's user+system CPU time over its life, set by stop.
	serverCPU time.Duration
}

// startWorld starts the scripted model server (zero latency) and `agentrun serve --data DIR`.
func startWorld(c config, root, name string, sc *fake.Script, conns int) (*world, error) {
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	srv, modelURL, err := fake.Start(sc)
	if err != nil {
		return nil, err
	}
	w := &world{model: srv}
	w.dir = filepath.Join(root, name)
	if err := os.MkdirAll(w.dir, 0o700); err != nil {
		srv.Close()
		return nil, err
	}
	w.logf, err = os.Create(filepath.Join(w.dir, "server.log"))
	if err != nil {
		srv.Close()
		return nil, err
	}
	level := "warn"
	if c.serverLogs {
		level = "debug"
	}
	cmd := exec.Command(c.bin, "serve", "--listen", "127.0.0.1:0", "--data", w.dir, "--log-level", level)
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AGENTRUN_") || strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "OPENAI_") || strings.HasPrefix(k, "OPENROUTER_") {
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = append(env, "AGENTRUN_HOME="+w.dir, "ANTHROPIC_API_KEY=bench-key", "ANTHROPIC_BASE_URL="+modelURL)
	cmd.Stdout, cmd.Stderr = w.logf, w.logf
	if err := cmd.Start(); err != nil {
		srv.Close()
		w.logf.Close()
		return nil, fmt.Errorf("start %s: %w", c.bin, err)
	}
	w.proc = cmd
	w.exited = make(chan struct{})
	go func() { cmd.Wait(); close(w.exited) }()
	w.hc = &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConns: conns + 4, MaxIdleConnsPerHost: conns + 4}}

	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var info struct {
			URL string `json:"url"`
			PID int    `json:"pid"`
		}
		b, err := os.ReadFile(filepath.Join(w.dir, "server.json"))
		// The data folder is fresh, so a server.json in it is this server's (its pid may differ
		// from cmd's when -bin is a wrapper script, e.g. one that runs the server under strace).
		if err == nil && json.Unmarshal(b, &info) == nil && info.URL != "" {
			if resp, err := w.hc.Get(info.URL + "/healthz"); err == nil {
				resp.Body.Close()
				w.url = info.URL
				tok, _ := os.ReadFile(filepath.Join(w.dir, "token"))
				w.token = strings.TrimSpace(string(tok))
				return w, nil
			}
		}
		select {
		case <-w.exited:
			w.stop()
			return nil, fmt.Errorf("server exited at start:\n%s", w.logTail())
		case <-time.After(20 * time.Millisecond):
		}
	}
	w.stop()
	return nil, fmt.Errorf("server did not come up in 30s:\n%s", w.logTail())
}

// stop ends the server (SIGTERM, then SIGKILL after 10 s) and the model server.
func (w *world) stop() {
	if w.proc != nil {
		w.proc.Process.Signal(syscall.SIGTERM)
		select {
		case <-w.exited:
		case <-time.After(10 * time.Second):
			w.proc.Process.Kill()
			<-w.exited
		}
		if ps := w.proc.ProcessState; ps != nil {
			w.serverCPU = ps.UserTime() + ps.SystemTime()
		}
		w.proc = nil
	}
	if w.model != nil {
		w.model.Close()
		w.model = nil
	}
	if w.logf != nil {
		w.logf.Close()
		w.logf = nil
	}
}

// cpuSample is CPU time used so far (zero where unknown).
type cpuSample struct{ serverUser, serverSys, self time.Duration }

func (w *world) cpu() cpuSample {
	var c cpuSample
	if w.proc != nil {
		c.serverUser, c.serverSys, _ = procCPU(w.proc.Process.Pid)
	}
	c.self = selfCPU()
	return c
}

// CPU is the CPU time used over a measured window, in CPU-milliseconds.
type CPU struct {
	ServerUserMs float64 `json:"serverUserMs"`
	ServerSysMs  float64 `json:"serverSysMs"`
	// BenchMs is this process: the HTTP client and the scripted model server.
	BenchMs float64 `json:"benchMs"`
}

func cpuSince(a, b cpuSample) CPU {
	return CPU{ServerUserMs: msf(b.serverUser - a.serverUser), ServerSysMs: msf(b.serverSys - a.serverSys), BenchMs: msf(b.self - a.self)}
}

func (c CPU) server() float64 { return c.ServerUserMs + c.ServerSysMs }

func (w *world) logTail() string {
	b, _ := os.ReadFile(filepath.Join(w.dir, "server.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
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

// createAgent creates an agent with the given tools through the seed's {"definition"} shape. The
// cost cap is raised so that no figure depends on the price table.
func (w *world) createAgent(id string, tools []string) error {
	return w.do("POST", "/v2/agents", map[string]any{"definition": map[string]any{
		"id": id, "tools": tools, "perRunMaxCostUSD": "1000.00"}}, nil)
}

// startRun starts a run of the agent and returns its name.
func (w *world) startRun(agent, input string) (string, error) {
	var run api.AgentRun
	if err := w.do("POST", "/v2/agents/"+agent+"/runs", map[string]any{"input": map[string]any{"content": input}}, &run); err != nil {
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

func (w *world) listRuns(agent string) ([]api.AgentRun, error) {
	var out struct {
		Items []api.AgentRun `json:"items"`
	}
	err := w.do("GET", "/v2/agentruns?agent="+agent, nil, &out)
	return out.Items, err
}
