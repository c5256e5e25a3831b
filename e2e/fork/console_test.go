package fork

import (
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"github.com/chromedp/chromedp"
)

// TestConsoleForkFromHere: in headless Chromium a signed-in person presses "Fork from here" on a
// completed step of a run's page and lands on the new run's page; the fork holds the steps up to
// that one, copied, and goes on to its answer. Every completed step has the button.
func TestConsoleForkFromHere(t *testing.T) {
	t.Parallel()
	ctx := NewBrowser(t, 2*time.Minute)
	e := NewEnv(t, filesScript)
	e.Start()
	run := original(t, e)
	if err := SignInBrowser(ctx, e.URL+"/runs/"+run, e.SetupCode(), `#steps`); err != nil {
		t.Fatalf("sign in and open the run page: %v", err)
	}
	buttons, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#steps form.fork-form button').length`))
	if err != nil {
		t.Fatalf("count the Fork from here buttons: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`tr[id="step-t0/tool/0"] form.fork-form button`)), chromedp.WaitVisible(chromedp.CSS(`#steps`))); err != nil {
		t.Fatalf("press Fork from here: %v", err)
	}
	var url string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if url, err = chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname`)); err == nil && url != "/runs/"+run {
			break
		}
	}
	if want := len(e.Steps(run)); buttons != want {
		t.Errorf("%d Fork from here buttons, want one per completed step (%d)", buttons, want)
	}
	name := url[strings.LastIndex(url, "/")+1:]
	if name == run || !strings.Contains(url, "/runs/") {
		t.Fatalf("after the fork the browser is at %s, want the new run's page", url)
	}
	f := e.WaitPhase(name, time.Minute, api.PhaseSucceeded, api.PhaseFailed)
	if f.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("fork %s: %s %s", name, f.Status.Phase, f.Status.Message)
	}
	steps := e.Steps(name)
	last := ""
	for _, s := range steps {
		if s.CopiedFrom == run {
			last = s.Key
		}
	}
	if last != "t0/tool/0" {
		t.Errorf("the console's fork copied up to %q, want t0/tool/0: %s", last, keys(steps))
	}
	if got := e.ToolResults(name)["t1/tool/0"].Content; !strings.Contains(got, "one") {
		t.Errorf("the fork's read of a.txt = %q, want the folder as of t0/tool/0", got)
	}
}
