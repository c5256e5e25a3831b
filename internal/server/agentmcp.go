package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// /v2/mcp serves every agent as an MCP tool over Streamable HTTP (the official Go SDK's server,
// stateful, so that clients hear notifications/tools/list_changed). The API's bearer check
// (Server.auth) guards it like every /v2 route. Agent tools are named from the agent's name with
// "-" as "_"; the tools of our own (get-run, send-message, list-runs) keep a "-", which no agent
// tool name has, so the two never collide.

// Names of the tools that are not agents.
const (
	mcpToolGetRun      = "get-run"
	mcpToolSendMessage = "send-message"
	mcpToolListRuns    = "list-runs"
)

// mcpMaxWait bounds how long one tool call follows a run: past it the call answers that the run
// is still going, with its run_id to ask again (get-run). A variable for tests.
var mcpMaxWait = 10 * time.Minute

// mcpMaxArgs bounds a tool call's arguments: an input of api.MaxInputBytes, JSON-escaped.
const mcpMaxArgs = 2 * api.MaxInputBytes

// agentMCP is the MCP server of /v2/mcp and the agent tools it offers now.
type agentMCP struct {
	s       *Server
	srv     *mcp.Server
	handler http.Handler

	mu    sync.Mutex
	tools map[string][]byte // agent tool name -> the tool as last added (JSON), to add only changes
}

func (s *Server) newAgentMCP() *agentMCP {
	m := &agentMCP{s: s, tools: map[string][]byte{}}
	m.srv = mcp.NewServer(&mcp.Implementation{Name: "agentrun", Title: "agentrun agents", Version: "1"}, &mcp.ServerOptions{
		Instructions: "Each tool whose name has no '-' runs one agentrun agent with your input and answers with the agent's answer and the run's run_id. " +
			"A run that waits on a person (a question, an approval, a cost cap) comes back saying so and where; answer a question with send-message. get-run and list-runs read runs.",
		HasTools:  true,
		KeepAlive: 30 * time.Second,
		Logger:    s.Log,
	})
	m.srv.AddTool(&mcp.Tool{Name: mcpToolGetRun, Title: "Get a run",
		Description: "A run's phase, what it waits on, its cost and its whole answer, by run_id (an agent tool's answer names it).",
		InputSchema: objectSchema(map[string]any{"run_id": map[string]any{"type": "string", "description": "the run's name", "maxLength": 253}}, "run_id"),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, m.getRun)
	m.srv.AddTool(&mcp.Tool{Name: mcpToolSendMessage, Title: "Send a run a message",
		Description: "Sends a message to a run (an answer to its question, or a follow-up to a keep-alive run) and follows it, as an agent tool does, to its next answer or wait.",
		InputSchema: objectSchema(map[string]any{
			"run_id":      map[string]any{"type": "string", "description": "the run's name", "maxLength": 253},
			"message":     map[string]any{"type": "string", "description": "the message (at most 256 KiB)"},
			"message_key": map[string]any{"type": "string", "description": "delivers the message once however often it is sent (optional)", "maxLength": 256},
		}, "run_id", "message")}, m.sendMessage)
	m.srv.AddTool(&mcp.Tool{Name: mcpToolListRuns, Title: "List runs",
		Description: "The latest runs, newest first: run_id, agent, phase, reason, created.",
		InputSchema: objectSchema(map[string]any{
			"agent": map[string]any{"type": "string", "description": "only this agent's runs (its name, with '-')"},
			"phase": map[string]any{"type": "string", "enum": phaseNames()},
			"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 100, "description": "at most this many (default 20)"},
		}),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, m.listRuns)
	// The agents are read from the store before a list or a call is answered, so a client sees
	// agents added or removed anywhere (another server on the same store too); a change this
	// process makes is synced at once (agentsChanged), which notifies every session.
	m.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" || method == "tools/call" {
				if err := m.sync(ctx); err != nil {
					return nil, fmt.Errorf("read the agents: %w", err)
				}
			}
			return next(ctx, method, req)
		}
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return m.srv }, &mcp.StreamableHTTPOptions{
		// The bearer token guards every request, so a page a DNS-rebinding attack loads has
		// nothing to send; the check would refuse every proxy that keeps its Host header.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        mcpMaxArgs + 64<<10,
		SessionTimeout:             time.Hour,
		// A call whose HTTP request is gone stops following its run (the run goes on).
		PropagateRequestCancellation: true,
		Logger:                       s.Log,
	})
	// The agents there are at start, before any session can hear of them as a change.
	m.agentsChanged()
	m.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A tool call's answer and the session's notifications are streams that outlive the
		// server's read and write timeouts: each write pushes the deadline on.
		extend := streamDeadlines(w)
		h.ServeHTTP(&extendingWriter{ResponseWriter: w, extend: extend}, r)
	})
	return m
}

// extendingWriter pushes a stream's write deadline on before each write.
type extendingWriter struct {
	http.ResponseWriter
	extend func()
}

func (w *extendingWriter) Write(b []byte) (int, error) { w.extend(); return w.ResponseWriter.Write(b) }
func (w *extendingWriter) Flush() {
	w.extend()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
func (w *extendingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func objectSchema(props map[string]any, required ...string) map[string]any {
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func phaseNames() []string {
	var out []string
	for _, p := range api.Phases {
		out = append(out, string(p))
	}
	return out
}

// mcpToolName is an agent's tool name.
func mcpToolName(agent string) string { return strings.ReplaceAll(agent, "-", "_") }

// agentTool is the tool that runs agent a.
func agentTool(a *api.Agent) *mcp.Tool {
	name := a.Metadata.Name
	desc := agentDescription(a) + " Answers with the agent's answer and the run_id; a run that waits on a person says so and where."
	input := map[string]any{"type": "string", "description": "the run's input, the agent's first message (at most 256 KiB)"}
	schema := objectSchema(map[string]any{"input": input}, "input")
	if in := agentInputSchema(a); in != nil {
		// A workflow agent's input is a JSON object: given as the tool's arguments (its schema),
		// or as JSON text in "input".
		input["description"] = "the workflow's input as JSON text; or give its fields as the tool's arguments instead"
		schema = in
		props, _ := schema["properties"].(map[string]any)
		if props == nil {
			props = map[string]any{}
			schema["properties"] = props
		}
		if _, taken := props["input"]; !taken {
			props["input"] = input
		}
		schema["type"] = "object"
		delete(schema, "required") // either the fields or "input"; the run checks its input
	}
	return &mcp.Tool{Name: mcpToolName(name), Title: firstNonEmpty(a.Spec.DisplayName, name), Description: desc, InputSchema: schema}
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// sync makes the agent tools those of the agents in the store now, adding and removing only
// what changed (each change notifies the sessions, debounced by the SDK).
func (m *agentMCP) sync(ctx context.Context) error {
	agents, err := m.s.Store.ListAgents(ctx)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]bool{}
	for _, a := range agents {
		t := agentTool(a)
		agent := a.Metadata.Name
		b, err := json.Marshal(t)
		if err != nil {
			return fmt.Errorf("agent %s's tool: %w", agent, err)
		}
		seen[t.Name] = true
		if bytes.Equal(m.tools[t.Name], b) {
			continue
		}
		m.tools[t.Name] = b
		m.srv.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return m.callAgent(ctx, req, agent)
		})
	}
	var gone []string
	for name := range m.tools {
		if !seen[name] {
			gone = append(gone, name)
			delete(m.tools, name)
		}
	}
	if len(gone) > 0 {
		m.srv.RemoveTools(gone...)
	}
	return nil
}

// agentsChanged syncs the tools after this process changed the agents.
func (m *agentMCP) agentsChanged() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.sync(ctx); err != nil {
		m.s.Log.Warn("mcp: sync agent tools", "err", err)
	}
}

// toolError is a tool's failure as the model (or person) calling it reads it.
func toolError(err error) *mcp.CallToolResult {
	msg := err.Error()
	if e, ok := api.AsError(err); ok || errors.Is(err, store.ErrNotFound) {
		if !ok {
			e = storeErr(err)
		}
		msg = fmt.Sprintf("%s: %s", e.Code, e.Message)
		if e.Field != "" {
			msg += " (at " + e.Field + ")"
		}
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// decodeArgs decodes a call's arguments strictly into v.
func decodeArgs(req *mcp.CallToolRequest, v any) error {
	raw := req.Params.Arguments
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if len(raw) > mcpMaxArgs {
		return api.E(api.CodeTooLarge, "arguments", "the arguments are %d bytes; the limit is %d", len(raw), mcpMaxArgs)
	}
	return api.DecodeStrict(raw, v)
}

func (m *agentMCP) callAgent(ctx context.Context, req *mcp.CallToolRequest, agent string) (*mcp.CallToolResult, error) {
	raw := req.Params.Arguments
	if len(raw) > mcpMaxArgs {
		return toolError(api.E(api.CodeTooLarge, "arguments", "the arguments are %d bytes; the limit is %d", len(raw), mcpMaxArgs)), nil
	}
	var args map[string]json.RawMessage
	if len(raw) > 0 {
		if err := api.CheckDuplicateKeys(raw); err != nil {
			return toolError(err), nil
		}
		if err := json.Unmarshal(raw, &args); err != nil {
			return toolError(api.Invalid("arguments", "the arguments are not a JSON object: %v", err)), nil
		}
	}
	input, err := m.runInput(ctx, agent, args)
	if err != nil {
		return toolError(err), nil
	}
	run, err := m.s.startAgentRun(ctx, agent, input)
	if err != nil {
		return toolError(err), nil
	}
	return m.follow(ctx, req, run.Metadata.Name, 0)
}

// runInput is the run's input from a call's arguments: "input", or for a workflow agent the
// arguments as one JSON object.
func (m *agentMCP) runInput(ctx context.Context, agent string, args map[string]json.RawMessage) (string, error) {
	a, err := m.s.Store.GetAgent(ctx, agent)
	if err != nil {
		return "", err
	}
	in, hasInput := args["input"]
	workflow := agentInputSchema(a) != nil
	if hasInput && (len(args) == 1 || !workflow) {
		var s string
		if err := json.Unmarshal(in, &s); err != nil {
			return "", api.Invalid("input", "input must be a string")
		}
		if len(args) > 1 {
			for k := range args {
				if k != "input" {
					return "", api.Invalid(k, "unknown argument %q: the tool takes input", k)
				}
			}
		}
		return s, nil
	}
	if !workflow {
		return "", api.E(api.CodeRequired, "input", "input is required")
	}
	b, err := json.Marshal(args)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// follow follows a run to its next stop, sending the timeline as progress notifications when the
// call asked for progress, and answers the run's state.
func (m *agentMCP) follow(ctx context.Context, req *mcp.CallToolRequest, name string, after int64) (*mcp.CallToolResult, error) {
	token := req.Params.GetProgressToken()
	n := 0
	run, _, err := m.s.followRun(ctx, name, after, mcpMaxWait, nil, func(ev api.Event) {
		n++
		if token != nil {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(n), Message: eventLine(ev)})
		}
	})
	if err != nil {
		return toolError(err), nil
	}
	return m.runResult(ctx, run)
}

// runState is a run as the tools answer it (structuredContent).
type runState struct {
	RunID      string         `json:"run_id"`
	Agent      string         `json:"agent"`
	Phase      api.Phase      `json:"phase"`
	Reason     api.Reason     `json:"reason,omitempty"`
	Message    string         `json:"message,omitempty"`
	Waiting    bool           `json:"waiting"`
	WaitingOn  *api.WaitingOn `json:"waiting_on,omitempty"`
	Note       string         `json:"note,omitempty"`
	Answer     *string        `json:"answer,omitempty"`
	CostUSD    string         `json:"cost_usd,omitempty"`
	ConsoleURL string         `json:"console_url"`
}

func (m *agentMCP) state(ctx context.Context, run *api.AgentRun) (runState, error) {
	st := runState{RunID: run.Metadata.Name, Agent: run.Spec.Agent, Phase: run.Status.Phase, Reason: run.Status.Reason,
		Message: run.Status.Message, WaitingOn: run.Status.WaitingOn, Note: waitNote(run), ConsoleURL: run.Status.ConsoleURL}
	st.Waiting = !api.Finished(run.Status.Phase) && stopped(run)
	if run.Status.Cost != nil {
		st.CostUSD = run.Status.Cost.TotalUSD
	}
	text, ok, err := m.s.fullAnswer(ctx, run)
	if err != nil {
		return st, err
	}
	if ok {
		st.Answer = &text
	}
	return st, nil
}

// runResult answers a run: its answer (or what it waits on, or why it failed) as text, and its
// state as structured content.
func (m *agentMCP) runResult(ctx context.Context, run *api.AgentRun) (*mcp.CallToolResult, error) {
	st, err := m.state(ctx, run)
	if err != nil {
		return toolError(err), nil
	}
	var text string
	switch {
	case st.Phase == api.PhaseSucceeded && st.Answer != nil:
		text = *st.Answer
	case st.Note != "":
		text = st.Note
		if st.Answer != nil && st.Reason == api.ReasonMessage {
			text = *st.Answer
		}
	case !stopped(run):
		text = fmt.Sprintf("run %s is still %s after %s: ask again with get-run", st.RunID, st.Phase, mcpMaxWait)
	default:
		text = fmt.Sprintf("run %s %s (%s): %s", st.RunID, strings.ToLower(string(st.Phase)), st.Reason, st.Message)
	}
	line := fmt.Sprintf("run_id: %s · phase: %s", st.RunID, st.Phase)
	if st.Reason != "" {
		line += " (" + string(st.Reason) + ")"
	}
	if st.Note != "" && text != st.Note {
		line += " · " + st.Note
	}
	line += " · console: " + st.ConsoleURL
	return &mcp.CallToolResult{
		IsError:           st.Phase == api.PhaseFailed || st.Phase == api.PhaseCancelled,
		Content:           []mcp.Content{&mcp.TextContent{Text: text}, &mcp.TextContent{Text: line}},
		StructuredContent: st,
	}, nil
}

func (m *agentMCP) getRun(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		RunID string `json:"run_id"`
	}
	if err := decodeArgs(req, &args); err != nil {
		return toolError(err), nil
	}
	if args.RunID == "" {
		return toolError(api.E(api.CodeRequired, "run_id", "run_id is required")), nil
	}
	run, err := m.s.Store.GetRun(ctx, args.RunID)
	if err != nil {
		return toolError(err), nil
	}
	return m.runResult(ctx, run)
}

func (m *agentMCP) sendMessage(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		RunID      string  `json:"run_id"`
		Message    *string `json:"message"`
		MessageKey string  `json:"message_key"`
	}
	if err := decodeArgs(req, &args); err != nil {
		return toolError(err), nil
	}
	switch {
	case args.RunID == "":
		return toolError(api.E(api.CodeRequired, "run_id", "run_id is required")), nil
	case args.Message == nil:
		return toolError(api.E(api.CodeRequired, "message", "message is required")), nil
	case len(*args.Message) > api.MaxInputBytes:
		return toolError(api.E(api.CodeTooLarge, "message", "the message is %d bytes; the limit is %d (256 KiB)", len(*args.Message), api.MaxInputBytes)), nil
	case len(args.MessageKey) > 256:
		return toolError(api.Invalid("message_key", "message_key is longer than 256 characters")), nil
	}
	// Follow from the events there are now: what the message sets off, not what came before.
	evs, err := m.s.Store.ListEvents(ctx, args.RunID, 0, 0)
	if err != nil {
		return toolError(err), nil
	}
	var after int64
	if len(evs) > 0 {
		after = evs[len(evs)-1].Seq
	}
	if _, _, err := m.s.addMessage(ctx, args.RunID, args.MessageKey, *args.Message, ""); err != nil {
		return toolError(err), nil
	}
	return m.follow(ctx, req, args.RunID, after)
}

func (m *agentMCP) listRuns(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Agent string    `json:"agent"`
		Phase api.Phase `json:"phase"`
		Limit int       `json:"limit"`
	}
	if err := decodeArgs(req, &args); err != nil {
		return toolError(err), nil
	}
	if args.Limit == 0 {
		args.Limit = 20
	}
	if args.Limit < 1 || args.Limit > 100 {
		return toolError(api.Invalid("limit", "limit must be between 1 and 100")), nil
	}
	if args.Phase != "" && !slices.Contains(api.Phases, args.Phase) {
		return toolError(api.Invalid("phase", "unknown phase %q (one of %s)", args.Phase, strings.Join(phaseNames(), ", "))), nil
	}
	runs, err := m.s.Store.ListRuns(ctx, store.RunFilter{Agent: args.Agent, Phase: args.Phase, Newest: true, Limit: args.Limit})
	if err != nil {
		return toolError(err), nil
	}
	type item struct {
		RunID   string     `json:"run_id"`
		Agent   string     `json:"agent"`
		Phase   api.Phase  `json:"phase"`
		Reason  api.Reason `json:"reason,omitempty"`
		Created string     `json:"created,omitempty"`
	}
	out := []item{}
	var lines []string
	for _, r := range runs {
		it := item{RunID: r.Metadata.Name, Agent: r.Spec.Agent, Phase: r.Status.Phase, Reason: r.Status.Reason}
		if r.Metadata.CreationTimestamp != nil {
			it.Created = r.Metadata.CreationTimestamp.UTC().Format(time.RFC3339)
		}
		out = append(out, it)
		lines = append(lines, fmt.Sprintf("%s  %s  %s %s  %s", it.RunID, it.Agent, it.Phase, it.Reason, it.Created))
	}
	text := strings.Join(lines, "\n")
	if text == "" {
		text = "no runs"
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: map[string]any{"runs": out}}, nil
}
