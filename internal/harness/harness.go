package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/gateway"
)

// Package is the npm package a driver runs, at a pinned version.
type Package struct {
	// NPM is the package name, Version its exact pinned version.
	NPM, Version string
	// Bin is the executable's name under node_modules/.bin.
	Bin string
	// Manual: it is not installed on first use; a person installs it beside the server with the
	// line InstallLine prints (OpenCode: a large native binary, issue 11).
	Manual bool
}

// InstallLine is the command that installs p where the server looks for it in dataDir.
func (p Package) InstallLine(dataDir, name string) string {
	return "npm install --no-audit --no-fund --save-exact --prefix " + filepath.Join(dataDir, "harnesses", name+"@"+p.Version) + " " + p.Spec()
}

// Spec is PACKAGE@VERSION, as npm takes it.
func (p Package) Spec() string { return p.NPM + "@" + p.Version }

// Driver is one external harness.
type Driver interface {
	// Name is its spec.harness value ("claude-agent").
	Name() string
	Package() Package
	// Wires are the wire formats its model calls can be configured to speak, preferred first: the
	// host picks one the run's provider serves and gives it as Session.Wire.
	Wires() []gateway.Wire
	// Start starts the harness for one drive of a run. It returns once the process runs and is
	// ready for its first Turn; the process lives until Stop or until ctx ends.
	Start(ctx context.Context, s Session) (Process, error)
}

// Process is a started harness.
type Process interface {
	// Turn sends one user turn (the run's input or a message) and returns the harness's final text
	// for it. It returns ctx's error when ctx ends, and an *ExitError when the process exits.
	Turn(ctx context.Context, text string) (string, error)
	// Stop kills the process group at once and waits for it to be gone.
	Stop()
}

// Interrupter is a Process whose harness can stop its turn in flight through its own protocol
// (Claude Code's interrupt control request, Codex's turn/interrupt, pi's abort command). The
// turn's Turn then returns ("", nil) when the harness has ended the turn the way it ends an
// interrupted one, which it records in its history as its own.
type Interrupter interface {
	Interrupt() error
}

// Tool is one tool the host serves the harness over MCP.
type Tool struct {
	Name, Description string
	InputSchema       json.RawMessage
}

// Permit is the host's decision on a tool call the harness asks permission for (a tool of its own
// it cannot do without): allow, or deny with the message the harness tells its model. An error
// means the run cannot go on in this drive (it parked to wait for a person, or its lease was lost):
// the driver returns it from Turn.
type Permit func(ctx context.Context, tool string, input json.RawMessage) (allow bool, message string, err error)

// Session is everything a driver needs to start its harness for one run.
type Session struct {
	Run string
	// Bin is the installed executable (absolute path).
	Bin string
	// Dir is the working directory: the run folder. Home is a folder of this run's own, outside
	// the run folder, for the harness's HOME (config, caches, session files).
	Dir, Home string
	// GatewayURL is the base URL of the gateway endpoint for the driver's Wire; Token is the run's
	// gateway token, the harness's API key. Headers are sent with every model call (they name the
	// run, so a token used for another run is refused).
	GatewayURL, Token string
	Headers           map[string]string
	// Wire is the wire format the harness is to speak, one of its Wires: GatewayURL is that
	// wire's endpoint.
	Wire gateway.Wire
	// MCPURL is the streamable HTTP MCP endpoint with the run's tools (bearer Token); MCPName is the
	// server name to give it ("agentrun"); Tools are the tools it serves.
	MCPURL, MCPName string
	Tools           []Tool
	// Model is the model name to ask for (the gateway puts the turn's model in each call anyway).
	Model string
	// MaxTokens is the agent's spec.maxTokens: the harness's output limit per call.
	MaxTokens int
	// Instructions are the agent's instructions, appended to the harness's own system prompt.
	Instructions string
	// Skills are the run's skills, which the driver writes into the harness's own skill folder
	// (WriteSkills); the run's skill tool serves them too, and records which the run opened.
	Skills []Skill
	// Env is the base environment (PATH, LANG, TMPDIR); never the server's keys.
	Env []string
	// Permit decides the harness's permission requests (see Permit).
	Permit Permit
	// Computer, when not nil, is the run's computer the harness runs inside (Command starts it
	// there): Dir is then a path inside it (/workspace), Bin and Home are shown in it at their host
	// paths, and GatewayURL and MCPURL are addresses inside it. Env is then added to the
	// computer's own environment.
	Computer computer.Spawner
}

// Command starts the harness's Bin with args and env (the driver's whole environment: Env and its
// own variables) in Dir: inside the run's computer when the session has one, on the runner
// otherwise.
func (s Session) Command(ctx context.Context, name string, args, env []string) (*Cmd, error) {
	if s.Computer != nil {
		return StartIn(ctx, name, s.Computer, append([]string{s.Bin}, args...), env, s.Dir)
	}
	return StartCommand(ctx, name, s.Bin, args, env, s.Dir)
}

// ExitError is a harness that exited (or failed to speak its protocol) before answering a turn.
type ExitError struct {
	Harness string
	// Err says how it ended ("exit status 1").
	Err error
	// Tail is the last lines it wrote to stderr.
	Tail []string
}

func (e *ExitError) Error() string {
	msg := fmt.Sprintf("harness %s: %v", e.Harness, e.Err)
	if len(e.Tail) > 0 {
		msg += "; its last stderr lines:\n" + strings.Join(e.Tail, "\n")
	}
	return msg
}

func (e *ExitError) Unwrap() error { return e.Err }
