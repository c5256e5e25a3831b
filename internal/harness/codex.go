package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"agentrun.dev/agentrun/internal/gateway"
)

// codex is OpenAI's Codex CLI run as `codex app-server` (JSON-RPC 2.0, one JSON a line on stdio;
// research/harnesses.md 4.2): its model calls go to the gateway's Responses endpoint, our tools are
// its only MCP server, the tools of its own that config can turn off are off (shell, unified exec,
// view_image, request_user_input, web search, plugins, apps, multi-agent, goals), and the approval
// requests it still sends (commands, file changes, extra permissions) are answered by Permit.
type codex struct{}

// CodexVersion is the pinned @openai/codex version.
const CodexVersion = "0.169.0"

// configPaths: what Codex reads from CODEX_HOME that decides what it may do (see guard.go): its
// config, hooks, global instructions, rules and skills. A project's .codex (in /workspace, which
// the agent's commands can write) is read only for a project config.toml marks trusted, and ours
// marks none; hooks are off on the command line too (-c features.hooks=false), above every file.
func (codex) configPaths() []ConfigPath {
	return []ConfigPath{{Rel: "codex/config.toml"}, {Rel: "codex/hooks.json"}, {Rel: "codex/AGENTS.md"},
		{Rel: "codex/AGENTS.override.md"}, {Rel: "codex/rules", Dir: true}, {Rel: "codex/skills", Dir: true}}
}

func (codex) Name() string          { return "codex" }
func (codex) Wires() []gateway.Wire { return []gateway.Wire{gateway.WireResponses} }
func (codex) Package() Package {
	return Package{NPM: "@openai/codex", Version: CodexVersion, Bin: "codex"}
}

// codexTokenEnv holds the run's gateway token in Codex's environment: the model provider's env_key
// and the MCP server's bearer_token_env_var both name it, so the token is in no file.
const codexTokenEnv = "AGENTRUN_GATEWAY_TOKEN"

// tomlString quotes s as a TOML basic string (JSON's escapes are a subset TOML reads the same).
func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// codexConfig is CODEX_HOME/config.toml for one run. Codex falls back to its defaults (OpenAI's
// endpoint, every tool) when the file does not parse, so it is built from fixed text and quoted
// values only, and the driver fails the start when Codex says it ignored it (see codexBadConfig).
func codexConfig(s Session) string {
	var hdr []string
	for k, v := range s.Headers {
		hdr = append(hdr, tomlString(k)+" = "+tomlString(v))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `model = %s
model_provider = "agentrun"
check_for_update_on_startup = false
model_context_window = 200000
web_search = "disabled"
# Nothing of the run folder but what our tools return: a request must be the same when the harness
# starts again (replay), so no AGENTS.md the run wrote, no date or cwd block that changes overnight.
project_doc_max_bytes = 0
include_environment_context = false
[history]
persistence = "none"
# The working folder's own .codex (config.toml, hooks.json, skills: the agent's commands write
# there) is not read: Codex reads a project's configuration only when it is trusted.
[projects.%s]
trust_level = "untrusted"
[model_providers.agentrun]
name = "agentrun gateway"
base_url = %s
env_key = %q
wire_api = "responses"
# The gateway retries the vendor itself; a refusal from it means the run stopped.
request_max_retries = 0
stream_max_retries = 0
http_headers = { %s }
[mcp_servers.%s]
url = %s
bearer_token_env_var = %q
# Our MCP server's calls pass our approvals; Codex need not ask about them too.
default_tools_approval_mode = "approve"
supports_parallel_tool_calls = false
startup_timeout_sec = 30
# A tool call may run long (a build, a person's answer is a park, not a wait): no timeout of its own.
tool_timeout_sec = 86400
[analytics]
enabled = false
# None of Codex's own skills (its bundled imagegen and others); the run's skills are in
# CODEX_HOME/skills for $NAME mentions, and not listed: the list has the model read SKILL.md with
# Codex's shell, which is off (the run's skill tool reads them).
[skills]
include_instructions = false
[skills.bundled]
enabled = false
[agents]
enabled = false
[tools]
experimental_request_user_input = { enabled = false }
[features]
plugins = false
remote_plugin = false
apps = false
api_key_model_discovery = false
goals = false
hooks = false
shell_tool = false
unified_exec = false
view_image = false
image_generation = false
`, tomlString(s.Model), tomlString(s.Dir), tomlString(s.GatewayURL), codexTokenEnv, strings.Join(hdr, ", "),
		s.MCPName, tomlString(s.MCPURL), codexTokenEnv)
	return b.String()
}

func (c codex) Start(ctx context.Context, s Session) (Process, error) {
	codexHome := filepath.Join(s.Home, "codex")
	for _, d := range []string{filepath.Join(s.Home, "tmp"), codexHome} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("harness home: %w", err)
		}
	}
	for name, b := range map[string]string{"config.toml": codexConfig(s), "hooks.json": `{"hooks": {}}` + "\n", "AGENTS.md": "", "AGENTS.override.md": ""} {
		if err := os.WriteFile(filepath.Join(codexHome, name), []byte(b), 0o600); err != nil {
			return nil, fmt.Errorf("harness codex config: %w", err)
		}
	}
	// The run's skills where Codex's loader finds a user's (CODEX_HOME/skills): an input naming
	// one as $NAME makes Codex put its SKILL.md into the conversation itself. Its list of skills
	// for implicit use stays off (skills.include_instructions): it has the model open SKILL.md
	// with Codex's shell, which is off, so the run's skill tool is the way there.
	if err := WriteSkills(filepath.Join(codexHome, "skills"), s.Skills); err != nil {
		return nil, fmt.Errorf("harness skills: %w", err)
	}
	env := append(append([]string{}, s.Env...),
		"CODEX_HOME="+codexHome,
		codexTokenEnv+"="+s.Token,
		// Its own logs stay quiet on stderr, which the ExitError tail shows.
		"RUST_LOG=error")
	// log_dir is Codex's default (CODEX_HOME/log), given on the command line so that ps (and the
	// tests) see which run's folder a codex process belongs to.
	args := []string{"app-server", "-c", "log_dir=" + tomlString(filepath.Join(codexHome, "log")), "-c", "features.hooks=false"}
	cmd, err := s.Command(ctx, c.Name(), args, env)
	if err != nil {
		return nil, err
	}
	p := &codexProc{cmd: cmd, permit: s.Permit, mcp: s.MCPName}
	if err := p.handshake(ctx, s); err != nil {
		cmd.Stop()
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		var ee *ExitError
		if errors.As(err, &ee) {
			return nil, ee
		}
		return nil, cmd.Exit(err.Error())
	}
	return p, nil
}

type codexProc struct {
	cmd    *Cmd
	permit Permit
	mcp    string
	thread string
	next   int
	// mu orders writes to stdin and guards turn (the turn in flight, for Interrupt, which comes
	// from another goroutine than Turn's); interrupted is set by Interrupt until turn/completed.
	mu          sync.Mutex
	turn        string
	interrupted atomic.Bool
}

// Interrupt is app-server's turn/interrupt of the turn in flight; its answer is read (and
// ignored) by Turn, which returns when the turn completes as interrupted.
func (p *codexProc) Interrupt() error {
	p.mu.Lock()
	turn := p.turn
	p.mu.Unlock()
	if turn == "" {
		return errors.New("codex: no turn in flight to interrupt")
	}
	p.interrupted.Store(true)
	return p.send(map[string]any{"id": "agentrun-interrupt", "method": "turn/interrupt", "params": map[string]any{"threadId": p.thread, "turnId": turn}})
}

// codexMsg is a JSON-RPC message from app-server: a response (id, result or error), a request (id
// and method) or a notification (method only).
type codexMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (p *codexProc) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err = p.cmd.Stdin.Write(append(b, '\n'))
	return err
}

// call sends a request and waits for its response, answering server requests meanwhile.
func (p *codexProc) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	p.next++
	id := p.next
	if err := p.send(map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return nil, p.cmd.Exit(method + ": " + err.Error())
	}
	for {
		m, err := p.read(ctx)
		if err != nil {
			return nil, err
		}
		if m.Method == "" && string(m.ID) == strconv.Itoa(id) {
			if m.Error != nil {
				return nil, &ExitError{Harness: "codex", Err: fmt.Errorf("%s: %s (code %d)", method, m.Error.Message, m.Error.Code), Tail: p.cmd.Tail()}
			}
			return m.Result, nil
		}
		if m.Method != "" && m.ID != nil {
			if err := p.answer(ctx, m); err != nil {
				return nil, err
			}
		}
	}
}

// read returns the next protocol message.
func (p *codexProc) read(ctx context.Context) (codexMsg, error) {
	for {
		var line string
		var ok bool
		select {
		case <-ctx.Done():
			return codexMsg{}, ctx.Err()
		case line, ok = <-p.cmd.Lines:
		}
		if !ok {
			if ctx.Err() != nil {
				return codexMsg{}, ctx.Err()
			}
			return codexMsg{}, p.cmd.Exit("exited before answering")
		}
		var m codexMsg
		if json.Unmarshal([]byte(line), &m) != nil {
			continue // not a protocol line
		}
		return m, nil
	}
}

// codexBadConfig are stderr lines saying Codex did not take config.toml as written; it would then
// run with its defaults (OpenAI's endpoint, its own tools), so the start fails instead.
var codexBadConfig = []string{"Invalid configuration", "unrecognized configuration setting", "Error loading config"}

func (p *codexProc) handshake(ctx context.Context, s Session) error {
	if _, err := p.call(ctx, "initialize", map[string]any{"clientInfo": map[string]any{"name": "agentrun", "version": "1"}}); err != nil {
		return err
	}
	if err := p.send(map[string]any{"method": "initialized"}); err != nil {
		return p.cmd.Exit("initialized: " + err.Error())
	}
	params := map[string]any{"cwd": s.Dir,
		// untrusted: every command or file change of its own asks us first; the sandbox is the run's
		// computer, not Codex's (its bubblewrap cannot nest in ours).
		"approvalPolicy": "untrusted", "sandbox": "danger-full-access", "ephemeral": true}
	if strings.TrimSpace(s.Instructions) != "" {
		params["developerInstructions"] = s.Instructions
	}
	res, err := p.call(ctx, "thread/start", params)
	if err != nil {
		return err
	}
	for _, l := range p.cmd.Tail() {
		for _, bad := range codexBadConfig {
			if strings.Contains(l, bad) {
				return &ExitError{Harness: "codex", Err: errors.New("codex did not take its configuration as written, so it would run with its defaults (OpenAI's endpoint, its own tools)"), Tail: p.cmd.Tail()}
			}
		}
	}
	var ts struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := json.Unmarshal(res, &ts); err != nil || ts.Thread.ID == "" {
		return fmt.Errorf("thread/start answered without a thread id: %s", clip(string(res), 300))
	}
	p.thread = ts.Thread.ID
	return nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func (p *codexProc) Stop() { p.cmd.Stop() }

// codexItem is the part of a thread item the driver reads.
type codexItem struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func (p *codexProc) Turn(ctx context.Context, text string) (string, error) {
	res, err := p.call(ctx, "turn/start", map[string]any{"threadId": p.thread, "input": []map[string]any{{"type": "text", "text": text}}})
	if err != nil {
		return "", err
	}
	var ts struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	if err := json.Unmarshal(res, &ts); err != nil || ts.Turn.ID == "" {
		return "", p.cmd.Exit("turn/start answered without a turn id: " + clip(string(res), 300))
	}
	p.mu.Lock()
	p.turn = ts.Turn.ID
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.turn = ""
		p.mu.Unlock()
	}()
	var last string
	var errs []string
	for {
		m, err := p.read(ctx)
		if err != nil {
			return "", err
		}
		if m.ID != nil && m.Method != "" {
			if err := p.answer(ctx, m); err != nil {
				return "", err
			}
			continue
		}
		switch m.Method {
		case "item/completed":
			var n struct {
				Item   codexItem `json:"item"`
				TurnID string    `json:"turnId"`
			}
			if json.Unmarshal(m.Params, &n) == nil && n.TurnID == ts.Turn.ID && n.Item.Type == "agentMessage" {
				last = n.Item.Text
			}
		case "error":
			var n struct {
				Error struct {
					Message string `json:"message"`
				} `json:"error"`
				WillRetry bool `json:"willRetry"`
			}
			if json.Unmarshal(m.Params, &n) == nil && !n.WillRetry && n.Error.Message != "" {
				errs = append(errs, n.Error.Message)
			}
		case "turn/completed":
			var n struct {
				Turn struct {
					ID     string `json:"id"`
					Status string `json:"status"`
					Error  *struct {
						Message string `json:"message"`
					} `json:"error"`
				} `json:"turn"`
			}
			if json.Unmarshal(m.Params, &n) != nil || n.Turn.ID != ts.Turn.ID {
				continue
			}
			if p.interrupted.Swap(false) {
				return "", nil // the turn we interrupted (completed as interrupted)
			}
			if n.Turn.Status != "completed" {
				why := strings.Join(errs, "; ")
				if n.Turn.Error != nil && n.Turn.Error.Message != "" {
					why = n.Turn.Error.Message
				}
				return "", &ExitError{Harness: "codex", Err: fmt.Errorf("the turn ended %s: %s", n.Turn.Status, why), Tail: p.cmd.Tail()}
			}
			return last, nil
		}
	}
}

// answer replies to a request app-server sends: approvals of its own actions go to our policy
// (Permit); what has no place in an agentrun run (its user-input tool, sign-in refreshes) is refused.
func (p *codexProc) answer(ctx context.Context, m codexMsg) error {
	reply := func(result any) error {
		if err := p.send(map[string]any{"id": m.ID, "result": result}); err != nil {
			return p.cmd.Exit("answer " + m.Method + ": " + err.Error())
		}
		return nil
	}
	refuse := func(msg string) error {
		if err := p.send(map[string]any{"id": m.ID, "error": map[string]any{"code": -32601, "message": msg}}); err != nil {
			return p.cmd.Exit("answer " + m.Method + ": " + err.Error())
		}
		return nil
	}
	var params map[string]json.RawMessage
	if len(m.Params) > 0 {
		if err := json.Unmarshal(m.Params, &params); err != nil {
			return refuse("params are not a JSON object: " + err.Error())
		}
	}
	// decide asks our policy about one of Codex's own tools, with the request's fields as its input.
	decide := func(tool string) (bool, error) {
		allow, _, err := p.permit(ctx, tool, m.Params)
		return allow, err
	}
	switch m.Method {
	case "item/commandExecution/requestApproval":
		allow, err := decide("exec_command")
		if err != nil {
			return err
		}
		return reply(map[string]any{"decision": map[bool]string{true: "accept", false: "decline"}[allow]})
	case "item/fileChange/requestApproval":
		allow, err := decide("apply_patch")
		if err != nil {
			return err
		}
		return reply(map[string]any{"decision": map[bool]string{true: "accept", false: "decline"}[allow]})
	case "item/permissions/requestApproval":
		allow, err := decide("request_permissions")
		if err != nil {
			return err
		}
		granted := json.RawMessage(`{}`)
		if allow && len(params["permissions"]) > 0 {
			granted = params["permissions"]
		}
		return reply(map[string]any{"permissions": granted, "scope": "turn"})
	case "execCommandApproval", "applyPatchApproval":
		tool := map[string]string{"execCommandApproval": "exec_command", "applyPatchApproval": "apply_patch"}[m.Method]
		allow, err := decide(tool)
		if err != nil {
			return err
		}
		return reply(map[string]any{"decision": map[bool]string{true: "approved", false: "denied"}[allow]})
	case "mcpServer/elicitation/request":
		// Codex asking whether to call one of our MCP tools: our approvals decide when the call
		// reaches the MCP server, so it is accepted here. Any other server's elicitation is declined.
		var server string
		if err := json.Unmarshal(params["serverName"], &server); err != nil {
			server = "" // no name, or not a string: not our server, so declined
		}
		if server == p.mcp {
			return reply(map[string]any{"action": "accept", "content": map[string]any{}})
		}
		return reply(map[string]any{"action": "decline"})
	case "item/tool/requestUserInput":
		// Its own question tool is off; should it still ask, it gets no answer (ask_person is the way).
		return reply(map[string]any{"answers": map[string]any{}})
	case "item/tool/call":
		return reply(map[string]any{"success": false, "contentItems": []map[string]string{{"type": "inputText", "text": "no such tool: the agent's tools are the " + p.mcp + " MCP server's"}}})
	}
	return refuse(m.Method + " is not supported by agentrun")
}
