package console

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/auth"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/store/wake"
)

// memStore is the part of a store the run page reads, in memory. Methods it does not define
// panic (the embedded interface is nil), so a test notices the console reading something new.
type memStore struct {
	store.Store
	mu     sync.Mutex
	runs   map[string]*api.AgentRun
	events map[string][]api.Event
	files  map[string][]store.File
	wake   *wake.Waker
}

func newMemStore() *memStore {
	return &memStore{runs: map[string]*api.AgentRun{}, events: map[string][]api.Event{}, files: map[string][]store.File{}, wake: wake.New()}
}

func (m *memStore) GetRun(_ context.Context, name string) (*api.AgentRun, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[name]
	if !ok {
		return nil, fmt.Errorf("run %s: %w", name, store.ErrNotFound)
	}
	cp := *r
	return &cp, nil
}

func (m *memStore) ListEvents(_ context.Context, run string, after int64, limit int) ([]api.Event, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []api.Event
	for _, ev := range m.events[run] {
		if ev.Seq > after && (limit == 0 || len(out) < limit) {
			out = append(out, ev)
		}
	}
	return out, nil
}

func (m *memStore) ListSteps(context.Context, string) ([]api.Step, error) { return nil, nil }

func (m *memStore) ListFiles(_ context.Context, run string) ([]store.File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.files[run], nil
}

func (m *memStore) ListFileInfos(ctx context.Context, run string) ([]store.File, error) {
	files, _ := m.ListFiles(ctx, run)
	out := make([]store.File, len(files))
	for i, f := range files {
		f.Content = nil
		out[i] = f
	}
	return out, nil
}

func (m *memStore) GetFile(_ context.Context, run, p string) (store.File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, f := range m.files[run] {
		if f.Path == p {
			return f, nil
		}
	}
	return store.File{}, fmt.Errorf("file %s: %w", p, store.ErrNotFound)
}

func (m *memStore) WaitEvents(ctx context.Context, d time.Duration) { m.wake.WaitEvent(ctx, d) }

// set changes a run's status and appends events to its timeline, as a runner's commit does.
func (m *memStore) set(name string, st api.AgentRunStatus, types ...string) {
	m.mu.Lock()
	r, ok := m.runs[name]
	if !ok {
		r = &api.AgentRun{Metadata: api.ObjectMeta{Name: name}, Spec: api.AgentRunSpec{Agent: "a", Input: "hi"}}
		m.runs[name] = r
	}
	r.Status = st
	for _, t := range types {
		seq := int64(len(m.events[name]) + 1)
		m.events[name] = append(m.events[name], api.Event{Seq: seq, Time: time.Now(), Type: t, Message: "about " + t})
	}
	m.mu.Unlock()
	m.wake.Event()
}

type testConsole struct {
	*Console
	st      *memStore
	srv     *httptest.Server
	session string
}

func newTestConsole(t *testing.T) *testConsole {
	t.Helper()
	acc, err := auth.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := acc.Setup(acc.SetupCode(), "admin", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	st := newMemStore()
	c := &Console{Store: st, Accounts: acc}
	mux := http.NewServeMux()
	c.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &testConsole{Console: c, st: st, srv: srv, session: acc.NewSession("admin", time.Now())}
}

// get makes a request, signed in unless session is "".
func (tc *testConsole) get(t *testing.T, ctx context.Context, path, session string, hdr ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", tc.srv.URL+path, nil)
	if session != "" {
		req.AddCookie(&http.Cookie{Name: cookieName, Value: session})
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp
}

func (tc *testConsole) body(t *testing.T, path string) (*http.Response, string) {
	t.Helper()
	resp := tc.get(t, context.Background(), path, tc.session)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// sseEvent is one event of a stream.
type sseEvent struct{ id, event, data, comment string }

// readEvents reads events off a stream into a channel until it ends.
func readEvents(body io.Reader) <-chan sseEvent {
	ch := make(chan sseEvent, 100)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev != (sseEvent{}) {
					ch <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, ":"):
				ev.comment = strings.TrimSpace(line[1:])
			default:
				k, v, _ := strings.Cut(line, ": ")
				switch k {
				case "id":
					ev.id = v
				case "event":
					ev.event = v
				case "data":
					ev.data = v
				}
			}
		}
	}()
	return ch
}

func next(t *testing.T, ch <-chan sseEvent, event string) sseEvent {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("the stream ended before a %q event", event)
			}
			if ev.event == event || (event == "comment" && ev.comment != "") {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %q event in 5 s", event)
		}
	}
}

func TestTimelineNeedsASession(t *testing.T) {
	tc := newTestConsole(t)
	tc.st.set("r1", api.AgentRunStatus{Phase: api.PhaseRunning}, "run.created")
	for _, session := range []string{"", "forged"} {
		resp := tc.get(t, context.Background(), "/runs/r1/timeline", session)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("timeline with session %q: HTTP %d, want 401", session, resp.StatusCode)
		}
	}
}

// A live run: the stream sends the rows after Last-Event-ID, the status, each new row and status
// as the run moves, and ends with the final status once the run has finished.
func TestTimelineFollowsTheRun(t *testing.T) {
	tc := newTestConsole(t)
	tc.st.set("r1", api.AgentRunStatus{Phase: api.PhaseRunning}, "run.created", "run.started", "step.started")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := tc.get(t, ctx, "/runs/r1/timeline?after=1", tc.session, "Last-Event-ID", "2")
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("timeline: HTTP %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	ch := readEvents(resp.Body)
	if ev := next(t, ch, "timeline"); ev.id != "3" || !strings.Contains(ev.data, `"type":"step.started"`) || !strings.Contains(ev.data, `"clock":"`) {
		t.Errorf("first row after Last-Event-ID 2 = %+v", ev)
	}
	if ev := next(t, ch, "status"); ev.data != `{"phase":"Running","view":"live"}` {
		t.Errorf("status = %s", ev.data)
	}
	tc.st.set("r1", api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: api.ReasonQuestion, WaitingOn: &api.WaitingOn{Kind: "question", Question: "Which region?"}}, "run.question")
	if ev := next(t, ch, "timeline"); ev.id != "4" || !strings.Contains(ev.data, "run.question") {
		t.Errorf("row = %+v", ev)
	}
	if ev := next(t, ch, "status"); !strings.Contains(ev.data, `"reason":"Question"`) || !strings.Contains(ev.data, `"question":"Which region?"`) || !strings.Contains(ev.data, `"view":"live"`) {
		t.Errorf("status = %s", ev.data)
	}
	tc.st.set("r1", api.AgentRunStatus{Phase: api.PhaseSucceeded, Reason: "Completed", Cost: &api.RunCost{TotalUSD: "0.01"}}, "run.succeeded")
	next(t, ch, "timeline")
	if ev := next(t, ch, "status"); !strings.Contains(ev.data, `"view":"finished"`) || !strings.Contains(ev.data, `"cost":"cost $0.01"`) {
		t.Errorf("final status = %s", ev.data)
	}
	next(t, ch, "end")
	if _, ok := <-ch; ok {
		t.Errorf("the stream goes on after end")
	}
}

// An idle stream sends a comment now and then, so proxies keep it open; the server bounds how
// many streams are open at once, and a stream the browser leaves frees its slot.
func TestTimelineHeartbeatAndBound(t *testing.T) {
	tc := newTestConsole(t)
	tc.heartbeat = 100 * time.Millisecond
	tc.MaxStreams = 1
	tc.st.set("r1", api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: api.ReasonMessage, WaitingOn: &api.WaitingOn{Kind: "message"}}, "run.created")
	ctx, cancel := context.WithCancel(context.Background())
	resp := tc.get(t, ctx, "/runs/r1/timeline", tc.session)
	ch := readEvents(resp.Body)
	next(t, ch, "status")
	if ev := next(t, ch, "comment"); ev.comment != "heartbeat" {
		t.Errorf("comment = %q", ev.comment)
	}
	second := tc.get(t, context.Background(), "/runs/r1/timeline", tc.session)
	second.Body.Close()
	if second.StatusCode != http.StatusServiceUnavailable || second.Header.Get("Retry-After") == "" {
		t.Errorf("a stream over the bound: HTTP %d", second.StatusCode)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for tc.streams.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := tc.streams.Load(); n != 0 {
		t.Fatalf("%d streams still counted after the browser left", n)
	}
	third := tc.get(t, context.Background(), "/runs/r1/timeline", tc.session)
	third.Body.Close()
	if third.StatusCode != 200 {
		t.Errorf("a stream after the first ended: HTTP %d", third.StatusCode)
	}
}

func TestTimelineOfAFinishedRunEnds(t *testing.T) {
	tc := newTestConsole(t)
	tc.st.set("r1", api.AgentRunStatus{Phase: api.PhaseFailed, Reason: api.ReasonModelError}, "run.created", "run.failed")
	resp, body := tc.body(t, "/runs/r1/timeline")
	if resp.StatusCode != 200 || !strings.Contains(body, "id: 2\nevent: timeline") || !strings.HasSuffix(body, "event: end\ndata: {\"phase\":\"Failed\",\"reason\":\"ModelError\",\"view\":\"finished\"}\n\n") {
		t.Errorf("HTTP %d:\n%s", resp.StatusCode, body)
	}
	if resp, _ := tc.body(t, "/runs/nope/timeline"); resp.StatusCode != 404 {
		t.Errorf("timeline of no run: HTTP %d", resp.StatusCode)
	}
}

// The run page carries no inline script (the CSP forbids it): it loads the embedded script, names
// the last row it rendered, keeps a refresh for browsers without script, and lists the files.
func TestRunPage(t *testing.T) {
	tc := newTestConsole(t)
	tc.st.set("r1", api.AgentRunStatus{Phase: api.PhaseRunning}, "run.created", "run.started")
	tc.st.files["r1"] = []store.File{{Path: "notes/a b#1.md", Size: 2048, Content: make([]byte, 2048), UpdatedAt: time.Now()}}
	resp, page := tc.body(t, "/runs/r1")
	if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
		t.Fatalf("HTTP %d, CSP %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}
	for _, want := range []string{
		`<script src="/static/console.js?v=` + scriptVersion + `" defer></script>`,
		`<noscript><meta http-equiv="refresh" content="2"></noscript>`,
		`<tbody id="timeline" data-after="2">`,
		`data-view="live" data-streaming="true"`,
		`<a href="/runs/r1/files/notes/a%20b%231.md">notes/a b#1.md</a>`,
		`2.0 KiB`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the run page lacks %s:\n%s", want, page)
		}
	}
	if strings.Count(page, "<script") != 1 || strings.Count(page, `http-equiv="refresh"`) != strings.Count(page, `<noscript><meta http-equiv="refresh"`) {
		t.Errorf("the run page has inline script or a refresh outside <noscript>:\n%s", page)
	}
	tc.st.set("r1", api.AgentRunStatus{Phase: api.PhaseSucceeded, Answer: &api.Answer{Preview: "done"}})
	_, page = tc.body(t, "/runs/r1")
	if strings.Contains(page, "refresh") || !strings.Contains(page, `data-view="finished" data-streaming="false"`) {
		t.Errorf("a finished run's page:\n%s", page)
	}
	resp, js := tc.body(t, "/static/console.js?v="+scriptVersion)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") || !strings.Contains(js, "new EventSource(") ||
		!strings.Contains(resp.Header.Get("Cache-Control"), "immutable") {
		t.Errorf("console.js: HTTP %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"))
	}
}

var png = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")

func TestRunFiles(t *testing.T) {
	tc := newTestConsole(t)
	tc.st.set("r1", api.AgentRunStatus{Phase: api.PhaseSucceeded})
	now := time.Now()
	tc.st.files["r1"] = []store.File{
		{Path: "region.md", Content: []byte("# Europe\n"), UpdatedAt: now},
		{Path: "page.html", Content: []byte("<script>alert(1)</script>"), UpdatedAt: now},
		{Path: "shots/1.png", Content: png, UpdatedAt: now},
		{Path: "logo.svg", Content: []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`), UpdatedAt: now},
		{Path: "data.bin", Content: []byte{0, 1, 2, 0xff}, UpdatedAt: now},
	}
	for _, c := range []struct {
		path, ctype, disposition, body string
	}{
		{"region.md", "text/plain; charset=utf-8", "", "# Europe\n"},
		{"page.html", "text/plain; charset=utf-8", "", "<script>alert(1)</script>"},
		{"logo.svg", "text/plain; charset=utf-8", "", ""},
		{"shots/1.png", "image/png", "", string(png)},
		{"data.bin", "application/octet-stream", `attachment; filename=data.bin`, "\x00\x01\x02\xff"},
	} {
		resp, body := tc.body(t, "/runs/r1/files/"+c.path)
		h := resp.Header
		if resp.StatusCode != 200 || h.Get("Content-Type") != c.ctype || h.Get("Content-Disposition") != c.disposition ||
			h.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(h.Get("Content-Security-Policy"), "sandbox") || (c.body != "" && body != c.body) {
			t.Errorf("%s: HTTP %d %q %q %q %q", c.path, resp.StatusCode, h.Get("Content-Type"), h.Get("Content-Disposition"), h.Get("Content-Security-Policy"), body)
		}
	}
	for _, c := range []struct {
		path string
		want int
	}{
		{"missing.md", 404},
		{"%2e%2e/%2e%2e/etc/passwd", 400},
		{"..%2Fregion.md", 400},
		{"%2Fetc%2Fpasswd", 400},
		{"C:%5Cwindows", 400},
	} {
		resp, body := tc.body(t, "/runs/r1/files/"+c.path)
		if resp.StatusCode != c.want || !strings.Contains(body, `<a href="/runs/r1">Back to r1</a>`) || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: HTTP %d, want %d:\n%s", c.path, resp.StatusCode, c.want, body)
		}
	}
	if resp, body := tc.body(t, "/runs/nope/files/a.md"); resp.StatusCode != 404 || !strings.Contains(body, "There is no run nope.") {
		t.Errorf("a file of no run: HTTP %d:\n%s", resp.StatusCode, body)
	}
	resp := tc.get(t, context.Background(), "/runs/r1/files/region.md", "")
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Errorf("a file without a session: HTTP %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}
