package console

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// slowText is what the slow model writes: 16 characters a piece, a piece every 400 ms (about
// 15 s, so that a page opened on a busy machine still sees the call streaming).
const slowText = "The tide comes in twice a day. The moon pulls the sea; the sea leans toward it. " +
	"Sailors learned the pattern long before anyone could explain it, and harbours were built around its clock. " +
	"Spring tides come with the new and the full moon, when the sun and the moon pull together; " +
	"neap tides come in between, when they pull at right angles and the sea barely stirs."

var slowScript = `
entries:
  - name: slow
    match: "Explain the tides"
    turns:
      - latency: 500ms
        stream_delay: 400ms
        text: "` + slowText + `"
`

// The run page shows the model's text as the call streams: a person watching sees part of the
// answer (a proper start of it, in the entry of the model call still running) before the call
// ends, and the whole answer, from the journal, once it has.
func TestRunPageStreamsTheModelsText(t *testing.T) {
	t.Parallel()
	ctx := NewBrowser(t, 120*time.Second)
	viewport(t, ctx)
	e := NewEnv(t, slowScript)
	e.Start()
	watchTheTextStream(t, ctx, e, true)
}

// The same with the run on a remote runner (`agentrun runner` on PostgreSQL beside a
// `serve --no-runner`): the text reaches the server's page over the store's notifications.
func TestRunPageStreamsFromARemoteRunner(t *testing.T) {
	t.Parallel()
	c := NewCluster(t, slowScript)
	ctx := NewBrowser(t, 120*time.Second)
	viewport(t, ctx)
	c.StartServer()
	c.StartRunner("far")
	name := watchTheTextStream(t, ctx, c.Env, false)
	if r := c.GetRun(name); r.Status.Runner != "far" {
		t.Errorf("the run was driven by %q, want the remote runner far", r.Status.Runner)
	}
}

// watchTheTextStream starts a run of the slow model with the run page open and checks that the
// page shows its text growing before the call ends, then the journal's whole text.
func watchTheTextStream(t *testing.T, ctx context.Context, e *Env, shots bool) string {
	t.Helper()
	if st := e.Do("POST", "/v2/agents", `{"definition": {"id": "tides", "tools": []}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	// Signed in first, so the page is open while the call streams.
	if err := SignInBrowser(ctx, e.URL+"/runs", e.SetupCode(), `h1`); err != nil {
		t.Fatalf("sign in: %v", err)
	}
	var run api.AgentRun
	e.Do("POST", "/v2/agents/tides/runs", `{"input": {"content": "Explain the tides."}}`, &run)
	name := run.Metadata.Name
	if err := chromedp.Do(ctx, chromedp.Navigate(e.URL+"/runs/"+name), chromedp.WaitVisible(chromedp.CSS(`#transcript`))); err != nil {
		t.Fatal(err)
	}
	type live struct {
		Text   string `json:"text"`
		Live   bool   `json:"live"`
		Status string `json:"status"`
	}
	const read = `(() => {
		const el = document.querySelector('[data-live-step="t0/model"]');
		const busy = el && el.parentNode.querySelector('.tx-streaming');
		return {text: el ? el.textContent : '', live: !!el, status: busy ? busy.textContent : ''};
	})()`
	var partial live
	var seen []string
	for deadline := time.Now().Add(45 * time.Second); time.Now().Before(deadline); time.Sleep(40 * time.Millisecond) {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[live](read))
		if err != nil {
			t.Fatal(err)
		}
		if v.Live && v.Text != "" && (len(seen) == 0 || v.Text != seen[len(seen)-1]) {
			seen = append(seen, v.Text)
		}
		// Part of the text while the call is still writing (once it is finishing, the relayed
		// text may stop short of the end until the journal's answer replaces it, checked below).
		if v.Live && len(v.Text) > 0 && len(v.Text) < len(slowText) && v.Status == "writing…" {
			partial = v
		}
		if partial.Text != "" && len(seen) >= 3 {
			break
		}
	}
	if partial.Text != "" && shots {
		shot(t, ctx, "run-streaming")
	}
	if partial.Text == "" {
		html, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('transcript-part').innerHTML + ' LIVE=' + document.getElementById('live').textContent`))
		t.Logf("the transcript: %s", html)
	}
	if partial.Text == "" || !strings.HasPrefix(slowText, partial.Text) || partial.Status != "writing…" {
		t.Fatalf("the page never showed part of the text while the call ran: %+v (texts seen: %q)", partial, seen)
	}
	for i := 1; i < len(seen); i++ {
		if !strings.HasPrefix(seen[i], seen[i-1]) {
			t.Errorf("the live text did not grow: %q then %q", seen[i-1], seen[i])
		}
	}
	r := e.WaitPhase(name, 45*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("the run ended %s: %s", r.Status.Phase, r.Status.Message)
	}
	// Finished: the page shows the journal's text, whole, in the model call's entry.
	var final string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		final, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
			const li = document.querySelector('li.tx-model[data-step="t0/model"]');
			return li && !li.querySelector('[data-live-step]') ? li.querySelector('.tx-text').textContent : '';
		})()`))
		if final == slowText {
			break
		}
	}
	if final != slowText {
		t.Errorf("the finished run's transcript shows %q, want the whole text", final)
	}
	if shots {
		// The page has reloaded once, finished; it stays still for the checks.
		time.Sleep(time.Second)
		CheckA11y(t, ctx, "the run page of a finished run")
	}
	return name
}

// A link to a step (#step-KEY, the keys `agentrun runs steps` lists) lands on that step: its row
// is scrolled into view, highlighted and focused; its JSON view shows the step as stored.
func TestRunPageDeepLinkAndJSON(t *testing.T) {
	t.Parallel()
	ctx := NewBrowser(t, 60*time.Second)
	viewport(t, ctx)
	e := NewEnv(t, QuickstartScript)
	e.Start()
	name := startNotesRun(e)
	e.Do("POST", "/v2/agentruns/"+name+"/messages", `{"payload": "Europe"}`, nil)
	e.WaitPhase(name, 20*time.Second, api.PhaseSucceeded)
	keys := e.MustCLI(0, "runs", "steps", name).Stdout
	if !strings.Contains(keys, "t1/tool/0") {
		t.Fatalf("agentrun runs steps lists no t1/tool/0:\n%s", keys)
	}
	if err := SignInBrowser(ctx, e.URL+"/runs/"+name, e.SetupCode(), `#steps`); err != nil {
		t.Fatalf("sign in: %v", err)
	}
	// The link as a person would follow it from elsewhere (a chat, a ticket).
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(e.URL+"/runs/"+name+"#step-t1/tool/0"), chromedp.WaitVisible(chromedp.CSS(`#steps`))); err != nil {
		t.Fatal(err)
	}
	type landing struct {
		Target  bool   `json:"target"`
		Focused string `json:"focused"`
		InView  bool   `json:"inView"`
		ScrollY int    `json:"scrollY"`
	}
	const look = `(() => {
		const row = document.getElementById('step-t1/tool/0');
		const r = row.getBoundingClientRect();
		return {target: row.classList.contains('step-target'), focused: document.activeElement ? document.activeElement.id : '',
			inView: r.top >= -2 && r.bottom <= window.innerHeight + 2, scrollY: Math.round(window.scrollY)};
	})()`
	var v landing
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		v, _ = chromedp.Run(ctx, chromedp.Evaluate[landing](look))
		if v.Target && v.InView {
			break
		}
	}
	if !v.Target || !v.InView || v.Focused != "step-t1/tool/0" || v.ScrollY == 0 {
		t.Errorf("the deep link did not land on the step: %+v", v)
	}
	// The step's JSON view, opened from the keyboard: it shows the step as the API stores it.
	err := chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`document.querySelector('tr[id="step-t1/tool/0"] button.json-toggle').focus()`),
		chromedp.KeyEvent(kb.Enter),
	)
	if err != nil {
		t.Fatal(err)
	}
	var shown string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		shown, _ = chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('json-t1/tool/0').querySelector('pre').textContent`))
		if strings.HasPrefix(shown, "{") {
			break
		}
	}
	var step api.Step
	if err := json.Unmarshal([]byte(shown), &step); err != nil || step.Key != "t1/tool/0" || step.Kind != "tool" ||
		!strings.Contains(string(step.Args), "region.md") || !strings.Contains(shown, "\n  \"key\": \"t1/tool/0\"") {
		t.Errorf("the JSON view shows %q (%v)", shown, err)
	}
	shot(t, ctx, "run-step-json")
	CheckA11y(t, ctx, "the run page deep-linked to a step, its JSON open")
	// A link from the transcript's tool call goes to the same row.
	err = chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0); document.querySelector('#transcript-part details.tx-call[data-step="t1/tool/0"] summary').focus()`),
		chromedp.KeyEvent(kb.Enter),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#transcript-part details.tx-call[data-step="t1/tool/0"] a.step-link, #transcript-part details.tx-call[data-step="t1/tool/0"] p a').focus()`),
		chromedp.KeyEvent(kb.Enter),
	)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ = chromedp.Run(ctx, chromedp.Evaluate[landing](look)); !v.Target || v.Focused != "step-t1/tool/0" {
		t.Errorf("the transcript's link to the step: %+v", v)
	}
}

// A person approves a tool call with the keyboard alone: Tab to the approval's Approve button,
// Enter; the run goes on.
func TestRunPageApproveWithKeyboard(t *testing.T) {
	t.Parallel()
	ctx := NewBrowser(t, 60*time.Second)
	viewport(t, ctx)
	e := NewEnv(t, ApprovalsScript)
	e.Start()
	if st := e.Do("PUT", "/v2/agents/careful", ApprovalsAgent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"k1"},"spec":{"agent":"careful","input":"Count carefully: one"}}`, nil)
	e.WaitPhase("k1", 10*time.Second, api.PhaseWaiting)
	if err := SignInBrowser(ctx, e.URL+"/runs/k1", e.SetupCode(), `#needs`); err != nil {
		t.Fatalf("sign in: %v", err)
	}
	shot(t, ctx, "run-needs-you")
	// What needs the person comes first: the approval's controls are the first on the page after
	// the navigation and the header's links.
	type focus struct {
		Tag, Text, Value, Name string
		InNeeds                bool
	}
	const active = `(() => { const a = document.activeElement; return {Tag: a.tagName, Text: a.textContent.trim(), Value: a.value || '', Name: a.name || '',
		InNeeds: !!a.closest('#needs')}; })()`
	var f focus
	tabs := 0
	for ; tabs < 40; tabs++ {
		if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab)); err != nil {
			t.Fatal(err)
		}
		f, _ = chromedp.Run(ctx, chromedp.Evaluate[focus](active))
		if f.Name == "reason" && f.InNeeds {
			break
		}
	}
	if f.Name != "reason" {
		t.Fatalf("tabbing never reached the approval's reason field (%d tabs, at %+v)", tabs, f)
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent("by keyboard"), chromedp.KeyEvent(kb.Tab)); err != nil {
		t.Fatal(err)
	}
	if f, _ = chromedp.Run(ctx, chromedp.Evaluate[focus](active)); f.Value != "approve" || !f.InNeeds {
		t.Fatalf("after the reason, the focus is on %+v, want the Approve button", f)
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Enter)); err != nil {
		t.Fatal(err)
	}
	r := e.WaitPhase("k1", 15*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded || len(e.Counted()) != 1 {
		t.Fatalf("after approving with the keyboard: %s, %d counts", r.Status.Phase, len(e.Counted()))
	}
	var decided string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		decided, _ = chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#approvals`)))
		if strings.Contains(decided, "approved by person:admin") {
			break
		}
	}
	if !strings.Contains(decided, "approved by person:admin") {
		t.Errorf("the approvals after the decision:\n%s", decided)
	}
	shot(t, ctx, "run-approved")
	if tabs > 25 {
		t.Errorf("the approval took %d tabs to reach: it is not at the top of the page", tabs)
	}
}

// shot saves full-page screenshots of the page in the light and the dark theme, as
// NAME-light.png and NAME-dark.png: under docs/console with -update-screenshots (as the pages
// test does), and under $AGENTRUN_CONSOLE_SHOTS when it is set. No test reads them.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	var dirs []string
	if screenshotsWanted() {
		dirs = append(dirs, filepath.Join("..", "..", "docs", "console"))
	}
	if d := os.Getenv("AGENTRUN_CONSOLE_SHOTS"); d != "" {
		dirs = append(dirs, d)
	}
	if len(dirs) == 0 {
		return
	}
	for _, scheme := range []string{"light", "dark"} {
		if err := EmulateColorScheme(ctx, scheme); err != nil {
			t.Fatalf("emulate %s: %v", scheme, err)
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		for _, d := range dirs {
			os.MkdirAll(d, 0o755)
			if err := os.WriteFile(filepath.Join(d, name+"-"+scheme+".png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	EmulateColorScheme(ctx, "light")
}

// viewport lays pages out at a laptop's width, as people and the screenshots see them.
func viewport(t *testing.T, ctx context.Context) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 860)); err != nil {
		t.Fatal(err)
	}
}

// A run stopped by its cap: the page says so at the top, with the least cap that lets it go on
// filled in; raising it from the keyboard lets the run finish.
func TestRunPageRaisesTheCap(t *testing.T) {
	t.Parallel()
	ctx := NewBrowser(t, 90*time.Second)
	viewport(t, ctx)
	e := NewEnv(t, `
entries:
  - match: "Say hi"
    turns:
      - text: "Hi."
`)
	e.Start()
	if st := e.Do("POST", "/v2/agents", `{"definition": {"id": "hi", "tools": []}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"capped"},"spec":{"agent":"hi","input":"Say hi","maxCostUSD":"0.000001"}}`, nil)
	r := e.WaitPhase("capped", 20*time.Second, api.PhaseWaiting)
	if r.Status.Reason != api.ReasonMaxCostReached || r.Status.Cost == nil || r.Status.Cost.NeededUSD == "" {
		t.Fatalf("the run waits %s %+v, want MaxCostReached with neededUSD", r.Status.Reason, r.Status.Cost)
	}
	if err := SignInBrowser(ctx, e.URL+"/runs/capped", e.SetupCode(), `#cap-form`); err != nil {
		t.Fatalf("sign in: %v", err)
	}
	filled, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS(`#cap-usd`)))
	if err != nil || filled != r.Status.Cost.NeededUSD {
		t.Errorf("the new cap is filled in with %q (%v), want neededUSD %q", filled, err, r.Status.Cost.NeededUSD)
	}
	shot(t, ctx, "run-cap")
	CheckA11y(t, ctx, "the run page of a run stopped by its cap")
	type focus struct{ ID, Text string }
	// Each raise lets the run make its next call; one that needs more stops it again, and the
	// page asks again (the router's call is cheaper than the answer's).
	for round := 0; round < 4; round++ {
		var f focus
		for i := 0; i < 40 && f.Text != "Raise the cap"; i++ {
			if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab)); err != nil {
				t.Fatal(err)
			}
			f, _ = chromedp.Run(ctx, chromedp.Evaluate[focus](`({ID: document.activeElement.id, Text: document.activeElement.textContent.trim()})`))
		}
		if f.Text != "Raise the cap" {
			t.Fatalf("Tab never reached Raise the cap (at %+v)", f)
		}
		if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Enter)); err != nil {
			t.Fatal(err)
		}
		before := r.Spec.MaxCostUSD
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			// Raised, then driven on: finished, or stopped again by the raised cap.
			if r = e.GetRun("capped"); r.Spec.MaxCostUSD != before && r.Status.Phase != api.PhaseQueued && r.Status.Phase != api.PhaseRunning {
				break
			}
		}
		if r.Status.Phase != api.PhaseWaiting {
			break
		}
		if err := chromedp.Do(ctx, chromedp.Navigate(e.URL+"/runs/capped"), chromedp.WaitVisible(chromedp.CSS(`#cap-form`))); err != nil {
			t.Fatal(err)
		}
	}
	r = e.WaitPhase("capped", 20*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded || r.Spec.MaxCostUSD == "0.000001" {
		t.Errorf("after raising the cap: %s (%s), cap %s", r.Status.Phase, r.Status.Message, r.Spec.MaxCostUSD)
	}
}
