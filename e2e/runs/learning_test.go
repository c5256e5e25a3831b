package runs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// TestLearning drives a learning agent through the real binary and the scripted model server:
// a run learns a note and the next run's first model request carries it in its instructions (and
// opens it with the note tool); the proposal's item holding the run's own model key, a path that
// escapes and an oversize note are refused by code (the key is nowhere in the folder or the
// timeline); the grader drops one item and keeps another; a risky rule waits for a signed-in
// person and is committed only after the approval; retire with a stale ETag is refused 412, with
// the right one committed, and restore brings the note back; the bundle clones with git; two
// runs finishing at once both commit.
func TestLearning(t *testing.T) {
	t.Parallel()
	big := LearnNote("big", "Too long.", strings.Repeat("word ", 1000))
	script := LearnScript(
		Grader("Learn A", Keep(0, "a clear, useful fact"), map[string]any{"item": 1, "keep": false, "reason": "too vague to help a later run"}),
		Grader("Learn B", Keep(0, "a rule the person stated")),
		Grader("Learn C1", Keep(0, "useful")),
		Grader("Learn C2", Keep(0, "useful")),
		ScriptEntry{Name: "a", Match: "Learn A", Turns: []ScriptTurn{
			{Text: "The deploy script is scripts/deploy.sh."},
			ProposeTurn(
				NoteItem("notes/deploy.md", DeployMD),
				NoteItem("notes/vague.md", LearnNote("vague", "How it went.", "Things went fine.")),
				NoteItem("notes/key.md", LearnNote("key", "The model key.", "The model key is test-key, keep it.")),
				NoteItem("notes/../../../etc/passwd.md", DeployMD),
				NoteItem("notes/big.md", big),
			),
		}},
		ScriptEntry{Name: "b", Match: "Learn B", Turns: []ScriptTurn{
			{ToolCalls: []map[string]any{{"name": "note", "input": map[string]any{"name": "deploy"}}}},
			{Text: "Deployed with what the note says."},
			ProposeTurn(NoteItem("notes/friday.md", LearnNote("friday", "When not to deploy.", "Never deploy on Fridays."))),
		}},
		ScriptEntry{Name: "c1", Match: "Learn C1", Turns: []ScriptTurn{{Text: "one"}, ProposeTurn(NoteItem("notes/c1.md", LearnNote("c1", "Fact one.", "The first fact.")))}},
		ScriptEntry{Name: "c2", Match: "Learn C2", Turns: []ScriptTurn{{Text: "two"}, ProposeTurn(NoteItem("notes/c2.md", LearnNote("c2", "Fact two.", "The second fact.")))}},
	)
	e := NewEnv(t, script)
	var mu sync.Mutex
	var bodies [][]byte
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		e.Model.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"}, "ANTHROPIC_BASE_URL="+proxy.URL)

	var ag api.Agent
	if st := e.Do("PUT", "/v2/agents/learner", LearnerAgent, &ag); st != 201 || !Contains(ag.Status.Tools, "note") {
		t.Fatalf("create agent: HTTP %d, tools %v", st, ag.Status.Tools)
	}
	var apiErr api.Error
	e.Do("PUT", "/v2/agents/plain", `{"metadata":{"name":"plain"},"spec":{"computer":{"kind":"none"}}}`, nil)
	if st := e.Do("GET", "/v2/agents/plain/learning", nil, &apiErr); st != 409 || apiErr.Code != api.CodeLearningOff {
		t.Errorf("learning of an agent without it: HTTP %d %+v", st, apiErr)
	}

	// Run A: one note kept, one dropped by the grader, three refused by code.
	e.StartRun("learner", "la", "Learn A: find the deploy script")
	if got := e.AnswerOf("la"); got != "The deploy script is scripts/deploy.sh." {
		t.Errorf("answer of la: %q", got)
	}
	evs := e.Events("la")
	for _, want := range []struct {
		typ  api.EventType
		text string
	}{
		{api.EventLearningGiven, "0 notes"},
		{api.EventLearningProposed, "5 items"},
		{api.EventLearningRefused, "notes/key.md refused: it holds a secret the run was handed"},
		{api.EventLearningRefused, "notes/../../../etc/passwd.md refused: path"},
		{api.EventLearningRefused, "notes/big.md refused: the note is"},
		{api.EventLearningDropped, "notes/vague.md dropped by the grader: too vague to help a later run"},
		{api.EventLearningKept, "notes/deploy.md kept"},
		{api.EventLearningCommitted, "notes/deploy.md"},
	} {
		if !HasEvent(evs, want.typ, want.text) {
			t.Errorf("la's timeline lacks %s %q", want.typ, want.text)
		}
	}
	// The proposal and the grade are the run's own model calls: journaled and billed to it.
	billed := map[string]bool{}
	for _, st := range e.Steps("la") {
		if st.Kind == "model" && st.CostMicros != nil && *st.CostMicros > 0 {
			billed[st.Key] = true
		}
	}
	if !billed["learn/propose"] || !billed["learn/grade"] {
		t.Errorf("la's billed model steps are %v; want learn/propose and learn/grade among them", billed)
	}
	evJSON, _ := json.Marshal(evs)
	if bytes.Contains(evJSON, []byte("test-key")) {
		t.Error("the run's model key is on its timeline")
	}
	var list struct {
		Main  string
		Items []struct{ Kind, Path, ETag, Name, Description string }
	}
	e.Do("GET", "/v2/agents/learner/learning", nil, &list)
	if len(list.Items) != 1 || list.Items[0].Path != "notes/deploy.md" || list.Items[0].Description != "Where the deploy script is." || list.Items[0].ETag == "" {
		t.Fatalf("learning list after la: %+v", list)
	}
	deployETag := list.Items[0].ETag
	if show := e.MustCLI(0, "learning", "show", "learner", "deploy").Stdout; show != DeployMD {
		t.Errorf("learning show: %q", show)
	}

	// Run B: its first model request carries the note; it opens it; its rule waits for a person.
	e.StartRun("learner", "lb", "Learn B: deploy again")
	r := e.WaitPhase("lb", 60*time.Second, api.PhaseWaiting, api.PhaseSucceeded, api.PhaseFailed)
	if r.Status.Phase != api.PhaseWaiting || r.Status.Reason != api.ReasonApproval {
		t.Fatalf("lb: %s/%s %s; want Waiting/Approval", r.Status.Phase, r.Status.Reason, r.Status.Message)
	}
	mu.Lock()
	var first struct {
		System json.RawMessage `json:"system"`
	}
	for _, b := range bodies {
		if bytes.Contains(b, []byte("Learn B: deploy again")) {
			_ = json.Unmarshal(b, &first)
			break
		}
	}
	mu.Unlock()
	if !strings.Contains(string(first.System), "deploy (notes/deploy.md): Where the deploy script is.") {
		t.Errorf("lb's first model request lacks the learned note in its instructions: %s", first.System)
	}
	if res := e.ToolResults("lb")["t0/tool/0"]; res.IsError || res.Content != DeployMD {
		t.Errorf("the note tool's result: %+v", res)
	}
	evs = e.Events("lb")
	if !HasEvent(evs, api.EventLearningGiven, "1 notes") || !HasEvent(evs, api.EventLearningOpened, "opened note notes/deploy.md") {
		t.Error("lb's timeline does not say which notes it was given and opened")
	}
	e.Do("GET", "/v2/agents/learner/learning", nil, &list)
	if len(list.Items) != 1 {
		t.Fatalf("the risky note is on main before anyone approved it: %+v", list.Items)
	}
	var approvals struct {
		Items []struct {
			ID    int64
			Tool  string
			State string
		}
	}
	e.Do("GET", "/v2/agentruns/lb/approvals", nil, &approvals)
	if len(approvals.Items) != 1 || approvals.Items[0].Tool != "learning" || approvals.Items[0].State != "pending" {
		t.Fatalf("lb's approvals: %+v", approvals.Items)
	}
	id := fmt.Sprint(approvals.Items[0].ID)
	apiErr = api.Error{}
	if st := e.Do("POST", "/v2/agentruns/lb/approvals/"+id, `{"decision":"approve"}`, &apiErr); st != 403 || apiErr.Code != api.CodePersonRequired {
		t.Errorf("approve with the API token: HTTP %d %+v", st, apiErr)
	}
	session := e.PersonSession()
	if st := e.DoAs(session, "POST", "/v2/agentruns/lb/approvals/"+id, `{"decision":"approve"}`, nil); st != 200 {
		t.Fatalf("approve as a person: HTTP %d", st)
	}
	if r := e.WaitPhase("lb", 60*time.Second, api.PhaseSucceeded, api.PhaseFailed); r.Status.Phase != api.PhaseSucceeded {
		t.Fatalf("lb after the approval: %s %s", r.Status.Phase, r.Status.Message)
	}
	e.Do("GET", "/v2/agents/learner/learning", nil, &list)
	if len(list.Items) != 2 || list.Items[1].Path != "notes/friday.md" {
		t.Fatalf("learning list after the approval: %+v", list.Items)
	}

	// Retire: a stale ETag is refused, the right one commits; restore brings it back.
	if r := e.CLI(e.Dir, "learning", "retire", "learner", "deploy", "--etag", strings.Repeat("0", 40)); r.Code != 1 || !strings.Contains(r.Stderr, "PreconditionFailed") {
		t.Errorf("retire with a stale etag: exit %d %s", r.Code, r.Stderr)
	}
	e.MustCLI(0, "learning", "retire", "learner", "deploy", "--etag", deployETag)
	e.Do("GET", "/v2/agents/learner/learning", nil, &list)
	if len(list.Items) != 1 || list.Items[0].Path != "notes/friday.md" {
		t.Fatalf("learning list after retire: %+v", list.Items)
	}
	log := e.MustCLI(0, "learning", "log", "learner").Stdout
	var fromA string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "run la kept") {
			fromA, _, _ = strings.Cut(line, " ")
		}
	}
	if fromA == "" || !strings.Contains(log, "retire notes/deploy.md") || !strings.Contains(log, "run lb kept") {
		t.Fatalf("learning log:\n%s", log)
	}
	// The console shows 12 digits of a commit: any prefix of 7 or more that only it has names it.
	if r := e.CLI(e.Dir, "learning", "restore", "learner", "deploy", "--from", fromA[:6]); r.Code != 1 || !strings.Contains(r.Stderr, "Invalid") || !strings.Contains(r.Stderr, "7 or more hex digits") {
		t.Errorf("restore from 6 digits: exit %d %s", r.Code, r.Stderr)
	}
	if r := e.CLI(e.Dir, "learning", "restore", "learner", "deploy", "--from", "zz"+fromA[2:12]); r.Code != 1 || !strings.Contains(r.Stderr, "Invalid") {
		t.Errorf("restore from a hash that is not hex: exit %d %s", r.Code, r.Stderr)
	}
	e.MustCLI(0, "learning", "restore", "learner", "deploy", "--from", fromA[:12])
	e.Do("GET", "/v2/agents/learner/learning", nil, &list)
	if len(list.Items) != 2 || list.Items[0].Path != "notes/deploy.md" || list.Items[0].ETag != deployETag {
		t.Fatalf("learning list after restore: %+v", list.Items)
	}

	// Two runs finishing at once both commit.
	e.StartRun("learner", "lc1", "Learn C1")
	e.StartRun("learner", "lc2", "Learn C2")
	e.AnswerOf("lc1")
	e.AnswerOf("lc2")
	e.Do("GET", "/v2/agents/learner/learning", nil, &list)
	var paths []string
	for _, it := range list.Items {
		paths = append(paths, it.Path)
	}
	if strings.Join(paths, " ") != "notes/c1.md notes/c2.md notes/deploy.md notes/friday.md" {
		t.Errorf("after two runs at once main holds %v", paths)
	}

	// The bundle clones with git into the same files, and the key is in none of them.
	bundle := filepath.Join(t.TempDir(), "learner.bundle")
	out := e.MustCLI(0, "learning", "export", "learner").Stdout
	if err := os.WriteFile(bundle, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "clone")
	if b, err := exec.Command("git", "clone", "-q", bundle, clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone of the exported bundle: %v\n%s", err, b)
	}
	b, err := os.ReadFile(filepath.Join(clone, "notes", "deploy.md"))
	if err != nil || string(b) != DeployMD {
		t.Errorf("the clone's notes/deploy.md: %q, %v", b, err)
	}
	if b, err := exec.Command("git", "-C", clone, "log", "-p", "--all").CombinedOutput(); err != nil || bytes.Contains(b, []byte("test-key")) || !bytes.Contains(b, []byte("Never deploy on Fridays.")) {
		t.Errorf("git log -p of the clone (the key must be in none of its history): %v\n%s", err, b)
	}
}

// TestLearningCrash: SIGKILL during the proposal turn and during the commit; after the restart
// main holds the whole proposal (both notes) in exactly one commit of the run, and at the moment
// of the kill it held either all of it (the commit's result recorded) or none of it (its intent
// only, or the proposal not yet answered).
func TestLearningCrash(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pause string
		// onMain is what main holds right after the kill.
		onMain int
	}{
		{"after-intent:learn/propose", 0},
		{"after-intent:learn/commit", 0},
		{"after-result:learn/commit", 2},
	} {
		t.Run(c.pause, func(t *testing.T) {
			t.Parallel()
			e := NewEnv(t, LearnScript(
				Grader("Learn K", Keep(0, "useful"), Keep(1, "useful")),
				ScriptEntry{Name: "k", Match: "Learn K", Turns: []ScriptTurn{{Text: "done"}, ProposeTurn(
					NoteItem("notes/k1.md", LearnNote("k1", "First.", "The first fact.")),
					NoteItem("notes/k2.md", LearnNote("k2", "Second.", "The second fact.")))}},
			))
			e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"}, "AGENTRUN_DEV_PAUSE_AT="+c.pause)
			e.Do("PUT", "/v2/agents/learner", LearnerAgent, nil)
			e.StartRun("learner", "lk", "Learn K")
			e.WaitStderr("AGENTRUN_DEV_PAUSED "+strings.Replace(c.pause, ":", " ", 1), 30*time.Second)
			// The drive is stopped at the pause point; the API still answers: what the kill leaves.
			var list struct{ Items []struct{ Path string } }
			e.Do("GET", "/v2/agents/learner/learning", nil, &list)
			if len(list.Items) != c.onMain {
				t.Errorf("at the kill main holds %d files, want %d", len(list.Items), c.onMain)
			}
			e.Kill()
			e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"})
			if got := e.AnswerOf("lk"); got != "done" {
				t.Errorf("answer: %q", got)
			}
			e.Do("GET", "/v2/agents/learner/learning", nil, &list)
			if len(list.Items) != 2 || list.Items[0].Path != "notes/k1.md" || list.Items[1].Path != "notes/k2.md" {
				t.Errorf("after the restart main holds %+v, want both notes", list.Items)
			}
			log := e.MustCLI(0, "learning", "log", "learner").Stdout
			if n := strings.Count(log, "run lk kept"); n != 1 {
				t.Errorf("the run's commit is on main %d times, want once:\n%s", n, log)
			}
		})
	}
}

// TestLearningRetireRule: a run proposing to retire or reword a rule a person approved waits for
// a person too (removing a rule changes it); main keeps the rule until the approval.
func TestLearningRetireRule(t *testing.T) {
	t.Parallel()
	rule := LearnNote("friday", "When not to deploy.", "Never deploy on Fridays.")
	e := NewEnv(t, LearnScript(
		Grader("Learn R1", Keep(0, "a rule the person stated")),
		Grader("Learn R2", Keep(0, "the rule no longer holds"), Keep(1, "plain fact")),
		ScriptEntry{Name: "r1", Match: "Learn R1", Turns: []ScriptTurn{{Text: "one"}, ProposeTurn(NoteItem("notes/friday.md", rule))}},
		ScriptEntry{Name: "r2", Match: "Learn R2", Turns: []ScriptTurn{{Text: "two"}, ProposeTurn(
			map[string]any{"kind": "note", "action": "retire", "path": "notes/friday.md"},
			NoteItem("notes/plain.md", LearnNote("plain", "A fact.", "The deploy script is scripts/deploy.sh.")))}},
	))
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--router", "rules"})
	e.Do("PUT", "/v2/agents/learner", LearnerAgent, nil)
	session := e.PersonSession()
	approveOne := func(run string) {
		t.Helper()
		var approvals struct {
			Items []struct {
				ID     int64
				Reason string
				State  string
			}
		}
		e.Do("GET", "/v2/agentruns/"+run+"/approvals", nil, &approvals)
		if len(approvals.Items) != 1 || approvals.Items[0].State != "pending" {
			t.Fatalf("%s's approvals: %+v", run, approvals.Items)
		}
		if run == "r2" && !strings.Contains(approvals.Items[0].Reason, "retires a note that sets a rule") {
			t.Errorf("r2's approval gives the reason %q", approvals.Items[0].Reason)
		}
		if st := e.DoAs(session, "POST", fmt.Sprintf("/v2/agentruns/%s/approvals/%d", run, approvals.Items[0].ID), `{"decision":"approve"}`, nil); st != 200 {
			t.Fatalf("approve %s: HTTP %d", run, st)
		}
	}
	paths := func() string {
		var list struct{ Items []struct{ Path string } }
		e.Do("GET", "/v2/agents/learner/learning", nil, &list)
		var out []string
		for _, it := range list.Items {
			out = append(out, it.Path)
		}
		return strings.Join(out, " ")
	}
	for _, run := range []string{"r1", "r2"} {
		e.StartRun("learner", run, "Learn "+strings.ToUpper(run))
		r := e.WaitPhase(run, 60*time.Second, api.PhaseWaiting, api.PhaseSucceeded, api.PhaseFailed)
		if r.Status.Phase != api.PhaseWaiting || r.Status.Reason != api.ReasonApproval {
			t.Fatalf("%s: %s/%s %s; want Waiting/Approval", run, r.Status.Phase, r.Status.Reason, r.Status.Message)
		}
		if got := paths(); got != map[string]string{"r1": "", "r2": "notes/friday.md"}[run] {
			t.Errorf("while %s waits main holds %q", run, got)
		}
		approveOne(run)
		if r := e.WaitPhase(run, 60*time.Second, api.PhaseSucceeded, api.PhaseFailed); r.Status.Phase != api.PhaseSucceeded {
			t.Fatalf("%s after the approval: %s %s", run, r.Status.Phase, r.Status.Message)
		}
	}
	if got := paths(); got != "notes/plain.md" {
		t.Errorf("after r2's approval main holds %q, want notes/plain.md", got)
	}
}
