package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/a2a"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// /v2/a2a/AGENT serves one agent as an A2A v1.0 agent: its card (behind the bearer, like every
// /v2 route: agent names are private), and the JSON-RPC binding (POST to the base URL) and the
// HTTP+JSON binding (POST BASE/message:send, BASE/message:stream, GET BASE/tasks and BASE/tasks/ID, POST
// BASE/tasks/ID:cancel and :subscribe) at one base URL. A task is a run: its id and contextId are
// the run's name; a message naming an existing task is a message to the run (its messageId the
// message key, so a retried send is delivered once).

// a2aMaxWait bounds how long a blocking SendMessage or a stream follows a run (a variable for
// tests); past it the task is answered as it is, still working.
var a2aMaxWait = 10 * time.Minute

// a2aMaxBody bounds a request: a message of api.MaxInputBytes, JSON-escaped, and the envelope.
const a2aMaxBody = 2*api.MaxInputBytes + 64<<10

func (s *Server) a2aRoutes(v2 *http.ServeMux) {
	v2.HandleFunc("GET /v2/a2a/{agent}/.well-known/agent-card.json", s.a2aCard)
	v2.HandleFunc("POST /v2/a2a/{agent}", longLived(s.a2aJSONRPC))
	v2.HandleFunc("POST /v2/a2a/{agent}/{op}", longLived(s.a2aRESTMessage))
	v2.HandleFunc("GET /v2/a2a/{agent}/tasks", s.a2aRESTListTasks)
	v2.HandleFunc("GET /v2/a2a/{agent}/tasks/{id}", s.a2aRESTGetTask)
	v2.HandleFunc("POST /v2/a2a/{agent}/tasks/{idop}", longLived(s.a2aRESTTaskOp))
}

// longLived exempts a handler that may answer only once a run stops (a blocking SendMessage, a
// stream) from the server's read and write timeouts: each write pushes the write deadline on.
func longLived(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h(&extendingWriter{ResponseWriter: w, extend: streamDeadlines(w)}, r)
	}
}

func (s *Server) a2aBase(agent string) string {
	return strings.TrimRight(s.BaseURL, "/") + "/v2/a2a/" + agent
}

// a2aAgent loads the agent the URL names (a 404 in the API's own shape when there is none: the
// endpoint itself does not exist).
func (s *Server) a2aAgent(w http.ResponseWriter, r *http.Request) (*api.Agent, bool) {
	a, err := s.Store.GetAgent(r.Context(), r.PathValue("agent"))
	if errors.Is(err, store.ErrNotFound) {
		writeErr(w, api.Errorf(http.StatusNotFound, api.CodeAgentNotFound, "", "agent %q does not exist", r.PathValue("agent")))
		return nil, false
	}
	if err != nil {
		writeErr(w, err)
		return nil, false
	}
	return a, true
}

func (s *Server) a2aCard(w http.ResponseWriter, r *http.Request) {
	a, ok := s.a2aAgent(w, r)
	if !ok {
		return
	}
	name := a.Metadata.Name
	desc := agentDescription(a)
	base := s.a2aBase(name)
	card := a2a.AgentCard{
		Name: firstNonEmpty(a.Spec.DisplayName, name), Description: desc,
		SupportedInterfaces: []a2a.AgentInterface{
			{URL: base, ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion},
			{URL: base, ProtocolBinding: a2a.BindingHTTPJSON, ProtocolVersion: a2a.ProtocolVersion},
		},
		Provider:     &a2a.AgentProvider{Organization: "agentrun", URL: strings.TrimRight(s.BaseURL, "/")},
		Version:      fmt.Sprintf("revision %d", a.Status.Revision),
		Capabilities: a2a.AgentCapabilities{Streaming: true},
		SecuritySchemes: map[string]a2a.SecurityScheme{"bearer": {HTTPAuthSecurityScheme: &a2a.HTTPAuthSecurityScheme{
			Scheme: "Bearer", Description: "the agentrun server's API token"}}},
		SecurityRequirements: []a2a.SecurityRequirement{{Schemes: map[string]a2a.StringList{"bearer": {List: []string{}}}}},
		DefaultInputModes:    []string{"text/plain", "application/json"},
		DefaultOutputModes:   []string{"text/plain"},
		Skills:               []a2a.AgentSkill{{ID: name, Name: firstNonEmpty(a.Spec.DisplayName, name), Description: desc, Tags: []string{"agentrun"}}},
	}
	writeJSON(w, http.StatusOK, card)
}

// a2aVersion refuses a request naming a protocol version other than 1.x. A request naming none is
// taken as 1.0 (the spec's clients always name it; curl need not).
func a2aVersion(r *http.Request) *a2a.Error {
	v := strings.TrimSpace(r.Header.Get(a2a.VersionHeader))
	if v == "" || v == "1" || strings.HasPrefix(v, "1.") {
		return nil
	}
	return a2a.VersionNotSupported(fmt.Sprintf("A2A version %q is not served here: this server speaks A2A %s", v, a2a.ProtocolVersion))
}

func readA2ABody(r *http.Request) ([]byte, *a2a.Error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, a2aMaxBody+1))
	if err != nil {
		return nil, a2a.InvalidRequest("read body: " + err.Error())
	}
	if len(b) > a2aMaxBody {
		return nil, a2a.InvalidRequest(fmt.Sprintf("the request body is larger than %d bytes", a2aMaxBody))
	}
	// A request says one thing: a key named twice (and JSON nested past the API's bounds) is
	// refused, as on every other route.
	if err := api.CheckDuplicateKeys(b); err != nil {
		return nil, a2a.InvalidRequest(err.Error())
	}
	return b, nil
}

// ---- JSON-RPC binding ----

func (s *Server) a2aJSONRPC(w http.ResponseWriter, r *http.Request) {
	a, ok := s.a2aAgent(w, r)
	if !ok {
		return
	}
	rpcErr := func(id json.RawMessage, e *a2a.Error) {
		if len(id) == 0 {
			id = json.RawMessage("null")
		}
		writeJSON(w, http.StatusOK, a2a.Response{JSONRPC: "2.0", ID: id, Error: e.RPC()})
	}
	body, e := readA2ABody(r)
	if e != nil {
		rpcErr(nil, e)
		return
	}
	var req a2a.Request
	if err := json.Unmarshal(body, &req); err != nil {
		rpcErr(nil, a2a.ParseError("the body is not a JSON-RPC request: "+err.Error()))
		return
	}
	if req.JSONRPC != "2.0" || req.Method == "" {
		rpcErr(req.ID, a2a.InvalidRequest(`a JSON-RPC 2.0 request needs "jsonrpc": "2.0" and a method`))
		return
	}
	if e := a2aVersion(r); e != nil {
		rpcErr(req.ID, e)
		return
	}
	params := req.Params
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	ctx := r.Context()
	switch req.Method {
	case a2a.MethodSendMessage, a2a.MethodSendStreamingMessage:
		var p a2a.SendMessageRequest
		if err := json.Unmarshal(params, &p); err != nil {
			rpcErr(req.ID, a2a.InvalidParams("params: "+err.Error()))
			return
		}
		run, after, e := s.a2aSend(ctx, a, &p)
		if e != nil {
			rpcErr(req.ID, e)
			return
		}
		if req.Method == a2a.MethodSendStreamingMessage {
			s.a2aStream(w, r, run, after, func(v a2a.StreamResponse) any { return a2a.Response{JSONRPC: "2.0", ID: req.ID, Result: v} })
			return
		}
		task, e := s.a2aFinish(ctx, run, after, p.Configuration)
		if e != nil {
			rpcErr(req.ID, e)
			return
		}
		writeJSON(w, http.StatusOK, a2a.Response{JSONRPC: "2.0", ID: req.ID, Result: a2a.SendMessageResponse{Task: task}})
	case a2a.MethodSubscribeToTask:
		var p a2a.TaskIDRequest
		if err := json.Unmarshal(params, &p); err != nil {
			rpcErr(req.ID, a2a.InvalidParams("params: "+err.Error()))
			return
		}
		run, e := s.a2aRun(ctx, a, p.ID)
		if e != nil {
			rpcErr(req.ID, e)
			return
		}
		s.a2aStream(w, r, run, lastSeq(ctx, s, run.Metadata.Name), func(v a2a.StreamResponse) any { return a2a.Response{JSONRPC: "2.0", ID: req.ID, Result: v} })
	case a2a.MethodGetExtendedAgentCard:
		rpcErr(req.ID, a2a.UnsupportedOperation(req.Method+" is not served here (docs/mcp-and-a2a.md)"))
	default:
		call, ok := s.a2aUnary()[req.Method]
		if !ok {
			if strings.Contains(req.Method, "PushNotificationConfig") {
				rpcErr(req.ID, a2a.PushNotificationNotSupport("push notifications are not served here"))
				return
			}
			rpcErr(req.ID, a2a.MethodNotFound(fmt.Sprintf("no method %q (A2A v1.0: SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask)", req.Method)))
			return
		}
		result, e := call(ctx, a, params)
		if e != nil {
			rpcErr(req.ID, e)
			return
		}
		writeJSON(w, http.StatusOK, a2a.Response{JSONRPC: "2.0", ID: req.ID, Result: result})
	}
}

// a2aMethod is a JSON-RPC method answered with one result: its params decoded, then called.
type a2aMethod func(ctx context.Context, a *api.Agent, params json.RawMessage) (any, *a2a.Error)

func rpcMethod[P any, R any](f func(context.Context, *api.Agent, *P) (*R, *a2a.Error)) a2aMethod {
	return func(ctx context.Context, a *api.Agent, params json.RawMessage) (any, *a2a.Error) {
		var p P
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, a2a.InvalidParams("params: " + err.Error())
		}
		r, e := f(ctx, a, &p)
		if e != nil {
			return nil, e
		}
		return r, nil
	}
}

// a2aUnary is the JSON-RPC methods that answer once (SendMessage and the streams are the
// dispatcher's own).
func (s *Server) a2aUnary() map[string]a2aMethod {
	return map[string]a2aMethod{
		a2a.MethodGetTask: rpcMethod(func(ctx context.Context, a *api.Agent, p *a2a.GetTaskRequest) (*a2a.Task, *a2a.Error) {
			return s.a2aGetTask(ctx, a, p.ID, p.HistoryLength)
		}),
		a2a.MethodCancelTask: rpcMethod(func(ctx context.Context, a *api.Agent, p *a2a.TaskIDRequest) (*a2a.Task, *a2a.Error) {
			return s.a2aCancel(ctx, a, p.ID)
		}),
		a2a.MethodListTasks: rpcMethod(s.a2aListTasks),
	}
}

// ---- HTTP+JSON binding ----

func restErr(w http.ResponseWriter, e *a2a.Error) { writeJSON(w, e.Status, e.RESTBody()) }

// a2aRESTAgent is an HTTP+JSON request's agent, once its protocol version is one served here;
// false when it answered.
func (s *Server) a2aRESTAgent(w http.ResponseWriter, r *http.Request) (*api.Agent, bool) {
	a, ok := s.a2aAgent(w, r)
	if !ok {
		return nil, false
	}
	if e := a2aVersion(r); e != nil {
		restErr(w, e)
		return nil, false
	}
	return a, true
}

// a2aRESTMessage is POST BASE/message:send and BASE/message:stream.
func (s *Server) a2aRESTMessage(w http.ResponseWriter, r *http.Request) {
	op := r.PathValue("op")
	if op != "message:send" && op != "message:stream" {
		restErr(w, a2a.MethodNotFound(fmt.Sprintf("no A2A operation %q (message:send, message:stream)", op)))
		return
	}
	a, ok := s.a2aRESTAgent(w, r)
	if !ok {
		return
	}
	body, e := readA2ABody(r)
	if e != nil {
		restErr(w, e)
		return
	}
	var p a2a.SendMessageRequest
	if err := json.Unmarshal(body, &p); err != nil {
		restErr(w, a2a.InvalidParams("body: "+err.Error()))
		return
	}
	ctx := r.Context()
	run, after, e := s.a2aSend(ctx, a, &p)
	if e != nil {
		restErr(w, e)
		return
	}
	if op == "message:stream" {
		s.a2aStream(w, r, run, after, func(v a2a.StreamResponse) any { return v })
		return
	}
	task, e := s.a2aFinish(ctx, run, after, p.Configuration)
	if e != nil {
		restErr(w, e)
		return
	}
	writeJSON(w, http.StatusOK, a2a.SendMessageResponse{Task: task})
}

// a2aRESTGetTask is GET BASE/tasks/ID[?historyLength=N].
func (s *Server) a2aRESTGetTask(w http.ResponseWriter, r *http.Request) {
	a, ok := s.a2aRESTAgent(w, r)
	if !ok {
		return
	}
	var hl *int
	if v := r.URL.Query().Get("historyLength"); v != "" {
		var n int
		if _, err := fmt.Sscan(v, &n); err != nil || n < 0 {
			restErr(w, a2a.InvalidParams("historyLength must be a whole number"))
			return
		}
		hl = &n
	}
	task, e := s.a2aGetTask(r.Context(), a, r.PathValue("id"), hl)
	if e != nil {
		restErr(w, e)
		return
	}
	writeJSON(w, http.StatusOK, task)
}

// a2aRESTTaskOp is POST BASE/tasks/ID:cancel and BASE/tasks/ID:subscribe.
func (s *Server) a2aRESTTaskOp(w http.ResponseWriter, r *http.Request) {
	id, op, _ := strings.Cut(r.PathValue("idop"), ":")
	if op != "cancel" && op != "subscribe" {
		restErr(w, a2a.MethodNotFound(fmt.Sprintf("no A2A task operation %q (cancel, subscribe)", op)))
		return
	}
	a, ok := s.a2aRESTAgent(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	if op == "cancel" {
		task, e := s.a2aCancel(ctx, a, id)
		if e != nil {
			restErr(w, e)
			return
		}
		writeJSON(w, http.StatusOK, task)
		return
	}
	run, e := s.a2aRun(ctx, a, id)
	if e != nil {
		restErr(w, e)
		return
	}
	s.a2aStream(w, r, run, lastSeq(ctx, s, run.Metadata.Name), func(v a2a.StreamResponse) any { return v })
}

// ---- tasks as runs ----

// a2aRun is the run task id names, if it is one of agent a's.
func (s *Server) a2aRun(ctx context.Context, a *api.Agent, id string) (*api.AgentRun, *a2a.Error) {
	if id == "" {
		return nil, a2a.InvalidParams("id is required")
	}
	run, err := s.Store.GetRun(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && run.Spec.Agent != a.Metadata.Name {
		return nil, a2a.TaskNotFound(fmt.Sprintf("agent %s has no task %q", a.Metadata.Name, id))
	}
	if err != nil {
		return nil, a2aInternal(err)
	}
	return run, nil
}

func a2aInternal(err error) *a2a.Error {
	if e, ok := api.AsError(err); ok {
		msg := fmt.Sprintf("%s: %s", e.Code, e.Message)
		if e.Field != "" {
			msg += " (at " + e.Field + ")"
		}
		if e.Status >= 400 && e.Status < 500 {
			return a2a.InvalidParams(msg)
		}
		return a2a.Internal(msg)
	}
	if e, ok := ruleErr(err); ok {
		return a2a.InvalidParams(fmt.Sprintf("%s: %s", e.Code, e.Message))
	}
	e := storeErr(err)
	return a2a.Internal(fmt.Sprintf("%s: %s", e.Code, e.Message))
}

func lastSeq(ctx context.Context, s *Server, run string) int64 {
	evs, err := s.Store.ListEvents(ctx, run, 0, 0)
	if err != nil || len(evs) == 0 {
		return 0
	}
	return evs[len(evs)-1].Seq
}

// a2aText is a message's parts as a run's input: the text parts, and data parts as JSON text,
// one after another.
func a2aText(m *a2a.Message) (string, *a2a.Error) {
	var parts []string
	for i, p := range m.Parts {
		switch {
		case p.Text != nil:
			parts = append(parts, *p.Text)
		case len(p.Data) > 0:
			parts = append(parts, string(p.Data))
		default:
			return "", a2a.ContentTypeNotSupported(fmt.Sprintf("message.parts[%d]: only text and data parts are taken (a run's input is text)", i))
		}
	}
	text := strings.Join(parts, "\n")
	if len(text) > api.MaxInputBytes {
		return "", a2a.InvalidParams(fmt.Sprintf("message.parts: the message is %d bytes; the limit is %d (256 KiB)", len(text), api.MaxInputBytes))
	}
	return text, nil
}

// a2aSend starts a run (a new task) or sends the run a message (a message naming its task). It
// answers the run and the timeline's last event before the send, to follow from.
func (s *Server) a2aSend(ctx context.Context, a *api.Agent, p *a2a.SendMessageRequest) (*api.AgentRun, int64, *a2a.Error) {
	m := p.Message
	if m == nil {
		return nil, 0, a2a.InvalidParams("message is required")
	}
	if m.Role != "" && m.Role != a2a.RoleUser {
		return nil, 0, a2a.InvalidParams(fmt.Sprintf("message.role: a message sent to an agent is %s, not %s", a2a.RoleUser, m.Role))
	}
	if len(m.Parts) == 0 {
		return nil, 0, a2a.InvalidParams("message.parts: a message needs at least one part")
	}
	if len(m.MessageID) > 256 {
		return nil, 0, a2a.InvalidParams("message.messageId is longer than 256 characters")
	}
	text, e := a2aText(m)
	if e != nil {
		return nil, 0, e
	}
	if m.TaskID == "" {
		run, err := s.startAgentRun(ctx, a.Metadata.Name, text)
		if err != nil {
			return nil, 0, a2aInternal(err)
		}
		return run, 0, nil
	}
	run, e := s.a2aRun(ctx, a, m.TaskID)
	if e != nil {
		return nil, 0, e
	}
	if api.Finished(run.Status.Phase) {
		return nil, 0, a2a.UnsupportedOperation(fmt.Sprintf("task %s is %s and takes no more messages: send a message without taskId to start a new task", run.Metadata.Name, a2aState(run)))
	}
	after := lastSeq(ctx, s, run.Metadata.Name)
	if _, _, err := s.addMessage(ctx, run.Metadata.Name, m.MessageID, text, ""); err != nil {
		return nil, 0, a2aInternal(err)
	}
	run, err := s.Store.GetRun(ctx, run.Metadata.Name)
	if err != nil {
		return nil, 0, a2aInternal(err)
	}
	return run, after, nil
}

// a2aFinish waits, unless the request asked to return at once, until the run stops (the task is
// terminal or interrupted), and answers the task.
func (s *Server) a2aFinish(ctx context.Context, run *api.AgentRun, after int64, cfg *a2a.SendMessageConfiguration) (*a2a.Task, *a2a.Error) {
	var hl *int
	if cfg != nil {
		hl = cfg.HistoryLength
		if cfg.ReturnImmediately {
			return s.a2aTask(ctx, run, hl)
		}
	}
	run, _, err := s.followRun(ctx, run.Metadata.Name, after, a2aMaxWait, nil, nil)
	if err != nil {
		return nil, a2aInternal(err)
	}
	return s.a2aTask(ctx, run, hl)
}

func (s *Server) a2aGetTask(ctx context.Context, a *api.Agent, id string, hl *int) (*a2a.Task, *a2a.Error) {
	run, e := s.a2aRun(ctx, a, id)
	if e != nil {
		return nil, e
	}
	return s.a2aTask(ctx, run, hl)
}

// a2aCancel asks for the run to be cancelled and waits a little for it to be (a parked run is at
// once; a driven one at its drive's next step).
func (s *Server) a2aCancel(ctx context.Context, a *api.Agent, id string) (*a2a.Task, *a2a.Error) {
	run, e := s.a2aRun(ctx, a, id)
	if e != nil {
		return nil, e
	}
	if api.Finished(run.Status.Phase) {
		return nil, a2a.TaskNotCancelable(fmt.Sprintf("task %s is already %s", id, a2aState(run)))
	}
	if _, err := s.requestCancel(ctx, id, "an A2A client cancelled the task"); err != nil {
		if errors.Is(err, store.ErrFinished) {
			return nil, a2a.TaskNotCancelable(fmt.Sprintf("task %s has already finished", id))
		}
		return nil, a2aInternal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		run, err := s.Store.GetRun(ctx, id)
		if err != nil {
			return nil, a2aInternal(err)
		}
		if api.Finished(run.Status.Phase) || time.Now().After(deadline) || ctx.Err() != nil {
			return s.a2aTask(ctx, run, nil)
		}
		s.Store.WaitEvents(ctx, 500*time.Millisecond)
	}
}

// a2aState is a run's task state.
func a2aState(run *api.AgentRun) string {
	st := run.Status
	switch {
	case st.Phase == api.PhaseSucceeded:
		return a2a.StateCompleted
	case st.Phase == api.PhaseFailed:
		return a2a.StateFailed
	case st.Phase == api.PhaseCancelled:
		return a2a.StateCanceled
	case st.Phase == api.PhaseQueued && st.StartedAt == nil:
		return a2a.StateSubmitted
	case st.Phase == api.PhaseWaiting && (st.Reason == api.ReasonQuestion || st.Reason == api.ReasonMessage):
		// A question, or a keep-alive run's turn done: a message to the task goes on.
		return a2a.StateInputRequired
	case api.WaitingOnPerson(st.Phase, st.Reason):
		// An approval, a cap, credits, a resolution: a person acts in the console, outside A2A.
		return a2a.StateAuthRequired
	}
	return a2a.StateWorking
}

func agentMessage(id, task, text string) *a2a.Message {
	return &a2a.Message{MessageID: id, ContextID: task, TaskID: task, Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart(text)}}
}

// a2aStatus is a run's task status, its message saying what the run waits on or why it ended.
func a2aStatus(run *api.AgentRun) a2a.TaskStatus {
	name := run.Metadata.Name
	st := a2a.TaskStatus{State: a2aState(run), Timestamp: time.Now().UTC().Format(time.RFC3339Nano)}
	if run.Status.FinishedAt != nil {
		st.Timestamp = run.Status.FinishedAt.UTC().Format(time.RFC3339Nano)
	}
	text := ""
	switch {
	case run.Status.WaitingOn != nil && run.Status.WaitingOn.Kind == "question" && st.State == a2a.StateInputRequired:
		text = run.Status.WaitingOn.Question
	case st.State == a2a.StateInputRequired || st.State == a2a.StateAuthRequired:
		text = waitNote(run)
	case st.State == a2a.StateFailed || st.State == a2a.StateCanceled:
		text = strings.TrimSpace(fmt.Sprintf("%s: %s", run.Status.Reason, run.Status.Message))
	}
	if text != "" {
		st.Message = agentMessage(name+"-status", name, text)
	}
	return st
}

// a2aTask is a run as a task: its status, its answer as the artifact "answer", and its history
// (the input and the messages sent to it), the last hl of them when hl is given.
func (s *Server) a2aTask(ctx context.Context, run *api.AgentRun, hl *int) (*a2a.Task, *a2a.Error) {
	return s.a2aTaskOf(ctx, run, hl, true)
}

// a2aTaskOf is a2aTask, with its artifacts only when artifacts is set (ListTasks leaves them out
// unless asked).
func (s *Server) a2aTaskOf(ctx context.Context, run *api.AgentRun, hl *int, artifacts bool) (*a2a.Task, *a2a.Error) {
	name := run.Metadata.Name
	t := &a2a.Task{ID: name, ContextID: name, Status: a2aStatus(run),
		Metadata: map[string]any{"agentrun": map[string]any{"phase": run.Status.Phase, "reason": run.Status.Reason, "consoleURL": run.Status.ConsoleURL}}}
	if artifacts {
		text, ok, err := s.fullAnswer(ctx, run)
		if err != nil {
			return nil, a2aInternal(err)
		}
		if ok {
			t.Artifacts = []a2a.Artifact{{ArtifactID: "answer", Name: "answer", Parts: []a2a.Part{a2a.TextPart(text)}}}
		}
	}
	if hl != nil && *hl == 0 {
		return t, nil
	}
	if run.Spec.Input != "" {
		t.History = append(t.History, a2a.Message{MessageID: name + "-input", ContextID: name, TaskID: name, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(run.Spec.Input)}})
	}
	msgs, err := s.Store.ListMessages(ctx, name, 0)
	if err != nil {
		return nil, a2aInternal(err)
	}
	for _, m := range msgs {
		id := m.Key
		if id == "" {
			id = fmt.Sprintf("%s-message-%d", name, m.Seq)
		}
		t.History = append(t.History, a2a.Message{MessageID: id, ContextID: name, TaskID: name, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart(m.Payload)}})
	}
	if hl != nil && *hl < len(t.History) {
		t.History = t.History[len(t.History)-*hl:]
	}
	return t, nil
}

// a2aStream answers with an SSE stream: the task as it is, a status update (state working, the
// event's line as its message) per timeline event, then at the run's stop its answer as an
// artifact update and its final status. wrap puts each in the binding's envelope.
func (s *Server) a2aStream(w http.ResponseWriter, r *http.Request, run *api.AgentRun, after int64, wrap func(a2a.StreamResponse) any) {
	ctx := r.Context()
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeErr(w, api.Errorf(http.StatusInternalServerError, api.CodeInternal, "", "streaming unsupported"))
		return
	}
	release, ok := s.followers.acquire(r, s.MaxFollowers)
	if !ok {
		tooManyStreams(w, s.MaxFollowers)
		return
	}
	defer release()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(v a2a.StreamResponse) {
		fmt.Fprintf(w, "data: %s\n\n", store.MustJSON(wrap(v)))
		flusher.Flush()
	}
	lastWrite := time.Now()
	keepalive := func() {
		// A proxy may close a stream that says nothing for long: a comment now and then.
		if time.Since(lastWrite) > 15*time.Second {
			fmt.Fprintf(w, ": keepalive\n\n")
			flusher.Flush()
			lastWrite = time.Now()
		}
	}
	name := run.Metadata.Name
	task, e := s.a2aTask(ctx, run, nil)
	if e != nil {
		send(a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: name, ContextID: name, Status: a2a.TaskStatus{State: a2a.StateFailed, Message: agentMessage(name+"-error", name, e.Message)}}})
		return
	}
	// A message to a parked task was just delivered: the task is working on it, whatever the
	// run's row said a moment before the runner claimed it.
	if after > 0 && !a2a.Terminal(task.Status.State) {
		task.Status = a2a.TaskStatus{State: a2a.StateWorking, Timestamp: time.Now().UTC().Format(time.RFC3339Nano)}
	}
	send(a2a.StreamResponse{Task: task})
	started := run.Status.StartedAt != nil
	final, _, err := s.followRun(ctx, name, after, a2aMaxWait, keepalive, func(ev api.Event) {
		lastWrite = time.Now()
		if ev.Type == api.EventRunStarted || ev.Type == api.EventRunResumed {
			started = true
		}
		state := a2a.StateWorking
		if !started {
			state = a2a.StateSubmitted
		}
		send(a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: name, ContextID: name,
			Status:   a2a.TaskStatus{State: state, Message: agentMessage(fmt.Sprintf("%s-event-%d", name, ev.Seq), name, eventLine(ev)), Timestamp: ev.Time.UTC().Format(time.RFC3339Nano)},
			Metadata: map[string]any{"agentrun": map[string]any{"event": ev.Type, "seq": ev.Seq}}}})
	})
	if err != nil || ctx.Err() != nil {
		return
	}
	task, e = s.a2aTask(ctx, final, nil)
	if e != nil {
		return
	}
	if stopped(final) && len(task.Artifacts) > 0 {
		send(a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: name, ContextID: name, Artifact: task.Artifacts[0], LastChunk: true}})
	}
	send(a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: name, ContextID: name, Status: task.Status}})
}
