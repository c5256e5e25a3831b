package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/store"
)

// fakeScreen records what a person does to it.
type fakeScreen struct {
	mu   sync.Mutex
	did  []string
	gone bool
}

var frameJPEG = []byte("\xff\xd8\xff\xe0 a frame")

func (s *fakeScreen) do(what string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return computer.ErrClosed
	}
	s.did = append(s.did, what)
	return nil
}

func (s *fakeScreen) Frame(context.Context) ([]byte, int, int, error) {
	if err := s.do("frame"); err != nil {
		return nil, 0, 0, err
	}
	return frameJPEG, 1280, 800, nil
}
func (s *fakeScreen) ClickAt(_ context.Context, x, y int) error {
	return s.do(fmt.Sprintf("click %d,%d", x, y))
}
func (s *fakeScreen) TypeText(_ context.Context, text string) error { return s.do("type " + text) }
func (s *fakeScreen) Key(_ context.Context, key string) error {
	if key == "F13" {
		return computer.Agentf("no key %q", key)
	}
	return s.do("key " + key)
}

func (s *fakeScreen) done() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, d := range s.did {
		if d != "frame" {
			out = append(out, d)
		}
	}
	return out
}

// fakeScreens has the screens of the runs named.
type fakeScreens map[string]*fakeScreen

func (f fakeScreens) Screen(run string) (computer.Screen, bool) {
	s, ok := f[run]
	if !ok {
		return nil, false
	}
	return s, true
}

// parked creates run name, has runner make its computer of kind (none: no computer step) and
// park it waiting on wait (nil: leave it Running).
func (tc *testConsole) parked(t *testing.T, name, runner, kind string, wait *api.WaitingOn) {
	t.Helper()
	tc.createRun(t, name)
	l := tc.claim(t, name)
	w := store.Write{Status: &api.AgentRunStatus{Phase: api.PhaseRunning, AgentRevision: 1, Runner: runner}}
	if kind != "" {
		args, _ := json.Marshal(map[string]string{"kind": kind, "provider": "p"})
		w.Steps = []api.Step{{Key: "computer", Kind: "computer", State: api.StepStarted, Attempt: 1, Args: args, StartedAt: time.Now()}}
	}
	tc.commit(t, l, w)
	if kind != "" {
		now := time.Now()
		tc.commit(t, l, store.Write{Steps: []api.Step{{Key: "computer", Kind: "computer", State: api.StepCompleted, Attempt: 1, CompletedAt: &now, Result: json.RawMessage(`{}`)}}})
	}
	if wait != nil {
		reason := api.ReasonQuestion
		if wait.Kind == "message" {
			reason = api.ReasonMessage
		}
		tc.commit(t, l, store.Write{Status: &api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: reason, AgentRevision: 1, Runner: runner, WaitingOn: wait},
			Events: events("run.question"), Release: true})
	}
}

func takeoverWait() *api.WaitingOn {
	return &api.WaitingOn{Kind: "takeover", StepKey: "t1/tool/0", Question: "Please log in for me", Detail: "the agent asks you to take over its computer"}
}

// post sends a POST, signed in unless session is "".
func (tc *testConsole) post(t *testing.T, path, session, ctype, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	resp := tc.do(t, context.Background(), "POST", path, session, strings.NewReader(body), append([]string{"Content-Type", ctype}, hdr...)...)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// csrf is the token the run page carries for tc's session.
func (tc *testConsole) csrf() string {
	req, _ := http.NewRequest("GET", "/", nil)
	req.AddCookie(&http.Cookie{Name: cookieName, Value: tc.session})
	return csrfToken(req)
}

// A run waiting on a takeover, its browser live here: the page shows the screen with its
// controls and the answer form; the person's clicks, typing and keys reach the browser and the
// timeline (typing by its length only); the answer hands it back.
func TestScreenTakeover(t *testing.T) {
	t.Parallel()
	tc := newTestConsole(t)
	scr := &fakeScreen{}
	tc.Screens, tc.Runner = fakeScreens{"r1": scr}, "local"
	tc.parked(t, "r1", "local", "browser", takeoverWait())
	token := tc.csrf()

	resp, page := tc.body(t, "/runs/r1")
	if resp.StatusCode != 200 {
		t.Fatalf("run page: HTTP %d", resp.StatusCode)
	}
	for _, want := range []string{
		`<div id="screen" class="card needs wait" data-control="true" data-csrf="` + token + `">`,
		`<img id="screen-img" src="/runs/r1/screen.jpg" class="screen-img control"`,
		`<form id="screen-type">`, `data-key="Enter"`, `data-key="Tab"`, `data-key="Backspace"`,
		`id="answer-form" method="post" action="/runs/r1/answer"><input type="hidden" name="csrf" value="` + token + `">`,
		`answer here to hand the controls back to the agent`,
		`data-view="takeover"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the run page lacks %s:\n%s", want, page)
		}
	}
	if strings.Count(page, "<script") != strings.Count(page, `<script src="/static/`) || strings.Contains(page, `http-equiv="refresh"`) {
		t.Errorf("the page has inline script, or refreshes under the answer being written:\n%s", page)
	}

	resp, frame := tc.body(t, "/runs/r1/screen.jpg")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/jpeg" || frame != string(frameJPEG) ||
		resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("X-Screen-Width") != "1280" {
		t.Errorf("screen.jpg: HTTP %d %v %q", resp.StatusCode, resp.Header, frame)
	}

	js := "application/json"
	for _, c := range []struct {
		action, ctype, body string
		hdr                 []string
		want                int
		reply               string
	}{
		{"click", js, `{"x": 10, "y": 20}`, []string{"X-CSRF-Token", token}, 200, `"message":"clicked at (10, 20)"`},
		{"type", "application/x-www-form-urlencoded", "text=hunter2%C3%A9&csrf=" + token, nil, 200, `"message":"typed 8 characters"`},
		{"key", js, `{"key": "Enter"}`, []string{"X-CSRF-Token", token}, 200, `"message":"pressed Enter"`},
		{"key", js, `{"key": "F13"}`, []string{"X-CSRF-Token", token}, 400, `no key`},
		{"click", js, `{"x": 10}`, []string{"X-CSRF-Token", token}, 400, `needs x and y`},
		{"type", js, `{"text": ""}`, []string{"X-CSRF-Token", token}, 400, `nothing to type`},
		{"click", js, `{"x": 1, "y": 1}`, nil, 403, `reload it`},
		{"click", js, `{"x": 1, "y": 1}`, []string{"X-CSRF-Token", "forged"}, 403, `reload it`},
		{"drag", js, `{"x": 1, "y": 1}`, []string{"X-CSRF-Token", token}, 404, `click, type or key`},
	} {
		resp, body := tc.post(t, "/runs/r1/screen/"+c.action, tc.session, c.ctype, c.body, c.hdr...)
		if resp.StatusCode != c.want || !strings.Contains(body, c.reply) || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: HTTP %d %s, want %d with %s", c.action, c.body, resp.StatusCode, body, c.want, c.reply)
		}
	}
	for _, session := range []string{"", "forged"} {
		resp, body := tc.post(t, "/runs/r1/screen/click", session, js, `{"x": 1, "y": 1}`, "X-CSRF-Token", token)
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "not signed in") {
			t.Errorf("a click with session %q: HTTP %d %s", session, resp.StatusCode, body)
		}
	}
	if got := strings.Join(scr.done(), "|"); got != "click 10,20|type hunter2é|key Enter" {
		t.Errorf("the browser got %q", got)
	}
	evs, err := tc.st.ListEvents(context.Background(), "r1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var took []string
	for _, ev := range evs {
		if strings.Contains(ev.Message, "hunter2") || strings.Contains(string(ev.Data), "hunter2") {
			t.Errorf("the typed text is in the timeline: %+v", ev)
		}
		if strings.HasPrefix(string(ev.Type), "takeover.") {
			took = append(took, string(ev.Type)+": "+ev.Message+" "+string(ev.Data))
		}
	}
	want := []string{
		`takeover.click: person:admin clicked the run's browser at (10, 20) {"by":"person:admin","x":10,"y":20}`,
		`takeover.type: person:admin typed 8 characters into the run's browser (the text is not recorded) {"by":"person:admin","characters":8}`,
		`takeover.key: person:admin pressed Enter in the run's browser {"by":"person:admin","key":"Enter"}`,
	}
	if strings.Join(took, "\n") != strings.Join(want, "\n") {
		t.Errorf("takeover events:\n%s\nwant:\n%s", strings.Join(took, "\n"), strings.Join(want, "\n"))
	}

	// The answer hands the browser back: one message, even when sent twice.
	form := url.Values{"csrf": {token}, "answer": {"done, logged in"}}.Encode()
	if resp, body := tc.post(t, "/runs/r1/answer", tc.session, "application/x-www-form-urlencoded", "answer=x"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("an answer without the token: HTTP %d %s", resp.StatusCode, body)
	}
	if resp, body := tc.post(t, "/runs/r1/answer", tc.session, "application/x-www-form-urlencoded", form); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/runs/r1" {
		t.Fatalf("answer: HTTP %d %s", resp.StatusCode, body)
	}
	if resp, body := tc.post(t, "/runs/r1/answer", tc.session, "application/x-www-form-urlencoded", form); resp.StatusCode != http.StatusConflict {
		t.Errorf("a second answer: HTTP %d %s", resp.StatusCode, body)
	}
	msgs, err := tc.st.ListMessages(context.Background(), "r1", 0)
	if err != nil || len(msgs) != 1 || msgs[0].Payload != "done, logged in" {
		t.Errorf("messages after the answer: %+v (%v)", msgs, err)
	}
	// Handed back: the run is no longer waiting on a takeover, so a click is refused.
	resp, body := tc.post(t, "/runs/r1/screen/click", tc.session, js, `{"x": 1, "y": 1}`, "X-CSRF-Token", token)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "not waiting on a takeover (it is Queued)") {
		t.Errorf("a click after the answer: HTTP %d %s", resp.StatusCode, body)
	}
	// A browser that closed under the person says so.
	l := tc.claim(t, "r1")
	tc.commit(t, l, store.Write{Status: &api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: api.ReasonQuestion, AgentRevision: 1, Runner: "local", WaitingOn: takeoverWait()}, Release: true})
	scr.mu.Lock()
	scr.gone = true
	scr.mu.Unlock()
	resp, body = tc.post(t, "/runs/r1/screen/click", tc.session, js, `{"x": 1, "y": 1}`, "X-CSRF-Token", token)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "has closed") {
		t.Errorf("a click on a closed browser: HTTP %d %s", resp.StatusCode, body)
	}
}

// A run working with its browser: the screen can be watched, not driven.
func TestScreenWatchOnly(t *testing.T) {
	t.Parallel()
	tc := newTestConsole(t)
	scr := &fakeScreen{}
	tc.Screens, tc.Runner = fakeScreens{"r1": scr}, "local"
	tc.parked(t, "r1", "local", "browser", nil)
	_, page := tc.body(t, "/runs/r1")
	if !strings.Contains(page, `<div id="screen" data-control="false"`) || !strings.Contains(page, `<img id="screen-img"`) ||
		strings.Contains(page, `id="screen-type"`) || !strings.Contains(page, "You get the controls when the agent asks you to take over") ||
		!strings.Contains(page, `id="answer-form" method="post" action="/runs/r1/answer" hidden>`) {
		t.Errorf("the page of a run working with its browser:\n%s", page)
	}
	if resp, _ := tc.body(t, "/runs/r1/screen.jpg"); resp.StatusCode != 200 {
		t.Errorf("screen.jpg while the agent works: HTTP %d", resp.StatusCode)
	}
	resp, body := tc.post(t, "/runs/r1/screen/click", tc.session, "application/json", `{"x": 1, "y": 1}`, "X-CSRF-Token", tc.csrf())
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "not waiting on a takeover (it is Running)") {
		t.Errorf("a click while the agent works: HTTP %d %s", resp.StatusCode, body)
	}
	if len(scr.done()) != 0 {
		t.Errorf("the browser got %v", scr.done())
	}
	if resp := tc.get(t, context.Background(), "/runs/r1/screen.jpg", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("screen.jpg without a session: HTTP %d", resp.StatusCode)
	}
}

// A browser this process does not keep is not shown: the page says where it is and why.
func TestScreenElsewhere(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		screens Screens
		runner  string
		kind    string
		want    string
	}{
		{"other-runner", fakeScreens{}, "local", "browser", "The run's browser is on runner r2. A browser's screen is shown and taken over only by the agentrun serve process whose own runner keeps the browser; this server's runner is local"},
		{"no-runner", nil, "", "browser", "The run's browser is on runner r2. This server runs no runner in its own process (it was started with --no-runner)"},
		{"desktop", fakeScreens{}, "local", "desktop", "The run's desktop is on runner r2. A desktop's screen is shown and taken over only by the agentrun serve process whose own runner keeps the desktop; this server's runner is local"},
		{"sandbox", fakeScreens{}, "local", "sandbox", "the run works on a sandbox, which has no screen"},
		{"nothing", fakeScreens{}, "local", "", "the run has no computer yet"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tc := newTestConsole(t)
			tc.Screens, tc.Runner = c.screens, c.runner
			tc.parked(t, "r1", "r2", c.kind, takeoverWait())
			_, page := tc.body(t, "/runs/r1")
			if !strings.Contains(page, `<p id="screen-away">`) || !strings.Contains(page, htmlEscaped(c.want)) || strings.Contains(page, `<img id="screen-img"`) ||
				!strings.Contains(page, "You can still answer the run's question below") {
				t.Errorf("the run page:\n%s", page)
			}
			resp, body := tc.body(t, "/runs/r1/screen.jpg")
			if resp.StatusCode != http.StatusNotFound || (shows(c.kind) && !strings.Contains(body, c.want)) {
				t.Errorf("screen.jpg: HTTP %d %s", resp.StatusCode, body)
			}
			resp, body = tc.post(t, "/runs/r1/screen/click", tc.session, "application/json", `{"x": 1, "y": 1}`, "X-CSRF-Token", tc.csrf())
			if resp.StatusCode != http.StatusConflict || !strings.Contains(body, "runner") {
				t.Errorf("click: HTTP %d %s", resp.StatusCode, body)
			}
		})
	}
	// On this runner, but not open now (the server restarted while the run waited).
	tc := newTestConsole(t)
	tc.Screens, tc.Runner = fakeScreens{}, "local"
	tc.parked(t, "r1", "local", "browser", takeoverWait())
	if _, page := tc.body(t, "/runs/r1"); !strings.Contains(page, "The run&#39;s browser is not open on runner local now") {
		t.Errorf("the run page:\n%s", page)
	}
}

// htmlEscaped is s as the page's template does.
func htmlEscaped(s string) string { return strings.ReplaceAll(s, "'", "&#39;") }

// A run waiting on a plain question, with no computer: no Screen, and the answer form.
func TestAnswerForm(t *testing.T) {
	t.Parallel()
	tc := newTestConsole(t)
	tc.Screens, tc.Runner = fakeScreens{}, "local"
	tc.parked(t, "r1", "local", "", &api.WaitingOn{Kind: "question", StepKey: "t0/tool/0", Question: "Which region?"})
	_, page := tc.body(t, "/runs/r1")
	if strings.Contains(page, `id="screen"`) || !strings.Contains(page, `id="answer-form" method="post" action="/runs/r1/answer"><input`) ||
		!strings.Contains(page, "Answer the run") || !strings.Contains(page, `data-view="live"`) {
		t.Errorf("the page of a run asking a question:\n%s", page)
	}
	form := url.Values{"csrf": {tc.csrf()}, "answer": {"Europe"}}.Encode()
	if resp, body := tc.post(t, "/runs/r1/answer", tc.session, "application/x-www-form-urlencoded", form); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("answer: HTTP %d %s", resp.StatusCode, body)
	}
	evs, _ := tc.st.ListEvents(context.Background(), "r1", 0, 0)
	if last := evs[len(evs)-1]; last.Type != "message.received" || last.Message != "Europe" || string(last.Data) != `{"by":"person:admin"}` {
		t.Errorf("the answer's event: %+v", last)
	}
	if r, _ := tc.st.GetRun(context.Background(), "r1"); r.Status.Phase != api.PhaseQueued {
		t.Errorf("after the answer the run is %s, want Queued (woken)", r.Status.Phase)
	}
	if resp := tc.get(t, context.Background(), "/runs/r1/answer", ""); resp.StatusCode == 200 {
		t.Errorf("GET answer: HTTP %d", resp.StatusCode)
	}
	resp, _ := tc.post(t, "/runs/r1/answer", "", "application/x-www-form-urlencoded", form)
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Errorf("an answer without a session: HTTP %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
}
