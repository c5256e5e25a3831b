package console

import (
	. "agentrun.dev/agentrun/e2e/e2etest"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"agentrun.dev/agentrun/internal/api"
)

const settingsScript = `
entries:
  - name: hello
    match: "Say hello"
    turns:
      - text: "hello from the pasted key"
`

// pastedKey is the model key the tests paste: it must never come back in a page.
const pastedKey = "sk-ant-pasted-9f3c1d7e5b2a4c6e8d0f"

// withoutModelKeys drops every model provider variable from the server's environment and returns
// the scripted model server's URL.
func withoutModelKeys(e *Env) string {
	var keep []string
	var base string
	for _, kv := range e.Extra {
		if v, ok := strings.CutPrefix(kv, "ANTHROPIC_BASE_URL="); ok {
			base = v
		}
		if !strings.HasPrefix(kv, "ANTHROPIC_") && !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "OPENROUTER_") {
			keep = append(keep, kv)
		}
	}
	e.Extra = keep
	return base
}

func startHello(e *Env, name string) {
	e.T.Helper()
	if st := e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"`+name+`"},"spec":{"agent":"hello","input":"Say hello"}}`, nil); st != 201 {
		e.T.Fatalf("start run %s: HTTP %d", name, st)
	}
}

// waitReason polls until the run waits with the reason (or ends).
func waitReason(e *Env, name string, d time.Duration, reason api.Reason) api.AgentRun {
	e.T.Helper()
	var r api.AgentRun
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if r = e.GetRun(name); r.Status.Reason == reason || api.Finished(r.Status.Phase) {
			break
		}
	}
	if r.Status.Phase != api.PhaseWaiting || r.Status.Reason != reason {
		e.T.Fatalf("run %s is %s/%s %q, want Waiting/%s", name, r.Status.Phase, r.Status.Reason, r.Status.Message, reason)
	}
	return r
}

// consoleSession signs in over the API with the password the browser set.
func consoleSession(e *Env) string {
	e.T.Helper()
	var out struct {
		Session string `json:"session"`
	}
	if st := e.DoAs("", "POST", "/v2/login", `{"password": "correct horse battery"}`, &out); st != 200 || out.Session == "" {
		e.T.Fatalf("login: HTTP %d", st)
	}
	return out.Session
}

// consolePost posts a form to the console with the given session cookie (none: "") and bearer
// credential (none: ""), not following redirects, and returns the status.
func consolePost(e *Env, path, session, bearer string, form url.Values) int {
	e.T.Helper()
	req, _ := http.NewRequest("POST", e.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if session != "" {
		req.AddCookie(&http.Cookie{Name: "agentrun_session", Value: session})
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := HTTPNoRedirectClient().Do(req)
	if err != nil {
		e.T.Fatalf("POST %s: %v", path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The seed's second step in headless Chromium, on a server started without any model key: a run
// started first waits ModelKeyMissing; a person pastes an Anthropic key (and the base URL of the
// scripted model server) on Settings → Model keys; the waiting run goes on and a new run
// succeeds, with no restart; the page shows the key as set and never its value; removing the key
// makes the next run wait again. The API token and a form without the page's token are refused.
func TestSettingsModelKeyInBrowser(t *testing.T) {
	t.Parallel()
	ctx := NewBrowser(t, 120*time.Second)
	e := NewEnv(t, settingsScript)
	modelURL := withoutModelKeys(e)
	e.Start()
	code := e.SetupCode()
	if st := e.Do("POST", "/v2/agents", `{"definition": {"id": "hello", "tools": []}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	startHello(e, "before")
	r := waitReason(e, "before", 20*time.Second, api.ReasonModelKeyMissing)
	if !strings.Contains(r.Status.Message, "ANTHROPIC_API_KEY") || !strings.Contains(r.Status.Message, "Settings → Model keys") {
		t.Errorf("the waiting run's message does not say which key to paste where: %q", r.Status.Message)
	}

	var before, after, afterRemove string
	var state, stateAfter string
	attr := func(sel, name string) string {
		a, _ := chromedp.Run(ctx, chromedp.AttributeValue(css(sel), name))
		return a.Value
	}
	html := func() string {
		h, _ := chromedp.Run(ctx, chromedp.OuterHTML(css("html")))
		return h
	}
	err := SignInBrowser(ctx, e.URL+"/settings", code, `h1#model-keys`)
	if err == nil {
		state, before = attr(`#provider-anthropic`, "data-state"), html()
		err = chromedp.Do(ctx,
			chromedp.SendKeys(css(`input[name=ANTHROPIC_API_KEY]`), pastedKey),
			chromedp.SendKeys(css(`input[name=ANTHROPIC_BASE_URL]`), modelURL),
			chromedp.Click(css(`#provider-anthropic button`)),
			chromedp.WaitVisible(css(`#note`)),
		)
	}
	if err == nil {
		stateAfter, after = attr(`#provider-anthropic`, "data-state"), html()
	}
	if err != nil {
		t.Fatalf("browser: %v\npage before:\n%s\nafter:\n%s", err, before, after)
	}
	if state != "missing" || !strings.Contains(before, "missing") {
		t.Errorf("before the paste the Anthropic key reads %q, want missing", state)
	}
	if stateAfter != "set" || !strings.Contains(after, "in use: <span class=\"key-source\">the key pasted here") {
		t.Errorf("after the paste the Anthropic key reads %q, and the page:\n%s", stateAfter, after)
	}
	if strings.Contains(after, pastedKey) || strings.Contains(after, pastedKey[8:]) {
		t.Errorf("the page shows the pasted key:\n%s", after)
	}
	if !strings.Contains(after, "1 run(s) waiting for a model key go on now") {
		t.Errorf("the paste did not wake the waiting run (note):\n%s", after)
	}
	// The run that waited goes on, and a new one succeeds: no restart.
	if r := e.WaitPhase("before", 30*time.Second, api.PhaseSucceeded, api.PhaseFailed); r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("the run that waited for the key is %s/%s %q", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	startHello(e, "after")
	if r := e.WaitPhase("after", 30*time.Second, api.PhaseSucceeded, api.PhaseFailed); r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("a run after the paste is %s/%s %q", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	if a := e.AnswerOf("after"); !strings.Contains(a, "hello from the pasted key") {
		t.Errorf("answer %q", a)
	}
	// Nothing about the key in the server's output, nor on the runs' timelines.
	if strings.Contains(e.Stderr.String(), pastedKey) {
		t.Error("the server's log has the pasted key")
	}
	for _, ev := range append(e.Events("before"), e.Events("after")...) {
		if strings.Contains(ev.Message, pastedKey) {
			t.Errorf("a timeline event has the pasted key: %+v", ev)
		}
	}

	// Remove: the next run waits for a key again.
	if err := chromedp.Do(ctx, chromedp.Click(css(`form[action="/settings/model-keys/anthropic/remove"] button`))); err != nil {
		t.Fatalf("remove: %v", err)
	}
	// The page the form returns to, once it has loaded (a query during the navigation fails).
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if afterRemove = html(); strings.Contains(afterRemove, "ANTHROPIC_API_KEY removed") {
			break
		}
	}
	if !strings.Contains(afterRemove, `id="provider-anthropic" data-state="missing"`) {
		t.Errorf("after removing, the page:\n%s", afterRemove)
	}
	startHello(e, "removed")
	waitReason(e, "removed", 20*time.Second, api.ReasonModelKeyMissing)

	// Only a signed-in person, with the page's token.
	session := consoleSession(e)
	form := url.Values{"ANTHROPIC_API_KEY": {"sk-ant-by-token"}}
	if st := consolePost(e, "/settings/model-keys/anthropic", "", e.Token, form); st != http.StatusForbidden {
		t.Errorf("the API token posting a model key: HTTP %d, want 403", st)
	}
	if st := consolePost(e, "/settings/model-keys/anthropic", session, "", form); st != http.StatusForbidden {
		t.Errorf("a model key posted without the page's CSRF token: HTTP %d, want 403", st)
	}
	for _, p := range []string{"/settings", "/settings/secrets"} {
		req, _ := http.NewRequest("GET", e.URL+p, nil)
		req.Header.Set("Authorization", "Bearer "+e.Token)
		resp, err := HTTPNoRedirectClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s with the API token: HTTP %d, want 401 or 403", p, resp.StatusCode)
		}
	}
	if r := e.GetRun("removed"); r.Status.Reason != api.ReasonModelKeyMissing {
		t.Errorf("a refused post changed the key: the run is %s/%s", r.Status.Phase, r.Status.Reason)
	}
}

// A key in the server's environment wins over a pasted one, and the page says so: with the
// pasted key pointing nowhere, runs still go to the environment's.
func TestSettingsEnvironmentKeyWins(t *testing.T) {
	t.Parallel()
	ctx := NewBrowser(t, 60*time.Second)
	e := NewEnv(t, settingsScript)
	e.Start()
	code := e.SetupCode()
	if st := e.Do("POST", "/v2/agents", `{"definition": {"id": "hello", "tools": []}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	var page string
	err := SignInBrowser(ctx, e.URL+"/settings", code, `h1#model-keys`)
	if err == nil {
		err = chromedp.Do(ctx,
			chromedp.SendKeys(css(`input[name=ANTHROPIC_API_KEY]`), pastedKey),
			chromedp.SendKeys(css(`input[name=ANTHROPIC_BASE_URL]`), "http://127.0.0.1:1"),
			chromedp.Click(css(`#provider-anthropic button`)),
			chromedp.WaitVisible(css(`#note`)),
		)
	}
	if err == nil {
		page, err = chromedp.Run(ctx, chromedp.OuterHTML(css("html")))
	}
	if err != nil {
		t.Fatalf("browser: %v\n%s", err, page)
	}
	if !strings.Contains(page, "in use: <span class=\"key-source\">the server's environment (it wins") || !strings.Contains(page, "that key stays in use") {
		t.Errorf("the page does not say the environment's key wins:\n%s", page)
	}
	if strings.Contains(page, pastedKey) || strings.Contains(page, "test-key") {
		t.Errorf("the page shows a key's value:\n%s", page)
	}
	startHello(e, "envwins")
	if r := e.WaitPhase("envwins", 30*time.Second, api.PhaseSucceeded, api.PhaseFailed); r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("with the environment's key and a pasted one pointing nowhere the run is %s/%s %q", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
}

// Settings → Secrets in the browser: paste a value under a name, see it listed as set (never its
// value), replace it, remove it.
func TestSettingsSecretsInBrowser(t *testing.T) {
	t.Parallel()
	ctx := NewBrowser(t, 120*time.Second) // a loaded machine: the package's other browsers run alongside
	e := NewEnv(t, settingsScript)
	e.Start()
	code := e.SetupCode()
	const value, value2 = "ghp-secret-value-4b8e2f6a1c3d", "ghp-second-value-7d5c3b1a9e8f"
	var listed, replaced, removed string
	html := func() string {
		h, _ := chromedp.Run(ctx, chromedp.OuterHTML(css("html")))
		return h
	}
	paste := func(v string) chromedp.Action[chromedp.Void] {
		return chromedp.Steps(
			chromedp.SendKeys(css(`input[name=name]`), "github"),
			chromedp.SendKeys(css(`input[name=key]`), "GH_TOKEN"),
			chromedp.SendKeys(css(`input[name=value]`), v),
			chromedp.Click(css(`#secret-form button`)))
	}
	err := SignInBrowser(ctx, e.URL+"/settings/secrets", code, `h1#secrets`)
	if err == nil {
		err = chromedp.Do(ctx, paste(value), chromedp.WaitVisible(css(`tr[data-secret=github]`)))
	}
	if err == nil {
		listed = html()
		err = chromedp.Do(ctx, paste(value2))
	}
	if err == nil {
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if replaced = html(); strings.Contains(replaced, "replaced, sealed") {
				break
			}
		}
		err = chromedp.Do(ctx, chromedp.Click(css(`tr[data-secret=github] button`)), chromedp.WaitVisible(css(`p#secret-list`)))
	}
	if err == nil {
		removed = html()
	}
	if err != nil {
		t.Fatalf("browser: %v\nlisted:\n%s\nreplaced:\n%s", err, listed, replaced)
	}
	if !strings.Contains(listed, "<code>GH_TOKEN</code>: set") {
		t.Errorf("the secret is not listed as set:\n%s", listed)
	}
	if !strings.Contains(replaced, "secret:github/GH_TOKEN replaced") {
		t.Errorf("the second paste does not say it replaced the value:\n%s", replaced)
	}
	for _, page := range []string{listed, replaced, removed} {
		if strings.Contains(page, value) || strings.Contains(page, value2) {
			t.Errorf("a page shows the secret's value:\n%s", page)
		}
	}
	if strings.Contains(removed, `data-secret="github"`) {
		t.Errorf("the removed secret is still listed:\n%s", removed)
	}
	var list struct{ Items []struct{ Name string } }
	e.Do("GET", "/v2/secrets", nil, &list)
	if len(list.Items) != 0 {
		t.Errorf("the API lists %+v after the removal", list.Items)
	}
	if strings.Contains(e.Stderr.String(), value) || strings.Contains(e.Stderr.String(), value2) {
		t.Error("the server's log has the secret's value")
	}
	// Only a signed-in person, with the page's token.
	form := url.Values{"name": {"gh"}, "value": {"x-by-token"}}
	if st := consolePost(e, "/settings/secrets", "", e.Token, form); st != http.StatusForbidden {
		t.Errorf("the API token posting a secret: HTTP %d, want 403", st)
	}
	if st := consolePost(e, "/settings/secrets", consoleSession(e), "", form); st != http.StatusForbidden {
		t.Errorf("a secret posted without the page's CSRF token: HTTP %d, want 403", st)
	}
}

func css(s string) chromedp.CSS { return chromedp.CSS(s) }

// consoleCSRF reads a console page with the session and returns the page's form token.
func consoleCSRF(e *Env, session, path string) string {
	e.T.Helper()
	req, _ := http.NewRequest("GET", e.URL+path, nil)
	req.AddCookie(&http.Cookie{Name: "agentrun_session", Value: session})
	resp, err := HTTPNoRedirectClient().Do(req)
	if err != nil {
		e.T.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindSubmatch(b)
	if resp.StatusCode != 200 || m == nil {
		e.T.Fatalf("GET %s: HTTP %d without a form token:\n%s", path, resp.StatusCode, b)
	}
	return string(m[1])
}

// A remote runner on PostgreSQL, started without any model key, runs with a key a person pastes
// on the server's Settings → Model keys: the run that waited ModelKeyMissing goes on, with no
// restart of either process (they share the store and the seal key).
func TestPGSettingsModelKeyReachesRemoteRunner(t *testing.T) {
	t.Parallel()
	c := NewCluster(t, settingsScript)
	modelURL := withoutModelKeys(c.Env)
	c.Extra = append(c.Extra, "AGENTRUN_SEAL_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	c.StartServer()
	c.StartRunner("r1")
	code := c.SetupCode()
	if st := c.Do("POST", "/v2/agents", `{"definition": {"id": "hello", "tools": []}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	startHello(c.Env, "remote")
	waitReason(c.Env, "remote", 30*time.Second, api.ReasonModelKeyMissing)

	var out struct {
		Session string `json:"session"`
	}
	if st := c.DoAs("", "POST", "/v2/login", `{"password": "correct horse battery", "setupCode": "`+code+`"}`, &out); st != 200 {
		t.Fatalf("login: HTTP %d", st)
	}
	csrf := consoleCSRF(c.Env, out.Session, "/settings")
	form := url.Values{"csrf": {csrf}, "ANTHROPIC_API_KEY": {pastedKey}, "ANTHROPIC_BASE_URL": {modelURL}}
	if st := consolePost(c.Env, "/settings/model-keys/anthropic", out.Session, "", form); st != http.StatusSeeOther {
		t.Fatalf("paste the key: HTTP %d", st)
	}
	r := c.WaitPhase("remote", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Runner != "r1" {
		t.Fatalf("after the paste the run is %s/%s %q on runner %q", r.Status.Phase, r.Status.Reason, r.Status.Message, r.Status.Runner)
	}
	if strings.Contains(c.Runners["r1"].Stderr.String(), pastedKey) {
		t.Error("the runner's log has the pasted key")
	}
}
