package console

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"github.com/chromedp/chromedp"
)

// slowQuickstartScript is the quickstart's script with a slow second model turn, so that the run
// stays Running for a while after the person answers.
var slowQuickstartScript = strings.Replace(QuickstartScript, "      - tool_calls:\n          - name: write",
	"      - latency: 3s\n        tool_calls:\n          - name: write", 1)

const notesAgent = `{"definition": {"id": "notes", "tools": ["write", "ask_person"]}}`

// startNotesRun starts the quickstart's run and waits until it asks its question.
func startNotesRun(e *Env) string {
	e.T.Helper()
	if st := e.Do("POST", "/v2/agents", notesAgent, nil); st != 201 {
		e.T.Fatalf("create agent: HTTP %d", st)
	}
	var run api.AgentRun
	e.Do("POST", "/v2/agents/notes/runs", `{"input": {"content": "Ask me which region to cover, then write region.md about it."}}`, &run)
	e.WaitPhase(run.Metadata.Name, 10*time.Second, api.PhaseWaiting)
	return run.Metadata.Name
}

// pageState is what the tests read off an open run page.
const pageState = `({
	marker: window.__marker === true,
	phase: document.getElementById('phase').textContent,
	waiting: document.getElementById('waiting').hidden ? '' : document.getElementById('waiting').textContent,
	live: document.getElementById('live').textContent,
	rows: Array.from(document.querySelectorAll('#timeline tr')).map(tr => tr.children[1].textContent),
	note: document.getElementById('reload-note').hidden ? '' : document.getElementById('reload-note').textContent,
	answer: document.getElementById('answer') ? document.getElementById('answer').textContent : '',
	navigation: performance.getEntriesByType('navigation')[0].type,
	ready: document.readyState === 'complete',
})`

type pageView struct {
	Marker     bool      `json:"marker"`
	Phase      api.Phase `json:"phase"`
	Waiting    string    `json:"waiting"`
	Live       string    `json:"live"`
	Rows       []string  `json:"rows"`
	Note       string    `json:"note"`
	Answer     string    `json:"answer"`
	Navigation string    `json:"navigation"`
	Ready      bool      `json:"ready"`
}

// waitPage polls the open page until cond holds for what it shows, or fails the test.
func waitPage(t *testing.T, ctx context.Context, what string, d time.Duration, cond func(pageView) bool) pageView {
	t.Helper()
	deadline := time.Now().Add(d)
	var v pageView
	var err error
	for time.Now().Before(deadline) {
		v, err = chromedp.Run(ctx, chromedp.Evaluate[pageView](pageState))
		// A page still loading (just reloaded) has only its first part: look at it once whole.
		if err == nil && v.Ready && cond(v) {
			return v
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the run page never showed %s: %+v (%v)", what, v, err)
	return v
}

// The run page follows the run as it happens: a person opens it while the run waits on their
// answer; once answered, the new timeline rows and the phase appear on the open page without a
// reload; when the run finishes the page reloads once to show the answer and the files, and a
// file's link serves what the run wrote.
func TestConsoleLiveTimeline(t *testing.T) {
	t.Parallel()
	ctx := NewBrowser(t, 90*time.Second)
	e := NewEnv(t, slowQuickstartScript)
	e.Start()
	name := startNotesRun(e)
	if err := SignInBrowser(ctx, e.URL+"/runs/"+name, e.SetupCode(), `#timeline`); err != nil {
		t.Fatalf("sign in: %v", err)
	}
	v := waitPage(t, ctx, "the live state of a run waiting on a question", 10*time.Second, func(v pageView) bool {
		return v.Live == "live — waiting on question"
	})
	if !strings.Contains(v.Waiting, "Which region should I cover?") || v.Phase != api.PhaseWaiting {
		t.Errorf("the page before the answer: %+v", v)
	}
	before := len(v.Rows)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__marker = true`)); err != nil {
		t.Fatal(err)
	}
	e.Do("POST", "/v2/agentruns/"+name+"/messages", `{"payload": "Europe"}`, nil)
	v = waitPage(t, ctx, "the answer's row and the Running phase, live", 3*time.Second, func(v pageView) bool {
		return v.Phase == api.PhaseRunning && Contains(v.Rows, "message.received")
	})
	if !v.Marker || v.Navigation == "reload" {
		t.Errorf("the page reloaded to show the new rows: %+v", v)
	}
	if v.Waiting != "" || v.Live != "live — running" || len(v.Rows) <= before {
		t.Errorf("the page while the run goes on: %+v", v)
	}
	if r := e.GetRun(name); r.Status.Phase != api.PhaseRunning {
		t.Fatalf("the run is %s already: the check above did not see it Running live", r.Status.Phase)
	}
	// Finished: the page reloads once, by itself, and shows the answer.
	v = waitPage(t, ctx, "the finished run after one reload", 20*time.Second, func(v pageView) bool {
		return !v.Marker && v.Answer != "" && v.Live != ""
	})
	if v.Navigation != "reload" || v.Phase != api.PhaseSucceeded || v.Live != "ended" || !Contains(v.Rows, "run.succeeded") ||
		!strings.Contains(v.Answer, "I wrote region.md") {
		t.Errorf("the finished run's page: %+v", v)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__marker = true`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if v = waitPage(t, ctx, "the page", time.Second, func(pageView) bool { return true }); !v.Marker {
		t.Errorf("the finished run's page reloaded again")
	}
	// The files the run wrote, each linked to what was saved.
	link := chromedp.CSS(`a[href="/runs/` + name + `/files/region.md"]`)
	row, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#files`)))
	if err != nil || !strings.Contains(row, "region.md") || !strings.Contains(row, "30 B") {
		t.Errorf("the files list: %q (%v)", row, err)
	}
	var file string
	err = chromedp.Do(ctx, chromedp.Click(link), chromedp.WaitVisible(chromedp.CSS(`pre`)))
	if err == nil {
		file, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`body`)))
	}
	if err != nil || file != "# Europe\n\nNotes about Europe.\n" {
		t.Errorf("region.md from the console: %q (%v)", file, err)
	}
}

// A page never reloads while a person writes an approval's reason: the run moving on (here,
// cancelled) shows live, with a note offering the reload.
func TestConsoleLiveKeepsAReasonBeingWritten(t *testing.T) {
	t.Parallel()
	ctx := NewBrowser(t, 60*time.Second)
	e := NewEnv(t, ApprovalsScript)
	e.Start()
	if st := e.Do("PUT", "/v2/agents/careful", ApprovalsAgent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"c10"},"spec":{"agent":"careful","input":"Count carefully: ten"}}`, nil)
	e.WaitPhase("c10", 10*time.Second, api.PhaseWaiting)
	if err := SignInBrowser(ctx, e.URL+"/runs/c10", e.SetupCode(), `input[name=reason]`); err != nil {
		t.Fatalf("sign in: %v", err)
	}
	waitPage(t, ctx, "the live state of a run waiting on approval", 10*time.Second, func(v pageView) bool {
		return v.Live == "live — waiting on approval"
	})
	err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`window.__marker = true`), chromedp.SendKeys(chromedp.CSS(`input[name=reason]`), "still thinking"))
	if err != nil {
		t.Fatal(err)
	}
	if st := e.Do("POST", "/v2/agentruns/c10/cancel", nil, nil); st != 200 {
		t.Fatalf("cancel: HTTP %d", st)
	}
	v := waitPage(t, ctx, "the cancelled run, live, with a note", 10*time.Second, func(v pageView) bool {
		return v.Phase == api.PhaseCancelled && v.Note != ""
	})
	if !v.Marker || !strings.Contains(v.Note, "The run is now Cancelled") {
		t.Errorf("the page while a reason is written: %+v", v)
	}
	time.Sleep(2500 * time.Millisecond) // longer than the script's recheck
	reason, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`input[name=reason]`)))
	if v = waitPage(t, ctx, "the page", time.Second, func(pageView) bool { return true }); !v.Marker || reason != "still thinking" || err != nil {
		t.Errorf("the page reloaded under a reason being written (reason %q, %v): %+v", reason, err, v)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#reload-note button`))); err != nil {
		t.Fatal(err)
	}
	v = waitPage(t, ctx, "the page reloaded on request", 10*time.Second, func(v pageView) bool { return !v.Marker && v.Live == "ended" })
	if v.Phase != api.PhaseCancelled {
		t.Errorf("after the reload: %+v", v)
	}
}

// The console's timeline stream, over plain HTTP: it needs a person's session, resumes after
// Last-Event-ID, sends the status as it changes and ends with the run. The run's files are
// served behind the same session.
func TestConsoleTimelineStream(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, QuickstartScript)
	e.Start()
	name := startNotesRun(e)
	session := &http.Cookie{Name: "agentrun_session", Value: e.PersonSession()}
	get := func(path string, ck *http.Cookie, hdr ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", e.URL+path, nil)
		if ck != nil {
			req.AddCookie(ck)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		c := HTTPNoRedirectClient()
		c.Timeout = 30 * time.Second
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return resp
	}
	for _, ck := range []*http.Cookie{nil, {Name: "agentrun_session", Value: e.Token}} {
		resp := get("/runs/"+name+"/timeline", ck)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("the timeline without a person's session (%v): HTTP %d", ck, resp.StatusCode)
		}
	}
	resp := get("/runs/"+name+"/timeline", session, "Last-Event-ID", "2")
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("timeline: HTTP %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	type event struct {
		id    int64
		event string
		data  map[string]any
	}
	var events []event
	rd := bufio.NewReader(resp.Body)
	var cur event
	answered := false
	for {
		line, err := rd.ReadString('\n')
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("read the stream: %v", err)
		}
		line = strings.TrimSuffix(line, "\n")
		k, val, _ := strings.Cut(line, ": ")
		switch {
		case line == "" && cur.event != "":
			events = append(events, cur)
			if cur.event == "status" && !answered {
				// The person answers while the page follows the run.
				answered = true
				e.Do("POST", "/v2/agentruns/"+name+"/messages", `{"payload": "Africa"}`, nil)
			}
			cur = event{}
		case k == "id":
			cur.id, _ = strconv.ParseInt(val, 10, 64)
		case k == "event":
			cur.event = val
		case k == "data":
			json.Unmarshal([]byte(val), &cur.data)
		}
	}
	var ids []int64
	var types, statuses []string
	for _, ev := range events {
		switch ev.event {
		case "timeline":
			ids = append(ids, ev.id)
			types = append(types, ev.data["type"].(string))
		case "status":
			statuses = append(statuses, ev.data["phase"].(string)+"/"+ev.data["view"].(string))
		}
	}
	if len(ids) == 0 || ids[0] != 3 {
		t.Fatalf("the stream after Last-Event-ID 2 starts at %v", ids)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] != ids[i-1]+1 {
			t.Errorf("event ids are not consecutive: %v", ids)
			break
		}
	}
	if !Contains(types, "message.received") || types[len(types)-1] != "run.succeeded" {
		t.Errorf("timeline rows: %v", types)
	}
	if len(statuses) < 2 || statuses[0] != "Waiting/live" || statuses[len(statuses)-1] != "Succeeded/finished" {
		t.Errorf("statuses: %v", statuses)
	}
	if last := events[len(events)-1]; last.event != "end" || last.data["phase"] != string(api.PhaseSucceeded) {
		t.Errorf("the stream ends with %+v", last)
	}
	// The files: listed on the run page and served from the store.
	resp = get("/runs/"+name, session)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), `<a href="/runs/`+name+`/files/region.md">region.md</a>`) {
		t.Errorf("the run page does not list region.md:\n%s", page)
	}
	resp = get("/runs/"+name+"/files/region.md", session)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "# Africa\n\nNotes about Africa.\n" || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" ||
		resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("region.md: HTTP %d %q %v", resp.StatusCode, body, resp.Header)
	}
	for path, want := range map[string]int{"missing.md": 404, "..%2F..%2Fserver.json": 400, "%2Fetc%2Fpasswd": 400} {
		resp = get("/runs/"+name+"/files/"+path, session)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || !strings.Contains(string(body), "Back to "+name) {
			t.Errorf("%s: HTTP %d, want %d:\n%s", path, resp.StatusCode, want, body)
		}
	}
	resp = get("/runs/"+name+"/files/region.md", nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a file without a session: HTTP %d", resp.StatusCode)
	}
}
