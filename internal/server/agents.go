package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/policy"
	"agentrun.dev/agentrun/internal/store"
)

// decodeAgent reads an Agent resource or the AgentRun seed's {"definition": {...}} shape.
func decodeAgent(body []byte) (*api.Agent, error) {
	if hasKey(body, "definition") {
		var seed api.SeedAgentBody
		if err := api.DecodeStrict(body, &seed); err != nil {
			return nil, err
		}
		return seed.Definition.Agent(), nil
	}
	var a api.Agent
	if err := api.DecodeStrict(body, &a); err != nil {
		return nil, err
	}
	return &a, nil
}

func (s *Server) validateAgent(ctx context.Context, a *api.Agent) error {
	if err := api.DefaultAndValidateAgent(a, s.knownTools()); err != nil {
		// The checks below want a valid agent; its approvals need nothing else, so a document's
		// mistakes there are told with the rest.
		var errs api.ErrorList
		errs.AddErr(err)
		errs.AddErr(policy.Check(a.Spec.Approvals))
		return errs.Err()
	}
	if err := s.resolveComputer(ctx, a); err != nil {
		return err
	}
	if err := s.resolveSkills(ctx, a); err != nil {
		return err
	}
	if err := s.resolveWorkflowChildren(ctx, a); err != nil {
		return err
	}
	if err := policy.Check(a.Spec.Approvals); err != nil {
		return err
	}
	if err := s.checkMCPServers(ctx, a); err != nil {
		return err
	}
	a.Status = api.AgentStatus{}
	return nil
}

// knownTools are the tool names an agent may list besides the tool catalog's (which validation
// asks itself; whether a computer tool fits the agent's computer is checked with the computer):
// the tools this server enables on its own (dev tools). Listing a tool that comes with the
// agent's computer anyway (bash with a sandbox, read with a sandbox or a desktop) is allowed.
func (s *Server) knownTools() map[string]bool { return s.Tools }

// withTools fills in the tools the agent's runs are offered (status.tools, see api.OfferedTools),
// so that a reader sees those that come with its computer and its MCP servers' ticked ones too.
func withTools(a *api.Agent) *api.Agent {
	a.Status.Tools = api.OfferedTools(&a.Spec)
	return a
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func (s *Server) createAgent(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, err)
		return
	}
	a, err := decodeAgent(body)
	if err != nil {
		writeErr(w, err)
		return
	}
	if err := s.validateAgent(r.Context(), a); err != nil {
		writeErr(w, err)
		return
	}
	if dry, err := dryRun(r); err != nil || dry {
		if err == nil {
			_, gerr := s.Store.GetAgent(r.Context(), a.Metadata.Name)
			err = mustNotExist(gerr, "agent", a.Metadata.Name)
		}
		if err != nil {
			writeErr(w, err)
			return
		}
		writeDryRun(w, http.StatusCreated, "", withTools(a))
		return
	}
	if err := s.Store.CreateAgent(r.Context(), a); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, withTools(a))
}

// agents is the agent resource's list, get and delete (its writes are the handlers here: every
// change of a spec is a new revision).
func (s *Server) agents() resource[api.Agent] {
	return resource[api.Agent]{kind: "agent", listKind: "AgentList",
		meta: func(a *api.Agent) *api.ObjectMeta { return &a.Metadata },
		get:  s.Store.GetAgent, list: allOf(s.Store.ListAgents), delete: only(s.Store.DeleteAgent),
		viewer: func(context.Context, bool) (func(*api.Agent) (*api.Agent, error), error) {
			return func(a *api.Agent) (*api.Agent, error) { return withTools(a), nil }, nil
		}}
}

// applyAgent is server-side create-or-update (kubectl apply).
func (s *Server) applyAgent(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, err)
		return
	}
	a, err := decodeAgent(body)
	if err != nil {
		writeErr(w, err)
		return
	}
	if err := nameFromURL(r, &a.Metadata); err != nil {
		writeErr(w, err)
		return
	}
	if err := s.validateAgent(r.Context(), a); err != nil {
		writeErr(w, err)
		return
	}
	s.putAgent(w, r, a)
}

func (s *Server) putAgent(w http.ResponseWriter, r *http.Request, a *api.Agent) {
	ctx := r.Context()
	dry, err := dryRun(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	cur, err := s.Store.GetAgent(ctx, a.Metadata.Name)
	if errors.Is(err, store.ErrNotFound) {
		if dry {
			writeDryRun(w, http.StatusCreated, "created", withTools(a))
			return
		}
		if err := s.Store.CreateAgent(ctx, a); err != nil {
			writeErr(w, err)
			return
		}
		w.Header().Set("X-Agentrun-Apply", "created")
		writeJSON(w, http.StatusCreated, withTools(a))
		return
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	if sameJSON(cur.Spec, a.Spec) && sameJSON(cur.Metadata.Labels, a.Metadata.Labels) {
		w.Header().Set("X-Agentrun-Apply", "unchanged")
		if dry {
			w.Header().Set(DryRunHeader, "All")
		}
		writeJSON(w, http.StatusOK, withTools(cur))
		return
	}
	if dry {
		writeDryRun(w, http.StatusOK, "configured", withTools(a))
		return
	}
	if err := s.Store.UpdateAgent(ctx, a); err != nil {
		writeErr(w, err)
		return
	}
	w.Header().Set("X-Agentrun-Apply", "configured")
	writeJSON(w, http.StatusOK, withTools(a))
}

func sameJSON(a, b any) bool {
	var x, y any
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	// Both were just encoded by json.Marshal; a value that did not encode is not the same.
	if json.Unmarshal(ja, &x) != nil || json.Unmarshal(jb, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// patchAgent applies a JSON merge patch (RFC 7396) to the agent's metadata.labels and spec.
func (s *Server) patchAgent(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, err)
		return
	}
	cur, err := s.Store.GetAgent(r.Context(), r.PathValue("name"))
	if err != nil {
		writeErr(w, err)
		return
	}
	a, err := s.patchAgentWith(r.Context(), cur, body)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, withTools(a))
}

// patchAgentWith merges body into cur, validates the result as a new agent and stores it as the
// next revision (the console's MCP ticks go through here too).
func (s *Server) patchAgentWith(ctx context.Context, cur *api.Agent, body []byte) (*api.Agent, error) {
	b, err := patchedDoc(body, cur.Metadata, cur.Spec)
	if err != nil {
		return nil, err
	}
	var a api.Agent
	if err := api.DecodeStrict(b, &a); err != nil {
		return nil, err
	}
	if patchesWorkflowOnly(body) {
		// A new workflow, no pins given: its named children are pinned afresh, not kept at the
		// revisions the old document's were.
		a.Spec.WorkflowChildren = nil
	}
	if err := s.validateAgent(ctx, &a); err != nil {
		return nil, err
	}
	if err := s.Store.UpdateAgent(ctx, &a); err != nil {
		return nil, storeErr(err)
	}
	return &a, nil
}

// nameFromURL gives a PUT body without metadata.name the URL's name, and refuses one that names
// another resource.
func nameFromURL(r *http.Request, meta *api.ObjectMeta) error {
	name := r.PathValue("name")
	if meta.Name == "" {
		meta.Name = name
	}
	if meta.Name != name {
		return api.Invalid("metadata.name", "metadata.name %q does not match the URL's %q", meta.Name, name)
	}
	return nil
}

// patchedDoc applies a JSON merge patch (RFC 7396) body to a resource's metadata (name, labels,
// resourceVersion) and spec, and returns the merged document to decode and validate. Only
// metadata.labels and spec may change.
func patchedDoc(body []byte, meta api.ObjectMeta, spec any) ([]byte, error) {
	var patch map[string]any
	if err := json.Unmarshal(body, &patch); err != nil {
		return nil, api.Errorf(http.StatusBadRequest, api.CodeInvalid, "", "patch is not a JSON object: %v", err)
	}
	for k := range patch {
		if k != "spec" && k != "metadata" {
			return nil, api.Invalid(k, "only metadata.labels and spec can be patched")
		}
	}
	doc := map[string]any{"metadata": map[string]any{"name": meta.Name, "labels": meta.Labels, "resourceVersion": meta.ResourceVersion}, "spec": spec}
	merged, err := mergePatch(doc, patch)
	if err != nil {
		return nil, err
	}
	// A workflow document is one value: a patch that sets spec.workflow replaces it as written
	// (merged with the old one, its nodes would mix two documents, and a null in it, such as a
	// field_equals value, would be dropped).
	if ps, _ := patch["spec"].(map[string]any); ps != nil && ps["workflow"] != nil {
		if ms, _ := merged.(map[string]any)["spec"].(map[string]any); ms != nil {
			ms["workflow"] = ps["workflow"]
		}
	}
	if md, _ := merged.(map[string]any)["metadata"].(map[string]any); md != nil && md["name"] != meta.Name {
		return nil, api.Invalid("metadata.name", "a name cannot be changed")
	}
	return json.Marshal(merged)
}

// mergePatch applies an RFC 7396 merge patch to a document (any JSON-marshalable value).
func mergePatch(doc any, patch any) (any, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var d any
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("merge patch: decode the document: %w", err)
	}
	return merge(d, patch), nil
}

func merge(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = merge(t[k], v)
	}
	return t
}

// EnsureBuiltinAgents makes the ready-made assistant (api.BuiltinAssistant, "claude-assistant")
// on a store where that name was never used, and reports whether it did. The store keeps every
// agent's revisions after the agent is deleted (runs are pinned to them), so a name that has a
// revision 1 was used before, by this server or by a user: an agent of that name that a user
// deleted, or replaced, is left as the user left it, on every restart. The agent is validated like
// one created through the API, so it gets the server's best sandbox and the default caps.
func (s *Server) EnsureBuiltinAgents(ctx context.Context) (bool, error) {
	name := api.BuiltinAssistant
	if _, err := s.Store.GetAgentRevision(ctx, name, 1); err == nil {
		return false, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return false, err
	}
	a := api.BuiltinAssistantAgent()
	if err := s.validateAgent(ctx, a); err != nil {
		return false, err
	}
	if err := s.Store.CreateAgent(ctx, a); err != nil {
		if errors.Is(err, store.ErrAlreadyExists) {
			return false, nil // another server of the cluster made it just now
		}
		return false, err
	}
	return true, nil
}
