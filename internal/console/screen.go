package console

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/store"
)

// The run's Screen and taking it over. A run whose browser is live in this process (kept by the
// runner inside `agentrun serve`) shows its screen on the run page: GET /runs/NAME/screen.jpg is
// the viewport now, as a JPEG with one pixel per CSS pixel, which static/console.js reloads a few
// times a second while the page is open. Watching is allowed whenever the browser is live. While
// the run waits on a takeover (the agent called ask_person with takeover), the person drives it:
// POST /runs/NAME/screen/click {x, y}, /screen/type {text} and /screen/key {key}, each with the
// page's CSRF token (the X-CSRF-Token header or a csrf form field), answer JSON and are recorded
// in the run's timeline with who did it (typing by its length only: it may be a password). The
// person hands the browser back by answering the run's question (POST /runs/NAME/answer).
//
// Only this process can show a browser it keeps: a run whose browser is on another runner (a
// separate `agentrun runner`, or another server's) gets a note saying where it is instead.

// Screens gives the screens of the runs' computers live in this process.
type Screens interface {
	// Screen returns run's screen, or false when no computer of run that has one is live here.
	Screen(run string) (computer.Screen, bool)
}

const (
	// frameTimeout bounds the capture of one frame.
	frameTimeout = 10 * time.Second
	// actTimeout bounds one click, text or key (a click may start a page load).
	actTimeout = 30 * time.Second
)

// screenKey is a key button under the screen.
type screenKey struct{ Key, Label string }

var screenKeyButtons = []screenKey{{"Enter", "Enter"}, {"Tab", "Tab"}, {"Backspace", "Backspace"}, {"Escape", "Esc"},
	{"ArrowLeft", "←"}, {"ArrowRight", "→"}, {"ArrowUp", "↑"}, {"ArrowDown", "↓"}}

// screenSection is the Screen section of a run page.
type screenSection struct {
	// What is the computer whose screen it is: "browser" or "desktop".
	What string
	// Live: the run's computer is live here and its screen is shown.
	Live bool
	// Control: the run waits on a takeover, so the person drives (and the section is prominent).
	Control bool
	// Takeover: the run waits on a takeover (whether or not its browser is here).
	Takeover bool
	// Why says why there is no screen to show.
	Why string
}

func takingOver(run *api.AgentRun) bool {
	st := run.Status
	return st.Phase == api.PhaseWaiting && st.WaitingOn != nil && st.WaitingOn.Kind == "takeover"
}

// computerKind is the kind of computer the run made, from its journaled creation step ("" when
// it made none).
func computerKind(steps []api.Step) string {
	for _, s := range steps {
		if s.Key != "computer" {
			continue
		}
		var args struct {
			Kind string `json:"kind"`
		}
		if json.Unmarshal(s.Args, &args) != nil {
			return "" // a page shows no screen for a step it cannot read; the step list still shows it
		}
		return args.Kind
	}
	return ""
}

// screenOf returns the run's screen when it is live in this process, or why it is not.
func (c *Console) screenOf(run *api.AgentRun, what string) (computer.Screen, string) {
	if c.Screens != nil {
		if s, ok := c.Screens.Screen(run.Metadata.Name); ok {
			return s, ""
		}
	}
	where := "The run's " + what + " is on runner " + run.Status.Runner + "."
	if run.Status.Runner == "" {
		where = "The run has not been on a runner yet."
	}
	switch {
	case c.Screens == nil || c.Runner == "":
		return nil, fmt.Sprintf("%s This server runs no runner in its own process (it was started with --no-runner), and a %s's screen is shown and taken over only by the agentrun serve process whose own runner keeps the %[2]s.", where, what)
	case run.Status.Runner != c.Runner:
		return nil, fmt.Sprintf("%s A %s's screen is shown and taken over only by the agentrun serve process whose own runner keeps the %[2]s; this server's runner is %s (a separate agentrun runner process shows no screen).", where, what, c.Runner)
	}
	return nil, fmt.Sprintf("The run's %s is not open on runner %s now: a %[1]s kept while its run waits is lost when the server restarts, and the agent's next %[1]s step opens a new one.", what, c.Runner)
}

// screenKind names the run's computer for the page's messages: "browser" or "desktop" (a
// browser when the run has made no computer yet, as only an agent's browser or desktop has a
// screen to show).
func (c *Console) screenKind(ctx context.Context, run string) string {
	if steps, err := c.Store.ListSteps(ctx, run); err == nil && shows(computerKind(steps)) {
		return computerKind(steps)
	}
	return "browser"
}

// shows reports whether a kind of computer has a screen the console shows.
func shows(kind string) bool {
	return kind == string(computer.KindBrowser) || kind == string(computer.KindDesktop)
}

// screenSection is what the run page shows of the run's screen: nil for a finished run, and for
// a run with no browser that waits on no takeover.
func (c *Console) screenSection(run *api.AgentRun, steps []api.Step) *screenSection {
	if api.Finished(run.Status.Phase) {
		return nil
	}
	takeover := takingOver(run)
	kind := computerKind(steps)
	what := "computer"
	if shows(kind) {
		what = kind
	}
	if !shows(kind) && !takeover {
		if c.Screens == nil {
			return nil
		}
		if _, ok := c.Screens.Screen(run.Metadata.Name); !ok {
			return nil
		}
	}
	s, why := c.screenOf(run, what)
	if s != nil {
		return &screenSection{What: what, Live: true, Control: takeover, Takeover: takeover}
	}
	if !shows(kind) {
		has := "has no computer yet"
		if kind != "" {
			has = "works on a " + kind + ", which has no screen"
		}
		why = "The agent asks you to take over, but the run " + has + ": this console shows and hands over the screen of a browser or a desktop only. Do what the agent asks another way."
	}
	return &screenSection{What: what, Takeover: takeover, Why: why}
}

// person is the signed-in person making the request, as the timeline names them.
func (c *Console) person(r *http.Request) string {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return "person:unknown"
	}
	user, _ := c.Accounts.Verify(ck.Value, time.Now())
	return "person:" + user
}

func csrfValid(r *http.Request, got string) bool {
	want := csrfToken(r)
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// guardJSON is guard for a page script's POST: without a session it answers 401 in JSON.
func (c *Console) guardJSON(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !c.signedIn(r) {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "not signed in: sign in to the console again"})
			return
		}
		h(w, r)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func jsonError(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, map[string]string{"error": fmt.Sprintf(format, args...)})
}

// screenFrame is GET /runs/NAME/screen.jpg: the run's browser's viewport now.
func (c *Console) screenFrame(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	run, err := c.Store.GetRun(r.Context(), name)
	if err != nil {
		http.Error(w, "no run "+name, http.StatusNotFound)
		return
	}
	if api.Finished(run.Status.Phase) {
		http.Error(w, "The run has ended, and its browser with it.", http.StatusNotFound)
		return
	}
	s, _ := c.screenOf(run, "computer")
	if s == nil {
		// Said only when there is nothing to show, so the page's frames cost no step listing.
		_, why := c.screenOf(run, c.screenKind(r.Context(), name))
		http.Error(w, why, http.StatusNotFound)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), frameTimeout)
	defer cancel()
	img, width, height, err := s.Frame(ctx)
	if err != nil {
		status := http.StatusServiceUnavailable
		if errors.Is(err, computer.ErrClosed) {
			status = http.StatusNotFound
		}
		http.Error(w, "could not capture the run's screen: "+err.Error(), status)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "image/jpeg")
	h.Set("X-Screen-Width", strconv.Itoa(width))
	h.Set("X-Screen-Height", strconv.Itoa(height))
	h.Set("Content-Length", strconv.Itoa(len(img)))
	w.Write(img)
}

// screenRequest is the body of a POST to /runs/NAME/screen/ACTION: JSON, or a form.
type screenRequest struct {
	X    *int   `json:"x"`
	Y    *int   `json:"y"`
	Text string `json:"text"`
	Key  string `json:"key"`
	CSRF string `json:"csrf"`
}

func readScreenRequest(w http.ResponseWriter, r *http.Request) (screenRequest, error) {
	r.Body = http.MaxBytesReader(w, r.Body, computer.MaxTypeText+4<<10)
	var req screenRequest
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return req, fmt.Errorf("read the request: %w", err)
		}
		if err := api.CheckJSONBounds(b); err != nil {
			return req, fmt.Errorf("read the request: %w", err)
		}
		if err := json.Unmarshal(b, &req); err != nil {
			return req, fmt.Errorf("read the request: %w", err)
		}
	} else {
		if err := r.ParseForm(); err != nil {
			return req, fmt.Errorf("read the form: %w", err)
		}
		f := r.PostForm
		for _, p := range []struct {
			name string
			to   **int
		}{{"x", &req.X}, {"y", &req.Y}} {
			if v := f.Get(p.name); v != "" {
				n, err := strconv.Atoi(v)
				if err != nil {
					return req, fmt.Errorf("%s is not a whole number: %q", p.name, v)
				}
				*p.to = &n
			}
		}
		req.Text, req.Key, req.CSRF = f.Get("text"), f.Get("key"), f.Get("csrf")
	}
	if h := r.Header.Get("X-CSRF-Token"); h != "" {
		req.CSRF = h
	}
	return req, nil
}

// screenAct is POST /runs/NAME/screen/{click,type,key}: a person drives the run's browser.
func (c *Console) screenAct(w http.ResponseWriter, r *http.Request) {
	name, action := r.PathValue("name"), r.PathValue("action")
	if action != "click" && action != "type" && action != "key" {
		jsonError(w, http.StatusNotFound, "no screen action %q: click, type or key", action)
		return
	}
	req, err := readScreenRequest(w, r)
	if err != nil {
		jsonError(w, http.StatusBadRequest, "%v", err)
		return
	}
	if !csrfValid(r, req.CSRF) {
		jsonError(w, http.StatusForbidden, "the request did not come from a page of this console, or the page is stale: reload it")
		return
	}
	run, err := c.Store.GetRun(r.Context(), name)
	if err != nil {
		jsonError(w, http.StatusNotFound, "no run %s", name)
		return
	}
	if !takingOver(run) {
		now := string(run.Status.Phase)
		if wo := run.Status.WaitingOn; wo != nil {
			now += ", waiting on " + wo.Kind
		}
		jsonError(w, http.StatusConflict, "the run is not waiting on a takeover (it is %s): a person drives its computer only after the agent hands it over (ask_person with takeover); the screen can be watched at any time", now)
		return
	}
	what := c.screenKind(r.Context(), name)
	s, why := c.screenOf(run, what)
	if s == nil {
		jsonError(w, http.StatusConflict, "%s", why)
		return
	}
	by := c.person(r)
	ctx, cancel := context.WithTimeout(r.Context(), actTimeout)
	defer cancel()
	var ev api.Event
	var done string
	switch action {
	case "click":
		if req.X == nil || req.Y == nil {
			jsonError(w, http.StatusBadRequest, "a click needs x and y, in pixels of the screen from its top-left corner")
			return
		}
		x, y := *req.X, *req.Y
		err = s.ClickAt(ctx, x, y)
		done = fmt.Sprintf("clicked at (%d, %d)", x, y)
		ev = api.Event{Type: api.EventTakeoverClick, Message: fmt.Sprintf("%s clicked the run's %s at (%d, %d)", by, what, x, y),
			Data: json.RawMessage(store.MustJSON(map[string]any{"by": by, "x": x, "y": y}))}
	case "type":
		if req.Text == "" {
			jsonError(w, http.StatusBadRequest, "nothing to type")
			return
		}
		if len(req.Text) > computer.MaxTypeText {
			jsonError(w, http.StatusRequestEntityTooLarge, "the text is %d bytes; at most %d are typed at once", len(req.Text), computer.MaxTypeText)
			return
		}
		n := utf8.RuneCountInString(req.Text)
		err = s.TypeText(ctx, req.Text)
		// Never the text itself: it may be a password.
		done = fmt.Sprintf("typed %d characters", n)
		ev = api.Event{Type: api.EventTakeoverType, Message: fmt.Sprintf("%s typed %d characters into the run's %s (the text is not recorded)", by, n, what),
			Data: json.RawMessage(store.MustJSON(map[string]any{"by": by, "characters": n}))}
	case "key":
		err = s.Key(ctx, req.Key)
		done = "pressed " + req.Key
		ev = api.Event{Type: api.EventTakeoverKey, Message: fmt.Sprintf("%s pressed %s in the run's %s", by, req.Key, what),
			Data: json.RawMessage(store.MustJSON(map[string]any{"by": by, "key": req.Key}))}
	}
	switch {
	case err == nil:
	case computer.IsAgentError(err):
		jsonError(w, http.StatusBadRequest, "%v", err)
		return
	case errors.Is(err, computer.ErrClosed):
		jsonError(w, http.StatusConflict, "the run's %s has closed: %v", what, err)
		return
	default:
		jsonError(w, http.StatusBadGateway, "the run's %s did not take it: %v", what, err)
		return
	}
	if err := c.Store.AppendEvents(r.Context(), name, []api.Event{ev}); err != nil {
		jsonError(w, http.StatusInternalServerError, "%s, but it could not be recorded in the run's timeline: %v", done, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "message": done})
}

// answerable says whether the run waits on a person's answer the run page takes: a question (a
// takeover's included: the answer hands the computer back) or the next message of a keep-alive run.
func answerable(run *api.AgentRun) bool {
	st := run.Status
	if st.Phase != api.PhaseWaiting || st.WaitingOn == nil {
		return false
	}
	switch st.WaitingOn.Kind {
	case "question", "takeover", "message":
		return true
	}
	return false
}

// answer is POST /runs/NAME/answer from the run page's answer form: the person's answer (or
// message) to the run, as POST /v2/agentruns/NAME/messages takes it. Answering one question twice
// (a second click) sends one message.
func (c *Console) answer(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, api.MaxInputBytes+16<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form: "+err.Error(), http.StatusBadRequest)
		return
	}
	if !csrfValid(r, r.PostForm.Get("csrf")) {
		http.Error(w, "the form is stale or did not come from this console: reload the page", http.StatusForbidden)
		return
	}
	name := r.PathValue("name")
	run, err := c.Store.GetRun(r.Context(), name)
	if err != nil {
		http.Error(w, "no run "+name, http.StatusNotFound)
		return
	}
	if !answerable(run) {
		http.Error(w, "the run is "+string(run.Status.Phase)+" and waits on no answer now: reload its page", http.StatusConflict)
		return
	}
	text := r.PostForm.Get("answer")
	if strings.TrimSpace(text) == "" {
		http.Error(w, "the answer is empty: go back and write one", http.StatusBadRequest)
		return
	}
	if len(text) > api.MaxInputBytes {
		http.Error(w, fmt.Sprintf("the answer is %d bytes; the limit is %d (256 KiB)", len(text), api.MaxInputBytes), http.StatusRequestEntityTooLarge)
		return
	}
	key := ""
	if sk := run.Status.WaitingOn.StepKey; sk != "" {
		key = "console-answer:" + sk
	}
	_, created, err := c.Store.AddMessage(r.Context(), name, key, text)
	if errors.Is(err, store.ErrFinished) {
		http.Error(w, "the run has finished and takes no more answers", http.StatusConflict)
		return
	}
	if err != nil {
		http.Error(w, "send the answer: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if created {
		by := c.person(r)
		if err := c.Store.AppendEvents(r.Context(), name, []api.Event{{Type: api.EventMessageReceived, Message: api.FirstLine(text, 120),
			Data: json.RawMessage(store.MustJSON(map[string]string{"by": by}))}}); err != nil {
			http.Error(w, "the answer was sent, but it could not be recorded in the run's timeline: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	http.Redirect(w, r, "/runs/"+name, http.StatusSeeOther)
}
