package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/trigger"
)

// Triggers: /v2/triggers (the resource, its fires, test, fire, rotate) and /v2/hooks/NAME, the
// deliveries' endpoint. A hook is not behind the API token: its signature is its credential, and
// a delivery that does not verify gets 401 and nothing more (the log says why).

func (s *Server) triggerRoutes(v2, mux *http.ServeMux) {
	rs := s.triggers()
	v2.HandleFunc("GET /v2/triggers", rs.listAll)
	v2.HandleFunc("POST /v2/triggers", rs.createOne)
	v2.HandleFunc("GET /v2/triggers/{name}", rs.getOne)
	v2.HandleFunc("PUT /v2/triggers/{name}", rs.applyOne)
	v2.HandleFunc("PATCH /v2/triggers/{name}", rs.patchOne)
	v2.HandleFunc("DELETE /v2/triggers/{name}", rs.deleteOne)
	v2.HandleFunc("GET /v2/triggers/{name}/fires", history(rs, "trigger", s.Store.ListFires))
	v2.HandleFunc("POST /v2/triggers/{name}/test", s.testTrigger)
	v2.HandleFunc("POST /v2/triggers/{name}/fire", s.fireTrigger)
	v2.HandleFunc("POST /v2/triggers/{name}/rotate", s.rotateTrigger)
	mux.HandleFunc("POST /v2/hooks/{name}", s.hook)
}

// PrepareRun is prepareRun for a run made outside a request (a trigger's fire): the same checks
// and the same system-owned fields as POST /v2/agentruns.
func (s *Server) PrepareRun(ctx context.Context, run *api.AgentRun) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "/", nil)
	if err != nil {
		return err
	}
	return s.prepareRun(req, run)
}

func (s *Server) triggersOn() (*trigger.Controller, error) {
	if s.Triggers == nil {
		return nil, api.Errorf(http.StatusServiceUnavailable, api.CodeInternal, "", "triggers are not available on this server")
	}
	return s.Triggers, nil
}

// triggerView fills a trigger's derived status: kind, next fire, webhook URL, last fires.
func (s *Server) triggerView(ctx context.Context, t *api.Trigger) (*api.Trigger, error) {
	fires, err := s.Store.ListFires(ctx, t.Metadata.Name, 5)
	if err != nil {
		return nil, err
	}
	t.Status = api.TriggerStatus{Kind: t.Spec.Kind(), NextFireTime: trigger.NextFire(t, s.Now()), LastFires: fires}
	if t.Spec.Webhook != nil || t.Spec.GitHub != nil {
		t.Status.WebhookURL = strings.TrimRight(s.BaseURL, "/") + "/v2/hooks/" + t.Metadata.Name
	}
	return t, nil
}

func decodeTrigger(body []byte) (*api.Trigger, error) {
	var t api.Trigger
	if err := api.DecodeStrict(body, &t); err != nil {
		return nil, err
	}
	t.Status = api.TriggerStatus{} // derived, never stored
	return &t, nil
}

// triggers is the trigger resource's handlers (resource.go).
func (s *Server) triggers() resource[api.Trigger] {
	return resource[api.Trigger]{kind: "trigger", listKind: "TriggerList",
		meta:   func(t *api.Trigger) *api.ObjectMeta { return &t.Metadata },
		spec:   func(t *api.Trigger) any { return t.Spec },
		decode: decodeTrigger, check: s.checkTrigger,
		get: s.Store.GetTrigger, list: allOf(s.Store.ListTriggers), create: s.Store.CreateTrigger, update: s.Store.UpdateTrigger, delete: only(s.Store.DeleteTrigger),
		viewer: func(ctx context.Context, read bool) (func(*api.Trigger) (*api.Trigger, error), error) {
			return func(t *api.Trigger) (*api.Trigger, error) { return s.triggerView(ctx, t) }, nil
		}}
}

// checkTrigger validates a trigger and what it names: its agent, and its group (which must run
// the same agent). Nothing is stored when it fails.
func (s *Server) checkTrigger(ctx context.Context, t *api.Trigger) error {
	return s.checkTriggerFor(ctx, t, "")
}

// checkTriggerFor is checkTrigger for a trigger of pendingAgent, an agent not stored yet that is
// made in the same step (a template's apply): its existence is not asked of the store.
func (s *Server) checkTriggerFor(ctx context.Context, t *api.Trigger, pendingAgent string) error {
	if err := trigger.DefaultAndValidate(t, s.Now()); err != nil {
		return err
	}
	if pendingAgent != "" && t.Spec.Agent == pendingAgent {
		// made with the trigger
	} else if _, err := s.Store.GetAgent(ctx, t.Spec.Agent); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return api.Errorf(http.StatusNotFound, api.CodeAgentNotFound, "spec.agent", "agent %q does not exist", t.Spec.Agent)
		}
		return err
	}
	if t.Spec.Group != "" {
		g, err := s.Store.GetGroup(ctx, t.Spec.Group)
		if errors.Is(err, store.ErrNotFound) {
			return api.Errorf(http.StatusNotFound, api.CodeGroupNotFound, "spec.group", "group %q does not exist", t.Spec.Group)
		}
		if err != nil {
			return err
		}
		if g.Spec.Agent != t.Spec.Agent {
			return api.Invalid("spec.group", "group %q runs agent %q, not %q", t.Spec.Group, g.Spec.Agent, t.Spec.Agent)
		}
	}
	return nil
}

// fireBody is the body of .../test and .../fire: an event payload (absent: the trigger's
// spec.testPayload, or a schedule's event for now).
type fireBody struct {
	Payload json.RawMessage `json:"payload,omitempty"`
}

func (s *Server) readFireBody(w http.ResponseWriter, r *http.Request) (*api.Trigger, json.RawMessage, bool) {
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, err)
		return nil, nil, false
	}
	var fb fireBody
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := api.DecodeStrict(body, &fb); err != nil {
			writeErr(w, err)
			return nil, nil, false
		}
	}
	t, err := s.Store.GetTrigger(r.Context(), r.PathValue("name"))
	if err != nil {
		writeErr(w, err)
		return nil, nil, false
	}
	return t, fb.Payload, true
}

// testTrigger renders the input over a payload and shows the run a fire would start; it starts
// nothing and records nothing.
func (s *Server) testTrigger(w http.ResponseWriter, r *http.Request) {
	c, err := s.triggersOn()
	if err != nil {
		writeErr(w, err)
		return
	}
	t, payload, ok := s.readFireBody(w, r)
	if !ok {
		return
	}
	data, err := trigger.ManualEvent(t, payload, s.Now())
	if err != nil {
		writeErr(w, err)
		return
	}
	run, err := c.NewRun(r.Context(), t, data)
	if err != nil {
		if ae, ok := api.AsError(err); ok && ae.Field == "spec.input" {
			writeErr(w, api.Invalid("payload", "%s", ae.Message))
			return
		}
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"trigger": t.Metadata.Name, "event": data, "input": run.Spec.Input, "run": run, "started": false})
}

func (s *Server) fireTrigger(w http.ResponseWriter, r *http.Request) {
	c, err := s.triggersOn()
	if err != nil {
		writeErr(w, err)
		return
	}
	t, payload, ok := s.readFireBody(w, r)
	if !ok {
		return
	}
	rec, err := c.FireNow(r.Context(), t, payload)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, s.fireAnswer(rec, true))
}

func (s *Server) fireAnswer(rec api.TriggerFire, created bool) map[string]any {
	out := map[string]any{"fire": rec, "replayed": !created}
	if rec.Run != "" {
		out["consoleURL"] = s.consoleURL(rec.Run)
	}
	return out
}

// rotateBody is the body of .../rotate: how long the old secret still verifies ("24h").
type rotateBody struct {
	Hold string `json:"hold,omitempty"`
}

// rotateTrigger makes a new signing secret (only a signed-in person may) and answers it once.
func (s *Server) rotateTrigger(w http.ResponseWriter, r *http.Request) {
	if _, ok := requirePerson(w, r, "rotate a trigger's signing secret"); !ok {
		return
	}
	c, err := s.triggersOn()
	if err != nil {
		writeErr(w, err)
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, err)
		return
	}
	var rb rotateBody
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := api.DecodeStrict(body, &rb); err != nil {
			writeErr(w, err)
			return
		}
	}
	var hold time.Duration
	if rb.Hold != "" {
		if hold, err = time.ParseDuration(rb.Hold); err != nil || hold <= 0 || hold > 30*24*time.Hour {
			writeErr(w, api.Invalid("hold", "hold %q: want a duration up to 720h, such as 24h", rb.Hold))
			return
		}
	}
	t, err := s.Store.GetTrigger(r.Context(), r.PathValue("name"))
	if err != nil {
		writeErr(w, err)
		return
	}
	rot, err := c.Rotate(r.Context(), t, hold)
	if err != nil {
		writeErr(w, err)
		return
	}
	s.Log.Info("trigger secret rotated", "trigger", t.Metadata.Name, "secret", rot.SecretRef)
	writeJSON(w, http.StatusOK, rot)
}

// unauthorized is a hook's only answer to a delivery that does not verify.
func unauthorized(w http.ResponseWriter) {
	writeJSON(w, http.StatusUnauthorized, api.Errorf(http.StatusUnauthorized, api.CodeUnauthorized, "", "unauthorized"))
}

// hook is POST /v2/hooks/NAME: a signed delivery for a webhook or GitHub trigger.
func (s *Server) hook(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, trigger.MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeErr(w, api.Errorf(http.StatusRequestEntityTooLarge, api.CodeTooLarge, "", "a delivery's body is at most %d bytes", trigger.MaxBody))
			return
		}
		writeErr(w, api.Invalid("", "read the body: %v", err))
		return
	}
	// Decoded (for the input template) only once verified, but bounded for everyone.
	if err := api.CheckJSONDepth(body); err != nil {
		writeErr(w, err)
		return
	}
	c := s.Triggers
	t, err := s.Store.GetTrigger(r.Context(), name)
	if err != nil || c == nil || (t.Spec.Webhook == nil && t.Spec.GitHub == nil) {
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			writeErr(w, err)
			return
		}
		s.Log.Info("hook refused: no such webhook trigger", "trigger", name)
		unauthorized(w)
		return
	}
	secrets, err := c.Secrets(r.Context(), t)
	if err != nil {
		s.Log.Error("hook: open the signing secret", "trigger", name, "err", err)
		writeErr(w, api.Errorf(http.StatusInternalServerError, api.CodeInternal, "", "the trigger's signing secret does not open"))
		return
	}
	if len(secrets) == 0 {
		s.Log.Warn("hook refused: the trigger's signing secret is not set", "trigger", name)
		unauthorized(w)
		return
	}
	if t.Spec.Webhook != nil {
		s.standardHook(w, r, t, secrets, body)
		return
	}
	s.githubHook(w, r, t, secrets, body)
}

func (s *Server) standardHook(w http.ResponseWriter, r *http.Request, t *api.Trigger, secrets []string, body []byte) {
	id, ts := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp")
	if err := trigger.VerifyStandard(secrets, id, ts, r.Header.Get("webhook-signature"), body, s.Now()); err != nil {
		s.Log.Info("hook refused", "trigger", t.Metadata.Name, "why", err.Error())
		unauthorized(w)
		return
	}
	ev := trigger.Event{Source: api.FireSourceWebhook, Key: "webhook:" + id, DeliveryID: id, Data: trigger.WebhookEvent(t.Metadata.Name, id, ts, body)}
	s.fireHook(w, r, t, ev)
}

func (s *Server) githubHook(w http.ResponseWriter, r *http.Request, t *api.Trigger, secrets []string, body []byte) {
	if err := trigger.VerifyGitHub(secrets, r.Header.Get("X-Hub-Signature-256"), body); err != nil {
		s.Log.Info("hook refused", "trigger", t.Metadata.Name, "why", err.Error())
		unauthorized(w)
		return
	}
	event, delivery := r.Header.Get("X-GitHub-Event"), r.Header.Get("X-GitHub-Delivery")
	if event == "ping" {
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "trigger": t.Metadata.Name, "message": "pong"})
		return
	}
	if event == "" || delivery == "" || len(delivery) > trigger.MaxID {
		writeErr(w, api.Invalid("X-GitHub-Event", "a GitHub delivery names its event (X-GitHub-Event) and delivery (X-GitHub-Delivery, at most 256 characters)"))
		return
	}
	payload, err := trigger.GitHubPayload(body)
	if err != nil {
		writeErr(w, api.Invalid("body", "%v", err))
		return
	}
	if why := trigger.GitHubFilter(t.Spec.GitHub, event, payload); why != "" {
		writeJSON(w, http.StatusOK, map[string]any{"ignored": true, "reason": why})
		return
	}
	ev := trigger.Event{Source: api.FireSourceGitHub, Key: trigger.GitHubKey(body), DeliveryID: delivery, Data: trigger.GitHubEvent(t.Metadata.Name, event, delivery, payload)}
	s.fireHook(w, r, t, ev)
}

func (s *Server) fireHook(w http.ResponseWriter, r *http.Request, t *api.Trigger, ev trigger.Event) {
	rec, created, err := s.Triggers.Fire(r.Context(), t, ev)
	if err != nil {
		writeErr(w, err)
		return
	}
	status := http.StatusCreated // a fire recorded (its outcome says whether a run started)
	if !created {
		status = http.StatusOK // a delivery seen before: the first record, nothing started
	}
	writeJSON(w, status, s.fireAnswer(rec, created))
}
