package console

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/livetext"
)

// The run page's live Timeline: GET /runs/NAME/timeline is a text/event-stream of the run's
// timeline (one "timeline" event per row, id = the event's seq, resumable with Last-Event-ID or
// ?after=SEQ), a "status" event whenever the run's phase, reason, message, cost or what it waits
// on changes, a "text" event (no id: it is not part of the timeline, and a resumed stream does not
// replay it) for each piece of a model call's text while the call streams (Console.LiveText), and
// a final "status" and "end" once the run has finished. static/console.js opens it from the run
// page and keeps the page current without reloading it.

// Defaults for the stream bounds (a Console's zero fields take these).
const (
	defaultMaxStreams = 64
	defaultHeartbeat  = 15 * time.Second
	// eventBatch is how many timeline rows one read of the store sends at most.
	eventBatch = 500
	// streamWriteWindow is how long the browser may take to read one write of a stream.
	streamWriteWindow = time.Minute
)

// liveRow is one timeline row as the page's table shows it (clock is formatted by the server, so
// rows added live read exactly like the rows rendered with the page).
type liveRow struct {
	Seq     int64  `json:"seq"`
	Clock   string `json:"clock"`
	Type    string `json:"type"`
	StepKey string `json:"stepKey,omitempty"`
	Message string `json:"message,omitempty"`
}

// liveStatus is the run's status line as the page shows it. View names what the page lays out
// for that status (see pageView); when it changes the script reloads the page once.
type liveStatus struct {
	Phase     string         `json:"phase"`
	Reason    string         `json:"reason,omitempty"`
	Message   string         `json:"message,omitempty"`
	WaitingOn *api.WaitingOn `json:"waitingOn,omitempty"`
	Cost      string         `json:"cost,omitempty"`
	// CostBar is the header's cost against the cap, and Pill the status pill, drawn as the page
	// draws them (HTML).
	CostBar string `json:"costBar,omitempty"`
	Pill    string `json:"pill,omitempty"`
	View    string `json:"view"`
}

// liveText is one piece of a model call's text as it streams (see livetext.Delta): the page
// appends it at offset in the step's transcript entry; the journal's text replaces it when the
// step completes.
type liveText struct {
	Step   string `json:"step"`
	Offset int    `json:"offset"`
	Text   string `json:"text,omitempty"`
	Done   bool   `json:"done,omitempty"`
	Cut    bool   `json:"cut,omitempty"`
}

func statusOf(run *api.AgentRun) liveStatus {
	st := run.Status
	ls := liveStatus{Phase: string(st.Phase), Reason: string(st.Reason), Message: st.Message, WaitingOn: st.WaitingOn,
		Cost: costText(st.Cost), View: pageView(run)}
	if st.Cost != nil {
		ls.CostBar = string(costBar(st.Cost))
	}
	ls.Pill = string(runPill(st.Phase, st.Reason))
	return ls
}

// pageView names the layout the run page has for a run's status beyond the lines the script
// updates in place: "finished" (the answer, the final turns, steps and files), "approval" (the
// pending approvals' forms), "resolution" (the step a person must resolve), "takeover" (the
// run's screen with its controls, handed to a person), or "live".
func pageView(run *api.AgentRun) string {
	switch st := run.Status; {
	case api.Finished(st.Phase):
		return "finished"
	case st.Phase == api.PhaseNeedsResolution:
		return "resolution"
	case st.Phase == api.PhaseWaiting && st.Reason == api.ReasonApproval:
		return "approval"
	case takingOver(run):
		return "takeover"
	}
	return "live"
}

// costText is the cost as the run page shows it: "cost $X" or "cost $X of $LIMIT".
func costText(c *api.RunCost) string {
	if c == nil {
		return ""
	}
	s := "cost " + cost.Dollars(c.TotalUSD)
	if c.LimitUSD != "" {
		s += " of " + cost.Dollars(c.LimitUSD)
	}
	return s
}

// acquireStream takes one of the server's live timeline slots; false when all are taken.
func (c *Console) acquireStream() bool {
	max := int64(c.MaxStreams)
	if max <= 0 {
		max = defaultMaxStreams
	}
	if c.streams.Add(1) > max {
		c.streams.Add(-1)
		return false
	}
	return true
}

func (c *Console) releaseStream() { c.streams.Add(-1) }

// timeline is GET /runs/NAME/timeline. It runs in the request's goroutine and returns when the
// run finishes, the run or the session is gone ("gone" says which), the store fails, or the
// request's context ends (the browser left).
func (c *Console) timeline(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	name := r.PathValue("name")
	if _, err := c.Store.GetRun(ctx, name); err != nil {
		http.Error(w, "no run "+name, http.StatusNotFound)
		return
	}
	after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		if v, err := strconv.ParseInt(id, 10, 64); err == nil {
			after = v
		}
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	release, ok := c.admitStream(w, r)
	if !ok {
		return
	}
	defer release()
	s, err := c.openStream(w, flusher)
	if err != nil {
		return
	}
	var texts <-chan livetext.Delta
	if c.LiveText != nil {
		ch, cancel := c.LiveText.Subscribe(name)
		defer cancel()
		texts = ch
	}
	lastStatus := ""
	for {
		// Read the status before the events, so every event written before the run finished is
		// sent before "end".
		run, err := c.Store.GetRun(ctx, name)
		if err == nil && !c.signedIn(r) {
			err = errors.New("the session ended (signed out, or the password changed): sign in again")
		}
		if err != nil {
			if ctx.Err() == nil {
				fmt.Fprintf(w, "event: gone\ndata: %s\n\n", jsonText(map[string]string{"message": err.Error()}))
				flusher.Flush()
			}
			return
		}
		evs, err := c.Store.ListEvents(ctx, name, after, eventBatch)
		if err != nil {
			return
		}
		var b strings.Builder
		for _, ev := range evs {
			row := liveRow{Seq: ev.Seq, Clock: clock(ev.Time), Type: string(ev.Type), StepKey: ev.StepKey, Message: ev.Message}
			fmt.Fprintf(&b, "id: %d\nevent: timeline\ndata: %s\n\n", ev.Seq, jsonText(row))
			after = ev.Seq
		}
		if st := jsonText(statusOf(run)); st != lastStatus {
			fmt.Fprintf(&b, "event: status\ndata: %s\n\n", st)
			lastStatus = st
		}
		finished := len(evs) < eventBatch && api.Finished(run.Status.Phase)
		if finished {
			fmt.Fprintf(&b, "event: end\ndata: %s\n\n", lastStatus)
		} else if b.Len() == 0 && time.Since(s.lastWrite) >= s.heartbeat {
			b.WriteString(": heartbeat\n\n")
		}
		if b.Len() > 0 {
			if err := s.write(b.String()); err != nil {
				return
			}
		}
		if finished {
			return
		}
		if len(evs) == eventBatch {
			continue
		}
		if err := c.relayText(ctx, s, texts); err != nil || ctx.Err() != nil {
			return
		}
	}
}

// admitStream takes one of the server's live timelines and, with Follow, one of the session's;
// when either is used up it answers the request and reports false.
func (c *Console) admitStream(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	if !c.acquireStream() {
		w.Header().Set("Retry-After", "5")
		http.Error(w, "too many live timelines are open on this server; the page retries shortly", http.StatusServiceUnavailable)
		return nil, false
	}
	if c.Follow == nil {
		return c.releaseStream, true
	}
	followed, ok := c.Follow(r)
	if !ok {
		c.releaseStream()
		w.Header().Set("Retry-After", "5")
		http.Error(w, "this session already follows as many live timelines as it may: close a tab", http.StatusTooManyRequests)
		return nil, false
	}
	return func() { followed(); c.releaseStream() }, true
}

// liveStream is an open event stream: each write is flushed and extends the write deadline.
type liveStream struct {
	w         http.ResponseWriter
	flusher   http.Flusher
	extend    func()
	heartbeat time.Duration
	lastWrite time.Time
}

// openStream starts the event stream's response.
func (c *Console) openStream(w http.ResponseWriter, flusher http.Flusher) (*liveStream, error) {
	// The stream outlives the server's WriteTimeout: each write gets its own deadline (and the
	// read deadline, whose expiry would end the request, is cleared).
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Time{})
	extend := func() { rc.SetWriteDeadline(time.Now().Add(streamWriteWindow)) }
	extend()
	heartbeat := c.heartbeat
	if heartbeat <= 0 {
		heartbeat = defaultHeartbeat
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := io.WriteString(w, "retry: 2000\n\n"); err != nil {
		return nil, err
	}
	flusher.Flush()
	return &liveStream{w: w, flusher: flusher, extend: extend, heartbeat: heartbeat, lastWrite: time.Now()}, nil
}

func (s *liveStream) write(text string) error {
	if _, err := io.WriteString(s.w, text); err != nil {
		return err
	}
	s.flusher.Flush()
	s.lastWrite = time.Now()
	s.extend()
	return nil
}

// relayText waits for the run's next events, up to a second (less when a heartbeat falls due
// sooner), sending the model's text meanwhile as it comes.
func (c *Console) relayText(ctx context.Context, s *liveStream, texts <-chan livetext.Delta) error {
	wait := time.Second
	if d := s.heartbeat - time.Since(s.lastWrite); d < wait {
		wait = max(d, time.Millisecond)
	}
	until := time.Now().Add(wait)
	for {
		ds := c.waitEvents(ctx, time.Until(until), texts)
		if len(ds) == 0 {
			return nil
		}
		var b strings.Builder
		for _, d := range ds {
			fmt.Fprintf(&b, "event: text\ndata: %s\n\n", jsonText(liveText{Step: d.Step, Offset: d.Offset, Text: d.Text, Done: d.Done, Cut: d.Cut}))
		}
		if err := s.write(b.String()); err != nil {
			return err
		}
		if !time.Now().Before(until) {
			return nil
		}
	}
}

// waitEvents waits up to d for the run's timeline events (Store.WaitEvents) and returns early
// with the live text that arrives meanwhile (nil: events may have come, or d passed).
func (c *Console) waitEvents(ctx context.Context, d time.Duration, texts <-chan livetext.Delta) []livetext.Delta {
	if d <= 0 {
		return nil
	}
	if texts == nil {
		c.Store.WaitEvents(ctx, d)
		return nil
	}
	select {
	case x := <-texts:
		return drainTexts(x, texts)
	default:
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	woke := make(chan struct{})
	go func() {
		defer close(woke)
		c.Store.WaitEvents(wctx, d)
	}()
	select {
	case x := <-texts:
		cancel()
		<-woke
		return drainTexts(x, texts)
	case <-woke:
		return nil
	}
}

// drainTexts is first and the pieces already waiting behind it (at most a batch).
func drainTexts(first livetext.Delta, texts <-chan livetext.Delta) []livetext.Delta {
	out := []livetext.Delta{first}
	for len(out) < 64 {
		select {
		case x := <-texts:
			out = append(out, x)
		default:
			return out
		}
	}
	return out
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func clock(t time.Time) string { return t.Format("15:04:05.000") }

//go:embed static/console.js
var static embed.FS

var consoleJS, _ = static.ReadFile("static/console.js")

// scriptVersion changes with the script, so a page names the script it was made with and a
// browser never runs a stale copy against a newer page.
var scriptVersion = func() string {
	sum := sha256.Sum256(consoleJS)
	return hex.EncodeToString(sum[:6])
}()

// script is GET /static/console.js. It is the same for everyone and carries nothing of a run, so
// it needs no session (the pages that use it do).
func script(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/javascript; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("ETag", `"`+scriptVersion+`"`)
	if r.URL.Query().Get("v") == scriptVersion {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r, "", time.Time{}, strings.NewReader(string(consoleJS)))
}
