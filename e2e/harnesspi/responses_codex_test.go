package harnesspi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/model/fake"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The pinned harness versions these tests drive (research/harnesses.md).
const (
	codexPackage = "@openai/codex@0.169.0"
	piPackage    = "@mariozechner/pi-coding-agent@0.73.1"
)

// respNPMInstall installs an npm package into a fresh folder and returns the path of its bin
// folder. It skips the test, saying why, when npm is missing or the registry cannot be reached.
func respNPMInstall(t *testing.T, pkg string) string {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skipf("npm is not installed, so %s cannot be installed: %v", pkg, err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--prefix", dir, pkg)
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	out, err := cmd.CombinedOutput()
	if err != nil {
		s := string(out)
		for _, unreachable := range []string{"ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "ECONNREFUSED", "ECONNRESET", "ENETUNREACH", "network"} {
			if strings.Contains(s, unreachable) || ctx.Err() != nil {
				t.Skipf("npm cannot reach the registry to install %s (%v): %s", pkg, err, lastLines(s, 5))
			}
		}
		t.Fatalf("npm install %s: %v\n%s", pkg, err, s)
	}
	return filepath.Join(dir, "node_modules", ".bin")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// respModelServer runs the real binary's `agentrun dev model-server` on a free port with script
// and returns its base URL.
func respModelServer(t *testing.T, script string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(BinPath, "dev", "model-server", "--script", path, "--addr", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start model server: %v", err)
	}
	log := &SyncBuffer{}
	urlc := make(chan string, 1)
	done := make(chan struct{})
	go func() { // owns stderr until the process exits
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(log, line)
			if _, rest, ok := strings.Cut(line, "listening on "); ok {
				select {
				case urlc <- strings.Fields(rest)[0]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-done
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("model server log:\n%s", log.String())
		}
	})
	select {
	case u := <-urlc:
		return u
	case <-done:
		t.Fatalf("model server exited:\n%s", log.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("model server did not start:\n%s", log.String())
	}
	return ""
}

// respCalls reads the calls the scripted server received.
func respCalls(t *testing.T, base string) []fake.Call {
	t.Helper()
	resp, err := http.Get(base + "/_fake/calls")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var calls []fake.Call
	if err := json.NewDecoder(resp.Body).Decode(&calls); err != nil {
		t.Fatal(err)
	}
	return calls
}

// respProxy is an HTTP proxy that refuses everything and records what was tried: given to a harness
// as its proxy, it shows any traffic that is not to the model server.
type respProxy struct {
	mu    sync.Mutex
	tried []string
	ln    net.Listener
}

func startRespProxy(t *testing.T) *respProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &respProxy{ln: ln}
	done := make(chan struct{})
	go func() { // owns the listener's connections until it closes
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			line, _ := bufio.NewReader(c).ReadString('\n')
			p.mu.Lock()
			p.tried = append(p.tried, strings.TrimSpace(line))
			p.mu.Unlock()
			_, _ = io.WriteString(c, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return p
}

func (p *respProxy) URL() string { return "http://" + p.ln.Addr().String() }

func (p *respProxy) Tried() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.tried...)
}

// proxyEnv sends every connection but those to 127.0.0.1 through the refusing proxy.
func (p *respProxy) env() []string {
	u := p.URL()
	return []string{"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "ALL_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u,
		"all_proxy=" + u, "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost"}
}

// cleanEnv is the test's environment without any model vendor's or agentrun's variables and with
// HOME in a temporary folder, so a harness reads no configuration of the machine's user.
func cleanEnv(t *testing.T) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "HOME" || strings.HasPrefix(k, "AGENTRUN_") || strings.HasPrefix(k, "ANTHROPIC_") || strings.HasPrefix(k, "OPENAI_") ||
			strings.HasPrefix(k, "CODEX_") || strings.HasPrefix(k, "PI_") || strings.Contains(strings.ToLower(k), "proxy") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "HOME="+t.TempDir())
}

const codexScript = `
entries:
  - name: hello
    match: "Say hello to the scripted server"
    turns:
      - text: "Hello from the scripted Responses server."
        usage: {input_tokens: 1200, output_tokens: 34, cache_read_input_tokens: 300}
  - name: exec
    match: "Run the marker command"
    turns:
      - text: "I will run it."
        tool_calls:
          - name: exec_command
            input: {cmd: "echo hello-from-tool > tool-ran.txt && cat tool-ran.txt"}
      - text: "The command printed: {{last_tool_result}}"
  - name: mcp
    match: "Ask the person"
    turns:
      - tool_calls:
          - name: ask_person
            input: {question: "Which region?"}
      - text: "The person chose {{last_tool_result}}."
`

// codexEvent is one line of `codex exec --json`.
type codexEvent struct {
	Type string `json:"type"`
	Item struct {
		Type             string          `json:"type"`
		Text             string          `json:"text"`
		Command          string          `json:"command"`
		AggregatedOutput string          `json:"aggregated_output"`
		ExitCode         *int            `json:"exit_code"`
		Status           string          `json:"status"`
		Server           string          `json:"server"`
		Tool             string          `json:"tool"`
		Arguments        json.RawMessage `json:"arguments"`
	} `json:"item"`
	Usage struct {
		InputTokens       int64 `json:"input_tokens"`
		CachedInputTokens int64 `json:"cached_input_tokens"`
		OutputTokens      int64 `json:"output_tokens"`
	} `json:"usage"`
}

// The scripted model server's Responses format is what Codex speaks: the real Codex CLI, pointed at
// `agentrun dev model-server` by the configuration of research/harnesses.md, completes a text turn
// (and reads its usage), a turn with an exec_command call whose output it sends back, and a call of
// an MCP tool, which Codex lists inside a namespace and takes back only with that namespace. Every
// other connection goes to a proxy that refuses it; none is tried.
func TestScriptedResponsesCodex(t *testing.T) {
	t.Parallel()
	bin := respNPMInstall(t, codexPackage)
	base := respModelServer(t, codexScript)
	proxy := startRespProxy(t)

	// An MCP server of one tool, ask_person, over streamable HTTP (the official Go SDK).
	var asked atomic.Int32
	srv := mcp.NewServer(&mcp.Implementation{Name: "agentrun-e2e", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "ask_person", Description: "Ask the person a question.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"question":{"type":"string"}},"required":["question"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			asked.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Europe"}}}, nil
		})
	mcpSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(mcpSrv.Close)

	home := t.TempDir()
	config := fmt.Sprintf(`model = "scripted-model"
model_provider = "scripted"
check_for_update_on_startup = false
model_context_window = 200000
web_search = "disabled"
[model_providers.scripted]
name = "Scripted model server"
base_url = "%s/v1"
env_key = "SCRIPTED_API_KEY"
wire_api = "responses"
[analytics]
enabled = false
[agents]
enabled = false
[features]
plugins = false
remote_plugin = false
apps = false
api_key_model_discovery = false
goals = false
`, base)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(cleanEnv(t), "CODEX_HOME="+home, "SCRIPTED_API_KEY=test-key")
	env = append(env, proxy.env()...)

	run := func(prompt string, extra ...string) (string, []codexEvent) {
		t.Helper()
		work := t.TempDir()
		args := append([]string{"exec", "--skip-git-repo-check", "--json",
			// The command runs in the test's own folder; Codex's sandbox cannot install its helper
			// under /tmp (research/harnesses.md), and inside agentrun it runs in the run's computer.
			"--dangerously-bypass-approvals-and-sandbox"}, extra...)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "codex"), append(args, prompt)...)
		cmd.Dir, cmd.Env = work, env
		var stderr SyncBuffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("codex exec %q: %v\nstdout:\n%s\nstderr:\n%s", prompt, err, out, stderr.String())
		}
		var evs []codexEvent
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var ev codexEvent
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("codex printed a line that is not JSON: %q: %v", line, err)
			}
			evs = append(evs, ev)
		}
		if last := evs[len(evs)-1]; last.Type != "turn.completed" {
			t.Fatalf("codex's last event is %s, want turn.completed:\n%s\nstderr:\n%s", last.Type, out, stderr.String())
		}
		return work, evs
	}
	messages := func(evs []codexEvent) []string {
		var out []string
		for _, ev := range evs {
			if ev.Type == "item.completed" && ev.Item.Type == "agent_message" {
				out = append(out, ev.Item.Text)
			}
		}
		return out
	}

	t.Run("text", func(t *testing.T) {
		_, evs := run("Say hello to the scripted server")
		if got := messages(evs); len(got) != 1 || got[0] != "Hello from the scripted Responses server." {
			t.Errorf("codex said %q", got)
		}
		// The usage of response.completed, read by Codex: input_tokens counts the cached part.
		if u := evs[len(evs)-1].Usage; u.InputTokens != 1500 || u.CachedInputTokens != 300 || u.OutputTokens != 34 {
			t.Errorf("codex read the usage as %+v, want 1500 input (300 cached), 34 output", u)
		}
	})

	t.Run("exec_command", func(t *testing.T) {
		work, evs := run("Run the marker command")
		var ran *codexEvent
		for i, ev := range evs {
			if ev.Type == "item.completed" && ev.Item.Type == "command_execution" {
				ran = &evs[i]
			}
		}
		if ran == nil || ran.Item.ExitCode == nil || *ran.Item.ExitCode != 0 || !strings.Contains(ran.Item.Command, "echo hello-from-tool") ||
			ran.Item.AggregatedOutput != "hello-from-tool\n" {
			t.Fatalf("codex ran no command or not this one: %+v", ran)
		}
		if b, err := os.ReadFile(filepath.Join(work, "tool-ran.txt")); err != nil || string(b) != "hello-from-tool\n" {
			t.Errorf("tool-ran.txt = %q, %v", b, err)
		}
		// The second reply quotes the function_call_output Codex sent back.
		got := messages(evs)
		if len(got) != 2 || got[0] != "I will run it." || !strings.HasPrefix(got[1], "The command printed: ") ||
			!strings.Contains(got[1], "Process exited with code 0") || !strings.Contains(got[1], "hello-from-tool") {
			t.Errorf("codex said %q", got)
		}
	})

	t.Run("mcp tool in a namespace", func(t *testing.T) {
		_, evs := run("Ask the person which region", "-c", fmt.Sprintf(`mcp_servers.agentrun={url=%q}`, mcpSrv.URL))
		var call *codexEvent
		for i, ev := range evs {
			if ev.Type == "item.completed" && ev.Item.Type == "mcp_tool_call" {
				call = &evs[i]
			}
		}
		if call == nil || call.Item.Server != "agentrun" || call.Item.Tool != "ask_person" || call.Item.Status != "completed" ||
			string(call.Item.Arguments) != `{"question":"Which region?"}` {
			t.Fatalf("codex made no call of the MCP tool or not this one: %+v", call)
		}
		if n := asked.Load(); n != 1 {
			t.Errorf("the MCP tool ran %d times, want 1", n)
		}
		if got := messages(evs); len(got) != 1 || !strings.HasPrefix(got[0], "The person chose ") || !strings.Contains(got[0], "Europe") {
			t.Errorf("codex said %q", got)
		}
	})

	// What the scripted server received: one streamed Responses call per turn, each answered in full,
	// matched by the prompt (after Codex's own context message) and counted by its turns.
	want := map[string]int{"hello/0": 1, "exec/0": 1, "exec/1": 1, "mcp/0": 1, "mcp/1": 1}
	got := map[string]int{}
	for _, c := range respCalls(t, base) {
		if c.Format != fake.FormatResponses || !c.Stream || !c.Completed || c.Status != 200 {
			t.Errorf("call %+v: want a completed streamed Responses call", c)
		}
		if !strings.Contains(c.FirstUser, "<environment_context>") {
			t.Errorf("call %+v: the first user text lacks Codex's environment context", c)
		}
		got[fmt.Sprintf("%s/%d", c.Entry, c.Turn)]++
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("calls by entry/turn %v, want %v", got, want)
	}
	if tried := proxy.Tried(); len(tried) > 0 {
		t.Errorf("codex tried other traffic: %q", tried)
	}
}

const piScript = `
entries:
  - name: hello
    match: "Say hello to the scripted server"
    turns:
      - text: "Hello from the scripted Responses server."
        usage: {input_tokens: 1200, output_tokens: 34, cache_read_input_tokens: 300}
  - name: bash
    match: "Run the marker command"
    turns:
      - text: "I will run it."
        tool_calls:
          - name: bash
            input: {command: "echo hello-from-pi > pi-ran.txt && cat pi-ran.txt"}
      - text: "The command printed: {{last_tool_result}}"
`

// piEvent is one line of `pi --mode json`.
type piEvent struct {
	Type    string `json:"type"`
	Message struct {
		Role    string `json:"role"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StopReason string `json:"stopReason"`
		Usage      struct {
			Input     int64 `json:"input"`
			Output    int64 `json:"output"`
			CacheRead int64 `json:"cacheRead"`
		} `json:"usage"`
	} `json:"message"`
	ToolName string `json:"toolName"`
	IsError  bool   `json:"isError"`
	Result   struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
}

// pi in its openai-responses mode, pointed at `agentrun dev model-server` by models.json, completes a
// text turn (reading its usage) and a turn with a call of its bash tool whose output it sends back.
func TestScriptedResponsesPi(t *testing.T) {
	t.Parallel()
	bin := respNPMInstall(t, piPackage)
	base := respModelServer(t, piScript)
	agentDir := t.TempDir()
	models := fmt.Sprintf(`{"providers": {"scripted": {"baseUrl": "%s/v1", "api": "openai-responses", "apiKey": "test-key",
  "models": [{"id": "scripted-model"}]}}}`, base)
	if err := os.WriteFile(filepath.Join(agentDir, "models.json"), []byte(models), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(cleanEnv(t), "PI_CODING_AGENT_DIR="+agentDir, "PI_OFFLINE=1", "PI_TELEMETRY=0")

	run := func(prompt string) (string, []piEvent) {
		t.Helper()
		work := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "pi"), "--mode", "json", "--no-session", "--model", "scripted/scripted-model", prompt)
		cmd.Dir, cmd.Env = work, env
		var stderr SyncBuffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("pi %q: %v\nstdout:\n%s\nstderr:\n%s", prompt, err, out, stderr.String())
		}
		var evs []piEvent
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var ev piEvent
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("pi printed a line that is not JSON: %q: %v", line, err)
			}
			evs = append(evs, ev)
		}
		return work, evs
	}
	// answers are the assistant messages' texts and stop reasons, in order.
	answers := func(evs []piEvent) (texts []string, stops []string, last piEvent) {
		for _, ev := range evs {
			if ev.Type == "message_end" && ev.Message.Role == "assistant" {
				var b strings.Builder
				for _, c := range ev.Message.Content {
					if c.Type == "text" {
						b.WriteString(c.Text)
					}
				}
				texts, stops, last = append(texts, b.String()), append(stops, ev.Message.StopReason), ev
			}
		}
		return texts, stops, last
	}

	t.Run("text", func(t *testing.T) {
		_, evs := run("Say hello to the scripted server")
		texts, stops, last := answers(evs)
		if len(texts) != 1 || texts[0] != "Hello from the scripted Responses server." || stops[0] != "stop" {
			t.Errorf("pi said %q (stop %q)", texts, stops)
		}
		if u := last.Message.Usage; u.Input != 1200 || u.CacheRead != 300 || u.Output != 34 {
			t.Errorf("pi read the usage as %+v, want 1200 input, 300 cache reads, 34 output", u)
		}
	})

	t.Run("bash", func(t *testing.T) {
		work, evs := run("Run the marker command")
		var ran *piEvent
		for i, ev := range evs {
			if ev.Type == "tool_execution_end" {
				ran = &evs[i]
			}
		}
		if ran == nil || ran.ToolName != "bash" || ran.IsError || len(ran.Result.Content) == 0 || ran.Result.Content[0].Text != "hello-from-pi\n" {
			t.Fatalf("pi ran no bash command or not this one: %+v", ran)
		}
		if b, err := os.ReadFile(filepath.Join(work, "pi-ran.txt")); err != nil || string(b) != "hello-from-pi\n" {
			t.Errorf("pi-ran.txt = %q, %v", b, err)
		}
		texts, stops, _ := answers(evs)
		if len(texts) != 2 || texts[0] != "I will run it." || stops[0] != "toolUse" || texts[1] != "The command printed: hello-from-pi\n" {
			t.Errorf("pi said %q (stops %q)", texts, stops)
		}
	})

	want := map[string]int{"hello/0": 1, "bash/0": 1, "bash/1": 1}
	got := map[string]int{}
	for _, c := range respCalls(t, base) {
		if c.Format != fake.FormatResponses || !c.Stream || !c.Completed || c.Status != 200 {
			t.Errorf("call %+v: want a completed streamed Responses call", c)
		}
		got[fmt.Sprintf("%s/%d", c.Entry, c.Turn)]++
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("calls by entry/turn %v, want %v", got, want)
	}
}
