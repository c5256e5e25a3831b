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

// claude is Claude Code (`claude -p` over stream-json on stdio, research/harnesses.md 4.1): its
// built-in tools off, our tools over MCP, its model calls to the gateway's Messages endpoint, and
// the permission requests it still makes (--permission-prompt-tool stdio) answered by Permit.
type claude struct{}

// ClaudeSkillTool is Claude Code's own tool that loads a skill from its skill folder, the one
// built-in tool it is started with (when the run has skills); it asks permission, so the host
// sees which skill it opens.
const ClaudeSkillTool = "Skill"

// claudeSettings is CLAUDE_CONFIG_DIR/settings.json: the Skill tool asks permission, a skill's
// inline shell is not run, no hook runs (a skill's front matter may declare hooks, commands that
// would run past the run's tools and approvals), and its built-in plugin that brings a skill of
// its own is off.
const claudeSettings = `{"disableSkillShellExecution": true, "disableAllHooks": true, "permissions": {"ask": ["` + ClaudeSkillTool + `"]},
 "enabledPlugins": {"cc-plugin-plugin-authoring@builtin": false}}
`

// ClaudeVersion is the pinned @anthropic-ai/claude-code version.
const ClaudeVersion = "2.1.328"

// configPaths: what Claude Code reads from its home that decides what it may do (see guard.go).
// Its project and local settings (/workspace/.claude/settings*.json, which the agent's commands
// can write) are not read (--setting-sources user), nor any CLAUDE.md
// (CLAUDE_CODE_DISABLE_CLAUDE_MDS), nor an MCP configuration but ours (--strict-mcp-config); the
// settings are also given on the command line (--settings), above every file.
func (claude) configPaths() []ConfigPath {
	ps := []ConfigPath{{Rel: ".claude/settings.json"}, {Rel: ".claude/CLAUDE.md"}, {Rel: "mcp.json"}}
	for _, d := range []string{"skills", "agents", "commands", "output-styles", "plugins", "hooks"} {
		ps = append(ps, ConfigPath{Rel: ".claude/" + d, Dir: true})
	}
	return ps
}

func (claude) Name() string          { return "claude-agent" }
func (claude) Wires() []gateway.Wire { return []gateway.Wire{gateway.WireAnthropic} }
func (claude) Package() Package {
	return Package{NPM: "@anthropic-ai/claude-code", Version: ClaudeVersion, Bin: "claude"}
}

func (c claude) Start(ctx context.Context, s Session) (Process, error) {
	for _, d := range []string{filepath.Join(s.Home, "tmp"), filepath.Join(s.Home, ".claude")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("harness home: %w", err)
		}
	}
	mcpConf, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{s.MCPName: map[string]any{
		"type": "http", "url": s.MCPURL, "headers": map[string]string{"Authorization": "Bearer " + s.Token}}}})
	// The run's skills where Claude Code looks for a user's skills (CLAUDE_CONFIG_DIR/skills),
	// loaded by its Skill tool, the one built-in tool it keeps, and only when the run has skills.
	// Skill asks permission (settings.json's permissions.ask; Permit: the host records
	// skill.opened); its bundled skills are off
	// (CLAUDE_CODE_DISABLE_BUNDLED_SKILLS), and so is a skill's inline shell (!`command`), which
	// would run on the runner past our tools and approvals (settings.json
	// disableSkillShellExecution).
	builtin := ""
	if len(s.Skills) > 0 {
		builtin = ClaudeSkillTool
	}
	if err := WriteSkills(filepath.Join(s.Home, ".claude", "skills"), s.Skills); err != nil {
		return nil, fmt.Errorf("harness skills: %w", err)
	}
	if err := os.WriteFile(filepath.Join(s.Home, ".claude", "settings.json"), []byte(claudeSettings), 0o600); err != nil {
		return nil, fmt.Errorf("harness settings: %w", err)
	}
	confPath := filepath.Join(s.Home, "mcp.json")
	if err := os.WriteFile(confPath, mcpConf, 0o600); err != nil {
		return nil, fmt.Errorf("harness mcp config: %w", err)
	}
	// Our tools, allowed up front: each call goes through our approvals when it reaches our MCP
	// server, so Claude Code need not ask about them.
	allowed := make([]string, 0, len(s.Tools))
	for _, t := range s.Tools {
		allowed = append(allowed, "mcp__"+s.MCPName+"__"+t.Name)
	}
	args := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
		"--permission-prompt-tool", "stdio", "--mcp-config", confPath, "--strict-mcp-config",
		"--setting-sources", "user", "--settings", claudeSettings,
		"--tools", builtin, "--allowedTools", strings.Join(allowed, ","), "--model", s.Model}
	if strings.TrimSpace(s.Instructions) != "" {
		args = append(args, "--append-system-prompt", s.Instructions)
	}
	var hdr []string
	for k, v := range s.Headers {
		hdr = append(hdr, k+": "+v)
	}
	env := append(append([]string{}, s.Env...),
		"ANTHROPIC_BASE_URL="+s.GatewayURL,
		"ANTHROPIC_API_KEY="+s.Token,
		"ANTHROPIC_CUSTOM_HEADERS="+strings.Join(hdr, "\n"),
		"CLAUDE_CONFIG_DIR="+filepath.Join(s.Home, ".claude"),
		// No traffic but the gateway's (research: with these, connect() only to the endpoint).
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1", "DISABLE_COST_WARNINGS=1",
		// MCP tools offered directly, not behind its ToolSearch tool.
		"ENABLE_TOOL_SEARCH=false",
		// Only the run's skills: none of Claude Code's own (they are not the agent's).
		"CLAUDE_CODE_DISABLE_BUNDLED_SKILLS=1", "CLAUDE_CODE_DISABLE_CLAUDE_API_SKILL=1", "CLAUDE_CODE_DISABLE_CLAUDE_CODE_SKILL=1", "CLAUDE_CODE_DISABLE_POLICY_SKILLS=1",
		// No auto memory: its prompt names a memory folder under HOME, which is another path on
		// another runner's data folder (a takeover would not replay), and the run keeps no memory
		// of its own between runs.
		"CLAUDE_CODE_DISABLE_AUTO_MEMORY=1",
		// No CLAUDE.md: not the run folder's (the agent writes there), not its home's.
		"CLAUDE_CODE_DISABLE_CLAUDE_MDS=1",
		"CLAUDE_CODE_MAX_OUTPUT_TOKENS="+strconv.Itoa(s.MaxTokens))
	cmd, err := s.Command(ctx, c.Name(), args, env)
	if err != nil {
		return nil, err
	}
	p := &claudeProc{cmd: cmd, permit: s.Permit}
	if err := p.send(map[string]any{"type": "control_request", "request_id": "agentrun-init", "request": map[string]any{"subtype": "initialize"}}); err != nil {
		cmd.Stop()
		return nil, cmd.Exit("initialize: " + err.Error())
	}
	return p, nil
}

type claudeProc struct {
	cmd    *Cmd
	permit Permit
	// mu orders writes to stdin (Interrupt comes from another goroutine than Turn's);
	// interrupted is set by Interrupt until the turn's result.
	mu          sync.Mutex
	interrupted atomic.Bool
}

func (p *claudeProc) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err = p.cmd.Stdin.Write(append(b, '\n'))
	return err
}

// Interrupt is Claude Code's interrupt control request: it aborts the turn's model call and
// ends the turn with a result.
func (p *claudeProc) Interrupt() error {
	p.interrupted.Store(true)
	return p.send(map[string]any{"type": "control_request", "request_id": "agentrun-interrupt", "request": map[string]any{"subtype": "interrupt"}})
}

func (p *claudeProc) Stop() { p.cmd.Stop() }

// claudeLine is the part of a stream-json line the driver reads.
type claudeLine struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	RequestID string `json:"request_id"`
	Request   struct {
		Subtype  string          `json:"subtype"`
		ToolName string          `json:"tool_name"`
		Input    json.RawMessage `json:"input"`
	} `json:"request"`
	Result  string   `json:"result"`
	IsError bool     `json:"is_error"`
	Errors  []string `json:"errors"`
}

func (p *claudeProc) Turn(ctx context.Context, text string) (string, error) {
	msg := map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}, "parent_tool_use_id": nil, "session_id": ""}
	if err := p.send(msg); err != nil {
		return "", p.cmd.Exit("send the turn: " + err.Error())
	}
	for {
		var line string
		var ok bool
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case line, ok = <-p.cmd.Lines:
		}
		if !ok {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			return "", p.cmd.Exit("exited before answering the turn")
		}
		var l claudeLine
		if json.Unmarshal([]byte(line), &l) != nil {
			continue // not a protocol line (a warning it printed)
		}
		switch l.Type {
		case "control_request":
			if l.Request.Subtype != "can_use_tool" {
				p.send(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "error", "request_id": l.RequestID, "error": "not supported by agentrun"}})
				continue
			}
			allow, why, err := p.permit(ctx, l.Request.ToolName, l.Request.Input)
			if err != nil {
				return "", err
			}
			resp := map[string]any{"behavior": "deny", "message": why}
			if allow {
				resp = map[string]any{"behavior": "allow", "updatedInput": l.Request.Input}
			}
			if err := p.send(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": l.RequestID, "response": resp}}); err != nil {
				return "", p.cmd.Exit("answer a permission request: " + err.Error())
			}
		case "result":
			if p.interrupted.Swap(false) {
				return "", nil // the turn we interrupted (its result says so in its own way)
			}
			if l.IsError || l.Subtype != "success" {
				why := l.Result
				if why == "" {
					why = strings.Join(l.Errors, "; ")
				}
				return "", &ExitError{Harness: "claude-agent", Err: errors.New("the turn ended in error (" + l.Subtype + "): " + why), Tail: p.cmd.Tail()}
			}
			return l.Result, nil
		}
	}
}
