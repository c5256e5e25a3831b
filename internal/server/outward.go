package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
)

// This file holds what /v2/mcp and /v2/a2a share: an agent's input schema, starting a run of
// it, following a run's timeline to its next stop, and saying what a stopped run waits on.

// agentInputSchema is the JSON Schema of a workflow agent's input (its document's input schema,
// with the document's schemas as definitions, as the engine compiles it), or nil when the agent
// has none.
func agentInputSchema(a *api.Agent) map[string]any {
	if len(a.Spec.Workflow) == 0 {
		return nil
	}
	var doc struct {
		Schemas map[string]json.RawMessage `json:"schemas"`
		Input   *struct {
			SchemaID string `json:"schemaId"`
		} `json:"input"`
	}
	if json.Unmarshal(a.Spec.Workflow, &doc) != nil || doc.Input == nil {
		return nil
	}
	var schema map[string]any
	if json.Unmarshal(doc.Schemas[doc.Input.SchemaID], &schema) != nil || schema == nil {
		return nil
	}
	defs := map[string]any{}
	for id, raw := range doc.Schemas {
		var v any
		if json.Unmarshal(raw, &v) == nil {
			defs[id] = v
		}
	}
	if len(defs) > 0 {
		schema["definitions"] = defs
	}
	return schema
}

// agentDescription is what an agent's MCP tool and A2A card say of it: spec.description, or
// without one its name, display name and its instructions' first line.
func agentDescription(a *api.Agent) string {
	if d := strings.TrimSpace(a.Spec.Description); d != "" {
		return d
	}
	desc := "The agentrun agent " + a.Metadata.Name
	if a.Spec.DisplayName != "" {
		desc += " (" + a.Spec.DisplayName + ")"
	}
	if line := api.FirstLine(a.Spec.System, 300); line != "" {
		desc += "; its instructions begin: " + line
	}
	return desc + "."
}

// startAgentRun starts a run of agent with input, as POST /v2/agents/NAME/runs does.
func (s *Server) startAgentRun(ctx context.Context, agent, input string) (*api.AgentRun, error) {
	run := api.SeedRunBody{Input: api.SeedInput{Content: input}}.Run(agent)
	run.Metadata.Name = generateName(agent)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/", nil)
	if err != nil {
		return nil, err
	}
	if err := s.storeRun(req, run, agent); err != nil {
		return nil, err
	}
	return run, nil
}

// stopped reports whether a run has come to a stop a caller should hear of: finished, or parked
// on something only its caller or a person can give (a message, an answer, an approval, money, a
// resolution).
func stopped(run *api.AgentRun) bool {
	st := run.Status
	return api.Finished(st.Phase) || api.WaitingOnPerson(st.Phase, st.Reason) || st.Phase == api.PhaseWaiting && st.Reason == api.ReasonMessage
}

// followRun follows a run's timeline from after (an event sequence number) until stopped says
// so, ctx ends, or max passes, calling each for every event in order and idle (when not nil) on
// every wait. It answers the run as it last read it, and the last event's sequence number.
func (s *Server) followRun(ctx context.Context, name string, after int64, max time.Duration, idle func(), each func(api.Event)) (*api.AgentRun, int64, error) {
	deadline := time.Now().Add(max)
	for {
		// The phase is read before the events, so every event written before a stop is seen.
		run, err := s.Store.GetRun(ctx, name)
		if err != nil {
			return nil, after, err
		}
		evs, err := s.Store.ListEvents(ctx, name, after, 500)
		if err != nil {
			return nil, after, err
		}
		for _, ev := range evs {
			if each != nil {
				each(ev)
			}
			after = ev.Seq
		}
		if len(evs) == 500 {
			continue
		}
		if stopped(run) || ctx.Err() != nil || time.Now().After(deadline) {
			return run, after, nil
		}
		if idle != nil {
			idle()
		}
		s.Store.WaitEvents(ctx, time.Second)
	}
}

// eventLine is one timeline event as a progress line.
func eventLine(ev api.Event) string {
	if ev.Message == "" {
		return string(ev.Type)
	}
	return string(ev.Type) + ": " + api.FirstLine(ev.Message, 200)
}

// waitNote says what a stopped, unfinished run waits on and where a person gives it, or "".
func waitNote(run *api.AgentRun) string {
	st := run.Status
	if api.Finished(st.Phase) || !stopped(run) {
		return ""
	}
	name, url := run.Metadata.Name, st.ConsoleURL
	w := st.WaitingOn
	if w == nil {
		w = &api.WaitingOn{}
	}
	switch {
	case w.Kind == "question":
		return fmt.Sprintf("run %s asks: %s (answer with a message to the run, or in the console at %s)", name, w.Question, url)
	case st.Reason == api.ReasonMessage:
		return fmt.Sprintf("run %s has answered and stays open for a message (keepAlive)", name)
	case w.Kind == "approval":
		return fmt.Sprintf("run %s waits for a signed-in person to approve or deny %s in the console at %s (an API token cannot approve, and approvals are never skipped)", name, w.Detail, url)
	case w.Kind == "resolution":
		return fmt.Sprintf("run %s waits for a person to resolve step %s (%s) in the console at %s", name, w.StepKey, w.Detail, url)
	case w.Kind == "cost" || w.Kind == "credits":
		return fmt.Sprintf("run %s waits for a person: %s (console: %s)", name, w.Detail, url)
	}
	detail := w.Detail
	if detail == "" {
		detail = st.Message
	}
	return strings.TrimSpace(fmt.Sprintf("run %s waits (%s): %s (console: %s)", name, st.Reason, detail, url))
}

// outwardRoutes are the protocols agentrun serves its agents over: MCP and A2A.
func (s *Server) outwardRoutes(v2 *http.ServeMux) {
	s.agentMCP = s.newAgentMCP()
	v2.HandleFunc("POST /v2/mcp", s.serveMCP)
	v2.HandleFunc("GET /v2/mcp", s.serveMCP)
	v2.HandleFunc("DELETE /v2/mcp", s.serveMCP)
	s.a2aRoutes(v2)
}

func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request) { s.agentMCP.handler.ServeHTTP(w, r) }

// agentsChangedHook syncs the MCP server's agent tools after a request of this process changed
// the agents (a write to /v2/agents or /v2/templates that succeeded), so that connected clients
// hear of it at once.
func (s *Server) agentsChangedHook(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || strings.HasSuffix(r.URL.Path, "/runs") || !(strings.HasPrefix(r.URL.Path, "/v2/agents") || strings.HasPrefix(r.URL.Path, "/v2/templates")) {
			next.ServeHTTP(w, r)
			return
		}
		sw := &statusWriter{ResponseWriter: w, status: 200}
		next.ServeHTTP(sw, r)
		if sw.status < 300 && s.agentMCP != nil {
			s.agentMCP.agentsChanged()
		}
	})
}
