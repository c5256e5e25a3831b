package console

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"github.com/chromedp/chromedp"
)

// TestConsoleLearning: the console's Learning tab and a learning run's page, in headless
// Chromium against the real binary and the scripted model server. A run's page lists what its
// proposal kept, dropped (with the grader's reason), refused (with the check's reason) and left
// waiting, the waiting item linked to its approval, which the person approves there; the next
// run's page lists the notes it was given and the one it opened. On the Learning tab the person
// sees both notes with their ETags, a retire sent with a stale ETag shows the API's 412
// PreconditionFailed and changes nothing, a retire with the page's ETag removes the note, and
// Restore with the commit picked brings it back with the same ETag.
func TestConsoleLearning(t *testing.T) {
	t.Parallel()
	ctx := NewBrowser(t, 120*time.Second)
	drop := func(i int, reason string) map[string]any {
		return map[string]any{"item": i, "keep": false, "reason": reason}
	}
	friday := LearnNote("friday", "When not to deploy.", "Never deploy on Fridays.")
	script := LearnScript(
		Grader("Learn A", Keep(0, "a clear, useful fact"), drop(1, "too vague to help a later run"), Keep(2, "a rule the person stated")),
		ScriptEntry{Name: "a", Match: "Learn A", Turns: []ScriptTurn{
			{Text: "The deploy script is scripts/deploy.sh."},
			ProposeTurn(
				NoteItem("notes/deploy.md", DeployMD),
				NoteItem("notes/vague.md", LearnNote("vague", "How it went.", "Things went fine.")),
				NoteItem("notes/friday.md", friday),
				NoteItem("notes/../escape.md", DeployMD),
			),
		}},
		ScriptEntry{Name: "b", Match: "Learn B", Turns: []ScriptTurn{
			{ToolCalls: []map[string]any{{"name": "note", "input": map[string]any{"name": "deploy"}}}},
			{Text: "Deployed with what the note says."},
			ProposeTurn(),
		}},
	)
	e := NewEnv(t, script)
	e.Start()
	code := e.SetupCode()
	if st := e.Do("PUT", "/v2/agents/learner", LearnerAgent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	e.StartRun("learner", "la", "Learn A: find the deploy script")
	if r := e.WaitPhase("la", 60*time.Second, api.PhaseWaiting, api.PhaseSucceeded, api.PhaseFailed); r.Status.Reason != api.ReasonApproval {
		t.Fatalf("la: %s/%s %s; want Waiting/Approval for the risky note", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	var approvals struct{ Items []struct{ ID int64 } }
	e.Do("GET", "/v2/agentruns/la/approvals", nil, &approvals)
	if len(approvals.Items) != 1 {
		t.Fatalf("la's approvals: %+v", approvals.Items)
	}
	approval := approvals.Items[0].ID

	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }
	textOf := func(sel string) string {
		s, _ := chromedp.Run(ctx, chromedp.Text(css(sel), chromedp.AtLeast(0)))
		return s
	}
	// waitText reads sel until it holds want (a page that reloads itself is read again).
	waitText := func(sel, want string) string {
		var got string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if got = textOf(sel); strings.Contains(got, want) {
				break
			}
		}
		return got
	}
	must := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("browser: %s: %v\npage:\n%s", what, err, textOf("body"))
		}
	}

	// The run's page: the proposal's outcome, item by item, the risky one waiting on its approval.
	if err := SignInBrowser(ctx, e.URL+"/runs/la", code, `#proposal`); err != nil {
		t.Fatalf("sign in: %v", err)
	}
	row := func(i int) string { return textOf(fmt.Sprintf(`#proposal tr[data-item="%d"]`, i)) }
	for i, want := range []string{
		"note add notes/deploy.md kept a clear, useful fact",
		"note add notes/vague.md dropped by the grader too vague to help a later run",
		fmt.Sprintf("note add notes/friday.md waiting on approval %d", approval),
		"note add notes/../escape.md refused by the checks",
	} {
		if got := strings.Join(strings.Fields(row(i)), " "); !strings.Contains(got, want) {
			t.Errorf("la's proposal item %d reads %q; want %q", i, got, want)
		}
	}
	if got := textOf("#learning-given"); !strings.Contains(got, "an empty learning folder") || !strings.Contains(got, "with 0 notes") {
		t.Errorf("la's given notes: %q", got)
	}
	// The link goes to the approval on the same page; approving it there lets the run commit.
	must("approve from the proposal's link",
		chromedp.Click(css(fmt.Sprintf(`#proposal a[href="#approval-%d"]`, approval))),
		chromedp.WaitVisible(css(fmt.Sprintf(`#approval-%d button[value=approve]`, approval))),
		chromedp.Click(css(fmt.Sprintf(`#approval-%d button[value=approve]`, approval))),
	)
	if r := e.WaitPhase("la", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed); r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("la after the approval: %s %s", r.Status.Phase, r.Status.Message)
	}
	if got := waitText("#learning-committed", "notes/friday.md"); !strings.Contains(got, "committed") || !strings.Contains(got, "notes/deploy.md") {
		t.Errorf("la's page after the approval says %q; want the commit of both notes", got)
	}
	if got := strings.Join(strings.Fields(row(2)), " "); !strings.Contains(got, fmt.Sprintf("notes/friday.md kept after approval %d a rule the person stated", approval)) {
		t.Errorf("the approved item reads %q", got)
	}

	// The next run's page: the notes it was given and the one it opened.
	e.StartRun("learner", "lb", "Learn B: deploy again")
	e.AnswerOf("lb")
	must("open lb", chromedp.Navigate(e.URL+"/runs/lb"), chromedp.WaitVisible(css(`#learning-opened`)))
	if got := textOf("#learning-given"); !strings.Contains(got, "with 2 notes") || !strings.Contains(got, "notes/deploy.md") || !strings.Contains(got, "notes/friday.md") {
		t.Errorf("lb's given notes: %q", got)
	}
	if got := textOf("#learning-opened"); !strings.Contains(got, "It opened notes/deploy.md (step t0/tool/0)") {
		t.Errorf("lb's opened notes: %q", got)
	}
	if got := textOf("#proposal"); !strings.Contains(got, "It proposed nothing to keep.") {
		t.Errorf("lb's proposal: %q", got)
	}

	// The agents page links a learning agent's Learning tab.
	must("open the agents page", chromedp.Click(css(`a[href="/agents"]`)), chromedp.WaitVisible(css(`#agents tr[data-agent="learner"]`)))
	if got := textOf(`#agents tr[data-agent="learner"]`); !strings.Contains(got, "MCP tools · Learning") {
		t.Errorf("the agents page's learner row: %q", got)
	}
	must("back to lb", chromedp.Navigate(e.URL+"/runs/lb"), chromedp.WaitVisible(css(`#learning-given`)))
	// The Learning tab, reached from the run's page.
	var list struct{ Items []struct{ Path, ETag string } }
	e.Do("GET", "/v2/agents/learner/learning", nil, &list)
	if len(list.Items) != 2 || list.Items[0].Path != "notes/deploy.md" {
		t.Fatalf("learning list: %+v", list.Items)
	}
	deployETag, fridayETag := list.Items[0].ETag, list.Items[1].ETag
	deployRow := `#learned tr[data-path="notes/deploy.md"]`
	must("open the Learning tab", chromedp.Click(css(`#learning-given a[href="/agents/learner/learning"]`)), chromedp.WaitVisible(css(deployRow)))
	if got := textOf(deployRow); !strings.Contains(got, "Where the deploy script is.") || !strings.Contains(got, deployETag[:12]) {
		t.Errorf("the tab's deploy row: %q (etag %s)", got, deployETag)
	}
	if got := textOf("#log"); !strings.Contains(got, "run la kept add notes/deploy.md, add notes/friday.md") {
		t.Errorf("the tab's log: %q", got)
	}
	// A page older than main sends an ETag main no longer has: the API's 412 is shown and the note stays.
	must("retire with a stale etag",
		chromedp.SetValue(css(deployRow+` input[name=etag]`), fridayETag),
		chromedp.Click(css(`button[data-retire="notes/deploy.md"]`)),
		chromedp.WaitVisible(css(`#refused`)),
	)
	if got := textOf("#refused"); !strings.Contains(got, "PreconditionFailed (HTTP 412) on If-Match") || !strings.Contains(got, "its ETag is "+deployETag) {
		t.Errorf("a stale retire shows %q", got)
	}
	e.Do("GET", "/v2/agents/learner/learning", nil, &list)
	if len(list.Items) != 2 {
		t.Fatalf("a stale retire changed main: %+v", list.Items)
	}
	must("retire", chromedp.Navigate(e.URL+"/agents/learner/learning"), chromedp.WaitVisible(css(deployRow)),
		chromedp.Click(css(`button[data-retire="notes/deploy.md"]`)), chromedp.WaitVisible(css(`#done`)))
	if got := textOf("#done"); !strings.Contains(got, "Retired notes/deploy.md in commit") {
		t.Errorf("after retire: %q", got)
	}
	if got := textOf("#learned"); strings.Contains(got, "notes/deploy.md") || !strings.Contains(got, "notes/friday.md") {
		t.Errorf("main on the tab after retire: %q", got)
	}
	if got := textOf("#log"); !strings.Contains(got, "admin") || !strings.Contains(got, "retire notes/deploy.md") {
		t.Errorf("the log after retire: %q", got)
	}
	e.Do("GET", "/v2/agents/learner/learning", nil, &list)
	if len(list.Items) != 1 || list.Items[0].Path != "notes/friday.md" {
		t.Fatalf("main after retire in the console: %+v", list.Items)
	}
	// Restore picks the commit of run la.
	var log struct {
		Items []struct{ Hash, Message string }
	}
	e.Do("GET", "/v2/agents/learner/learning/log", nil, &log)
	var fromA string
	for _, c := range log.Items {
		if strings.HasPrefix(c.Message, "run la kept") {
			fromA = c.Hash
		}
	}
	if fromA == "" {
		t.Fatalf("no commit of run la in the log: %+v", log.Items)
	}
	retiredRow := `#retired tr[data-path="notes/deploy.md"]`
	must("restore",
		chromedp.SetValue(css(retiredRow+` select[name=from]`), fromA),
		chromedp.Click(css(`button[data-restore="notes/deploy.md"]`)),
	)
	// The page before says what the retire did: read until the restore's page is there.
	if got := waitText("#done", "Restored"); !strings.Contains(got, "Restored notes/deploy.md in commit") {
		t.Errorf("after restore: %q", got)
	}
	if got := textOf(deployRow); !strings.Contains(got, deployETag[:12]) {
		t.Errorf("the restored note's row: %q", got)
	}
	e.Do("GET", "/v2/agents/learner/learning", nil, &list)
	if len(list.Items) != 2 || list.Items[0].Path != "notes/deploy.md" || list.Items[0].ETag != deployETag {
		t.Fatalf("main after restore in the console: %+v", list.Items)
	}
	e.Do("GET", "/v2/agents/learner/learning/log", nil, &log)
	if len(log.Items) == 0 || !strings.HasPrefix(log.Items[0].Message, "restore notes/deploy.md from "+fromA) || !strings.Contains(log.Items[0].Message, "By: admin") {
		t.Errorf("the newest commit: %+v", log.Items)
	}
	// A form without a session (and the page's token) is sent to sign in and changes nothing.
	resp, err := HTTPNoRedirectClient().PostForm(e.URL+"/agents/learner/learning/retire", map[string][]string{"path": {"notes/friday.md"}, "etag": {fridayETag}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != 303 || !strings.HasPrefix(loc, "/login") {
		t.Errorf("a retire without a session: HTTP %d to %q", resp.StatusCode, loc)
	}
	e.Do("GET", "/v2/agents/learner/learning", nil, &list)
	if len(list.Items) != 2 {
		t.Errorf("a retire without a session changed main: %+v", list.Items)
	}
}
