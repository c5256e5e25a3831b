package console

import (
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"github.com/chromedp/chromedp"
)

// The runs list in a browser: a filter by agent selects that agent's runs and lives in the URL;
// a person ticks two of three runs waiting on approval and cancels them (the third goes on
// waiting), the filter kept; then searches a finished run by name and re-runs it, which starts a
// new run of the same agent with the same input, linked from the note.
func TestConsoleBulkCancelRerun(t *testing.T) {
	t.Parallel()
	ctx := NewBrowser(t, 120*time.Second)
	w := newPagesWorld(t)
	e := w.e
	for _, n := range []string{"wait-a", "wait-b", "wait-c"} {
		w.start(t, n, "careful", "Count carefully: "+n)
	}
	w.start(t, "hello-old", "notes", "Say hello")
	for _, n := range []string{"wait-a", "wait-b", "wait-c"} {
		e.WaitPhase(n, 20*time.Second, api.PhaseWaiting)
	}
	e.WaitPhase("hello-old", 20*time.Second, api.PhaseSucceeded)
	if err := SignInBrowser(ctx, e.URL+"/runs", w.code, `table#runs`); err != nil {
		t.Fatalf("sign in: %v", err)
	}
	rows := func() []string {
		v, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#runs tbody tr')).map(function (r) { return r.getAttribute('data-run'); })`))
		return v
	}
	loc := func() string {
		v, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname + location.search`))
		return v
	}

	// Filter by agent with the form, as a person does.
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`#f-agent`), "careful"), chromedp.Click(chromedp.CSS(`#apply-filters`)),
		chromedp.WaitVisible(chromedp.CSS(`#clear-filters`))); err != nil {
		t.Fatalf("filter: %v", err)
	}
	if got := rows(); strings.Join(got, ",") != "wait-c,wait-b,wait-a" || !strings.Contains(loc(), "agent=careful") {
		t.Fatalf("filtered by agent careful: rows %v at %s, want wait-c,wait-b,wait-a with agent=careful in the URL", got, loc())
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#sel-wait-a`)), chromedp.Click(chromedp.CSS(`#sel-wait-b`)),
		chromedp.Click(chromedp.CSS(`#bulk-cancel`)), chromedp.WaitVisible(chromedp.CSS(`#bulk-note`))); err != nil {
		t.Fatalf("cancel two: %v", err)
	}
	note, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#bulk-note`)))
	if !strings.Contains(note, "Asked 2 runs to cancel") || !strings.Contains(loc(), "agent=careful") {
		t.Errorf("after cancelling two: note %q at %s, want 2 asked and the filter kept", note, loc())
	}
	for _, n := range []string{"wait-a", "wait-b"} {
		if r := e.WaitPhase(n, 20*time.Second, api.PhaseCancelled); r.Status.Phase != api.PhaseCancelled {
			t.Errorf("%s after bulk cancel: %s", n, r.Status.Phase)
		}
	}
	if r := e.GetRun("wait-c"); r.Status.Phase != api.PhaseWaiting {
		t.Errorf("wait-c, not selected, is %s after the bulk cancel", r.Status.Phase)
	}

	// Search by name, then re-run the one found.
	if err := chromedp.Do(ctx, chromedp.Navigate(e.URL+"/runs?q=hello"), chromedp.WaitVisible(chromedp.CSS(`table#runs`))); err != nil {
		t.Fatal(err)
	}
	if got := rows(); strings.Join(got, ",") != "hello-old" {
		t.Fatalf("search hello: rows %v", got)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#select-all`)), chromedp.Click(chromedp.CSS(`#bulk-rerun`)),
		chromedp.WaitVisible(chromedp.CSS(`#bulk-note a`))); err != nil {
		t.Fatalf("re-run: %v", err)
	}
	href, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#bulk-note a').getAttribute('href')`))
	name := strings.TrimPrefix(href, "/runs/")
	if name == "" || name == "hello-old" || !strings.Contains(loc(), "q=hello") {
		t.Fatalf("after re-run: note links %q at %s", href, loc())
	}
	nr := e.WaitPhase(name, 20*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if nr.Spec.Agent != "notes" || nr.Spec.Input != "Say hello" || nr.Status.Phase != api.PhaseSucceeded {
		t.Errorf("the re-run %s: agent %q input %q phase %s, want notes, the same input, Succeeded", name, nr.Spec.Agent, nr.Spec.Input, nr.Status.Phase)
	}
	CheckA11y(t, ctx, "/runs?q=hello after a re-run")
}

// Keyboard only: Tab reaches the skip link first, then the run page's Approve button, and Enter
// approves; on a run asking a question, Tab reaches the answer box, typing fills it, Tab reaches
// Answer and Enter sends it. Both runs go on and finish.
func TestConsoleKeyboardOnly(t *testing.T) {
	t.Parallel()
	ctx := NewBrowser(t, 120*time.Second)
	w := newPagesWorld(t)
	e := w.e
	w.start(t, "kb-count", "careful", "Count carefully: by keyboard")
	w.start(t, "kb-ask", "notes", "Ask me where to look")
	e.WaitPhase("kb-count", 20*time.Second, api.PhaseWaiting)
	e.WaitPhase("kb-ask", 20*time.Second, api.PhaseWaiting)
	if err := SignInBrowser(ctx, e.URL+"/", w.code, `h1#mission`); err != nil {
		t.Fatalf("sign in: %v", err)
	}
	focused := func() string {
		v, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(function (a) { return a ? a.tagName.toLowerCase() + (a.id ? '#' + a.id : '') + (a.value && a.tagName === 'BUTTON' ? '[value=' + a.value + ']' : '') + (a.className ? '.' + a.className.split(' ').join('.') : '') : ''; })(document.activeElement)`))
		return v
	}
	// tabTo presses Tab until the focused element is want (a prefix of focused()'s description).
	tabTo := func(want string) bool {
		for i := 0; i < 80; i++ {
			if err := chromedp.Do(ctx, chromedp.KeyEvent("\t")); err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(focused(), want) {
				return true
			}
		}
		return false
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(e.URL+"/runs/kb-count"), chromedp.WaitVisible(chromedp.CSS(`button[value=approve]`))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent("\t")); err != nil {
		t.Fatal(err)
	}
	if f := focused(); f != "a.skip" {
		t.Errorf("the first Tab stop is %q, want the skip link", f)
	}
	chromedp.Do(ctx, chromedp.KeyEvent("\r"))
	if f := focused(); f != "main#main.main" {
		t.Errorf("after Enter on the skip link the focus is on %q, want main", f)
	}
	// A focused control shows its focus ring.
	if !tabTo("button[value=approve]") {
		t.Fatalf("Tab never reached Approve (last focus %q)", focused())
	}
	ring, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.activeElement).outlineStyle + ' ' + getComputedStyle(document.activeElement).outlineWidth`))
	if strings.HasPrefix(ring, "none") || strings.HasSuffix(ring, " 0px") {
		t.Errorf("the focused Approve button has no visible focus ring: outline %q", ring)
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent("\r")); err != nil {
		t.Fatal(err)
	}
	if r := e.WaitPhase("kb-count", 20*time.Second, api.PhaseSucceeded, api.PhaseFailed); r.Status.Phase != api.PhaseSucceeded || len(e.Counted()) != 1 {
		t.Fatalf("after approving by keyboard: %s, %d counts", r.Status.Phase, len(e.Counted()))
	}
	// The page reloads itself when the run it shows ends: navigating away before that reload
	// came would race it (the navigation is aborted), so wait for the finished page first.
	if err := chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS(`#run[data-view="finished"]`))); err != nil {
		t.Fatalf("the run page never showed the finished run: %v", err)
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(e.URL+"/runs/kb-ask"), chromedp.WaitVisible(chromedp.CSS(`#answer-form`))); err != nil {
		t.Fatal(err)
	}
	if !tabTo("textarea#answer-text") {
		t.Fatalf("Tab never reached the answer box (last focus %q)", focused())
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent("Europe")); err != nil {
		t.Fatal(err)
	}
	if !tabTo("button") || !strings.Contains(focused(), "primary") {
		t.Fatalf("Tab after the answer box reached %q, want the Answer button", focused())
	}
	if err := chromedp.Do(ctx, chromedp.KeyEvent("\r")); err != nil {
		t.Fatal(err)
	}
	r := e.WaitPhase("kb-ask", 20*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || !strings.Contains(r.Status.Answer.Preview, "Europe") {
		t.Fatalf("after answering by keyboard: %s %+v", r.Status.Phase, r.Status.Answer)
	}
}
