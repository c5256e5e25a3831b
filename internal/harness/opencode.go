package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"agentrun.dev/agentrun/internal/gateway"
)

// opencode is OpenCode (opencode-ai, `opencode run --format json`: one process per user turn,
// JSON events on stdout, the session continued with --session). Its model calls go to the
// gateway's endpoint for Session.Wire through a custom provider in its config of that API's AI SDK
// package (opencodeSDK: each is built into the binary, nothing is downloaded), our tools come from the run's MCP
// endpoint (a "remote" MCP server), and its own tools are all turned off, so every tool call it
// makes is ours, journalled and under our approvals. A permission it would still ask for is
// refused by `run` (no --auto), so nothing runs unasked.
type opencode struct{}

// OpenCodeSkillTool is OpenCode's own tool that loads a skill from its skill folders.
const OpenCodeSkillTool = "skill"

// OpenCodeVersion is the pinned opencode-ai version.
const OpenCodeVersion = "1.18.33"

// configPaths: what OpenCode reads from its home that decides what it may do (see guard.go): the
// config OPENCODE_CONFIG names and its instructions, and in its config folder the global config,
// the plugin package files, skills, agents, commands, modes, plugins and tools. A project's config
// is not read (OPENCODE_DISABLE_PROJECT_CONFIG).
func (opencode) configPaths() []ConfigPath {
	ps := []ConfigPath{{Rel: "opencode.json"}, {Rel: "agentrun-instructions.md"}, {Rel: opencodeWorkdir, Dir: true}}
	for _, f := range []string{"opencode.json", "opencode.jsonc", "config.json", "package.json", "package-lock.json", "AGENTS.md"} {
		ps = append(ps, ConfigPath{Rel: ".config/opencode/" + f})
	}
	for _, d := range []string{"skills", "skill", "agent", "agents", "command", "commands", "mode", "modes", "plugin", "plugins", "tool", "tools"} {
		ps = append(ps, ConfigPath{Rel: ".config/opencode/" + d, Dir: true})
	}
	return ps
}

func (opencode) Name() string { return "opencode" }
func (opencode) Wires() []gateway.Wire {
	return []gateway.Wire{gateway.WireAnthropic, gateway.WireChat, gateway.WireResponses}
}
func (opencode) Package() Package {
	return Package{NPM: "opencode-ai", Version: OpenCodeVersion, Bin: "opencode", Manual: true}
}

// opencodeWorkdir is OpenCode's working folder, under its home: an empty folder, read-only in the
// run's computer. Not the run folder, which the agent's commands write: OpenCode 1.18.33 loads a
// plugin (code it runs as it starts) that a .opencode/plugin folder or an opencode.json in its
// working folder names, OPENCODE_DISABLE_PROJECT_CONFIG and --pure notwithstanding. Its own
// tools are off; the run's tools work on the run folder.
const opencodeWorkdir = "workdir"

// opencodeProvider is the provider id the gateway is configured under.
const opencodeProvider = "agentrun"

// opencodeTools are OpenCode's built-in tools (1.18.33), all turned off: the agent gets the run's
// tools and nothing else.
var opencodeTools = []string{"bash", "edit", "write", "read", "grep", "glob", "list", "patch", "todowrite", "todoread",
	"webfetch", "websearch", "codesearch", "task", "skill", "question", "lsp", "multiedit", "apply_patch", "plan_enter", "plan_exit"}

// opencodeSDK is the AI SDK provider package of each wire.
var opencodeSDK = map[gateway.Wire]string{gateway.WireAnthropic: "@ai-sdk/anthropic", gateway.WireChat: "@ai-sdk/openai-compatible", gateway.WireResponses: "@ai-sdk/openai"}

func (d opencode) Start(ctx context.Context, s Session) (Process, error) {
	if opencodeSDK[s.Wire] == "" {
		return nil, fmt.Errorf("opencode cannot speak the %q wire", s.Wire)
	}
	cfgDir := filepath.Join(s.Home, ".config", "opencode")
	for _, dir := range []string{filepath.Join(s.Home, "tmp"), filepath.Join(cfgDir, "node_modules")} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("harness home: %w", err)
		}
	}
	// OpenCode installs its plugin package into its config folder with npm on every start unless
	// the folder's package files say it is there: these say so, so it reaches no registry.
	plugin := `{"dependencies":{"@opencode-ai/plugin":"` + OpenCodeVersion + `"}}`
	files := map[string][]byte{
		filepath.Join(cfgDir, "package.json"):      []byte(plugin + "\n"),
		filepath.Join(cfgDir, "package-lock.json"): []byte(`{"packages":{"":` + plugin + `}}` + "\n"),
		// Its global config files, empty: ours is the one OPENCODE_CONFIG names.
		filepath.Join(cfgDir, "opencode.json"): []byte("{}\n"), filepath.Join(cfgDir, "opencode.jsonc"): []byte("{}\n"),
		filepath.Join(cfgDir, "config.json"): []byte("{}\n"), filepath.Join(cfgDir, "AGENTS.md"): nil,
	}
	off := map[string]bool{}
	for _, t := range opencodeTools {
		off[t] = false
	}
	// The run's skills where OpenCode looks for a user's (XDG_CONFIG_HOME/opencode/skills), loaded
	// by its skill tool, the one built-in tool it keeps, and only when the run has skills and
	// ripgrep is on the harness's PATH (the tool lists a skill's files with rg, which OpenCode
	// would otherwise download: without it the tool fails, and the run's skill tool is the way).
	if err := WriteSkills(filepath.Join(cfgDir, "skills"), s.Skills); err != nil {
		return nil, fmt.Errorf("harness skills: %w", err)
	}
	if len(s.Skills) > 0 && onPath(s.Env, "rg") {
		off[OpenCodeSkillTool] = true
	}
	// Only the run's skills: OpenCode's own built-in one (customize-opencode) is denied, which
	// also leaves it out of the list its prompt shows.
	skillPerm := map[string]string{"*": "allow", "customize-opencode": "deny"}
	headers := map[string]string{}
	for k, v := range s.Headers {
		headers[k] = v
	}
	mcpHeaders := map[string]string{"Authorization": "Bearer " + s.Token}
	for k, v := range s.Headers {
		mcpHeaders[k] = v
	}
	// The Anthropic SDK's base URL ends in /v1, the gateway's Messages base does not; the OpenAI
	// ones are the gateway's .../openai/v1. Chat Completions streams carry no usage unless asked.
	options := map[string]any{"baseURL": s.GatewayURL, "apiKey": "{env:AGENTRUN_GATEWAY_TOKEN}", "headers": headers}
	switch s.Wire {
	case gateway.WireAnthropic:
		options["baseURL"] = s.GatewayURL + "/v1"
	case gateway.WireChat:
		options["includeUsage"] = true
	}
	conf := map[string]any{
		"$schema":    "https://opencode.ai/config.json",
		"autoupdate": false,
		"share":      "disabled",
		"provider": map[string]any{opencodeProvider: map[string]any{
			"npm": opencodeSDK[s.Wire], "name": "agentrun", "options": options,
			"models": map[string]any{s.Model: map[string]any{"name": s.Model,
				"limit": map[string]int{"context": 200000, "output": s.MaxTokens}}},
		}},
		"model":       opencodeProvider + "/" + s.Model,
		"small_model": opencodeProvider + "/" + s.Model,
		"tools":       off,
		"permission":  map[string]any{"skill": skillPerm},
		"mcp": map[string]any{s.MCPName: map[string]any{
			"type": "remote", "url": s.MCPURL, "enabled": true, "headers": mcpHeaders, "oauth": false}},
	}
	if strings.TrimSpace(s.Instructions) != "" {
		p := filepath.Join(s.Home, "agentrun-instructions.md")
		files[p] = []byte(s.Instructions + "\n")
		conf["instructions"] = []string{p}
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("opencode config: %w", err)
	}
	confPath := filepath.Join(s.Home, "opencode.json")
	files[confPath] = b
	for path, b := range files {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return nil, fmt.Errorf("opencode config: %w", err)
		}
	}
	env := append(append([]string{}, s.Env...),
		"OPENCODE_CONFIG="+confPath,
		"AGENTRUN_GATEWAY_TOKEN="+s.Token,
		"XDG_CONFIG_HOME="+filepath.Join(s.Home, ".config"),
		"XDG_DATA_HOME="+filepath.Join(s.Home, ".local", "share"),
		"XDG_CACHE_HOME="+filepath.Join(s.Home, ".cache"),
		"XDG_STATE_HOME="+filepath.Join(s.Home, ".local", "state"),
		// No traffic but the gateway's: no models.dev catalogue, no update check, no LSP or
		// plugin downloads, no sharing; and no configuration but ours (none from the run
		// folder, none of Claude Code's).
		"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS=1", "OPENCODE_DISABLE_SHARE=1", "OPENCODE_DISABLE_PROJECT_CONFIG=1",
		"OPENCODE_DISABLE_CLAUDE_CODE=1", "OPENCODE_DISABLE_EXTERNAL_SKILLS=1")
	s.Dir = filepath.Join(s.Home, opencodeWorkdir)
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("harness home: %w", err)
	}
	// OpenCode takes its folder from PWD first, which a computer's processes inherit as
	// /workspace.
	env = append(env, "PWD="+s.Dir)
	return &opencodeProc{name: d.Name(), s: s, env: env}, nil
}

// opencodeProc runs one `opencode run` per turn; the first turn of a drive starts a session and
// the later ones continue it.
type opencodeProc struct {
	name    string
	s       Session
	env     []string
	session string
	cmd     *Cmd
}

func (p *opencodeProc) Stop() {
	if p.cmd != nil {
		p.cmd.Stop()
	}
}

// opencodeEvent is the part of a `run --format json` line the driver reads.
type opencodeEvent struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionID"`
	Part      struct {
		Type   string `json:"type"`
		Text   string `json:"text"`
		Reason string `json:"reason"`
	} `json:"part"`
	Error json.RawMessage `json:"error"`
}

func (p *opencodeProc) Turn(ctx context.Context, text string) (string, error) {
	// --pure: no external plugins; --title: a title of ours, so it makes no model call of its
	// own to name the session.
	args := []string{"run", "--format", "json", "--pure", "--title", "agentrun " + p.s.Run, "--model", opencodeProvider + "/" + p.s.Model}
	if p.session != "" {
		args = append(args, "--session", p.session)
	}
	cmd, err := p.s.Command(ctx, p.name, args, p.env)
	if err != nil {
		return "", err
	}
	p.cmd = cmd
	// The turn goes on stdin, read to its end: exactly as written (a message given as arguments
	// is re-joined, each argument with a space in quotes).
	if _, err := io.WriteString(cmd.Stdin, text); err != nil {
		cmd.Stop()
		return "", cmd.Exit("send the turn: " + err.Error())
	}
	cmd.Stdin.Close()
	var texts, errs []string
	for {
		var line string
		var ok bool
		select {
		case <-ctx.Done():
			cmd.Stop()
			return "", ctx.Err()
		case line, ok = <-cmd.Lines:
		}
		if !ok {
			break
		}
		var ev opencodeEvent
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue // not an event line
		}
		if ev.SessionID != "" {
			p.session = ev.SessionID
		}
		switch ev.Type {
		case "step_start":
			texts = texts[:0] // the answer is the last step's text
		case "text":
			if ev.Part.Text != "" {
				texts = append(texts, ev.Part.Text)
			}
		case "error":
			errs = append(errs, opencodeError(ev.Error))
		}
	}
	<-cmd.Done()
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if len(errs) > 0 {
		return "", &ExitError{Harness: p.name, Err: errors.New("the turn ended in error: " + strings.Join(errs, "; ")), Tail: cmd.Tail()}
	}
	if cmd.err != nil {
		return "", cmd.Exit("exited before answering the turn")
	}
	return strings.Join(texts, "\n"), nil
}

// opencodeError is the message of an error event: data.message, or its name.
func opencodeError(raw json.RawMessage) string {
	var e struct {
		Name string `json:"name"`
		Data struct {
			Message string `json:"message"`
		} `json:"data"`
	}
	if json.Unmarshal(raw, &e) == nil {
		if e.Data.Message != "" {
			return e.Data.Message
		}
		if e.Name != "" {
			return e.Name
		}
	}
	return string(raw)
}
