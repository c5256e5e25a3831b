package e2e

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"agentrun.dev/agentrun/internal/api"
)

// The console in headless Chromium: a person signs in on first visit with the setup code, sees in
// Mission Control the run that waits on them, opens its page and approves the tool call there; the
// run goes on.
func TestConsoleApproveInBrowser(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t, 60*time.Second)
	e := newEnv(t, approvalsScript)
	e.start()
	code := e.setupCode()
	if st := e.do("PUT", "/v2/agents/careful", approvalsAgent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"c9"},"spec":{"agent":"careful","input":"Count carefully: nine <then> & more"}}`, nil)
	e.waitPhase("c9", 10*time.Second, api.PhaseWaiting)

	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	text := func() string {
		s, _ := chromedp.Run(ctx, chromedp.Text(css("body")))
		return s
	}
	var mission, runPage, after string
	err := signInBrowser(ctx, e.url+"/", code, `h1#mission`)
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
	r := e.waitPhase("c9", 15*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded || len(e.counted()) != 1 {
		t.Fatalf("after approving in the console: %s, %d counts", r.Status.Phase, len(e.counted()))
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
	noRedirect := httpNoRedirectClient()
	resp, err := noRedirect.PostForm(e.url+"/runs/c9/approvals/1", map[string][]string{"decision": {"approve"}})
	if err == nil {
		status = resp.StatusCode
		resp.Body.Close()
	}
	if status == 200 {
		t.Errorf("a console form without a session and token was accepted")
	}
}

// newBrowser starts headless Chromium for one test (the test is skipped when Chromium is not
// installed) and returns its context, which ends after d or with the test.
func newBrowser(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("console test skipped: chromium not installed (apt-get install chromium; .ci/run does)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-first-run", true))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancelT := context.WithTimeout(ctx, d)
	t.Cleanup(cancelT)
	return ctx
}

// signInBrowser opens url, which sends a browser without a session to the login page; there it
// sets the first password with the setup code the server printed, and waits for sel on the page
// it lands on.
func signInBrowser(ctx context.Context, url, setupCode, sel string) error {
	return chromedp.Do(ctx,
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(`input[name=setup_code]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=setup_code]`), setupCode),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), "correct horse battery"),
		chromedp.Submit(chromedp.CSS(`input[name=password]`)),
		chromedp.WaitVisible(chromedp.CSS(sel)),
	)
}

func httpNoRedirectClient() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
