package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/runfolder"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/telemetry"
)

// prepareRun validates a submitted run against its agent and fills what the system owns: the
// pinned revision, the copied cap, the resolved deadline, the console URL.
func (s *Server) prepareRun(r *http.Request, run *api.AgentRun) error {
	now := s.Now()
	if err := api.DefaultAndValidateRun(run, now); err != nil {
		return err
	}
	ag, err := s.Store.GetAgent(r.Context(), run.Spec.Agent)
	if errors.Is(err, store.ErrNotFound) {
		return api.Errorf(http.StatusNotFound, api.CodeAgentNotFound, "spec.agent", "agent %q does not exist", run.Spec.Agent)
	}
	if err != nil {
		return err
	}
	if ag.Spec.State == api.AgentStateStopped {
		return api.Errorf(http.StatusConflict, api.CodeAgentStopped, "spec.agent", "agent %q is stopped (spec.state: Stopped) and refuses new runs", ag.Metadata.Name)
	}
	if run.Spec.MaxCostUSD == "" {
		run.Spec.MaxCostUSD = ag.Spec.PerRunMaxCostUSD
	}
	if err := s.checkModel(r.Context(), &ag.Spec); err != nil {
		return err
	}
	limit, _ := cost.ParseUSD(run.Spec.MaxCostUSD)
	st := api.AgentRunStatus{Phase: api.PhaseQueued, AgentRevision: ag.Status.Revision, ConsoleURL: s.consoleURL(run.Metadata.Name),
		Cost: &api.RunCost{TotalUSD: cost.Micros(0).String(), LimitUSD: limit.String(), Billing: "credits"}}
	if ag.Spec.Model.Access == api.AccessBYOK {
		st.Cost.LimitUSD, st.Cost.Billing = "", "none" // not billed here, no cap to reach
	}
	if run.Spec.Deadline != "" {
		d, _ := api.ResolveDeadline(run.Spec.Deadline, now)
		d = d.UTC()
		st.Deadline = &d
	}
	// A caller's trace context: the run's spans join its trace.
	st.TraceParent = telemetry.TraceParent(r.Header.Get("traceparent"))
	run.Status = st
	return nil
}

// storeRun validates and stores run as insertRun does, without a response (the console's re-run).
func (s *Server) storeRun(r *http.Request, run *api.AgentRun, prefix string) error {
	if err := s.prepareRun(r, run); err != nil {
		return err
	}
	return s.createPrepared(r, run, prefix)
}

// createPrepared stores a prepared run with its first timeline event (one commit, and before any
// event of the runner that may claim it at once), generating its name again on a collision when
// prefix is what it was generated from.
func (s *Server) createPrepared(r *http.Request, run *api.AgentRun, prefix string) error {
	create := s.Store.CreateRun
	if run.Spec.Group != "" {
		create = s.createMember
	}
	err := create(r.Context(), run, createdEvent(run))
	for tries := 0; prefix != "" && errors.Is(err, store.ErrAlreadyExists) && tries < 3; tries++ {
		run.Metadata.Name = generateName(prefix)
		run.Status.ConsoleURL = s.consoleURL(run.Metadata.Name)
		err = create(r.Context(), run, createdEvent(run))
	}
	return err
}

// insertRun stores run and answers with it. prefix, when not "", is what the run's name was
// generated from (the client gave none): a generated name another run already has is generated
// again, a few times, rather than refused (five random characters collide, with better than even
// odds, among 10,000 runs of one agent).
func (s *Server) insertRun(w http.ResponseWriter, r *http.Request, run *api.AgentRun, apply bool, prefix string) {
	dry, err := dryRun(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	if err := s.prepareRun(r, run); err != nil {
		writeErr(w, err)
		return
	}
	if dry {
		if err := s.dryRunInsert(r, run); err != nil {
			writeErr(w, err)
			return
		}
		result := ""
		if apply {
			result = "created"
		}
		writeDryRun(w, http.StatusCreated, result, run)
		return
	}
	if err := s.createPrepared(r, run, prefix); err != nil {
		writeErr(w, err)
		return
	}
	if apply {
		w.Header().Set("X-Agentrun-Apply", "created")
	}
	writeJSON(w, http.StatusCreated, run)
}

// createdEvent is a run's run.created event.
func createdEvent(run *api.AgentRun) api.Event {
	return api.Event{Type: api.EventRunCreated, Message: "queued for agent " + run.Spec.Agent + " revision " + itoa(int(run.Status.AgentRevision))}
}

// createRun is POST /v2/agentruns: an AgentRun resource, or the seed's shape with "agent".
func (s *Server) createRun(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, err)
		return
	}
	var run *api.AgentRun
	if hasKey(body, "items") {
		s.createRunList(w, r, body)
		return
	}
	if hasKey(body, "spec") || hasKey(body, "kind") {
		run = &api.AgentRun{}
		if err := api.DecodeStrict(body, run); err != nil {
			writeErr(w, err)
			return
		}
	} else {
		var seed api.SeedRunBody
		if err := api.DecodeStrict(body, &seed); err != nil {
			writeErr(w, err)
			return
		}
		if seed.Agent == "" {
			writeErr(w, api.Errorf(http.StatusUnprocessableEntity, api.CodeRequired, "agent", "agent is required"))
			return
		}
		run = seed.Run(seed.Agent)
	}
	prefix := ""
	if run.Metadata.Name == "" && run.Spec.Agent != "" && run.Spec.Group == "" { // a member is named GROUP-TASKKEY
		prefix = run.Spec.Agent
		run.Metadata.Name = generateName(prefix)
	}
	s.insertRun(w, r, run, false, prefix)
}

// startRun is POST /v2/agents/NAME/runs with the seed's {"input": {"content": ...}} body.
func (s *Server) startRun(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, err)
		return
	}
	var seed api.SeedRunBody
	if err := api.DecodeStrict(body, &seed); err != nil {
		writeErr(w, err)
		return
	}
	agentName := r.PathValue("name")
	if seed.Agent != "" && seed.Agent != agentName {
		writeErr(w, api.Invalid("agent", "agent %q does not match the URL's %q", seed.Agent, agentName))
		return
	}
	run := seed.Run(agentName)
	prefix := ""
	if run.Metadata.Name == "" {
		prefix = agentName
		run.Metadata.Name = generateName(prefix)
	}
	s.insertRun(w, r, run, false, prefix)
}

func (s *Server) applyRun(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, err)
		return
	}
	var run api.AgentRun
	if err := api.DecodeStrict(body, &run); err != nil {
		writeErr(w, err)
		return
	}
	if err := nameFromURL(r, &run.Metadata); err != nil {
		writeErr(w, err)
		return
	}
	name := run.Metadata.Name
	cur, err := s.Store.GetRun(r.Context(), name)
	if errors.Is(err, store.ErrNotFound) {
		s.insertRun(w, r, &run, true, "")
		return
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	// A run's spec is fixed once it starts; applying the same file again is a no-op.
	want := run.Spec
	if want.MaxCostUSD == "" {
		want.MaxCostUSD = cur.Spec.MaxCostUSD
	}
	if !sameJSON(want, cur.Spec) {
		writeErr(w, api.Errorf(http.StatusConflict, api.CodeConflict, "spec", "run %q already exists with a different spec; a run's spec cannot change after it is created (cancel it and start a new one)", name))
		return
	}
	if dry, err := dryRun(r); err != nil {
		writeErr(w, err)
		return
	} else if dry {
		w.Header().Set(DryRunHeader, "All")
	}
	w.Header().Set("X-Agentrun-Apply", "unchanged")
	writeJSON(w, http.StatusOK, cur)
}

// patchRun is PATCH /v2/agentruns/NAME (JSON merge patch). A run's spec is fixed once it is
// created, except its own cap, which may be raised: {"spec": {"maxCostUSD": "2.00"}}.
func (s *Server) patchRun(w http.ResponseWriter, r *http.Request) {
	s.raiseCap(w, r)
}

// runs is the run resource's list, get and delete (a run is made by its own handlers: a single
// run, a batch, a fork).
func (s *Server) runs() resource[api.AgentRun] {
	return resource[api.AgentRun]{kind: "run", listKind: "AgentRunList",
		meta: func(run *api.AgentRun) *api.ObjectMeta { return &run.Metadata },
		get:  s.Store.GetRun, list: s.listRuns, delete: s.deleteRun}
}

// listRuns lists the runs ?agent=, ?phase= and ?fieldSelector= (spec.agent, status.phase,
// spec.group) select.
func (s *Server) listRuns(ctx context.Context, q url.Values) ([]*api.AgentRun, error) {
	f := store.RunFilter{Agent: q.Get("agent"), Phase: api.Phase(q.Get("phase"))}
	for _, sel := range strings.Split(q.Get("fieldSelector"), ",") {
		if sel == "" {
			continue
		}
		k, v, ok := strings.Cut(sel, "=")
		switch {
		case ok && k == "spec.agent":
			f.Agent = v
		case ok && k == "status.phase":
			f.Phase = api.Phase(v)
		case ok && k == "spec.group":
			f.Group = v
		default:
			return nil, api.Invalid("fieldSelector", "unsupported field selector %q (supported: spec.agent, status.phase, spec.group)", sel)
		}
	}
	return s.Store.ListRuns(ctx, f)
}

// deleteRun deletes a run, stops it if it is driven in this process and removes its folder.
func (s *Server) deleteRun(ctx context.Context, name string) (map[string]any, error) {
	if err := s.Store.DeleteRun(ctx, name); err != nil {
		return nil, err
	}
	if s.Interrupt != nil {
		s.Interrupt(name)
	}
	os.RemoveAll(runfolder.Path(s.DataDir, name))
	return nil, nil
}

type messageBody struct {
	Payload    *string `json:"payload"`
	MessageKey string  `json:"messageKey,omitempty"`
	// IfBusy is what the message does if the run has a turn in flight (api.IfBusy); empty: the
	// agent's spec.ifBusy, else enqueue.
	IfBusy api.IfBusy `json:"ifBusy,omitempty"`
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, err)
		return
	}
	var m messageBody
	if err := api.DecodeStrict(body, &m); err != nil {
		writeErr(w, err)
		return
	}
	if m.Payload == nil {
		writeErr(w, api.Errorf(http.StatusUnprocessableEntity, api.CodeRequired, "payload", "payload is required"))
		return
	}
	if len(*m.Payload) > api.MaxInputBytes {
		writeErr(w, api.Errorf(http.StatusRequestEntityTooLarge, api.CodeTooLarge, "payload", "message is %d bytes; the limit is %d (256 KiB)", len(*m.Payload), api.MaxInputBytes))
		return
	}
	if len(m.MessageKey) > 256 {
		writeErr(w, api.Invalid("messageKey", "messageKey is longer than 256 characters"))
		return
	}
	if err := api.CheckIfBusy("ifBusy", m.IfBusy); err != nil {
		writeErr(w, err)
		return
	}
	msg, created, err := s.addMessage(r.Context(), r.PathValue("name"), m.MessageKey, *m.Payload, m.IfBusy)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"message": msg, "created": created})
}

// addMessage delivers a message to a run (once per key), taken as ifBusy says (messageMode), and
// puts it on the run's timeline: the API's messages and those of /v2/mcp and /v2/a2a.
func (s *Server) addMessage(ctx context.Context, name, key, payload string, ifBusy api.IfBusy) (api.Message, bool, error) {
	mode, err := s.messageMode(ctx, name, ifBusy)
	if err != nil {
		return api.Message{}, false, err
	}
	msg, created, err := s.Store.AddMessageIfBusy(ctx, name, key, payload, mode)
	if err != nil {
		return msg, false, err
	}
	if created {
		evs := []api.Event{{Type: api.EventMessageReceived, Message: api.FirstLine(payload, 120)}}
		if msg.IfBusy != "" {
			what := "queued until the turn in flight ends"
			if msg.IfBusy.Steers() {
				what = "the turn in flight stops for it (" + string(msg.IfBusy) + ")"
			}
			evs = append(evs, api.Event{Type: api.EventMessageQueued, Message: fmt.Sprintf("message %d arrived while a turn was in flight: %s", msg.Seq, what),
				Data: mustJSON(map[string]any{"seq": msg.Seq, "ifBusy": msg.IfBusy})})
		}
		s.Store.AppendEvents(ctx, name, evs)
		if msg.IfBusy.Steers() && s.Steer != nil {
			s.Steer(name, msg.Seq)
		}
	}
	return msg, created, nil
}

// messageMode is the ifBusy a message to run is taken with: the message's own, else the agent's
// spec.ifBusy (of the revision the run is pinned to), else enqueue. Interrupt and rollback are
// refused on a run whose loop cannot stop its turn for one yet (api.SteerUnsupported).
func (s *Server) messageMode(ctx context.Context, name string, asked api.IfBusy) (api.IfBusy, error) {
	run, err := s.Store.GetRun(ctx, name)
	if err != nil {
		return "", err
	}
	spec, err := s.Store.GetAgentRevision(ctx, run.Spec.Agent, run.Status.AgentRevision)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	mode := asked
	if mode == "" && spec != nil {
		mode = spec.IfBusy
	}
	if mode == "" {
		mode = api.IfBusyEnqueue
	}
	if mode.Steers() && spec != nil {
		if why := api.SteerUnsupported(spec, mode); why != "" {
			return "", api.Invalid("ifBusy", "ifBusy %s %s; use enqueue or reject", mode, why)
		}
	}
	return mode, nil
}

func (s *Server) listMessages(w http.ResponseWriter, r *http.Request) {
	if _, err := s.Store.GetRun(r.Context(), r.PathValue("name")); err != nil {
		writeErr(w, err)
		return
	}
	msgs, err := s.Store.ListMessages(r.Context(), r.PathValue("name"), 0)
	if err != nil {
		writeErr(w, err)
		return
	}
	if msgs == nil {
		msgs = []api.Message{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": msgs})
}

func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	run, err := s.requestCancel(r.Context(), name, "a user asked to cancel the run")
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, run)
}

// requestCancel asks a run to stop (the API's cancel and the console's), saying why on its
// timeline, and interrupts the local runner's drive of it.
func (s *Server) requestCancel(ctx context.Context, name, why string) (*api.AgentRun, error) {
	run, err := s.Store.RequestCancel(ctx, name)
	if err != nil {
		return nil, err
	}
	s.Store.AppendEvents(ctx, name, []api.Event{{Type: api.EventRunCancelRequested, Message: why}})
	if s.Interrupt != nil {
		s.Interrupt(name)
	}
	return run, nil
}

func (s *Server) cancel(ctx context.Context, name, why string) error {
	_, err := s.requestCancel(ctx, name, why)
	return err
}

func (s *Server) listSteps(w http.ResponseWriter, r *http.Request) {
	if _, err := s.Store.GetRun(r.Context(), r.PathValue("name")); err != nil {
		writeErr(w, err)
		return
	}
	steps, err := s.Store.ListSteps(r.Context(), r.PathValue("name"))
	if err != nil {
		writeErr(w, err)
		return
	}
	if steps == nil {
		steps = []api.Step{}
	}
	api.MarkRolledBack(steps)
	writeJSON(w, http.StatusOK, map[string]any{"items": steps})
}

// fullAnswer is the last answer event's text (status holds only the 4 KiB preview).
func (s *Server) fullAnswer(ctx context.Context, run *api.AgentRun) (string, bool, error) {
	if run.Status.Answer == nil {
		return "", false, nil
	}
	evs, err := s.Store.ListEvents(ctx, run.Metadata.Name, 0, 0)
	if err != nil {
		return "", false, err
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == "answer" {
			if len(evs[i].Data) == 0 {
				break // purged by retention (status.payloadsPurgedAt): the preview is what is kept
			}
			var d struct {
				Answer string `json:"answer"`
			}
			if err := json.Unmarshal(evs[i].Data, &d); err != nil {
				return "", false, fmt.Errorf("answer event %d: %w", evs[i].Seq, err)
			}
			return d.Answer, true, nil
		}
	}
	return run.Status.Answer.Preview, true, nil
}

func (s *Server) getAnswer(w http.ResponseWriter, r *http.Request) {
	run, err := s.Store.GetRun(r.Context(), r.PathValue("name"))
	if err != nil {
		writeErr(w, err)
		return
	}
	text, ok, err := s.fullAnswer(r.Context(), run)
	if err != nil {
		writeErr(w, err)
		return
	}
	if !ok {
		writeErr(w, api.Errorf(http.StatusNotFound, api.CodeNoAnswer, "", "run %q has no answer yet (phase %s)", run.Metadata.Name, run.Status.Phase))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte(text))
}

// getFile serves a run folder file from the store (where each step saves the folder), so it works
// whichever runner holds the run, or none. A directory path lists the files under it.
func (s *Server) getFile(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := checkRunPath(r.PathValue("path")); err != nil {
		writeErr(w, err)
		return
	}
	if _, err := s.Store.GetRun(r.Context(), name); err != nil {
		writeErr(w, err)
		return
	}
	p := strings.TrimPrefix(path.Clean("/"+r.PathValue("path")), "/")
	if p != "" {
		f, err := s.Store.GetFile(r.Context(), name, p)
		if err == nil {
			w.Header().Set("Content-Type", "application/octet-stream")
			http.ServeContent(w, r, "", f.UpdatedAt, bytes.NewReader(f.Content))
			return
		}
		if !errors.Is(err, store.ErrNotFound) {
			writeErr(w, err)
			return
		}
	}
	files, err := s.Store.ListFileInfos(r.Context(), name)
	if err != nil {
		writeErr(w, err)
		return
	}
	type entry struct {
		Path     string    `json:"path"`
		Size     int64     `json:"size"`
		Modified time.Time `json:"modified"`
	}
	out := []entry{}
	prefix := p + "/"
	if p == "" {
		prefix = ""
	}
	for _, f := range files {
		if strings.HasPrefix(f.Path, prefix) {
			out = append(out, entry{f.Path, f.Size, f.UpdatedAt})
		}
	}
	if len(out) == 0 {
		writeErr(w, api.Errorf(http.StatusNotFound, api.CodeFileNotFound, "path", "no file %q in run %q's folder", r.PathValue("path"), name))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": out})
}

type resolveBody struct {
	Action  api.Resolution  `json:"action"`
	StepKey string          `json:"stepKey,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
}

func (s *Server) resolve(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, err)
		return
	}
	var b resolveBody
	if err := api.DecodeStrict(body, &b); err != nil {
		writeErr(w, err)
		return
	}
	switch b.Action {
	case api.ResolveRetry, api.ResolveSkip:
		if len(b.Result) > 0 {
			writeErr(w, api.Invalid("result", "a result is given only with action complete"))
			return
		}
	case api.ResolveComplete:
		if len(b.Result) == 0 {
			writeErr(w, api.Errorf(http.StatusUnprocessableEntity, api.CodeRequired, "result", "action complete needs the step's result"))
			return
		}
	default:
		writeErr(w, api.Invalid("action", "action %q: use retry, skip or complete", b.Action))
		return
	}
	name := r.PathValue("name")
	run, err := s.Store.GetRun(r.Context(), name)
	if err != nil {
		writeErr(w, err)
		return
	}
	if run.Status.Phase != api.PhaseNeedsResolution || run.Status.WaitingOn == nil {
		writeErr(w, api.Errorf(http.StatusConflict, api.CodeNotResolvable, "", "run %q is %s, not waiting for a resolution", name, run.Status.Phase))
		return
	}
	key := b.StepKey
	if key == "" {
		key = run.Status.WaitingOn.StepKey
	}
	if key != run.Status.WaitingOn.StepKey {
		writeErr(w, api.Errorf(http.StatusConflict, api.CodeNotResolvable, "stepKey", "run %q waits on step %s, not %s", name, run.Status.WaitingOn.StepKey, key))
		return
	}
	// A step waits for a resolution because whether it ran is unknown: running it again (a
	// payment, a deploy, a message sent twice) is a person's decision, not the API token's.
	if b.Action == api.ResolveRetry {
		if _, ok := requirePerson(w, r, "retry an interrupted step (it runs again a command whose first run's outcome is unknown)"); !ok {
			return
		}
	}
	result := b.Result
	if b.Action == api.ResolveComplete {
		steps, err := s.Store.ListSteps(r.Context(), name)
		if err != nil {
			writeErr(w, err)
			return
		}
		for _, st := range steps {
			if st.Key == key && st.Kind == "tool" {
				result = normalizeToolResult(result)
			}
		}
	}
	if err := s.Store.ResolveStep(r.Context(), name, key, b.Action, result); err != nil {
		writeErr(w, err)
		return
	}
	s.Store.AppendEvents(r.Context(), name, []api.Event{{Type: api.EventRunResolution, StepKey: key, Message: "a person chose " + string(b.Action) + " for " + key}})
	run, err = s.Store.GetRun(r.Context(), name)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, run)
}

// normalizeToolResult accepts a supplied result as a tool result object ({"Content", "IsError"}),
// or a plain string or other JSON, which becomes the result's content.
func normalizeToolResult(raw json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil {
		if _, ok := obj["Content"]; ok {
			return raw
		}
		if c, ok := obj["content"]; ok {
			var s string
			if json.Unmarshal(c, &s) == nil {
				var isErr bool
				if v, given := obj["isError"]; given && json.Unmarshal(v, &isErr) != nil {
					return raw // not the {content, isError} shape after all: the JSON is the content
				}
				b, _ := json.Marshal(map[string]any{"Content": s, "IsError": isErr})
				return b
			}
		}
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		s = string(raw)
	}
	b, _ := json.Marshal(map[string]any{"Content": s, "IsError": false})
	return b
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
