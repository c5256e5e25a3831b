package server

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// resource is what the one set of handlers for a resource stored by name (list, get, create,
// apply, merge patch, delete, each with the same dry run and X-Agentrun-Apply result) needs to
// know of one kind. Triggers and webhooks use them all; agents, runs and groups list, get and
// delete through them (their writes keep handlers of their own: revisions, batches, members),
// and leave the fields only writes read unset. Each kind's file registers the handlers (with
// literal patterns, which the OpenAPI test reads) beside its own routes (fires, test, rotate).
type resource[T any] struct {
	// kind names one in messages ("trigger"); listKind is the list's kind ("TriggerList").
	kind, listKind string
	meta           func(*T) *api.ObjectMeta
	// spec is what a merge patch changes beside metadata.labels, and what "unchanged" compares.
	spec func(*T) any
	// decode reads a body strictly, the derived status cleared (it is never stored).
	decode func(body []byte) (*T, error)
	// check validates a resource and what it names; nothing is stored when it fails.
	check func(ctx context.Context, t *T) error
	get   func(ctx context.Context, name string) (*T, error)
	// list reads the list's query (a filter, such as runs' fieldSelector); allOf makes one of a
	// store's list that takes none.
	list           func(ctx context.Context, q url.Values) ([]*T, error)
	create, update func(ctx context.Context, t *T) error
	// delete removes the named resource and answers what the answer says beside its status and
	// name (a group's runsDeleted); only makes one of a store's delete that has nothing to add.
	delete func(ctx context.Context, name string) (map[string]any, error)
	// viewer returns the function that fills a resource's derived status for an answer: read says
	// it is a read (list or get) rather than the answer to a write. Nil: answered as stored.
	viewer func(ctx context.Context, read bool) (func(*T) (*T, error), error)
}

// allOf is a resource's list for a store's list that takes no query (any query is ignored, as
// it always was).
func allOf[T any](list func(ctx context.Context) ([]*T, error)) func(context.Context, url.Values) ([]*T, error) {
	return func(ctx context.Context, _ url.Values) ([]*T, error) { return list(ctx) }
}

// only is a resource's delete for a store's delete whose answer is its status and name alone.
func only(del func(ctx context.Context, name string) error) func(context.Context, string) (map[string]any, error) {
	return func(ctx context.Context, name string) (map[string]any, error) { return nil, del(ctx, name) }
}

// view is the viewer's function, or the identity when the kind has no derived status to fill.
func (rs resource[T]) view(ctx context.Context, read bool) (func(*T) (*T, error), error) {
	if rs.viewer == nil {
		return func(t *T) (*T, error) { return t, nil }, nil
	}
	return rs.viewer(ctx, read)
}

func (rs resource[T]) listAll(w http.ResponseWriter, r *http.Request) {
	all, err := rs.list(r.Context(), r.URL.Query())
	if err != nil {
		writeErr(w, err)
		return
	}
	view, err := rs.view(r.Context(), true)
	if err != nil {
		writeErr(w, err)
		return
	}
	items := make([]T, 0, len(all))
	for _, t := range all {
		v, err := view(t)
		if err != nil {
			writeErr(w, err)
			return
		}
		items = append(items, *v)
	}
	writeJSON(w, http.StatusOK, api.List[T]{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: rs.listKind}, Items: items})
}

func (rs resource[T]) getOne(w http.ResponseWriter, r *http.Request) {
	t, err := rs.get(r.Context(), r.PathValue("name"))
	if err != nil {
		writeErr(w, err)
		return
	}
	rs.answer(w, r, http.StatusOK, t, true)
}

// answer writes t with its derived status.
func (rs resource[T]) answer(w http.ResponseWriter, r *http.Request, status int, t *T, read bool) {
	view, err := rs.view(r.Context(), read)
	if err == nil {
		t, err = view(t)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, status, t)
}

func (rs resource[T]) readOne(w http.ResponseWriter, r *http.Request) (*T, bool) {
	body, err := readBody(w, r)
	if err == nil {
		var t *T
		if t, err = rs.decode(body); err == nil {
			return t, true
		}
	}
	writeErr(w, err)
	return nil, false
}

// How a write came: POST (the name must be free), PUT by name (created or configured, the result
// in X-Agentrun-Apply), or a merge patch of a stored one.
type writeMode int

const (
	writeCreate writeMode = iota
	writeApply
	writePatch
)

func (rs resource[T]) createOne(w http.ResponseWriter, r *http.Request) {
	if t, ok := rs.readOne(w, r); ok {
		rs.write(w, r, t, nil, writeCreate)
	}
}

func (rs resource[T]) applyOne(w http.ResponseWriter, r *http.Request) {
	t, ok := rs.readOne(w, r)
	if !ok {
		return
	}
	if err := nameFromURL(r, rs.meta(t)); err != nil {
		writeErr(w, err)
		return
	}
	rs.write(w, r, t, nil, writeApply)
}

// patchOne applies a JSON merge patch to metadata.labels and spec ({"spec": {"suspend": true}}).
func (rs resource[T]) patchOne(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, err)
		return
	}
	cur, err := rs.get(r.Context(), r.PathValue("name"))
	if err != nil {
		writeErr(w, err)
		return
	}
	b, err := patchedDoc(body, *rs.meta(cur), rs.spec(cur))
	if err != nil {
		writeErr(w, err)
		return
	}
	t, err := rs.decode(b)
	if err != nil {
		writeErr(w, err)
		return
	}
	rs.write(w, r, t, cur, writePatch)
}

// write checks t and stores it: created (201) when its name is free, else configured (200), or
// left as it is when an apply changes nothing (unchanged); a dry run answers what would be.
// cur is the stored resource a patch changes (nil: looked up here).
func (rs resource[T]) write(w http.ResponseWriter, r *http.Request, t, cur *T, mode writeMode) {
	ctx := r.Context()
	dry, err := dryRun(r)
	if err != nil {
		writeErr(w, err)
		return
	}
	if err := rs.check(ctx, t); err != nil {
		writeErr(w, err)
		return
	}
	name := rs.meta(t).Name
	if cur == nil {
		c, err := rs.get(ctx, name)
		switch {
		case err == nil:
			cur = c
		case !errors.Is(err, store.ErrNotFound):
			writeErr(w, err)
			return
		}
	}
	exists := cur != nil
	if exists && mode == writeCreate {
		writeErr(w, mustNotExist(nil, rs.kind, name))
		return
	}
	result, status := "created", http.StatusCreated
	if exists {
		result, status = "configured", http.StatusOK
		if sameJSON(rs.spec(t), rs.spec(cur)) && sameJSON(rs.meta(t).Labels, rs.meta(cur).Labels) {
			result = "unchanged"
		}
	}
	if dry {
		if mode == writeCreate {
			result = ""
		}
		writeDryRun(w, status, result, t)
		return
	}
	switch {
	case result == "unchanged" && mode == writeApply:
		t = cur
	case exists:
		err = rs.update(ctx, t)
	default:
		err = rs.create(ctx, t)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	if mode == writeApply {
		w.Header().Set("X-Agentrun-Apply", result)
	}
	rs.answer(w, r, status, t, false)
}

func (rs resource[T]) deleteOne(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	more, err := rs.delete(r.Context(), name)
	if err != nil {
		writeErr(w, err)
		return
	}
	answer := map[string]any{"status": "deleted", "name": name}
	for k, v := range more {
		answer[k] = v
	}
	writeJSON(w, http.StatusOK, answer)
}

// history is a resource's history route (a trigger's fires, a webhook's deliveries): the named
// resource's newest ?limit items (default 50, 0 for all) under items, its name under key.
func history[T, I any](rs resource[T], key string, list func(ctx context.Context, name string, limit int) ([]I, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if _, err := rs.get(r.Context(), name); err != nil {
			writeErr(w, err)
			return
		}
		limit := 50
		if v := r.URL.Query().Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				writeErr(w, api.Invalid("limit", "limit %q: want a whole number, 0 for all", v))
				return
			}
			limit = n
		}
		items, err := list(r.Context(), name, limit)
		if err != nil {
			writeErr(w, err)
			return
		}
		if items == nil {
			items = []I{}
		}
		writeJSON(w, http.StatusOK, map[string]any{key: name, "items": items})
	}
}
