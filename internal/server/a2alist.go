package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/a2a"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// ListTasks: an agent's tasks are its runs, newest first. A task's state is derived from the run's
// phase and reason (a2aState), so the store is asked for the phase a state comes from where there
// is exactly one, and the rest is filtered here, in batches, keeping only the page asked for.

const (
	a2aListDefault = 50
	a2aListMax     = 100
	// a2aListBatch is how many runs one store read brings while a list is counted.
	a2aListBatch = 500
)

// a2aStatePhase is the one phase a task state comes from, where there is one.
var a2aStatePhase = map[string]api.Phase{
	a2a.StateCompleted: api.PhaseSucceeded,
	a2a.StateFailed:    api.PhaseFailed,
	a2a.StateCanceled:  api.PhaseCancelled,
	a2a.StateSubmitted: api.PhaseQueued,
}

// a2aCursor is a page token's content: the last task of the page before, in the list's order.
type a2aCursor struct {
	Created time.Time `json:"c"`
	Name    string    `json:"n"`
}

func (c a2aCursor) token() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func parseA2ACursor(tok string) (*a2aCursor, *a2a.Error) {
	if tok == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(tok)
	var c a2aCursor
	if err != nil || len(tok) > 1024 || json.Unmarshal(b, &c) != nil || c.Name == "" {
		return nil, a2a.InvalidParams("pageToken: not a page token this server gave (pass nextPageToken from the page before)")
	}
	return &c, nil
}

// after reports whether run comes after the cursor in the newest-first order.
func (c *a2aCursor) after(run *api.AgentRun) bool {
	t := createdAt(run)
	return t.Before(c.Created) || t.Equal(c.Created) && run.Metadata.Name < c.Name
}

// a2aStatusTime is when a run's status last changed, as far as the run records it: its finish,
// its start, or its creation.
func a2aStatusTime(run *api.AgentRun) time.Time {
	switch {
	case run.Status.FinishedAt != nil:
		return *run.Status.FinishedAt
	case run.Status.StartedAt != nil:
		return *run.Status.StartedAt
	}
	return createdAt(run)
}

func createdAt(run *api.AgentRun) time.Time {
	if t := run.Metadata.CreationTimestamp; t != nil {
		return *t
	}
	return time.Time{}
}

func (s *Server) a2aListTasks(ctx context.Context, a *api.Agent, p *a2a.ListTasksRequest) (*a2a.ListTasksResponse, *a2a.Error) {
	size := a2aListDefault
	if p.PageSize != nil {
		if *p.PageSize < 1 || *p.PageSize > a2aListMax {
			return nil, a2a.InvalidParams(fmt.Sprintf("pageSize: %d is not from 1 to %d", *p.PageSize, a2aListMax))
		}
		size = *p.PageSize
	}
	if p.HistoryLength != nil && *p.HistoryLength < 0 {
		return nil, a2a.InvalidParams("historyLength: must not be negative")
	}
	if p.Status != "" && p.Status != "TASK_STATE_UNSPECIFIED" && !slices.Contains(a2a.States, p.Status) {
		return nil, a2a.InvalidParams(fmt.Sprintf("status: no task state %q (%s)", p.Status, strings.Join(a2a.States, ", ")))
	}
	if p.Status == "TASK_STATE_UNSPECIFIED" {
		p.Status = ""
	}
	var since time.Time
	if p.StatusTimestampAfter != "" {
		t, err := time.Parse(time.RFC3339Nano, p.StatusTimestampAfter)
		if err != nil {
			return nil, a2a.InvalidParams(fmt.Sprintf("statusTimestampAfter: %q is not an RFC 3339 time such as 2026-01-02T15:04:05Z", p.StatusTimestampAfter))
		}
		since = t
	}
	cur, e := parseA2ACursor(p.PageToken)
	if e != nil {
		return nil, e
	}
	keep := func(run *api.AgentRun) bool {
		return (p.Status == "" || a2aState(run) == p.Status) && (since.IsZero() || !a2aStatusTime(run).Before(since))
	}
	out := &a2a.ListTasksResponse{Tasks: []a2a.Task{}, PageSize: size}
	var page []*api.AgentRun
	more := false
	visit := func(run *api.AgentRun) {
		if !keep(run) {
			return
		}
		out.TotalSize++
		if cur != nil && !cur.after(run) {
			return
		}
		if len(page) < size {
			page = append(page, run)
		} else {
			more = true
		}
	}
	if p.ContextID != "" {
		// A context is one task here: its id and contextId are the run's name.
		if run, e := s.a2aRun(ctx, a, p.ContextID); e == nil {
			visit(run)
		} else if e.Code != a2a.TaskNotFound("").Code {
			return nil, e
		}
	} else {
		// Batches of the newest-first list; a run created meanwhile shifts the offsets, so one
		// already seen is skipped rather than counted twice.
		seen := map[string]bool{}
		f := store.RunFilter{Agent: a.Metadata.Name, Phase: a2aStatePhase[p.Status], Newest: true, Limit: a2aListBatch}
		for {
			runs, err := s.Store.ListRuns(ctx, f)
			if err != nil {
				return nil, a2aInternal(err)
			}
			for _, run := range runs {
				if !seen[run.Metadata.Name] {
					seen[run.Metadata.Name] = true
					visit(run)
				}
			}
			if len(runs) < f.Limit {
				break
			}
			f.Offset += len(runs)
		}
	}
	artifacts := p.IncludeArtifacts != nil && *p.IncludeArtifacts
	for _, run := range page {
		t, e := s.a2aTaskOf(ctx, run, p.HistoryLength, artifacts)
		if e != nil {
			return nil, e
		}
		out.Tasks = append(out.Tasks, *t)
	}
	if more {
		last := page[len(page)-1]
		out.NextPageToken = a2aCursor{Created: createdAt(last), Name: last.Metadata.Name}.token()
	}
	return out, nil
}

// a2aRESTListTasks is GET BASE/tasks with ListTasks' fields as query parameters.
func (s *Server) a2aRESTListTasks(w http.ResponseWriter, r *http.Request) {
	a, ok := s.a2aRESTAgent(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	p := a2a.ListTasksRequest{Tenant: q.Get("tenant"), ContextID: q.Get("contextId"), Status: q.Get("status"),
		PageToken: q.Get("pageToken"), StatusTimestampAfter: q.Get("statusTimestampAfter")}
	for _, f := range []struct {
		name string
		to   **int
	}{{"pageSize", &p.PageSize}, {"historyLength", &p.HistoryLength}} {
		if v := q.Get(f.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				restErr(w, a2a.InvalidParams(fmt.Sprintf("%s: %q is not a whole number", f.name, v)))
				return
			}
			*f.to = &n
		}
	}
	if v := q.Get("includeArtifacts"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			restErr(w, a2a.InvalidParams(fmt.Sprintf("includeArtifacts: %q is not true or false", v)))
			return
		}
		p.IncludeArtifacts = &b
	}
	out, e := s.a2aListTasks(r.Context(), a, &p)
	if e != nil {
		restErr(w, e)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
