package console

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"github.com/chromedp/chromedp"
)

// -update-screenshots writes a PNG of every page in both themes (and a few at phone width) to
// docs/console/ (also AGENTRUN_UPDATE_SCREENSHOTS=1).
var updateScreenshots = flag.Bool("update-screenshots", false, "write the console's screenshots to docs/console/")

func screenshotsWanted() bool {
	return *updateScreenshots || os.Getenv("AGENTRUN_UPDATE_SCREENSHOTS") == "1"
}

// pagesScript answers the runs the page tests make: priced answers, an unpriced one (its cost
// unknown), an approval, a question.
const pagesScript = `
entries:
  - name: hello
    match: "Say hello"
    turns:
      - text: "Hello! Here is a short answer."
        usage: {input_tokens: 1200, output_tokens: 300}
  - name: summary
    match: "Summarize"
    turns:
      - text: "A summary in three lines."
        usage: {input_tokens: 9000, output_tokens: 1500}
  - name: careful
    match: "Count carefully"
    turns:
      - text: "I need to count this once."
        tool_calls:
          - name: dev_count
            input: {label: "{{last_user}}"}
      - text: "result: {{last_tool_result}}"
  - name: ask
    match: "Ask me"
    turns:
      - tool_calls:
          - name: ask_person
            input: {question: "Which region should I cover?"}
      - text: "You said: {{last_tool_result}}"
`

// pagesWorld is a server with agents, runs in several phases, a trigger and a group.
type pagesWorld struct {
	e    *Env
	code string
}

func newPagesWorld(t *testing.T) *pagesWorld {
	t.Helper()
	e := NewEnv(t, pagesScript)
	e.Start()
	// serve prints its setup code just after it starts answering: wait for the line.
	e.WaitStderr("setup code:", 20*time.Second)
	w := &pagesWorld{e: e, code: e.SetupCode()}
	for _, a := range []string{
		`{"metadata":{"name":"notes"},"spec":{"system":"Write short notes.","tools":["ask_person"]}}`,
		`{"metadata":{"name":"careful"},"spec":{"tools":["dev_count"],"approvals":{"default":"allow","rules":[{"match":"dev_count","action":"ask"}]}}}`,
	} {
		name := strings.Split(strings.Split(a, `"name":"`)[1], `"`)[0]
		if st := e.Do("PUT", "/v2/agents/"+name, a, nil); st != 201 {
			t.Fatalf("create agent %s: HTTP %d", name, st)
		}
	}
	return w
}

// start starts a run of agent with input, named name.
func (w *pagesWorld) start(t *testing.T, name, agent, input string) {
	t.Helper()
	body := fmt.Sprintf(`{"kind":"AgentRun","metadata":{"name":%q},"spec":{"agent":%q,"input":%q}}`, name, agent, input)
	if st := w.e.Do("POST", "/v2/agentruns", body, nil); st != 201 {
		t.Fatalf("start run %s: HTTP %d", name, st)
	}
}

// A page of the console, as the tests visit it.
type consolePage struct {
	name, path, wait string
	// section: the page belongs to a navigation entry, marked current.
	section bool
}

// Every console page, signed in, in both themes: each renders in the layout (navigation, one
// <h1>, lang), passes axe-core with no serious or critical violation in the light and the dark
// theme, and (with -update-screenshots) is saved as a PNG under docs/console/. At phone width the
// pages fit the screen (no sideways scrolling), and the theme toggle is remembered across pages.
func TestConsolePages(t *testing.T) {
	t.Parallel()
	ctx := NewBrowser(t, 240*time.Second) // 17 pages, each checked twice: minutes on a loaded machine
	AxeSource(t)                          // skips without npm, before anything is started
	w := newPagesWorld(t)
	e := w.e
	w.start(t, "hello-1", "notes", "Say hello")
	w.start(t, "summary-1", "notes", "Summarize the week")
	w.start(t, "count-1", "careful", "Count carefully: nine")
	w.start(t, "ask-1", "notes", "Ask me where to look")
	e.WaitPhase("hello-1", 20*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	e.WaitPhase("summary-1", 20*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	e.WaitPhase("count-1", 20*time.Second, api.PhaseWaiting)
	e.WaitPhase("ask-1", 20*time.Second, api.PhaseWaiting)
	if st := e.Do("PUT", "/v2/triggers/inbox", `{"kind":"Trigger","metadata":{"name":"inbox"},"spec":{"agent":"notes","input":"Summarize {{.body.subject}}","webhook":{"secretRef":"inbox-hook"}}}`, nil); st != 201 && st != 200 {
		t.Logf("create trigger: HTTP %d (its pages show the empty list)", st)
	}
	if st := e.Do("POST", "/v2/agentgroups", `{"kind":"AgentGroup","metadata":{"name":"weekly"},"spec":{"agent":"notes","limits":{"maxActive":2}}}`, nil); st != 201 {
		t.Logf("create group: HTTP %d (its pages show the empty list)", st)
	}

	shots := screenshotsWanted()
	dir := filepath.Join("..", "..", "docs", "console")
	if shots {
		os.MkdirAll(dir, 0o755)
	}
	shoot := func(name string) {
		t.Helper()
		if !shots {
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
			if err := os.WriteFile(filepath.Join(dir, name+"-"+scheme+".png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		EmulateColorScheme(ctx, "light")
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 860)); err != nil {
		t.Fatal(err)
	}

	// Before signing in: the first visit's page, which sets the password.
	if err := chromedp.Do(ctx, chromedp.Navigate(e.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`input[name=setup_code]`))); err != nil {
		t.Fatalf("open the console: %v", err)
	}
	CheckA11y(t, ctx, "/login (first visit)")
	shoot("login")
	if err := SignInBrowser(ctx, e.URL+"/", w.code, `h1#mission`); err != nil {
		t.Fatalf("sign in: %v", err)
	}

	pages := []consolePage{
		{"mission-control", "/", `h1#mission`, true},
		{"runs", "/runs", `table#runs`, true},
		{"runs-filtered", "/runs?agent=notes&phase=Succeeded", `table#runs`, true},
		{"run-succeeded", "/runs/hello-1", `#timeline`, true},
		{"run-approval", "/runs/count-1", `button[value=approve]`, true},
		{"run-question", "/runs/ask-1", `#answer-form`, true},
		{"agents", "/agents", `#agents`, true},
		{"agent-mcp", "/agents/notes/mcp", `h1`, true},
		{"agent-learning", "/agents/notes/learning", `h1`, true},
		{"triggers", "/triggers", `h1`, true},
		{"trigger", "/triggers/inbox", `h1`, true},
		{"groups", "/groups", `h1`, true},
		{"group", "/groups/weekly", `h1`, true},
		{"settings-model-keys", "/settings", `h1#model-keys`, true},
		{"settings-secrets", "/settings/secrets", `h1#secrets`, true},
		{"sign-out", "/logout", `button#logout`, false},
		{"not-found", "/runs/no-such-run", `h1`, true},
	}
	for _, p := range pages {
		if err := chromedp.Do(ctx, chromedp.Navigate(e.URL+p.path), chromedp.WaitVisible(chromedp.CSS(p.wait))); err != nil {
			body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
			t.Fatalf("%s: %v\n%s", p.path, err, body)
		}
		// A live page (a group still going) reloads itself: pause it, as a person reading it would.
		if paused, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`(function () { var b = document.getElementById('live-pause'); if (!b || b.hidden) return false; b.click(); return true; })()`)); paused {
			if state, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#live-state`))); state != "Updates paused." {
				t.Errorf("%s: after Pause updates the page says %q", p.path, state)
			}
		}
		// The layout: the page's language, one <h1>, the navigation with the current page marked
		// (a page under a section marks it), the skip link to the content.
		got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[document.documentElement.lang, document.querySelectorAll('h1').length,
			!!document.querySelector('nav[aria-label=Main] a[aria-current=page]'), !!document.querySelector('a.skip[href="#main"]')].join(' ')`))
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("en 1 %v true", p.section); got != want {
			t.Errorf("%s: lang, <h1>s, current navigation entry, skip link = %q, want %q", p.path, got, want)
		}
		CheckA11y(t, ctx, p.path)
		shoot(p.name)
	}

	// Mission Control's charts: named SVGs, each with its table; an unpriced day is not $0.
	if err := chromedp.Do(ctx, chromedp.Navigate(e.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`h1#mission`))); err != nil {
		t.Fatal(err)
	}
	names, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('svg[role=img]')).map(function (s) {
		var id = s.getAttribute('aria-labelledby'); return document.getElementById(id).textContent + ' | ' + (s.closest('figure').querySelector('details table') ? 'table' : 'no table'); })`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Cost per day, last 14 days | table", "Spend per agent, last 14 days | table"} {
		if !Contains(names, want) {
			t.Errorf("Mission Control's charts %q lack %q", names, want)
		}
	}

	// Phone width: the layout collapses to a top bar and nothing scrolls sideways.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []consolePage{{"phone-mission-control", "/", `h1#mission`, true}, {"phone-runs", "/runs", `table#runs`, true}, {"phone-run", "/runs/count-1", `button[value=approve]`, true}} {
		if err := chromedp.Do(ctx, chromedp.Navigate(e.URL+p.path), chromedp.WaitVisible(chromedp.CSS(p.wait))); err != nil {
			t.Fatalf("%s at phone width: %v", p.path, err)
		}
		over, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.scrollWidth + ' ' + screen.width + ' ' + getComputedStyle(document.querySelector('.shell')).flexDirection`))
		if err != nil {
			t.Fatal(err)
		}
		var sw, iw int
		var dirn string
		fmt.Sscan(over, &sw, &iw, &dirn)
		if sw > iw || dirn != "column" {
			t.Errorf("%s at phone width: page %d px wide in a %d px window, shell laid out as %s (want no sideways scroll, a top bar)", p.path, sw, iw, dirn)
		}
		shoot(p.name)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 860)); err != nil {
		t.Fatal(err)
	}

	// The theme toggle: auto → light → dark, remembered on the next page; the colours change.
	bg := func() string {
		s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.getAttribute('data-theme') + ' ' + getComputedStyle(document.body).backgroundColor`))
		return s
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(e.URL+"/runs"), chromedp.WaitVisible(chromedp.CSS(`#theme-toggle`))); err != nil {
		t.Fatal(err)
	}
	auto := bg()
	chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#theme-toggle`)))
	light := bg()
	chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#theme-toggle`)))
	dark := bg()
	chromedp.Do(ctx, chromedp.Navigate(e.URL+"/groups"), chromedp.WaitVisible(chromedp.CSS(`#theme-toggle`)))
	again := bg()
	toggle, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#theme-toggle`)))
	if !strings.HasPrefix(light, "light ") || !strings.HasPrefix(dark, "dark ") || light == dark || again != dark || !strings.Contains(toggle, "dark") {
		t.Errorf("theme toggle: auto %q, then %q, then %q, next page %q (%q); want light, then dark, remembered", auto, light, dark, again, toggle)
	}
	CheckA11y(t, ctx, "/groups (theme chosen: dark)")
	chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#theme-toggle`))) // back to auto
}

// waitText waits until the body's text has want.
func waitText(ctx context.Context, want string, d time.Duration) (string, bool) {
	var body string
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		body, _ = chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		if strings.Contains(body, want) {
			return body, true
		}
	}
	return body, false
}
