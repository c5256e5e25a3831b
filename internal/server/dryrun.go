package server

import (
	"errors"
	"net/http"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// DryRunHeader marks an answer to ?dryRun=All: the request was checked as the real one would be
// (decoding, validation, what it names on this server) and nothing was stored.
const DryRunHeader = "X-Agentrun-Dry-Run"

// dryRun reads ?dryRun= on the create and apply routes, as Kubernetes spells it: "All" checks
// everything and stores nothing; no value is the real request. Any other value is refused, so a
// misspelt dry run is never carried out for real.
func dryRun(r *http.Request) (bool, error) {
	q := r.URL.Query()
	if !q.Has("dryRun") {
		return false, nil
	}
	if vs := q["dryRun"]; len(vs) == 1 && vs[0] == "All" {
		return true, nil
	}
	return false, api.Invalid("dryRun", "dryRun must be All (check and store nothing), got %q", q.Get("dryRun"))
}

// writeDryRun answers a dry run with what the real request would have answered.
func writeDryRun(w http.ResponseWriter, status int, result string, v any) {
	w.Header().Set(DryRunHeader, "All")
	if result != "" {
		w.Header().Set("X-Agentrun-Apply", result)
	}
	writeJSON(w, status, v)
}

// refuseDryRun is for routes that have no dry run: ?dryRun is refused rather than ignored, so
// no caller believes nothing was stored when something was.
func refuseDryRun(r *http.Request) error {
	if r.URL.Query().Has("dryRun") {
		return api.Invalid("dryRun", "this route has no dry run")
	}
	return nil
}

// mustNotExist is the name check a create makes in the store, made without writing.
func mustNotExist(err error, kind, name string) error {
	if err == nil {
		return api.Errorf(http.StatusConflict, api.CodeAlreadyExists, "metadata.name", "%s %q already exists", kind, name)
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// dryRunInsert makes the checks a run's insertion makes in the store, without writing: its name
// is free and, for a group's member, the group takes it (store.CheckMember, the rule the store
// applies in the insert's transaction).
func (s *Server) dryRunInsert(r *http.Request, run *api.AgentRun) error {
	ctx := r.Context()
	_, err := s.Store.GetRun(ctx, run.Metadata.Name)
	if err := mustNotExist(err, "run", run.Metadata.Name); err != nil {
		return err
	}
	if run.Spec.Group == "" {
		return nil
	}
	g, err := s.Store.GetGroup(ctx, run.Spec.Group)
	if errors.Is(err, store.ErrNotFound) {
		return store.GroupNotFound(run.Spec.Group)
	}
	if err != nil {
		return err
	}
	members, err := s.Store.ListRuns(ctx, store.RunFilter{Group: g.Metadata.Name})
	if err != nil {
		return err
	}
	unfinished, keys := 0, map[string]bool{}
	for _, m := range members {
		keys[m.Spec.TaskKey] = true
		if !api.Finished(m.Status.Phase) {
			unfinished++
		}
	}
	return store.CheckMember(g, run, unfinished, keys)
}
