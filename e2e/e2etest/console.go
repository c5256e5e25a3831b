package e2etest

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// NewBrowser starts headless Chromium for one test (the test is skipped when Chromium is not
// installed) and returns its context, which ends after d or with the test.
func NewBrowser(t *testing.T, d time.Duration) context.Context {
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

// SignInBrowser opens url, which sends a browser without a session to the login page; there it
// sets the first password with the setup code the server printed, and waits for sel on the page
// it lands on.
func SignInBrowser(ctx context.Context, url, setupCode, sel string) error {
	return chromedp.Do(ctx,
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS(`input[name=setup_code]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=setup_code]`), setupCode),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), "correct horse battery"),
		chromedp.Submit(chromedp.CSS(`input[name=password]`)),
		// The sign-in page has an h1 too: wait for the form to go, so that a caller's next
		// Navigate does not cut the sign-in's own navigation short (net::ERR_ABORTED).
		chromedp.WaitNotPresent(chromedp.CSS(`input[name=setup_code]`)),
		chromedp.WaitVisible(chromedp.CSS(sel)),
	)
}

func HTTPNoRedirectClient() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
