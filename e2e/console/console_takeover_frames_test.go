package console

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// screenWatch records, on the run page, every text the screen's state line shows and how many
// frames the screen image has shown.
const screenWatch = `(() => {
	window.screenStates = [];
	window.screenFrames = 0;
	const st = document.getElementById('screen-state');
	new MutationObserver(() => { if (st.textContent) window.screenStates.push(st.textContent); })
		.observe(st, {childList: true, characterData: true, subtree: true});
	document.getElementById('screen-img').addEventListener('load', () => window.screenFrames++);
	return true;
})()`

// Issue 24: after a person's click on a taken-over browser the run page said "The screen is not
// current: the frame could not be decoded" until the next frame. A person clicks the screen a
// few times; every frame after each click is shown, and the state line never says the screen is
// not current.
func TestTakeoverFramesAfterClick(t *testing.T) {
	t.Parallel()
	ctx := NewBrowser(t, 150*time.Second)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, takeoverPage)
	}))
	defer page.Close()
	e := NewEnv(t, `
entries:
  - name: takeover
    match: "Press the button for me"
    turns:
      - tool_calls:
          - name: browser_open
            input: {url: "`+page.URL+`"}
      - tool_calls:
          - name: ask_person
            input: {question: "Please press the button.", takeover: true}
      - text: "Thanks."
`)
	e.Start()
	if st := e.Do("PUT", "/v2/agents/clicker", `{"metadata":{"name":"clicker"},"spec":{"tools":["ask_person"],"computer":{"kind":"browser","network":true}}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"fc"},"spec":{"agent":"clicker","input":"Press the button for me"}}`, nil)
	r := e.WaitPhase("fc", 60*time.Second, api.PhaseWaiting, api.PhaseFailed, api.PhaseSucceeded)
	if r.Status.WaitingOn == nil || r.Status.WaitingOn.Kind != "takeover" {
		t.Fatalf("the run is %s (%s), waiting on %+v; want a takeover", r.Status.Phase, r.Status.Message, r.Status.WaitingOn)
	}
	e.PersonSession() // sets the first password
	err := chromedp.Do(ctx,
		chromedp.Navigate(e.URL+"/runs/fc"),
		chromedp.WaitVisible(chromedp.CSS(`input[name=password]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), "correct horse battery staple"),
		chromedp.Submit(chromedp.CSS(`input[name=password]`)),
		chromedp.WaitVisible(chromedp.CSS(`#screen-img`)),
	)
	if err != nil {
		t.Fatalf("sign in and open the run page: %v", err)
	}
	eval := func(js string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return n
	}
	// waitFrames waits until the screen has shown n frames in all.
	waitFrames := func(n int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for eval(`window.screenFrames`) < n {
			if time.Now().After(deadline) {
				states, _ := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.screenStates`))
				t.Fatalf("the screen showed %d frames, not %d; its state line said %q", eval(`window.screenFrames`), n, states)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for eval(`document.getElementById('screen-img').naturalWidth`) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the screen image never loaded")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](screenWatch)); err != nil {
		t.Fatal(err)
	}
	waitFrames(2)
	for i := 0; i < 4; i++ {
		at, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](fmt.Sprintf(screenPoint, buttonAt[0], buttonAt[1])))
		if err != nil || len(at) != 2 {
			t.Fatalf("where the button shows: %v %v", at, err)
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.getElementById('screen-note').textContent = '', true)`)); err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Do(ctx, chromedp.MouseClickXY(at[0], at[1])); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(15 * time.Second)
		for {
			got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('screen-note').textContent`))
			if err == nil && strings.Contains(got, "clicked at (") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("click %d: the screen's note says %q (%v)", i, got, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		// The frames after the click, the first of them fetched at once.
		waitFrames(eval(`window.screenFrames`) + 3)
	}
	states, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.screenStates`))
	if err != nil {
		t.Fatal(err)
	}
	if len(states) > 0 {
		t.Errorf("after clicks on the screen its state line said: %q", states)
	}
}
