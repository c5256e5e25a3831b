package console

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/computer/local"
	"agentrun.dev/agentrun/internal/trigger"
)

const agentsScript = `
entries:
  - name: lead
    match: "Score this lead"
    turns:
      - text: '{"score": 82, "company": "Example Analytics", "reasons": ["B2B analytics software (https://example.com/about)"], "next": "book a call"}'
  - name: hello
    match: "Say hello"
    turns:
      - text: "hello from a console agent"
`

// webhookSecret is the signing secret the tests paste: it must never come back in a page.
const webhookSecret = "whsec_c2VjcmV0LXBhc3RlZC1pbi10aGUtY29uc29sZQ=="

// pageHTML is the page's HTML now ("" during a navigation).
func pageHTML(ctx context.Context) string {
	h, _ := chromedp.Run(ctx, chromedp.OuterHTML(css("html")))
	return h
}

// waitHTML waits until the page holds want (a navigation may be under way), and returns it.
func waitHTML(ctx context.Context, want string, d time.Duration) string {
	var h string
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if h = pageHTML(ctx); strings.Contains(h, want) {
			break
		}
	}
	return h
}

// The seed's three steps, as a newcomer takes them in the browser on a server started without a
// model key: set the password (the setup code's first sign-in), paste a model key under Settings
// → Model keys (the scripted model server stands in for the vendor, given as the base URL), open
// Templates, apply inbound-lead (its webhook's signing secret pasted on the same screen), start
// a run from the page apply lands on, and see it finish.
func TestSeedThreeStepsInBrowser(t *testing.T) {
	t.Parallel()
	ctx := NewBrowser(t, 120*time.Second)
	e := NewEnv(t, agentsScript)
	modelURL := withoutModelKeys(e)
	e.Start()
	code := e.SetupCode()

	var applyPage, applied, runPage string
	err := SignInBrowser(ctx, e.URL+"/settings", code, `h1#model-keys`)
	if err == nil {
		err = chromedp.Do(ctx,
			chromedp.SendKeys(css(`input[name=ANTHROPIC_API_KEY]`), pastedKey),
			chromedp.SendKeys(css(`input[name=ANTHROPIC_BASE_URL]`), modelURL),
			chromedp.Click(css(`#provider-anthropic button`)),
			chromedp.WaitVisible(css(`#note`)),
			chromedp.Click(css(`nav.nav a[href="/templates"]`)),
			chromedp.WaitVisible(css(`#templates`)),
			chromedp.Click(css(`a[href="/templates/inbound-lead"]`)),
			chromedp.WaitVisible(css(`#apply-form`)),
		)
	}
	if err == nil {
		applyPage = pageHTML(ctx)
		err = chromedp.Do(ctx,
			chromedp.SendKeys(css(`input[name=secret-webhook]`), webhookSecret),
			chromedp.Click(css(`#apply-template`)),
			chromedp.WaitVisible(css(`#applied`)),
		)
	}
	if err == nil {
		applied = pageHTML(ctx)
		err = chromedp.Do(ctx,
			chromedp.SendKeys(css(`#start-run textarea[name=input]`), "Score this lead: ada@example.com of Example Analytics"),
			chromedp.Click(css(`#start-run button`)),
		)
	}
	if err != nil {
		t.Fatalf("browser: %v\ntemplate page:\n%s\napplied:\n%s", err, applyPage, applied)
	}
	// The run's page: its name is in the URL the form sent the browser to.
	var loc string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline) && !strings.Contains(loc, "/runs/"); time.Sleep(100 * time.Millisecond) {
		loc, _ = chromedp.Run(ctx, chromedp.Location())
	}
	run := loc[strings.LastIndex(loc, "/")+1:]
	if !strings.Contains(loc, "/runs/inbound-lead-") {
		t.Fatalf("Start a run went to %q, not the run's page", loc)
	}
	r := e.WaitPhase(run, 60*time.Second, api.PhaseSucceeded, api.PhaseFailed, api.PhaseWaiting)
	if r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("the run started in the console is %s/%s %q", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	if runPage = waitHTML(ctx, "Succeeded", 20*time.Second); !strings.Contains(runPage, "Succeeded") || !strings.Contains(runPage, "Example Analytics") {
		t.Errorf("the run's page does not show it finished with its answer:\n%s", runPage)
	}
	if !strings.Contains(applyPage, `type="password" id="secret-webhook"`) {
		t.Errorf("the template page does not ask for the webhook's signing secret as a password:\n%s", applyPage)
	}
	for _, want := range []string{"web_fetch", "$0.50", "webhook"} {
		if !strings.Contains(applyPage, want) {
			t.Errorf("the template page does not show %q (tools, cap, trigger):\n%s", want, applyPage)
		}
	}
	if !strings.Contains(applied, `href="/agents/inbound-lead"`) || !strings.Contains(applied, "inbound-lead-webhook") || !strings.Contains(applied, "active") {
		t.Errorf("the applied page does not link the agent and its active trigger:\n%s", applied)
	}
	// The trigger was made unsuspended with the pasted secret, which no page shows, and a
	// delivery signed with it starts a run.
	var tr api.Trigger
	if st := e.Do("GET", "/v2/triggers/inbound-lead-webhook", nil, &tr); st != 200 || tr.Spec.Suspend {
		t.Errorf("the template's trigger: HTTP %d, suspended %v", st, tr.Spec.Suspend)
	}
	now := time.Now().Unix()
	body := []byte(`{"email": "bo@example.com", "company": "Example Analytics"}`)
	st, b := e.Hook("inbound-lead-webhook", StandardHeaders("msg_1", now, trigger.SignStandard(webhookSecret, "msg_1", now, body)), body)
	var fa FireAnswer
	json.Unmarshal(b, &fa)
	if st != 201 || fa.Fire.Outcome != api.FireStarted {
		t.Errorf("a delivery signed with the pasted secret: HTTP %d %s", st, b)
	}
	for _, page := range []string{applyPage, applied, runPage} {
		if strings.Contains(page, webhookSecret) || strings.Contains(page, pastedKey) {
			t.Errorf("a page shows a pasted secret:\n%s", page)
		}
	}
	if strings.Contains(e.Stderr.String(), webhookSecret) {
		t.Error("the server's log has the pasted signing secret")
	}
}

// Templates → Apply without the signing secret the template's trigger needs: the page says so
// beside the secret's field and nothing is made (no agent, no trigger, no secret).
func TestTemplateApplyRefusesMissingSecret(t *testing.T) {
	t.Parallel()
	ctx := NewBrowser(t, 60*time.Second)
	e := NewEnv(t, agentsScript)
	e.Start()
	var page string
	err := SignInBrowser(ctx, e.URL+"/templates/inbound-lead", e.SetupCode(), `#apply-form`)
	if err == nil {
		err = chromedp.Do(ctx, chromedp.Click(css(`#apply-template`)), chromedp.WaitVisible(css(`#secret-webhook-error`)))
	}
	page = pageHTML(ctx)
	if err != nil {
		t.Fatalf("browser: %v\n%s", err, page)
	}
	if !regexp.MustCompile(`data-field="secret-webhook" data-code="Required"`).MatchString(page) || !strings.Contains(page, "inbound-lead-hook") {
		t.Errorf("the refusal does not name the missing secret beside its field:\n%s", page)
	}
	if st := e.Do("GET", "/v2/agents/inbound-lead", nil, nil); st != 404 {
		t.Errorf("a refused apply made the agent: HTTP %d", st)
	}
	if st := e.Do("GET", "/v2/triggers/inbound-lead-webhook", nil, nil); st != 404 {
		t.Errorf("a refused apply made the trigger: HTTP %d", st)
	}
	// The secret pasted, but the agent's name taken: refused at the name, and the secret sealed
	// for the apply is removed again (all or nothing).
	err = chromedp.Do(ctx,
		chromedp.SetValue(css(`#name`), "claude-assistant"),
		chromedp.SendKeys(css(`input[name=secret-webhook]`), webhookSecret),
		chromedp.Click(css(`#apply-template`)),
		chromedp.WaitVisible(css(`#name-error`)))
	page = pageHTML(ctx)
	if err != nil || !strings.Contains(page, `data-field="name" data-code="AlreadyExists"`) || strings.Contains(page, webhookSecret) {
		t.Errorf("apply under a taken name: %v\n%s", err, page)
	}
	var list struct{ Items []struct{ Name string } }
	e.Do("GET", "/v2/secrets", nil, &list)
	if len(list.Items) != 0 {
		t.Errorf("a refused apply left secrets: %+v", list.Items)
	}
	if st := e.Do("GET", "/v2/triggers/claude-assistant-webhook", nil, nil); st != 404 {
		t.Errorf("a refused apply made the trigger: HTTP %d", st)
	}
}

// New agent, keyboard only: a name the API refuses stays on the page with the API's code and
// field beside the name, nothing is made; the name fixed, Enter makes the agent, and the agent
// is what `apply` would make of the same answers.
func TestNewAgentFieldErrorInBrowser(t *testing.T) {
	t.Parallel()
	ctx := NewBrowser(t, 60*time.Second)
	e := NewEnv(t, agentsScript)
	e.Start()
	var refused, made string
	err := SignInBrowser(ctx, e.URL+"/agents/new", e.SetupCode(), `#new-agent-form`)
	// Tab alone goes through the form's fields in order, the button last.
	var order []string
	for i := 0; err == nil && i < 80 && !Contains(order, "make-agent"); i++ {
		err = chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab))
		id, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement ? document.activeElement.id : ""`))
		if id != "" && (len(order) == 0 || order[len(order)-1] != id) {
			order = append(order, id)
		}
	}
	want := []string{"name", "instructions", "harness", "access", "provider", "model", "apiKeySecret", "tool-web_fetch", "computer", "network", "approvalDefault", "approvals", "cap", "learning", "make-agent"}
	at := 0
	for _, id := range order {
		if at < len(want) && id == want[at] {
			at++
		}
	}
	if at != len(want) {
		t.Errorf("Tab reaches %v; want %v in this order, the button last", order, want)
	}
	if err == nil {
		err = chromedp.Do(ctx,
			chromedp.SendKeys(css(`#name`), "Support Bot"),
			chromedp.SendKeys(css(`#instructions`), "Say hello to whoever writes."),
			chromedp.SendKeys(css(`#cap`), "0.25"),
			chromedp.SendKeys(css(`#approvals`), "deny web_fetch(https://internal.example/*)"),
			chromedp.SendKeys(css(`#tool-web_fetch`), " "), // a space ticks a focused checkbox
			chromedp.SendKeys(css(`#name`), kb.Enter),
			chromedp.WaitVisible(css(`#name-error`)),
		)
	}
	if err == nil {
		refused = pageHTML(ctx)
		var list api.List[api.Agent]
		e.Do("GET", "/v2/agents", nil, &list)
		if len(list.Items) != 1 { // the ready-made claude-assistant only
			t.Errorf("the refused form made an agent: %d agents", len(list.Items))
		}
		// Clear the name and type the fixed one; Enter sends the form again.
		err = chromedp.Do(ctx,
			chromedp.Focus(css(`#name`)),
			chromedp.KeyEvent(kb.End),
			chromedp.KeyEvent(strings.Repeat(kb.Backspace, len("Support Bot"))),
			chromedp.SendKeys(css(`#name`), "support-bot"+kb.Enter),
			chromedp.WaitVisible(css(`#made`)),
		)
	}
	if err == nil {
		made = pageHTML(ctx)
	}
	if err != nil {
		t.Fatalf("browser: %v\nrefused:\n%s\nmade:\n%s", err, refused, made)
	}
	if !strings.Contains(refused, `data-field="name" data-code="Invalid"`) || !strings.Contains(refused, "metadata.name") || !strings.Contains(refused, `value="Support Bot"`) {
		t.Errorf("the refused form does not keep the name with the API's error beside it:\n%s", refused)
	}
	if !strings.Contains(refused, "Say hello to whoever writes.") || !strings.Contains(refused, `value="0.25"`) {
		t.Errorf("the refused form lost the other answers:\n%s", refused)
	}
	var a api.Agent
	if st := e.Do("GET", "/v2/agents/support-bot", nil, &a); st != 200 {
		t.Fatalf("the fixed form made no agent: HTTP %d\n%s", st, made)
	}
	if a.Spec.System != "Say hello to whoever writes." || a.Spec.PerRunMaxCostUSD != "0.25" || len(a.Spec.Tools) != 1 || a.Spec.Tools[0] != "web_fetch" ||
		a.Spec.Approvals == nil || len(a.Spec.Approvals.Rules) != 1 || a.Spec.Approvals.Rules[0].Action != "deny" {
		t.Errorf("the agent made: %+v", a.Spec)
	}
}

// New agent with three mistakes (the name, the cap, an approval rule): the page marks all three
// fields with the API's code and field path at once, not the first only, and makes nothing.
func TestNewAgentEveryMistakeInBrowser(t *testing.T) {
	t.Parallel()
	ctx := NewBrowser(t, 60*time.Second)
	e := NewEnv(t, agentsScript)
	e.Start()
	var refused string
	err := SignInBrowser(ctx, e.URL+"/agents/new", e.SetupCode(), `#new-agent-form`)
	if err == nil {
		err = chromedp.Do(ctx,
			chromedp.SendKeys(css(`#name`), "Bad Name"),
			chromedp.SendKeys(css(`#instructions`), "Say hello."),
			chromedp.SendKeys(css(`#cap`), "lots"),
			chromedp.SendKeys(css(`#approvals`), "maybe web_fetch"),
			chromedp.Click(css(`#make-agent`)),
			chromedp.WaitVisible(css(`#name-error`)),
		)
	}
	if err == nil {
		refused = pageHTML(ctx)
	}
	if err != nil {
		t.Fatalf("browser: %v\n%s", err, refused)
	}
	for _, want := range []string{`data-field="name" data-code="Invalid"`, "metadata.name",
		`data-field="cap" data-code="Invalid"`, "spec.perRunMaxCostUSD",
		`data-field="approvals" data-code="Invalid"`, "spec.approvals.rules[0].action", "3 fields marked below"} {
		if !strings.Contains(refused, want) {
			t.Errorf("the refused form does not show %s:\n%s", want, refused)
		}
	}
	var list api.List[api.Agent]
	e.Do("GET", "/v2/agents", nil, &list)
	if len(list.Items) != 1 { // the ready-made claude-assistant only
		t.Errorf("the refused form made an agent: %d agents", len(list.Items))
	}
}

// A revision diff: an agent changed over the API shows, from its page's revisions list, the
// lines of its spec that changed between revision 1 and 2.
func TestRevisionDiffInBrowser(t *testing.T) {
	t.Parallel()
	ctx := NewBrowser(t, 60*time.Second)
	e := NewEnv(t, agentsScript)
	e.Start()
	if st := e.Do("POST", "/v2/agents", `{"kind": "Agent", "metadata": {"name": "greeter"}, "spec": {"system": "Say hello.\nBe brief.", "perRunMaxCostUSD": "0.50"}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	if st := e.Do("PATCH", "/v2/agents/greeter", `{"spec": {"system": "Say hello.\nBe warm.", "perRunMaxCostUSD": "0.75"}}`, nil); st != 200 {
		t.Fatalf("patch agent: HTTP %d", st)
	}
	var agentPage, diff string
	err := SignInBrowser(ctx, e.URL+"/agents/greeter", e.SetupCode(), `#revisions`)
	if err == nil {
		agentPage = pageHTML(ctx)
		err = chromedp.Do(ctx, chromedp.Click(css(`a[href="/agents/greeter/revisions/1..2"]`)), chromedp.WaitVisible(css(`#diff`)))
	}
	if err == nil {
		diff = pageHTML(ctx)
	}
	if err != nil {
		t.Fatalf("browser: %v\nagent page:\n%s\ndiff:\n%s", err, agentPage, diff)
	}
	for _, want := range []string{`<del>− perRunMaxCostUSD: "0.50"</del>`, `<ins>+ perRunMaxCostUSD: "0.75"</ins>`,
		`<del>−   Be brief.</del>`, `<ins>+   Be warm.</ins>`, "2 lines added, 2 removed"} {
		if !strings.Contains(diff, want) {
			t.Errorf("the diff lacks %s:\n%s", want, diff)
		}
	}
	if strings.Contains(diff, `<del>−   Say hello.</del>`) || !strings.Contains(diff, `<code class="diff-line">    Say hello.</code>`) {
		t.Errorf("an unchanged line is marked removed:\n%s", diff)
	}
	// Stopped, the agent refuses a run started on its page: the API's code beside the input,
	// which is kept, and no run made.
	if st := e.Do("PATCH", "/v2/agents/greeter", `{"spec": {"state": "Stopped"}}`, nil); st != 200 {
		t.Fatalf("stop the agent: HTTP %d", st)
	}
	var refused string
	err = chromedp.Do(ctx, chromedp.Navigate(e.URL+"/agents/greeter"),
		chromedp.SendKeys(css(`#run-input`), "Say hello"),
		chromedp.Click(css(`#start-run button`)),
		chromedp.WaitVisible(css(`#run-input-error`)))
	refused = pageHTML(ctx)
	if err != nil || !strings.Contains(refused, `data-code="AgentStopped"`) || !strings.Contains(refused, ">Say hello</textarea>") {
		t.Errorf("a run of a stopped agent: %v\n%s", err, refused)
	}
	if runs := ListRuns(e); len(runs) != 0 {
		t.Errorf("a refused start made runs: %v", runs)
	}
}

// Settings → Computers: every provider with whether it works here; Test runs the local
// provider's sandbox checks, the page shows each check's result, and nothing the checks made is
// left running or on disk.
func TestComputersTestInBrowser(t *testing.T) {
	t.Parallel()
	if a := local.New().Available(context.Background()); !a.Available {
		t.Skip("the local sandbox is not available here: " + a.Reason)
	}
	ctx := NewBrowser(t, 150*time.Second)
	e := NewEnv(t, agentsScript)
	// The server's scratch folders go under a folder of this test's own, so what is left is its.
	tmp := t.TempDir()
	e.Extra = append(e.Extra, "TMPDIR="+tmp)
	e.Start()
	var page, result string
	err := SignInBrowser(ctx, e.URL+"/settings/computers", e.SetupCode(), `#providers`)
	if err == nil {
		page = pageHTML(ctx)
		err = chromedp.Do(ctx, chromedp.Click(css(`#test-local`)), chromedp.WaitVisible(css(`#test-done`)))
	}
	if err == nil {
		// The results page has just loaded after the form's POST: read it once it holds the
		// summary (one read while the document was still being replaced came back empty).
		result = waitHTML(ctx, `id="test-done"`, 30*time.Second)
	}
	if err != nil {
		t.Fatalf("browser: %v\ncomputers:\n%s\ntest:\n%s", err, page, result)
	}
	// The results page's accessibility (TestAgentPagesA11y has the other pages), in a subtest
	// of its own: it skips when axe-core cannot be installed.
	t.Run("axe", func(t *testing.T) { CheckA11y(t, ctx, "/settings/computers/test/local") })
	for _, want := range []string{`data-provider="local" data-available="true"`, `data-provider="daytona" data-available="false"`, "DAYTONA_API_KEY", "missing"} {
		if !strings.Contains(page, want) {
			t.Errorf("the Computers page lacks %s:\n%s", want, page)
		}
	}
	if !strings.Contains(result, `data-result="passed"`) || !strings.Contains(result, "ExecExitCodeAndOutput") {
		t.Errorf("the test page shows no passed check:\n%s", result)
	}
	// Nothing left: no process of a check, and the scratch folder gone.
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), filepath.Join(tmp, "agentrun-console-test-")) {
			t.Errorf("a process of the test is left: %s", strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "agentrun-console-test-*")); len(left) > 0 {
		t.Errorf("the test's scratch folders are left: %v", left)
	}

	// A vendor's key: pasted, listed as set, never shown, sealed as the vendor's secret.
	const vendorKey = "dtn-pasted-key-5e1f7a3c9b"
	var keys string
	err = chromedp.Do(ctx, chromedp.Navigate(e.URL+"/settings/computers"),
		chromedp.SendKeys(css(`#daytona-DAYTONA_API_KEY`), vendorKey),
		chromedp.Click(css(`#vendor-daytona button.primary`)),
		chromedp.WaitVisible(css(`#note`)))
	if err == nil {
		keys = pageHTML(ctx)
	}
	if err != nil || !strings.Contains(keys, "Daytona keys saved, sealed.") || strings.Contains(keys, vendorKey) {
		t.Errorf("paste a vendor key: %v\n%s", err, keys)
	}
	if m := regexp.MustCompile(`data-key="DAYTONA_API_KEY">([^<]*)<`).FindStringSubmatch(keys); m == nil || !strings.HasPrefix(m[1], "set") {
		t.Errorf("the pasted key is not shown as set: %v", m)
	}
	var list struct {
		Items []struct {
			Name string
			Keys []string
		}
	}
	e.Do("GET", "/v2/secrets", nil, &list)
	if len(list.Items) != 1 || list.Items[0].Name != "daytona" || len(list.Items[0].Keys) != 1 || list.Items[0].Keys[0] != "DAYTONA_API_KEY" {
		t.Errorf("the secrets after the paste: %+v", list.Items)
	}
	// Only a signed-in person: the API token cannot run a test nor paste a key.
	for _, p := range []string{"/settings/computers/test/local", "/settings/computers/vendors/daytona"} {
		if st := consolePost(e, p, "", e.Token, nil); st != http.StatusForbidden {
			t.Errorf("POST %s with the API token: HTTP %d, want 403", p, st)
		}
	}
}

// axe-core on every page of the agents, templates and computers area, in both themes, with its
// error states: no serious or critical violation.
func TestAgentPagesA11y(t *testing.T) {
	t.Parallel()
	ctx := NewBrowser(t, 150*time.Second)
	AxeSource(t) // skip here, before anything, when axe-core cannot be installed
	e := NewEnv(t, agentsScript)
	e.Start()
	if st := e.Do("POST", "/v2/agents", `{"kind": "Agent", "metadata": {"name": "greeter"}, "spec": {"system": "Say hello.\nBe brief."}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.Do("PATCH", "/v2/agents/greeter", `{"spec": {"system": "Say hello.\nBe warm."}}`, nil)
	e.Do("POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"g1"},"spec":{"agent":"greeter","input":"Say hello"}}`, nil)
	e.WaitPhase("g1", 30*time.Second, api.PhaseSucceeded, api.PhaseFailed)
	if err := SignInBrowser(ctx, e.URL+"/agents", e.SetupCode(), `#agents`); err != nil {
		t.Fatal(err)
	}
	// With -update-screenshots each page is also saved under docs/console/ in both themes.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 860)); err != nil {
		t.Fatal(err)
	}
	shoot := func(name string) {
		if !screenshotsWanted() {
			return
		}
		for _, scheme := range []string{"light", "dark"} {
			EmulateColorScheme(ctx, scheme)
			png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			if err == nil {
				err = os.WriteFile(filepath.Join("..", "..", "docs", "console", name+"-"+scheme+".png"), png, 0o644)
			}
			if err != nil {
				t.Errorf("screenshot %s: %v", name, err)
			}
		}
		EmulateColorScheme(ctx, "light")
	}
	check := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, pageHTML(ctx))
		}
		CheckA11y(t, ctx, what)
		shoot(strings.NewReplacer("/", "-", " ", "-", ".", "").Replace(strings.TrimPrefix(what, "/")))
	}
	open := func(path, sel string) []chromedp.Action[chromedp.Void] {
		return []chromedp.Action[chromedp.Void]{chromedp.Navigate(e.URL + path), chromedp.WaitVisible(css(sel))}
	}
	check("/agents", open("/agents", `#agents`)...)
	check("/agents/greeter", open("/agents/greeter", `#revisions`)...)
	check("/agents/greeter/revisions/1..2", open("/agents/greeter/revisions/1..2", `#diff`)...)
	check("/agents/new", open("/agents/new", `#new-agent-form`)...)
	check("/agents/new refused", chromedp.SendKeys(css(`#name`), "Bad Name"), chromedp.Click(css(`#make-agent`)), chromedp.WaitVisible(css(`#name-error`)))
	check("/templates", open("/templates", `#templates`)...)
	check("/templates/inbound-lead", open("/templates/inbound-lead", `#apply-form`)...)
	check("/templates/inbound-lead refused", chromedp.Click(css(`#apply-template`)), chromedp.WaitVisible(css(`#secret-webhook-error`)))
	check("/templates/market-monitor/applied", append(open("/templates/market-monitor", `#apply-form`), chromedp.Click(css(`#apply-template`)), chromedp.WaitVisible(css(`#applied`)))...)
	check("/settings/computers", open("/settings/computers", `#providers`)...)
}
