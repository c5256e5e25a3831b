package console

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	. "agentrun.dev/agentrun/e2e/e2etest"
)

// received is one POST the test's receiver got.
type received struct {
	id, ts, sig string
	body        []byte
}

// TestSettingsWebhooksInBrowser: on Settings → Webhooks a person adds a webhook in headless
// Chromium: a form with a bad URL and no event is refused at those inputs and keeps what was
// typed; a good one shows its signing secret once; its page's test delivery reaches a local
// receiver signed with that secret and shows as delivered with its attempt; a new secret signs
// the next delivery; removing the webhook lists it no more. axe-core checks each page; the API
// token cannot use the pages, and the secret is in no log.
func TestSettingsWebhooksInBrowser(t *testing.T) {
	t.Parallel()
	ctx := NewBrowser(t, 150*time.Second)
	AxeSource(t)
	var mu sync.Mutex
	var got []received
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, received{r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature"), b})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()
	e := NewEnv(t, settingsScript)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", "debug", "--webhook-allow", "127.0.0.1"})
	if err := SignInBrowser(ctx, e.URL+"/settings/webhooks", e.SetupCode(), `h1#webhooks`); err != nil {
		t.Fatal(err)
	}
	shots := map[string]string{"/settings/webhooks refused": "settings-webhooks-refused-light.png", "/settings/webhooks/ops-alerts delivered": "settings-webhook-light.png"}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 860)); err != nil {
		t.Fatal(err)
	}
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) string {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, pageHTML(ctx))
		}
		CheckA11y(t, ctx, what)
		if shots[what] != "" && screenshotsWanted() {
			// With -update-screenshots two of the pages are saved under docs/console/.
			png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			if err == nil {
				err = os.WriteFile(filepath.Join("..", "..", "docs", "console", shots[what]), png, 0o644)
			}
			if err != nil {
				t.Errorf("screenshot %s: %v", what, err)
			}
		}
		return pageHTML(ctx)
	}
	do("/settings/webhooks", chromedp.WaitVisible(css(`#webhook-form`)))
	refused := do("/settings/webhooks refused",
		chromedp.SendKeys(css(`#webhook-name`), "ops-alerts"),
		chromedp.SendKeys(css(`#webhook-url`), "ftp://example.com/x"),
		chromedp.Click(css(`#webhook-form button`)), chromedp.WaitVisible(css(`.field-error`)))
	if !strings.Contains(refused, `data-field="url"`) || !strings.Contains(refused, `value="ops-alerts"`) {
		t.Errorf("a bad URL is not refused at its input, keeping the name:\n%s", refused)
	}
	noEvents := do("/settings/webhooks no events",
		chromedp.SetValue(css(`#webhook-url`), recv.URL+"/hook"),
		chromedp.Click(css(`#webhook-form button`)), chromedp.WaitVisible(css(`[data-field=events]`)))
	if !strings.Contains(noEvents, "spec.events is required") {
		t.Errorf("a webhook without events is not refused at the events:\n%s", noEvents)
	}
	added := do("/settings/webhooks/ops-alerts added",
		chromedp.Click(css(`#event-run\.failed`)), chromedp.Click(css(`#event-run\.succeeded`)),
		chromedp.Click(css(`#webhook-form button`)), chromedp.WaitVisible(css(`#new-secret`)))
	secret1 := regexp.MustCompile(`value="(whsec_[A-Za-z0-9+/=]+)"`).FindStringSubmatch(added)
	if secret1 == nil || !strings.Contains(added, "secret <code>ops-alerts-hook</code>: set") {
		t.Fatalf("the added webhook's page shows no signing secret, or not as set:\n%s", added)
	}
	var wh struct {
		Spec struct {
			URL       string
			Events    []string
			SecretRef string
		}
	}
	if st := e.Do("GET", "/v2/webhooks/ops-alerts", nil, &wh); st != 200 || wh.Spec.URL != recv.URL+"/hook" || strings.Join(wh.Spec.Events, ",") != "run.succeeded,run.failed" || wh.Spec.SecretRef != "ops-alerts-hook" {
		t.Errorf("the API's webhook: HTTP %d %+v", st, wh)
	}

	// A test delivery, signed with the secret the page showed, shows as delivered.
	waitDelivered := func(what string, n int) (string, received) {
		t.Helper()
		var page string
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(300 * time.Millisecond) {
			page = do(what, chromedp.Navigate(e.URL+"/settings/webhooks/ops-alerts"), chromedp.WaitVisible(css(`#deliveries`)))
			mu.Lock()
			have := len(got)
			mu.Unlock()
			if have >= n && strings.Count(page, `data-state="Delivered"`) >= n || time.Now().After(deadline) {
				break
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) < n {
			t.Fatalf("%s: the receiver got %d deliveries, want %d:\n%s", what, len(got), n, page)
		}
		return page, got[n-1]
	}
	// The page it leaves has a #note too (the webhook was just added): wait for the new page's.
	do("send a test delivery", chromedp.Click(css(`#test-webhook`)),
		chromedp.WaitVisible(chromedp.Search(`//*[@id="note"][contains(., "test delivery")]`)))
	page, d1 := waitDelivered("/settings/webhooks/ops-alerts delivered", 1)
	if !strings.Contains(page, "#1 delivered HTTP 204") || !strings.Contains(string(d1.body), `"type":"webhook.test"`) {
		t.Errorf("the test delivery's attempt is not shown as delivered (HTTP 204), or its body is not a webhook.test: %s\n%s", d1.body, page)
	}
	if !signedWith(secret1[1], d1) {
		t.Errorf("the test delivery is not signed with the secret the page showed: %q", d1.sig)
	}
	rotated := do("/settings/webhooks/ops-alerts rotated", chromedp.Click(css(`#rotate-webhook`)), chromedp.WaitVisible(css(`#new-secret`)))
	secret2 := regexp.MustCompile(`value="(whsec_[A-Za-z0-9+/=]+)"`).FindStringSubmatch(rotated)
	if secret2 == nil || secret2[1] == secret1[1] || !strings.Contains(rotated, "previous one also signs until") {
		t.Fatalf("a new signing secret is not shown, or not said to keep the previous one signing:\n%s", rotated)
	}
	do("send a second test delivery", chromedp.Click(css(`#test-webhook`)),
		chromedp.WaitVisible(chromedp.Search(`//*[@id="note"][contains(., "test delivery")]`)))
	_, d2 := waitDelivered("/settings/webhooks/ops-alerts delivered twice", 2)
	if !signedWith(secret2[1], d2) {
		t.Errorf("the delivery after the new secret is not signed with it: %q", d2.sig)
	}
	list := do("/settings/webhooks listed", chromedp.Navigate(e.URL+"/settings/webhooks"), chromedp.WaitVisible(css(`tr[data-webhook=ops-alerts]`)))
	if !strings.Contains(list, "<code>webhook.test</code> Delivered") {
		t.Errorf("the list does not show the last delivery:\n%s", list)
	}
	for _, p := range []string{list, page} {
		if strings.Contains(p, secret1[1]) || strings.Contains(p, secret2[1]) {
			t.Errorf("a page other than the one that made it shows a signing secret:\n%s", p)
		}
	}
	removed := do("/settings/webhooks removed", chromedp.Navigate(e.URL+"/settings/webhooks/ops-alerts"), chromedp.WaitVisible(css(`#remove-webhook`)),
		chromedp.Click(css(`#remove-webhook`)), chromedp.WaitVisible(css(`p#webhook-list`)))
	if strings.Contains(removed, `data-webhook="ops-alerts"`) || !strings.Contains(removed, "webhook ops-alerts removed") {
		t.Errorf("the removed webhook is still listed:\n%s", removed)
	}
	if st := e.Do("GET", "/v2/webhooks/ops-alerts", nil, nil); st != 404 {
		t.Errorf("the removed webhook over the API: HTTP %d, want 404", st)
	}
	for _, s := range []string{secret1[1], secret2[1]} {
		if strings.Contains(e.Stderr.String(), s) {
			t.Error("the server's log has a signing secret")
		}
	}
	form := url.Values{"name": {"by-token"}, "url": {recv.URL}, "events": {"run.failed"}}
	if st := consolePost(e, "/settings/webhooks", "", e.Token, form); st != http.StatusForbidden {
		t.Errorf("the API token adding a webhook: HTTP %d, want 403", st)
	}
	if st := consolePost(e, "/settings/webhooks", consoleSession(e), "", form); st != http.StatusForbidden {
		t.Errorf("a webhook form posted without the page's CSRF token: HTTP %d, want 403", st)
	}
}

// signedWith reports whether d carries a v1 signature (Standard Webhooks: HMAC-SHA256 of
// "id.timestamp.body" keyed with the whsec_ secret's base64 bytes) made with secret.
func signedWith(secret string, d received) bool {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(d.id + "." + d.ts + "." + string(d.body)))
	want := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	for _, s := range strings.Fields(d.sig) {
		if hmac.Equal([]byte(s), []byte(want)) {
			return true
		}
	}
	return false
}
