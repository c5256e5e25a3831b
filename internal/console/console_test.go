package console

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/auth"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/store/sqlite"
)

// newStore opens the real SQLite store on a file of the test's own, with the agent "a" the runs
// belong to.
func newStore(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "agentrun.db"))
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	a := &api.Agent{
		TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Agent"},
		Metadata: api.ObjectMeta{Name: "a"},
		Spec: api.AgentSpec{Model: api.ModelSpec{Access: "Server", Provider: "anthropic", Name: "claude-test"}, Harness: "builtin",
			MaxTokens: api.DefaultMaxTokens, MaxToolCalls: api.DefaultMaxToolCalls, PerRunMaxCostUSD: api.DefaultPerRunMaxCostUSD},
	}
	if err := st.CreateAgent(context.Background(), a); err != nil {
		t.Fatalf("CreateAgent: %v", err)
	}
	return st
}

// events are timeline events of the given types, as a drive emits them.
func events(types ...api.EventType) []api.Event {
	out := make([]api.Event, len(types))
	for i, typ := range types {
		out[i] = api.Event{Time: time.Now(), Type: typ, Message: "about " + string(typ)}
	}
	return out
}

// createRun creates a queued run of agent "a" as the server does: the run, then its
// run.created event (seq 1).
func (tc *testConsole) createRun(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	r := &api.AgentRun{
		TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "AgentRun"},
		Metadata: api.ObjectMeta{Name: name},
		Spec:     api.AgentRunSpec{Agent: "a", Input: "hi"},
		Status:   api.AgentRunStatus{Phase: api.PhaseQueued, AgentRevision: 1},
	}
	if err := tc.st.CreateRun(ctx, r); err != nil {
		t.Fatalf("CreateRun(%s): %v", name, err)
	}
	if err := tc.st.AppendEvents(ctx, name, events("run.created")); err != nil {
		t.Fatalf("AppendEvents(%s): %v", name, err)
	}
}

// claim takes the run's lease, as a runner does before it drives the run (the run named must
// be the one claimable run of the test's store).
func (tc *testConsole) claim(t *testing.T, name string) store.Lease {
	t.Helper()
	leases, err := tc.st.ClaimRuns(context.Background(), "runner-1", 10, time.Minute)
	if err != nil {
		t.Fatalf("ClaimRuns: %v", err)
	}
	if len(leases) != 1 || leases[0].Run != name {
		t.Fatalf("ClaimRuns claimed %+v, want run %s", leases, name)
	}
	return leases[0]
}

// commit writes w under the lease, as a drive's journal does: status, events and files in one
// fenced transaction.
func (tc *testConsole) commit(t *testing.T, l store.Lease, w store.Write) {
	t.Helper()
	if _, err := tc.st.Commit(context.Background(), l, w); err != nil {
		t.Fatalf("Commit(%s): %v", l.Run, err)
	}
}

// running creates run name and has a runner claim it and commit Running with the events given
// (after run.created): the run is live, its lease held.
func (tc *testConsole) running(t *testing.T, name string, types ...api.EventType) store.Lease {
	t.Helper()
	tc.createRun(t, name)
	l := tc.claim(t, name)
	tc.commit(t, l, store.Write{Status: &api.AgentRunStatus{Phase: api.PhaseRunning, AgentRevision: 1}, Events: events(types...)})
	return l
}

type testConsole struct {
	*Console
	st      store.Store
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
	st := newStore(t)
	c := &Console{Store: st, Accounts: acc}
	mux := http.NewServeMux()
	c.Register(mux)
	// Registered after the store's cleanup, so it runs first: no stream reads a closed store.
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &testConsole{Console: c, st: st, srv: srv, session: acc.NewSession("admin", time.Now())}
}

// get makes a request, signed in unless session is "".
func (tc *testConsole) get(t *testing.T, ctx context.Context, path, session string, hdr ...string) *http.Response {
	t.Helper()
	return tc.do(t, ctx, "GET", path, session, nil, hdr...)
}

// do sends a request with the given headers (name, value, ...), signed in unless session is "",
// and does not follow redirects.
func (tc *testConsole) do(t *testing.T, ctx context.Context, method, path, session string, body io.Reader, hdr ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, method, tc.srv.URL+path, body)
	if session != "" {
		req.AddCookie(&http.Cookie{Name: cookieName, Value: session})
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
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

// take returns the next n events of the stream (comments aside), in the order they came.
func take(t *testing.T, ch <-chan sseEvent, n int) []sseEvent {
	t.Helper()
	var out []sseEvent
	timeout := time.After(5 * time.Second)
	for len(out) < n {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("the stream ended after %d of %d events: %+v", len(out), n, out)
			}
			if ev.event != "" {
				out = append(out, ev)
			}
		case <-timeout:
			t.Fatalf("%d of %d events in 5 s: %+v", len(out), n, out)
		}
	}
	return out
}

func TestTimelineNeedsASession(t *testing.T) {
	t.Parallel()
	tc := newTestConsole(t)
	tc.running(t, "r1")
	for _, session := range []string{"", "forged"} {
		resp := tc.get(t, context.Background(), "/runs/r1/timeline", session)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("timeline with session %q: HTTP %d, want 401", session, resp.StatusCode)
		}
	}
}

// A live run: the stream sends the rows after Last-Event-ID, the status, each new row and status
// as the run moves (it asks a question and parks, the answer requeues it, a runner resumes it),
// and ends with the final status once the run has finished.
func TestTimelineFollowsTheRun(t *testing.T) {
	t.Parallel()
	tc := newTestConsole(t)
	l := tc.running(t, "r1", "run.started", "step.started")
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
	if ev := next(t, ch, "status"); noPill(ev.data) != `{"phase":"Running","view":"live"}` {
		t.Errorf("status = %s", ev.data)
	}

	// The agent asks a question: the drive parks the run (Waiting, and gives the lease up).
	tc.commit(t, l, store.Write{Status: &api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: api.ReasonQuestion, AgentRevision: 1,
		WaitingOn: &api.WaitingOn{Kind: "question", StepKey: "t0/tool/0", Question: "Which region?"}}, Events: events("run.question"), Release: true})
	if ev := next(t, ch, "timeline"); ev.id != "4" || !strings.Contains(ev.data, "run.question") {
		t.Errorf("row = %+v", ev)
	}
	if ev := next(t, ch, "status"); !strings.Contains(ev.data, `"reason":"Question"`) || !strings.Contains(ev.data, `"question":"Which region?"`) || !strings.Contains(ev.data, `"view":"live"`) {
		t.Errorf("status = %s", ev.data)
	}

	// The person answers as the server takes it: the message requeues the parked run, then the
	// timeline notes it (two transactions, so the stream may send the status or the row first).
	if _, _, err := tc.st.AddMessage(context.Background(), "r1", "", "Europe"); err != nil {
		t.Fatalf("AddMessage: %v", err)
	}
	if err := tc.st.AppendEvents(context.Background(), "r1", events("message.received")); err != nil {
		t.Fatalf("AppendEvents: %v", err)
	}
	var row, status sseEvent
	for _, ev := range take(t, ch, 2) {
		switch ev.event {
		case "timeline":
			row = ev
		case "status":
			status = ev
		}
	}
	if row.id != "5" || !strings.Contains(row.data, "message.received") {
		t.Errorf("row = %+v", row)
	}
	if !strings.Contains(status.data, `"phase":"Queued"`) || strings.Contains(status.data, "waitingOn") || !strings.Contains(status.data, `"view":"live"`) {
		t.Errorf("status after the answer = %s", status.data)
	}

	// A runner claims the run again and resumes it.
	l = tc.claim(t, "r1")
	tc.commit(t, l, store.Write{Status: &api.AgentRunStatus{Phase: api.PhaseRunning, AgentRevision: 1}, Events: events("run.resumed")})
	if ev := next(t, ch, "timeline"); ev.id != "6" || !strings.Contains(ev.data, "run.resumed") {
		t.Errorf("row = %+v", ev)
	}
	if ev := next(t, ch, "status"); noPill(ev.data) != `{"phase":"Running","view":"live"}` {
		t.Errorf("status = %s", ev.data)
	}

	// It finishes: the final status, then end.
	tc.commit(t, l, store.Write{Status: &api.AgentRunStatus{Phase: api.PhaseSucceeded, Reason: "Completed", AgentRevision: 1, Cost: &api.RunCost{TotalUSD: "0.01"}},
		Events: events("run.succeeded"), Release: true})
	if ev := next(t, ch, "timeline"); ev.id != "7" || !strings.Contains(ev.data, "run.succeeded") {
		t.Errorf("row = %+v", ev)
	}
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
	t.Parallel()
	tc := newTestConsole(t)
	tc.heartbeat = 100 * time.Millisecond
	tc.MaxStreams = 1
	// A keep-alive run between turns: parked, waiting on a message.
	tc.createRun(t, "r1")
	tc.commit(t, tc.claim(t, "r1"), store.Write{Status: &api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: api.ReasonMessage, AgentRevision: 1,
		WaitingOn: &api.WaitingOn{Kind: "message"}}, Release: true})
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
	t.Parallel()
	tc := newTestConsole(t)
	tc.createRun(t, "r1")
	tc.commit(t, tc.claim(t, "r1"), store.Write{Status: &api.AgentRunStatus{Phase: api.PhaseFailed, Reason: api.ReasonModelError, AgentRevision: 1},
		Events: events("run.failed"), Release: true})
	resp, body := tc.body(t, "/runs/r1/timeline")
	if resp.StatusCode != 200 || !strings.Contains(body, "id: 2\nevent: timeline") || !strings.Contains(body, "event: end\ndata: {\"phase\":\"Failed\",\"reason\":\"ModelError\",\"pill\":") || !strings.HasSuffix(body, ",\"view\":\"finished\"}\n\n") {
		t.Errorf("HTTP %d:\n%s", resp.StatusCode, body)
	}
	if resp, _ := tc.body(t, "/runs/nope/timeline"); resp.StatusCode != 404 {
		t.Errorf("timeline of no run: HTTP %d", resp.StatusCode)
	}
}

// The run page carries no inline script (the CSP forbids it): it loads the embedded script, names
// the last row it rendered, keeps a refresh for browsers without script, and lists the files.
func TestRunPage(t *testing.T) {
	t.Parallel()
	tc := newTestConsole(t)
	tc.createRun(t, "r1")
	l := tc.claim(t, "r1")
	tc.commit(t, l, store.Write{Status: &api.AgentRunStatus{Phase: api.PhaseRunning, AgentRevision: 1}, Events: events("run.started"),
		Files: []store.FileWrite{{Path: "notes/a b#1.md", Content: make([]byte, 2048), Mode: 0o644}}})
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
	if strings.Count(page, "<script") != strings.Count(page, `<script src="/static/`) || strings.Count(page, `http-equiv="refresh"`) != strings.Count(page, `<noscript><meta http-equiv="refresh"`) {
		t.Errorf("the run page has inline script or a refresh outside <noscript>:\n%s", page)
	}
	// A message the run has not read yet shows as queued, with its ifBusy; once a step reads it,
	// it does not.
	if _, _, err := tc.st.AddMessageIfBusy(context.Background(), "r1", "", "and the summary", api.IfBusyEnqueue); err != nil {
		t.Fatal(err)
	}
	if _, page = tc.body(t, "/runs/r1"); !strings.Contains(page, `<table id="queued" class="table">`) || !strings.Contains(page, "<td>enqueue</td><td>and the summary</td>") {
		t.Errorf("the run page does not show the queued message:\n%s", page)
	}
	read := api.Step{Key: "m0", Kind: "message", State: api.StepStarted, Attempt: 1, StartedAt: time.Now()}
	tc.commit(t, l, store.Write{Steps: []api.Step{read}})
	read.State, read.Result = api.StepCompleted, json.RawMessage(`{"seq":1,"payload":"and the summary"}`)
	tc.commit(t, l, store.Write{Steps: []api.Step{read}})
	if _, page = tc.body(t, "/runs/r1"); strings.Contains(page, `<table id="queued" class="table">`) {
		t.Errorf("a message the run read still shows as queued")
	}
	turns := []api.Turn{{Index: 1, Model: "claude-test", CostUSD: "0.012"}, {Index: 2, Model: "claude-test", CostUSD: "unknown"}, {Index: 3, Model: "claude-test", CostUSD: "at least 0.002"}}
	tc.commit(t, l, store.Write{Status: &api.AgentRunStatus{Phase: api.PhaseSucceeded, AgentRevision: 1, Answer: &api.Answer{Preview: "done"}, Turns: turns}, Release: true})
	_, page = tc.body(t, "/runs/r1")
	if strings.Contains(page, "refresh") || !strings.Contains(page, `data-view="finished" data-streaming="false"`) {
		t.Errorf("a finished run's page:\n%s", page)
	}
	// The Turns table shows money as everywhere else: dollars, "unknown", "at least $".
	for _, want := range []string{">$0.012</span></td></tr>", ">unknown</span></td></tr>", ">at least $0.002</span></td></tr>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the Turns table lacks %s:\n%s", want, page)
		}
	}
	resp, js := tc.body(t, "/static/console.js?v="+scriptVersion)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") || !strings.Contains(js, "new EventSource(") ||
		!strings.Contains(resp.Header.Get("Cache-Control"), "immutable") {
		t.Errorf("console.js: HTTP %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"))
	}
}

var png = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89")

func TestRunFiles(t *testing.T) {
	t.Parallel()
	tc := newTestConsole(t)
	tc.createRun(t, "r1")
	tc.commit(t, tc.claim(t, "r1"), store.Write{Status: &api.AgentRunStatus{Phase: api.PhaseSucceeded, AgentRevision: 1}, Release: true,
		Files: []store.FileWrite{
			{Path: "region.md", Content: []byte("# Europe\n"), Mode: 0o644},
			{Path: "page.html", Content: []byte("<script>alert(1)</script>"), Mode: 0o644},
			{Path: "shots/1.png", Content: png, Mode: 0o644},
			{Path: "logo.svg", Content: []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`), Mode: 0o644},
			{Path: "data.bin", Content: []byte{0, 1, 2, 0xff}, Mode: 0o644},
		}})
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

// Mission Control lists the runners: live ones with the runs they hold, a gone one (no heartbeat
// for a lease's length) with what it held at its last heartbeat, and names the server's own.
func TestMissionRunners(t *testing.T) {
	t.Parallel()
	tc := newTestConsole(t)
	tc.Runner = "local"
	ctx := context.Background()
	for _, ri := range []store.RunnerInfo{
		{Name: "local", Version: "v1", Host: "h0", PID: 10, StartedAt: time.Now(), RunsHeld: 2},
		{Name: "r-east", Version: "v1", Host: "h1", PID: 11, StartedAt: time.Now(), RunsHeld: 4},
	} {
		if err := tc.st.Heartbeat(ctx, ri); err != nil {
			t.Fatal(err)
		}
	}
	_, page := tc.body(t, "/")
	for _, want := range []string{`<table id="runners"`, `<td>local (in this server)</td><td class="phase"><span class="pill tone-ok" data-phase="live">`,
		`<td>r-east</td><td class="phase"><span class="pill tone-ok" data-phase="live">`, `<td class="num">4</td><td>v1</td><td>h1/11</td>`} {
		if !strings.Contains(page, want) {
			t.Errorf("Mission Control lacks %s:\n%s", want, page)
		}
	}
	if strings.Contains(page, "gone") {
		t.Errorf("a runner that just sent its heartbeat is shown gone:\n%s", page)
	}
}

// noPill is a status event's data without its pill (the page's HTML for the phase).
func noPill(data string) string {
	return regexp.MustCompile(`,"pill":"(?:[^"\\]|\\.)*"`).ReplaceAllString(data, "")
}
