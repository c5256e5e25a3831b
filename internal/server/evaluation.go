package server

import (
	"net/http"

	"agentrun.dev/agentrun/internal/api"
)

// Evaluation routes: environments and an evaluation group's per-case results.

func (s *Server) needEval(w http.ResponseWriter) bool {
	if s.Eval == nil {
		writeErr(w, api.Errorf(http.StatusNotFound, api.CodeNotFound, "", "evaluations are not available on this server"))
		return false
	}
	return true
}

// hideAnswers returns a copy of e whose tasks carry no hidden answers: only graders see those.
func hideAnswers(e *api.Environment) *api.Environment {
	c := *e
	c.Spec.Splits = map[string][]api.Task{}
	for split, tasks := range e.Spec.Splits {
		ts := make([]api.Task, len(tasks))
		for i, t := range tasks {
			ts[i] = api.Task{ID: t.ID, Prompt: t.Prompt}
		}
		c.Spec.Splits[split] = ts
	}
	return &c
}

func (s *Server) listEnvironments(w http.ResponseWriter, r *http.Request) {
	if !s.needEval(w) {
		return
	}
	envs, err := s.Eval.Environments(r.Context())
	if err != nil {
		writeErr(w, err)
		return
	}
	items := make([]api.Environment, 0, len(envs))
	for _, e := range envs {
		items = append(items, *hideAnswers(e))
	}
	writeJSON(w, http.StatusOK, api.List[api.Environment]{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "EnvironmentList"}, Items: items})
}

// getEnvironment is GET /v2/environments/NAME@VERSION (NAME may hold one '/').
func (s *Server) getEnvironment(w http.ResponseWriter, r *http.Request) {
	if !s.needEval(w) {
		return
	}
	e, err := s.Eval.Environment(r.Context(), r.PathValue("ref"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, hideAnswers(e))
}

// loadEnvironment is POST /v2/environments: store a new NAME@VERSION (the same content again is
// unchanged; other content under a stored version is a conflict).
func (s *Server) loadEnvironment(w http.ResponseWriter, r *http.Request) {
	if !s.needEval(w) {
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, err)
		return
	}
	var e api.Environment
	if err := api.DecodeStrict(body, &e); err != nil {
		writeErr(w, err)
		return
	}
	created, err := s.Eval.Load(r.Context(), &e)
	if err != nil {
		writeErr(w, err)
		return
	}
	status, result := http.StatusOK, "unchanged"
	if created {
		status, result = http.StatusCreated, "created"
	}
	w.Header().Set("X-Agentrun-Apply", result)
	writeJSON(w, status, hideAnswers(&e))
}

// EvalResults is GET /v2/agentgroups/NAME/results.
type EvalResults struct {
	api.TypeMeta `json:",inline"`
	Group        string                `json:"group"`
	Phase        api.GroupPhase        `json:"phase"`
	Evaluation   *api.EvaluationStatus `json:"evaluation"`
	Items        []api.EvalCase        `json:"items"`
}

func (s *Server) groupResults(w http.ResponseWriter, r *http.Request) {
	g, err := s.Store.GetGroup(r.Context(), r.PathValue("name"))
	if err != nil {
		writeErr(w, err)
		return
	}
	if g.Status.Evaluation == nil {
		writeErr(w, api.Errorf(http.StatusNotFound, api.CodeNotFound, "", "group %q is not an evaluation group", g.Metadata.Name))
		return
	}
	items := g.Status.Evaluation.Results
	if items == nil {
		items = []api.EvalCase{}
	}
	v, err := s.withStatus(r.Context(), g)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, EvalResults{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "EvaluationResults"},
		Group: g.Metadata.Name, Phase: v.Status.Phase, Evaluation: v.Status.Evaluation, Items: items})
}
