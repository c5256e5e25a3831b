package server

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// events is GET /v2/agentruns/NAME/events: a JSON page, or with Accept: text/event-stream an SSE
// stream that follows the run until it finishes, resumable with Last-Event-ID.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	ctx := r.Context()
	if _, err := s.Store.GetRun(ctx, name); err != nil {
		writeErr(w, err)
		return
	}
	after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		if v, err := strconv.ParseInt(id, 10, 64); err == nil {
			after = v
		}
	}
	if r.Header.Get("Accept") != "text/event-stream" {
		evs, err := s.Store.ListEvents(ctx, name, after, 1000)
		if err != nil {
			writeErr(w, err)
			return
		}
		if evs == nil {
			evs = []api.Event{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"items": evs})
		return
	}
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
	// A stream outlives the server's WriteTimeout: each write gets its own deadline.
	extend := streamDeadlines(w)
	inner := flusher
	flusher = flushFunc(func() { inner.Flush(); extend() })
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "retry: 1000\n\n")
	flusher.Flush()
	lastKeepalive := time.Now()
	for {
		// Read the phase before the events, so events written before a run finished are all sent
		// before "end".
		run, err := s.Store.GetRun(ctx, name)
		if err != nil {
			fmt.Fprintf(w, "event: error\ndata: %s\n\n", store.MustJSON(map[string]string{"message": err.Error()}))
			flusher.Flush()
			return
		}
		evs, err := s.Store.ListEvents(ctx, name, after, 500)
		if err != nil {
			return
		}
		for _, ev := range evs {
			fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Type, store.MustJSON(ev))
			after = ev.Seq
		}
		if len(evs) > 0 {
			flusher.Flush()
			if len(evs) == 500 {
				continue
			}
		}
		if api.Finished(run.Status.Phase) {
			fmt.Fprintf(w, "event: end\ndata: %s\n\n", store.MustJSON(map[string]string{"phase": string(run.Status.Phase), "reason": string(run.Status.Reason)}))
			flusher.Flush()
			return
		}
		if time.Since(lastKeepalive) > 15*time.Second {
			fmt.Fprintf(w, ": keepalive\n\n")
			flusher.Flush()
			lastKeepalive = time.Now()
		}
		s.Store.WaitEvents(ctx, time.Second)
		if ctx.Err() != nil {
			return
		}
	}
}

// flushFunc is an http.Flusher made of a func.
type flushFunc func()

func (f flushFunc) Flush() { f() }
