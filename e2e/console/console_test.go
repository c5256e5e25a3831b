package console

import (
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"github.com/chromedp/chromedp"
)

// The console in headless Chromium: a person signs in on first visit with the setup code, sees in
// Mission Control the run that waits on them, opens its page and approves the tool call there; the
// run goes on.
func TestConsoleApproveInBrowser(t *testing.T) {
	t.Parallel()
	ctx := NewBrowser(t, 60*time.Second)
	e := NewEnv(t, ApprovalsScript)
	e.Start()
	code := e.SetupCode()
	if st := e.Do("PUT", "/v2/agents/careful", ApprovalsAgent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"c9"},"spec":{"agent":"careful","input":"Count carefully: nine <then> & more"}}`, nil)
	e.WaitPhase("c9", 10*time.Second, api.PhaseWaiting)

	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	text := func() string {
		s, _ := chromedp.Run(ctx, chromedp.Text(css("body")))
		return s
	}
	var mission, runPage, after string
	err := SignInBrowser(ctx, e.URL+"/", code, `h1#mission`)
	if err == nil {
		mission = text()
		err = chromedp.Do(ctx, chromedp.Click(css(`a[href="/runs/c9"]`)), chromedp.WaitVisible(css(`button[value=approve]`)))
	}
	if err == nil {
		runPage = text()
		err = chromedp.Do(ctx,
			chromedp.SendKeys(css(`input[name=reason]`), "looks right"),
			chromedp.Click(css(`button[value=approve]`)),
		)
	}
	if err != nil {
		t.Fatalf("browser: %v\nmission control:\n%s\nrun page:\n%s", err, mission, runPage)
	}
	if !strings.Contains(mission, "Needs you") || !strings.Contains(mission, "c9") || !strings.Contains(mission, "Approval") {
		t.Errorf("Mission Control does not show the run waiting on approval:\n%s", mission)
	}
	// The arguments as the agent wrote them: not JSON's HTML escapes (\u003c), nor double-escaped.
	if !strings.Contains(runPage, "dev_count") || !strings.Contains(runPage, "Count carefully: nine <then> & more") || !strings.Contains(runPage, "I need to count this once.") {
		t.Errorf("the run page does not show the call, its exact arguments and the reason:\n%s", runPage)
	}
	r := e.WaitPhase("c9", 15*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded || len(e.Counted()) != 1 {
		t.Fatalf("after approving in the console: %s, %d counts", r.Status.Phase, len(e.Counted()))
	}
	// The page the approval returned to reloads itself when the run finishes, as a person sees
	// it; opening it again at that instant would race that reload (net::ERR_ABORTED).
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if after = text(); strings.Contains(after, "approved by person:admin") && strings.Contains(after, "Succeeded") {
			break
		}
	}
	if !strings.Contains(after, "approved by person:admin") {
		t.Errorf("run page after approval:\n%s", after)
	}
	// A form posted without the page's token is refused (CSRF).
	var status int
	noRedirect := HTTPNoRedirectClient()
	resp, err := noRedirect.PostForm(e.URL+"/runs/c9/approvals/1", map[string][]string{"decision": {"approve"}})
	if err == nil {
		status = resp.StatusCode
		resp.Body.Close()
	}
	if status == 200 {
		t.Errorf("a console form without a session and token was accepted")
	}
}
