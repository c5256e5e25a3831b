package harness

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"agentrun.dev/agentrun/internal/gateway"
)

// pi is pi-coding-agent (`pi --mode rpc`: prompt commands on stdin, JSONL events on stdout,
// research/harnesses.md 4.3). Its model calls go to the gateway's endpoint for Session.Wire
// through a models.json provider of that API (pi speaks all three: piAPI); it has no MCP client and no approval of its own, so its built-in tools
// are off and an extension (pi_extension.ts) gives it the run's tools, each call forwarded to the
// run's MCP endpoint, where our approvals decide and the journal records it.
type pi struct{}

// PiVersion is the pinned @mariozechner/pi-coding-agent version.
const PiVersion = "0.73.1"

//go:embed pi_extension.ts
var piExtension []byte

// configPaths: what pi reads from its home that decides what it may do (see guard.go): its
// agent folder's models and settings, the extension that gives it the run's tools and that
// extension's configuration, and its skills.
func (pi) configPaths() []ConfigPath {
	return []ConfigPath{{Rel: "pi-agent/models.json"}, {Rel: "pi-agent/settings.json"}, {Rel: "pi-agent/skills", Dir: true},
		{Rel: "pi-agent/extensions", Dir: true}, {Rel: "pi-agent/AGENTS.md"}, {Rel: "agentrun-pi.ts"}, {Rel: "agentrun-pi.json"}}
}

func (pi) Name() string { return "pi" }
func (pi) Wires() []gateway.Wire {
	return []gateway.Wire{gateway.WireAnthropic, gateway.WireChat, gateway.WireResponses}
}
func (pi) Package() Package {
	return Package{NPM: "@mariozechner/pi-coding-agent", Version: PiVersion, Bin: "pi"}
}

// piProvider is the models.json provider name the gateway is given under.
const piProvider = "agentrun"

// piAPI is the models.json "api" of each wire.
var piAPI = map[gateway.Wire]string{gateway.WireAnthropic: "anthropic-messages", gateway.WireChat: "openai-completions", gateway.WireResponses: "openai-responses"}

func (d pi) Start(ctx context.Context, s Session) (Process, error) {
	if piAPI[s.Wire] == "" {
		return nil, fmt.Errorf("pi cannot speak the %q wire", s.Wire)
	}
	agentDir := filepath.Join(s.Home, "pi-agent")
	for _, dir := range []string{filepath.Join(s.Home, "tmp"), agentDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("harness home: %w", err)
		}
	}
	headers := map[string]string{}
	for k, v := range s.Headers {
		headers[k] = v
	}
	// apiKey names the variable the token is in (pi reads a name it finds in its environment as
	// that variable), so the token is not written into models.json.
	models, err := json.MarshalIndent(map[string]any{"providers": map[string]any{piProvider: map[string]any{
		"baseUrl": s.GatewayURL, "api": piAPI[s.Wire], "apiKey": "AGENTRUN_GATEWAY_TOKEN", "headers": headers,
		"models": []map[string]any{{"id": s.Model, "name": s.Model, "reasoning": false, "input": []string{"text"},
			"contextWindow": 200000, "maxTokens": s.MaxTokens,
			"cost": map[string]int{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}},
	}}}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("pi models.json: %w", err)
	}
	tools := make([]map[string]any, 0, len(s.Tools))
	for _, t := range s.Tools {
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		tools = append(tools, map[string]any{"name": t.Name, "description": t.Description, "inputSchema": schema})
	}
	mcpHeaders := map[string]string{"Authorization": "Bearer " + s.Token}
	for k, v := range s.Headers {
		mcpHeaders[k] = v
	}
	conf, err := json.Marshal(map[string]any{"mcpURL": s.MCPURL, "headers": mcpHeaders, "tools": tools})
	if err != nil {
		return nil, fmt.Errorf("pi extension config: %w", err)
	}
	extPath := filepath.Join(s.Home, "agentrun-pi.ts")
	confPath := filepath.Join(s.Home, "agentrun-pi.json")
	for path, b := range map[string][]byte{filepath.Join(agentDir, "models.json"): models, extPath: piExtension, confPath: conf,
		// No update check, no startup chatter; pi reads settings.json from its agent folder.
		filepath.Join(agentDir, "settings.json"): []byte(`{"quietStartup": true, "collapseChangelog": true}` + "\n")} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return nil, fmt.Errorf("pi config: %w", err)
		}
	}
	args := []string{"--mode", "rpc", "--no-session", "--no-builtin-tools",
		"--no-extensions", "--no-skills", "--no-prompt-templates", "--no-themes", "--no-context-files",
		"-e", extPath, "--model", piProvider + "/" + s.Model}
	// The run's skills in pi's own skill folder (PI_CODING_AGENT_DIR/skills), each named with
	// --skill, since --no-skills keeps pi from discovering any other (the run folder's .pi/skills
	// among them): a turn that starts /skill:NAME gets that SKILL.md from pi itself. They are
	// marked disable-model-invocation, which keeps them out of pi's prompt list: that list has the
	// model open SKILL.md by its path with a read tool, and the run's read tool reads the run
	// folder only (the run's skill tool is the way there).
	skillDir := filepath.Join(agentDir, "skills")
	if err := WriteSkills(skillDir, piSkills(s.Skills)); err != nil {
		return nil, fmt.Errorf("harness skills: %w", err)
	}
	for _, sk := range s.Skills {
		args = append(args, "--skill", filepath.Join(skillDir, sk.Name))
	}
	if strings.TrimSpace(s.Instructions) != "" {
		args = append(args, "--append-system-prompt", s.Instructions)
	}
	env := append(append([]string{}, s.Env...),
		"PI_CODING_AGENT_DIR="+agentDir,
		"AGENTRUN_PI_CONFIG="+confPath,
		"AGENTRUN_GATEWAY_TOKEN="+s.Token,
		// No traffic but the gateway's: no version check, no telemetry.
		"PI_OFFLINE=1", "PI_TELEMETRY=0", "PI_SKIP_VERSION_CHECK=1")
	cmd, err := s.Command(ctx, d.Name(), args, env)
	if err != nil {
		return nil, err
	}
	return &piProc{cmd: cmd}, nil
}

type piProc struct {
	cmd *Cmd
	n   int
	// mu orders writes to stdin (Interrupt comes from another goroutine than Turn's);
	// interrupted is set by Interrupt until agent_end.
	mu          sync.Mutex
	interrupted atomic.Bool
}

// Interrupt is pi's abort command: it aborts the model call in flight and ends the turn
// (agent_end, the last message stopped "aborted").
func (p *piProc) Interrupt() error {
	p.interrupted.Store(true)
	return p.send(map[string]any{"id": "agentrun-abort", "type": "abort"})
}

func (p *piProc) Stop() { p.cmd.Stop() }

func (p *piProc) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err = p.cmd.Stdin.Write(append(b, '\n'))
	return err
}

// piMessage is an agent message as pi's events carry it.
type piMessage struct {
	Role    string `json:"role"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StopReason   string `json:"stopReason"`
	ErrorMessage string `json:"errorMessage"`
}

// piLine is the part of an rpc-mode line the driver reads.
type piLine struct {
	Type     string      `json:"type"`
	ID       string      `json:"id"`
	Command  string      `json:"command"`
	Success  *bool       `json:"success"`
	Error    string      `json:"error"`
	Method   string      `json:"method"`
	Messages []piMessage `json:"messages"`
}

func (p *piProc) Turn(ctx context.Context, text string) (string, error) {
	p.n++
	id := fmt.Sprintf("agentrun-turn-%d", p.n)
	if err := p.send(map[string]any{"id": id, "type": "prompt", "message": text}); err != nil {
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
		var l piLine
		if json.Unmarshal([]byte(line), &l) != nil {
			continue // not a protocol line
		}
		switch l.Type {
		case "response":
			if l.ID == id && l.Success != nil && !*l.Success {
				return "", &ExitError{Harness: "pi", Err: errors.New("pi refused the prompt: " + l.Error), Tail: p.cmd.Tail()}
			}
		case "extension_ui_request":
			// Our extension asks nothing; a dialog from anything else is declined so pi never
			// waits on a person it cannot reach (notifications need no answer).
			switch l.Method {
			case "select", "confirm", "input", "editor":
				if err := p.send(map[string]any{"type": "extension_ui_response", "id": l.ID, "cancelled": true}); err != nil {
					return "", p.cmd.Exit("answer a dialog: " + err.Error())
				}
			}
		case "agent_end":
			if p.interrupted.Swap(false) {
				return "", nil // the turn we aborted
			}
			return piAnswer(l.Messages)
		}
	}
}

// piAnswer is the text of the turn's last assistant message, or the error it ended with.
func piAnswer(msgs []piMessage) (string, error) {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role != "assistant" {
			continue
		}
		if m.StopReason == "error" || m.StopReason == "aborted" {
			return "", &ExitError{Harness: "pi", Err: fmt.Errorf("the turn ended in error (%s): %s", m.StopReason, m.ErrorMessage)}
		}
		var parts []string
		for _, c := range m.Content {
			if c.Type == "text" && c.Text != "" {
				parts = append(parts, c.Text)
			}
		}
		return strings.Join(parts, "\n"), nil
	}
	return "", &ExitError{Harness: "pi", Err: errors.New("the turn ended without an answer")}
}

// piSkills are skills with disable-model-invocation: true added to each SKILL.md's front matter
// (where it does not say so already).
func piSkills(skills []Skill) []Skill {
	out := make([]Skill, len(skills))
	for i, sk := range skills {
		out[i] = Skill{Name: sk.Name, Files: append([]SkillFile(nil), sk.Files...)}
		for j, f := range out[i].Files {
			text := string(f.Content)
			if f.Path != "SKILL.md" || !strings.HasPrefix(text, "---\n") || strings.Contains(text, "\ndisable-model-invocation:") {
				continue
			}
			out[i].Files[j].Content = []byte("---\ndisable-model-invocation: true\n" + text[len("---\n"):])
		}
	}
	return out
}
