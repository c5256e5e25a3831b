package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"strings"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/group"
	"agentrun.dev/agentrun/internal/runfolder"
	"agentrun.dev/agentrun/internal/store"
)

// groupRoutes registers /v2/agentgroups.
func (s *Server) groupRoutes(v2 *http.ServeMux) {
	groups := s.groups()
	v2.HandleFunc("GET /v2/agentgroups", groups.listAll)
	v2.HandleFunc("POST /v2/agentgroups", s.createGroup)
	v2.HandleFunc("GET /v2/agentgroups/{name}", groups.getOne)
	v2.HandleFunc("PUT /v2/agentgroups/{name}", s.applyGroup)
	v2.HandleFunc("PATCH /v2/agentgroups/{name}", s.patchGroup)
	v2.HandleFunc("DELETE /v2/agentgroups/{name}", groups.deleteOne)
	v2.HandleFunc("POST /v2/agentgroups/{name}/cancel", s.cancelGroup)
	v2.HandleFunc("GET /v2/agentgroups/{name}/results", s.groupResults)
	v2.HandleFunc("GET /v2/environments", s.listEnvironments)
	v2.HandleFunc("POST /v2/environments", s.loadEnvironment)
	v2.HandleFunc("GET /v2/environments/{ref...}", s.getEnvironment)
	v2.HandleFunc("PUT /v2/environments/{ref...}", s.loadEnvironment)
}

// Evaluator is the evaluation side of groups (internal/eval): it checks an evaluation group and
// fixes its cases before the group is stored, creates the cases' runs after, and keeps the
// environments.
type Evaluator interface {
	Prepare(ctx context.Context, g *api.AgentGroup) error
	Start(ctx context.Context, g *api.AgentGroup) error
	Delete(ctx context.Context, group string)
	Environment(ctx context.Context, ref string) (*api.Environment, error)
	Environments(ctx context.Context) ([]*api.Environment, error)
	Load(ctx context.Context, e *api.Environment) (created bool, err error)
}

func (s *Server) kickGroups() {
	if s.Groups != nil {
		s.Groups.Kick()
	}
}

// withStatus fills a group's derived status from its members.
func (s *Server) withStatus(ctx context.Context, g *api.AgentGroup) (*api.AgentGroup, error) {
	ms, err := s.Store.GroupMembers(ctx, g.Metadata.Name)
	if err != nil {
		return nil, err
	}
	g.Status = group.Status(g, ms)
	if e := g.Status.Evaluation; e != nil {
		short := *e
		short.Results = nil // GET .../results has them
		g.Status.Evaluation = &short
	}
	return g, nil
}

func (s *Server) getGroupView(r *http.Request, name string) (*api.AgentGroup, error) {
	g, err := s.Store.GetGroup(r.Context(), name)
	if err != nil {
		return nil, err
	}
	return s.withStatus(r.Context(), g)
}

// groups is the group resource's list, get and delete, each group with the status its members
// give it (its writes are the handlers here: a live group's changes are checked against it).
func (s *Server) groups() resource[api.AgentGroup] {
	return resource[api.AgentGroup]{kind: "group", listKind: "AgentGroupList",
		meta: func(g *api.AgentGroup) *api.ObjectMeta { return &g.Metadata },
		get:  s.Store.GetGroup, list: allOf(s.Store.ListGroups), delete: s.deleteGroup,
		viewer: func(ctx context.Context, _ bool) (func(*api.AgentGroup) (*api.AgentGroup, error), error) {
			return func(g *api.AgentGroup) (*api.AgentGroup, error) { return s.withStatus(ctx, g) }, nil
		}}
}

func decodeGroup(body []byte) (*api.AgentGroup, error) {
	var g api.AgentGroup
	if err := api.DecodeStrict(body, &g); err != nil {
		return nil, err
	}
	return &g, nil
}

// prepareGroup validates a new group against its agent; an evaluation group pins the agent's
// revision and its absolute deadline now.
func (s *Server) prepareGroup(r *http.Request, g *api.AgentGroup) error {
	if err := api.DefaultAndValidateGroup(g); err != nil {
		return err
	}
	ag, err := s.Store.GetAgent(r.Context(), g.Spec.Agent)
	if errors.Is(err, store.ErrNotFound) {
		return api.Errorf(http.StatusNotFound, api.CodeAgentNotFound, "spec.agent", "agent %q does not exist", g.Spec.Agent)
	}
	if err != nil {
		return err
	}
	g.Status = api.AgentGroupStatus{}
	if g.Spec.Evaluation != nil {
		if s.Eval == nil {
			return api.Invalid("spec.evaluation", "evaluations are not available on this server")
		}
		g.Status.AgentRevision = ag.Status.Revision
		if err := s.Eval.Prepare(r.Context(), g); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) insertGroup(w http.ResponseWriter, r *http.Request, g *api.AgentGroup, apply bool) {
	dry, err := dryRun(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	if err := s.prepareGroup(r, g); err != nil {
		writeErr(w, err)
		return
	}
	if dry {
		_, gerr := s.Store.GetGroup(r.Context(), g.Metadata.Name)
		if err := mustNotExist(gerr, "group", g.Metadata.Name); err != nil {
			writeErr(w, err)
			return
		}
		result := ""
		if apply {
			result = "created"
		}
		writeDryRun(w, http.StatusCreated, result, g)
		return
	}
	if err := s.Store.CreateGroup(r.Context(), g); err != nil {
		writeErr(w, err)
		return
	}
	if s.Eval != nil && g.Spec.Evaluation != nil {
		if err := s.Eval.Start(r.Context(), g); err != nil {
			// The group exists; its evaluation status says what went wrong.
			s.Log.Error("start evaluation", "group", g.Metadata.Name, "err", err)
		}
	}
	s.kickGroups()
	if apply {
		w.Header().Set("X-Agentrun-Apply", "created")
	}
	out, err := s.getGroupView(r, g.Metadata.Name)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) createGroup(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, err)
		return
	}
	g, err := decodeGroup(body)
	if err != nil {
		writeErr(w, err)
		return
	}
	s.insertGroup(w, r, g, false)
}

// updateGroup validates a changed spec against the stored group and writes it.
func (s *Server) updateGroup(w http.ResponseWriter, r *http.Request, g *api.AgentGroup, cur *api.AgentGroup, apply bool) {
	if apply && cur.Spec.Sealed {
		// Applying the file a group was created from again leaves it sealed (a patch that says
		// sealed: false is refused: sealing cannot be undone).
		g.Spec.Sealed = true
	}
	// The new spec's mistakes and what it may not change of the stored one are told together;
	// a field refused on its own has nothing to add from the comparison. The store checks the
	// change again, against the group as it is when written.
	var errs api.ErrorList
	errs.AddErr(api.DefaultAndValidateGroup(g))
	var changes api.ErrorList
	changes.AddErr(api.ValidateGroupUpdate(&cur.Spec, &g.Spec))
	for _, e := range changes {
		if !errs.Has(e.Field) {
			errs.Add(e)
		}
	}
	if err := errs.Err(); err != nil {
		writeErr(w, err)
		return
	}
	dry, err := dryRun(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	if dry {
		result := "configured"
		if sameJSON(g.Spec, cur.Spec) && sameJSON(g.Metadata.Labels, cur.Metadata.Labels) {
			result = "unchanged"
		}
		writeDryRun(w, http.StatusOK, result, g)
		return
	}
	if apply && sameJSON(g.Spec, cur.Spec) && sameJSON(g.Metadata.Labels, cur.Metadata.Labels) {
		w.Header().Set("X-Agentrun-Apply", "unchanged")
		out, err := s.withStatus(r.Context(), cur)
		if err != nil {
			writeErr(w, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	err = s.Store.UpdateGroup(r.Context(), g, func(old *api.AgentGroup) error {
		return api.ValidateGroupUpdate(&old.Spec, &g.Spec)
	})
	if err != nil {
		writeErr(w, err)
		return
	}
	s.kickGroups()
	if apply {
		w.Header().Set("X-Agentrun-Apply", "configured")
	}
	out, err := s.withStatus(r.Context(), g)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) applyGroup(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, err)
		return
	}
	g, err := decodeGroup(body)
	if err != nil {
		writeErr(w, err)
		return
	}
	if err := nameFromURL(r, &g.Metadata); err != nil {
		writeErr(w, err)
		return
	}
	name := g.Metadata.Name
	cur, err := s.Store.GetGroup(r.Context(), name)
	if errors.Is(err, store.ErrNotFound) {
		s.insertGroup(w, r, g, true)
		return
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	s.updateGroup(w, r, g, cur, true)
}

// patchGroup applies a JSON merge patch to metadata.labels and spec (maxActive, a higher cost
// cap, sealed: true).
func (s *Server) patchGroup(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, err)
		return
	}
	cur, err := s.Store.GetGroup(r.Context(), r.PathValue("name"))
	if err != nil {
		writeErr(w, err)
		return
	}
	b, err := patchedDoc(body, cur.Metadata, cur.Spec)
	if err != nil {
		writeErr(w, err)
		return
	}
	g, err := decodeGroup(b)
	if err != nil {
		writeErr(w, err)
		return
	}
	s.updateGroup(w, r, g, cur, false)
}

// deleteGroup deletes a group and its runs (each stopped if it is driven in this process, its
// folder removed) and its evaluation's state; the answer counts the runs.
func (s *Server) deleteGroup(ctx context.Context, name string) (map[string]any, error) {
	runs, err := s.Store.DeleteGroup(ctx, name)
	if err != nil {
		return nil, err
	}
	for _, run := range runs {
		if s.Interrupt != nil {
			s.Interrupt(run)
		}
		os.RemoveAll(runfolder.Path(s.DataDir, run))
	}
	if s.Eval != nil {
		s.Eval.Delete(ctx, name)
	}
	return map[string]any{"runsDeleted": len(runs)}, nil
}

func (s *Server) cancelGroup(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	requested, err := s.Store.CancelGroup(r.Context(), name)
	if err != nil {
		writeErr(w, err)
		return
	}
	for _, run := range requested {
		s.Store.AppendEvents(r.Context(), run, []api.Event{{Type: api.EventRunCancelRequested, Message: "group " + name + " was cancelled"}})
		if s.Interrupt != nil {
			s.Interrupt(run)
		}
	}
	g, err := s.getGroupView(r, name)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, g)
}

// ---- batch creation ----

// fieldErrors is e's list of problems (itself, for an error that is one).
func fieldErrors(e *api.Error) []api.FieldError {
	if len(e.Errors) > 0 {
		return e.Errors
	}
	return []api.FieldError{{Code: e.Code, Message: e.Message, Field: e.Field}}
}

// itemErr turns an error about item i of a batch into an API error naming items[i].
func itemErr(i int, err error) *api.Error {
	var ie *store.ItemError
	if errors.As(err, &ie) {
		i, err = ie.Index, ie.Err
	}
	e, ok := api.AsError(err)
	if !ok {
		e = storeErr(err)
	}
	at := api.NewPath("items").Index(i)
	out := e.Under(at)
	out.Message = at.String() + ": " + out.Message + " (nothing in the batch was created)"
	return out
}

// createRunList is POST /v2/agentruns with an AgentRunList: up to 100 runs created all or
// nothing, in list order; an Idempotency-Key header makes a repeat return the first result.
func (s *Server) createRunList(w http.ResponseWriter, r *http.Request, body []byte) {
	var list struct {
		api.TypeMeta `json:",inline"`
		Items        []api.AgentRun `json:"items"`
	}
	if err := api.DecodeStrict(body, &list); err != nil {
		writeErr(w, err)
		return
	}
	if err := refuseDryRun(r); err != nil {
		writeErr(w, err)
		return
	}
	if list.Kind != "AgentRunList" {
		writeErr(w, api.Invalid("kind", "a batch is kind AgentRunList (got %q)", list.Kind))
		return
	}
	if len(list.Items) == 0 {
		writeErr(w, api.Errorf(http.StatusUnprocessableEntity, api.CodeRequired, "items", "the batch has no items"))
		return
	}
	if len(list.Items) > api.MaxBatch {
		writeErr(w, api.Invalid("items", "a batch creates at most %d runs (got %d)", api.MaxBatch, len(list.Items)))
		return
	}
	key := strings.TrimSpace(r.Header.Get("Idempotency-Key"))
	if len(key) > 256 {
		writeErr(w, api.Invalid("Idempotency-Key", "Idempotency-Key is longer than 256 characters"))
		return
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	runs := make([]*api.AgentRun, len(list.Items))
	for i := range list.Items {
		run := &list.Items[i]
		if run.Metadata.Name == "" && run.Spec.Agent != "" && run.Spec.Group == "" {
			run.Metadata.Name = generateName(run.Spec.Agent)
		}
		runs[i] = run
	}
	// A repeated key answers before anything is validated again (names generated above differ).
	if key != "" {
		if out, replayed, err := s.Store.CreateRuns(r.Context(), nil, key, hash); err == nil && replayed {
			s.writeRunList(w, http.StatusOK, out, true)
			return
		} else if err != nil {
			writeErr(w, err)
			return
		}
	}
	// Every item's mistakes are told at once, the first item's first as the error itself.
	var bad *api.Error
	for i, run := range runs {
		if err := s.prepareRun(r, run); err != nil {
			e := itemErr(i, err)
			if bad == nil {
				bad = e
				continue
			}
			bad.Errors = append(fieldErrors(bad), fieldErrors(e)...)
		}
	}
	if bad != nil {
		writeErr(w, bad)
		return
	}
	out, replayed, err := s.Store.CreateRuns(r.Context(), runs, key, hash)
	if err != nil {
		var ie *store.ItemError
		if errors.As(err, &ie) {
			writeErr(w, itemErr(ie.Index, ie.Err))
			return
		}
		writeErr(w, err)
		return
	}
	if !replayed {
		for _, run := range out {
			s.Store.AppendEvents(r.Context(), run.Metadata.Name, []api.Event{createdEvent(run)})
		}
		s.kickGroups()
	}
	st := http.StatusCreated
	if replayed {
		st = http.StatusOK
	}
	s.writeRunList(w, st, out, replayed)
}

func (s *Server) writeRunList(w http.ResponseWriter, status int, runs []*api.AgentRun, replayed bool) {
	items := make([]api.AgentRun, 0, len(runs))
	for _, r := range runs {
		items = append(items, *r)
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeJSON(w, status, api.List[api.AgentRun]{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "AgentRunList"}, Items: items})
}

// createMember stores one member run (through the batch path, which checks it against its group)
// and then its first events (CreateRun's shape; the batch path writes no events).
func (s *Server) createMember(ctx context.Context, run *api.AgentRun, first ...api.Event) error {
	out, _, err := s.Store.CreateRuns(ctx, []*api.AgentRun{run}, "", "")
	if err != nil {
		var ie *store.ItemError
		if errors.As(err, &ie) {
			return ie.Err
		}
		return err
	}
	*run = *out[0]
	if len(first) > 0 {
		s.Store.AppendEvents(ctx, run.Metadata.Name, first)
	}
	s.kickGroups()
	return nil
}
