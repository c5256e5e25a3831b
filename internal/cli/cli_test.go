package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"agentrun.dev/agentrun/client"
	"agentrun.dev/agentrun/internal/api"
)

func doc(t *testing.T, s string) any {
	t.Helper()
	v, err := decodeDoc([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

const runDoc = `{"metadata": {"name": "r1", "labels": {"team": "ops", "a.b/c": "dotted"}},
 "spec": {"agent": "notes", "dependsOn": ["a", "b"], "keepAlive": true},
 "status": {"phase": "Succeeded", "turns": [{"index": 0, "model": "m0", "inputTokens": 12}, {"index": 1, "model": "m1"}],
  "cost": {"totalUSD": "0.0123"}, "answer": null}}`

func TestJSONPathEval(t *testing.T) {
	t.Parallel()
	d := doc(t, runDoc)
	cases := []struct {
		expr  string
		want  string
		found bool
	}{
		{"{.status.phase}", "Succeeded", true},
		{".status.phase", "Succeeded", true},
		{"{$.status.phase}", "Succeeded", true},
		{"{.metadata.labels.team}", "ops", true},
		{`{.metadata.labels.a\.b/c}`, "dotted", true},
		{"{.metadata.labels['a.b/c']}", "dotted", true},
		{"{.status.turns[0].model}", "m0", true},
		{"{.status.turns[-1].model}", "m1", true},
		{"{.status.turns[0].inputTokens}", "12", true},
		{"{.status.turns[2].model}", "", false},
		{"{.spec.keepAlive}", "true", true},
		{"{.spec.dependsOn}", `["a","b"]`, true},
		{"{.status.answer}", "", true},
		{"{.status.missing}", "", false},
		{"{.status.phase.deeper}", "", false},
		{"{.spec.dependsOn.x}", "", false},
		{"{.status.cost}", `{"totalUSD":"0.0123"}`, true},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			t.Parallel()
			p, err := parseJSONPath(tc.expr)
			if err != nil {
				t.Fatal(err)
			}
			v, found := p.eval(d)
			if found != tc.found || jsonText(v) != tc.want {
				t.Fatalf("got %q found=%v, want %q found=%v", jsonText(v), found, tc.want, tc.found)
			}
		})
	}
}

func TestJSONPathErrors(t *testing.T) {
	t.Parallel()
	for _, expr := range []string{"{.status.phase", "status.phase", "{.a..b}", "{.a[x]}", "{.a[0}", "{.a b}x"} {
		t.Run(expr, func(t *testing.T) {
			t.Parallel()
			if _, err := parseJSONPath(expr); err == nil {
				t.Fatalf("parseJSONPath(%q) succeeded", expr)
			}
		})
	}
}

func TestParseFor(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in       string
		deleted  bool
		expr     string
		value    string
		hasValue bool
		bad      bool
	}{
		{in: "delete", deleted: true},
		{in: "jsonpath={.status.phase}=Succeeded", expr: "{.status.phase}", value: "Succeeded", hasValue: true},
		{in: "jsonpath={.metadata.labels.x}=a=b", expr: "{.metadata.labels.x}", value: "a=b", hasValue: true},
		{in: "jsonpath={.status.phase}=", expr: "{.status.phase}", value: "", hasValue: true},
		{in: "jsonpath={.status.answer}", expr: "{.status.answer}"},
		{in: "jsonpath=.status.phase=Failed", expr: ".status.phase", value: "Failed", hasValue: true},
		{in: "jsonpath={.status.phase}Succeeded", bad: true},
		{in: "jsonpath={.status.phase", bad: true},
		{in: "condition=Ready", bad: true},
		{in: "phase=Succeeded", bad: true},
		{in: "", bad: true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			c, err := parseFor(tc.in)
			if tc.bad {
				if err == nil {
					t.Fatalf("parseFor(%q) succeeded: %+v", tc.in, c)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.deleted != tc.deleted || c.expr != tc.expr || c.value != tc.value || c.hasValue != tc.hasValue {
				t.Fatalf("got %+v", c)
			}
		})
	}
}

func TestWaitConditionMet(t *testing.T) {
	t.Parallel()
	d := doc(t, runDoc)
	cases := []struct {
		for_    string
		ok      bool
		current string
	}{
		{"jsonpath={.status.phase}=Succeeded", true, "Succeeded"},
		{"jsonpath={.status.phase}=Failed", false, "Succeeded"},
		{"jsonpath={.status.turns[0].inputTokens}=12", true, "12"},
		{"jsonpath={.spec.keepAlive}=true", true, "true"},
		{"jsonpath={.status.reason}=X", false, "<none>"},
		{"jsonpath={.status.cost.totalUSD}", true, "0.0123"},
		{"jsonpath={.status.answer}", false, ""},
		{"jsonpath={.status.missing}", false, "<none>"},
	}
	for _, tc := range cases {
		t.Run(tc.for_, func(t *testing.T) {
			t.Parallel()
			c, err := parseFor(tc.for_)
			if err != nil {
				t.Fatal(err)
			}
			ok, cur := c.met(d)
			if ok != tc.ok || cur != tc.current {
				t.Fatalf("met = %v, %q; want %v, %q", ok, cur, tc.ok, tc.current)
			}
		})
	}
}

func TestJSONBody(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	agentFile := filepath.Join(dir, "agent.json")
	if err := os.WriteFile(agentFile, []byte(`{"definition": {"id": "notes"}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	yamlFile := filepath.Join(dir, "agent.yaml")
	if err := os.WriteFile(yamlFile, []byte("kind: Agent\nmetadata:\n  name: a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, arg, stdin string
		yaml             bool
		want             string
		usage            bool
	}{
		{name: "inline", arg: ` {"input": {"content": "hi"}} `, want: `{"input": {"content": "hi"}}`},
		{name: "file", arg: "@" + agentFile, want: `{"definition": {"id": "notes"}}`},
		{name: "stdin", arg: "@-", stdin: `{"a": 1}`, want: `{"a": 1}`},
		{name: "dash", arg: "-", stdin: `[1]`, want: `[1]`},
		{name: "yaml file", arg: "@" + yamlFile, yaml: true, want: `{"kind":"Agent","metadata":{"name":"a"}}`},
		{name: "yaml refused", arg: "@" + yamlFile, usage: true},
		{name: "bad json", arg: `{"input": `, yaml: true, usage: true},
		{name: "missing file", arg: "@" + filepath.Join(dir, "nope.json"), usage: true},
		{name: "empty", arg: "  ", usage: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := jsonBody("--body", tc.arg, strings.NewReader(tc.stdin), tc.yaml)
			if tc.usage {
				var ee *ExitError
				if !errors.As(err, &ee) || ee.Code != ExitUsage {
					t.Fatalf("err = %v, want a usage error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestBuildStartBody(t *testing.T) {
	t.Parallel()
	s := func(v string) *string { return &v }
	b := func(v bool) *bool { return &v }
	cases := []struct {
		name string
		body string
		opts startOptions
		want string
		bad  bool
	}{
		{name: "seed", body: `{"input": {"content": "Ask me"}}`, opts: startOptions{MaxCostUSD: s("1")},
			want: `{"input":{"content":"Ask me"},"max_cost_usd":"1"}`},
		{name: "flags only", opts: startOptions{Input: s("hi"), KeepAlive: b(true), Deadline: s("30m"), Name: s("x")},
			want: `{"deadline":"30m","input":{"content":"hi"},"keep_alive":true,"name":"x"}`},
		{name: "flag overrides", body: `{"input": "old", "max_cost_usd": "5", "extra": 1.50}`, opts: startOptions{Input: s("new")},
			want: `{"extra":1.50,"input":{"content":"new"},"max_cost_usd":"5"}`},
		{name: "nothing", want: `{}`},
		{name: "not an object", body: `["x"]`, bad: true},
		{name: "null", body: `null`, bad: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := buildStartBody([]byte(tc.body), tc.opts)
			if tc.bad {
				if err == nil {
					t.Fatalf("succeeded: %s", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestStatusMapping(t *testing.T) {
	t.Parallel()
	cases := []struct {
		phase  api.Phase
		reason api.Reason
		word   string
		done   bool
		code   int
	}{
		{api.PhaseQueued, "GroupWait", "queued", false, 0},
		{api.PhaseRunning, "", "running", false, 0},
		{api.PhaseWaiting, api.ReasonQuestion, "waiting", true, 8},
		{api.PhaseWaiting, api.ReasonApproval, "waiting", true, 8},
		{api.PhaseWaiting, api.ReasonMaxCostReached, "waiting", true, 8},
		{api.PhaseWaiting, api.ReasonCredits, "waiting", true, 8},
		{api.PhaseWaiting, api.ReasonMessage, "waiting", true, 0},
		{api.PhaseWaiting, "SomethingElse", "waiting", false, 0},
		{api.PhaseNeedsResolution, api.ReasonInterrupted, "needs_resolution", true, 8},
		{api.PhaseSucceeded, api.ReasonCompleted, "completed", true, 0},
		{api.PhaseFailed, api.ReasonModelError, "failed", true, 1},
		{api.PhaseCancelled, api.ReasonUserCancelled, "cancelled", true, 1},
	}
	for _, tc := range cases {
		t.Run(string(tc.phase)+"/"+string(tc.reason), func(t *testing.T) {
			t.Parallel()
			if w := statusWord(tc.phase); w != tc.word {
				t.Errorf("statusWord = %q, want %q", w, tc.word)
			}
			done, code := runOutcome(tc.phase, tc.reason)
			if done != tc.done || code != tc.code {
				t.Errorf("runOutcome = %v, %d; want %v, %d", done, code, tc.done, tc.code)
			}
		})
	}
}

func TestRunView(t *testing.T) {
	t.Parallel()
	whole := "the whole answer\n"
	mk := func(phase api.Phase, reason api.Reason, w *api.WaitingOn, ans *api.Answer) *api.AgentRun {
		r := &api.AgentRun{}
		r.Metadata.Name = "notes-x7k2p"
		r.Spec.Agent = "notes"
		r.Status = api.AgentRunStatus{Phase: phase, Reason: reason, WaitingOn: w, Answer: ans,
			ConsoleURL: "http://127.0.0.1:7340/runs/notes-x7k2p", Cost: &api.RunCost{TotalUSD: "0.01", LimitUSD: "1.00"}}
		return r
	}
	cases := []struct {
		name   string
		run    *api.AgentRun
		answer *string
		want   string
	}{
		{"question", mk(api.PhaseWaiting, api.ReasonQuestion, &api.WaitingOn{Kind: "question", StepKey: "ask/1", Question: "Which region?"}, nil), nil,
			`{"run_id":"notes-x7k2p","agent":"notes","status":"waiting","phase":"Waiting","reason":"Question","waiting_on":{"kind":"question","stepKey":"ask/1","question":"Which region?"},"question":"Which region?","console_url":"http://127.0.0.1:7340/runs/notes-x7k2p","cost":{"totalUSD":"0.01","limitUSD":"1.00"}}`},
		{"succeeded", mk(api.PhaseSucceeded, api.ReasonCompleted, nil, &api.Answer{Preview: "the whole", Truncated: true, Bytes: 17}), &whole,
			`{"run_id":"notes-x7k2p","agent":"notes","status":"completed","phase":"Succeeded","reason":"Completed","answer":"the whole answer\n","console_url":"http://127.0.0.1:7340/runs/notes-x7k2p","cost":{"totalUSD":"0.01","limitUSD":"1.00"}}`},
		{"preview when not truncated", mk(api.PhaseWaiting, api.ReasonMessage, &api.WaitingOn{Kind: "message"}, &api.Answer{Preview: "short", Bytes: 5}), nil,
			`{"run_id":"notes-x7k2p","agent":"notes","status":"waiting","phase":"Waiting","reason":"Message","waiting_on":{"kind":"message"},"answer":"short","console_url":"http://127.0.0.1:7340/runs/notes-x7k2p","cost":{"totalUSD":"0.01","limitUSD":"1.00"}}`},
		{"no answer while running", mk(api.PhaseRunning, "", nil, &api.Answer{Preview: "partial"}), &whole,
			`{"run_id":"notes-x7k2p","agent":"notes","status":"running","phase":"Running","console_url":"http://127.0.0.1:7340/runs/notes-x7k2p","cost":{"totalUSD":"0.01","limitUSD":"1.00"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(newRunView(tc.run, tc.answer))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Fatalf("got  %s\nwant %s", b, tc.want)
			}
		})
	}
}

func TestPhaseLine(t *testing.T) {
	t.Parallel()
	mk := func(st api.AgentRunStatus) *api.AgentRun {
		r := &api.AgentRun{Status: st}
		r.Metadata.Name = "notes-x7k2p"
		return r
	}
	cases := []struct {
		st   api.AgentRunStatus
		want string
	}{
		{api.AgentRunStatus{Phase: "Running"}, "run notes-x7k2p: Running"},
		{api.AgentRunStatus{Phase: "Waiting", Reason: "Question", WaitingOn: &api.WaitingOn{Kind: "question", Question: "Which region?"}}, "run notes-x7k2p: Waiting (Question): Which region?"},
		{api.AgentRunStatus{Phase: "Waiting", Reason: "MaxCostReached", Cost: &api.RunCost{TotalUSD: "0.9", NeededUSD: "0.25"}}, "run notes-x7k2p: Waiting (MaxCostReached): needs at least $0.25"},
		{api.AgentRunStatus{Phase: "NeedsResolution", Reason: "InterruptedStep", WaitingOn: &api.WaitingOn{Kind: "resolution", StepKey: "bash/3"}}, "run notes-x7k2p: NeedsResolution (InterruptedStep): step bash/3"},
		{api.AgentRunStatus{Phase: "Failed", Reason: "ModelError", Message: "provider said 500"}, "run notes-x7k2p: Failed (ModelError): provider said 500"},
		{api.AgentRunStatus{}, "run notes-x7k2p: (no phase yet)"},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			t.Parallel()
			if got := phaseLine(mk(tc.st)); got != tc.want {
				t.Fatalf("got %q", got)
			}
		})
	}
}

func TestAge(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {-time.Second, "0s"}, {42 * time.Second, "42s"}, {119 * time.Second, "119s"},
		{5*time.Minute + 12*time.Second, "5m12s"}, {5 * time.Minute, "5m"}, {37 * time.Minute, "37m"},
		{3*time.Hour + 15*time.Minute, "3h15m"}, {20 * time.Hour, "20h"}, {76 * time.Hour, "3d4h"},
		{45 * 24 * time.Hour, "45d"}, {800 * 24 * time.Hour, "2y"},
	}
	for _, tc := range cases {
		t.Run(tc.want, func(t *testing.T) {
			t.Parallel()
			ts := now.Add(-tc.d)
			if got := age(&ts, now); got != tc.want {
				t.Fatalf("age(%s) = %q, want %q", tc.d, got, tc.want)
			}
		})
	}
	if got := age(nil, now); got != "<unknown>" {
		t.Fatalf("age(nil) = %q", got)
	}
}

func TestTables(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	created := now.Add(-90 * time.Second)
	agent := api.Agent{Metadata: api.ObjectMeta{Name: "notes", CreationTimestamp: &created},
		Spec:   api.AgentSpec{Tools: []string{"write", "ask_person"}, Model: api.ModelSpec{Families: []string{"haiku"}}},
		Status: api.AgentStatus{Revision: 3}}
	run := api.AgentRun{Metadata: api.ObjectMeta{Name: "notes-x7k2p", CreationTimestamp: &created}, Spec: api.AgentRunSpec{Agent: "notes"},
		Status: api.AgentRunStatus{Phase: "Succeeded", Reason: "Completed", Cost: &api.RunCost{TotalUSD: "0.0123"},
			Turns: []api.Turn{{Model: "claude-haiku"}}, Answer: &api.Answer{Preview: "Europe is\na continent with many countries and a long history"}}}
	idle := api.AgentRun{Metadata: api.ObjectMeta{Name: "b"}, Spec: api.AgentRunSpec{Agent: "notes"}, Status: api.AgentRunStatus{Phase: "Queued"}}
	started := now.Add(-time.Minute)
	cases := []struct {
		name   string
		header []string
		rows   [][]string
		want   string
	}{
		{"agents", agentHeader, func() [][]string { _, r := agentRows([]api.Agent{agent}, false, now); return r }(),
			"NAME    REVISION   MODEL         TOOLS              AGE\n" +
				"notes   3          auto(haiku)   write,ask_person   90s\n"},
		{"agent with a sandbox", agentHeader, func() [][]string {
			a := agent
			a.Status.Tools = []string{"write", "ask_person", "read", "bash"}
			_, r := agentRows([]api.Agent{a}, false, now)
			return r
		}(),
			"NAME    REVISION   MODEL         TOOLS                        AGE\n" +
				"notes   3          auto(haiku)   write,ask_person,read,bash   90s\n"},
		{"runs", runHeader, func() [][]string { _, r := runRows([]api.AgentRun{run, idle}, false, now); return r }(),
			"NAME          AGENT   PHASE       REASON      COST      AGE\n" +
				"notes-x7k2p   notes   Succeeded   Completed   $0.0123   90s\n" +
				"b             notes   Queued      <none>      <none>    <unknown>\n"},
		{"runs wide", func() []string { h, _ := runRows(nil, true, now); return h }(), func() [][]string { _, r := runRows([]api.AgentRun{run}, true, now); return r }(),
			"NAME          AGENT   PHASE       REASON      COST      AGE   MODEL          ANSWER\n" +
				"notes-x7k2p   notes   Succeeded   Completed   $0.0123   90s   claude-haiku   Europe is a continent with many count...\n"},
		{"steps", stepHeader, stepRows([]api.Step{{Seq: 1, Key: "sandbox/0", Kind: "sandbox", State: "Completed", Attempt: 1, Title: "Create the sandbox", StartedAt: started},
			{Seq: 2, Key: "bash/1", Kind: "tool", State: "Interrupted", Attempt: 1, Resolution: "skip"}}),
			"SEQ   KEY         KIND      STATE               ATTEMPT   TITLE\n" +
				"1     sandbox/0   sandbox   Completed           1         Create the sandbox\n" +
				"2     bash/1      tool      Interrupted(skip)   1         <none>\n"},
		{"groups", func() []string {
			h, _ := genericRows(nil, true, now)
			return h
		}(), func() [][]string {
			g := doc(t, `{"metadata": {"name": "parallel-agents", "creationTimestamp": "2026-03-01T11:58:30Z"}, "spec": {"agent": "w"},
			  "status": {"phase": "Running", "counts": {"queued": 1, "active": 2, "succeeded": 3, "failed": 0}, "cost": {"totalUSD": "0.20"}}}`).(map[string]any)
			_, r := genericRows([]map[string]any{g}, true, now)
			return r
		}(),
			"NAME              AGENT   PHASE     RUNS   ACTIVE   COST    AGE\n" +
				"parallel-agents   w       Running   3/6    2        $0.20   90s\n"},
		{"runners", runnerHeader, runnerRows([]client.Runner{
			{Name: "r1", Live: true, SinceHeartbeat: "3s", RunsHeld: 4, Version: "v1", Host: "h1", PID: 10},
			{Name: "r3", Live: false, SinceHeartbeat: "2m", RunsHeld: 2, Version: "v1", Host: "h3", PID: 30}}),
			"NAME   STATE   HEARTBEAT   RUNS                        VERSION   HOST/PID\n" +
				"r1     live    3s ago      4                           v1        h1/10\n" +
				"r3     gone    2m ago      (2 at its last heartbeat)   v1        h3/30\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			if err := writeTable(&buf, tc.header, tc.rows); err != nil {
				t.Fatal(err)
			}
			if buf.String() != tc.want {
				t.Fatalf("got:\n%s\nwant:\n%s", buf.String(), tc.want)
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"}, {"a\nb\tc", 10, "a b c"}, {"abcdefghij", 6, "abc..."}, {"héllo wörld", 8, "héllo..."}, {"abcdef", 2, "ab"},
	} {
		if got := truncate(tc.in, tc.n); got != tc.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestParseRefs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args  []string
		typ   resType
		names []string
		bad   bool
	}{
		{args: []string{"agentrun/hello-agent-run"}, typ: typeAgentRuns, names: []string{"hello-agent-run"}},
		{args: []string{"ag/parallel-agents"}, typ: typeAgentGroups, names: []string{"parallel-agents"}},
		{args: []string{"ar"}, typ: typeAgentRuns},
		{args: []string{"agents", "a", "b"}, typ: typeAgents, names: []string{"a", "b"}},
		{args: []string{"Agent", "a"}, typ: typeAgents, names: []string{"a"}},
		{args: []string{"agentrun.agentrun.dev/x"}, typ: typeAgentRuns, names: []string{"x"}},
		{args: []string{"ar/a", "ar/b"}, typ: typeAgentRuns, names: []string{"a", "b"}},
		{args: []string{"ar/a", "agent/b"}, bad: true},
		{args: []string{"ar", "agent/b"}, bad: true},
		{args: []string{"pods/x"}, bad: true},
		{args: []string{"ar/"}, bad: true},
		{args: nil, bad: true},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			typ, names, err := parseRefs(tc.args)
			if tc.bad {
				var ee *ExitError
				if !errors.As(err, &ee) || ee.Code != ExitUsage {
					t.Fatalf("err = %v, want a usage error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if typ != tc.typ || !reflect.DeepEqual(names, tc.names) {
				t.Fatalf("got %v %v", typ, names)
			}
		})
	}
}

func TestPlanApply(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		yaml  string
		want  []string // "plural/name"
		body0 string   // expected body of the first target, if set
		err   string
	}{
		{name: "agent", yaml: "apiVersion: nodus.dev/v1\nkind: Agent\nmetadata:\n  name: hello-agent\nspec:\n  system: hi\n", want: []string{"agents/hello-agent"}},
		{name: "group run", yaml: "kind: AgentRun\nspec:\n  agent: w\n  group: parallel-agents\n  taskKey: c\n",
			want: []string{"agentruns/parallel-agents-c"}, body0: `{"kind":"AgentRun","metadata":{"name":"parallel-agents-c"},"spec":{"agent":"w","group":"parallel-agents","taskKey":"c"}}`},
		{name: "unnamed run", yaml: "kind: AgentRun\nspec:\n  agent: w\n", want: []string{"agentruns/"}},
		{name: "group", yaml: "kind: AgentGroup\nmetadata: {name: g}\n", want: []string{"agentgroups/g"}},
		{name: "list", yaml: `{"kind": "List", "items": [{"kind": "Agent", "metadata": {"name": "a"}}, {"kind": "AgentRun", "metadata": {"name": "r"}}]}`,
			want: []string{"agents/a", "agentruns/r"}},
		{name: "no kind", yaml: "metadata:\n  name: x\n", err: "no kind"},
		{name: "unknown kind", yaml: "kind: Pod\nmetadata:\n  name: x\n", err: `unknown kind "Pod"`},
		{name: "unnamed agent", yaml: "kind: Agent\n", err: "no metadata.name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			j, err := api.YAMLToJSON([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			ts, err := planApply(j)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, x := range ts {
				got = append(got, x.typ.plural+"/"+x.name)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if tc.body0 != "" && string(ts[0].body) != tc.body0 {
				t.Fatalf("body = %s, want %s", ts[0].body, tc.body0)
			}
		})
	}
}

func TestSplitDocs(t *testing.T) {
	t.Parallel()
	stream := "# runs\napiVersion: nodus.dev/v1\nkind: AgentRun\nmetadata:\n  name: a\n---\nkind: AgentRun\nmetadata:\n  name: b\n---\n\n---\nkind: [unclosed\n"
	docs := splitDocs("runs.yaml", []byte(stream))
	if len(docs) != 3 {
		t.Fatalf("got %d documents", len(docs))
	}
	if docs[0].where != "runs.yaml:1" || docs[1].where != "runs.yaml:7" || docs[2].where != "runs.yaml:13" {
		t.Fatalf("locations %q %q %q", docs[0].where, docs[1].where, docs[2].where)
	}
	if docs[0].err != nil || docs[1].err != nil || docs[2].err == nil {
		t.Fatalf("errors %v %v %v", docs[0].err, docs[1].err, docs[2].err)
	}
	if string(docs[1].json) != `{"kind":"AgentRun","metadata":{"name":"b"}}` {
		t.Fatalf("json %s", docs[1].json)
	}
}

func TestDescribeAndReport(t *testing.T) {
	t.Parallel()
	apiErr := &api.Error{Status: 422, Code: "UnknownField", Message: `unknown field "foo"`, Field: "spec.foo"}
	cases := []struct {
		name   string
		err    error
		code   int
		stderr string
	}{
		{"nil", nil, 0, ""},
		{"api", failure(errors.Join(errors.New("ctx"), apiErr)), 1, "error: unknown field \"foo\" (code UnknownField, field spec.foo)\n"},
		{"api no field", failure(&api.Error{Code: "NoAnswer", Message: "no answer yet"}), 1, "error: no answer yet (code NoAnswer)\n"},
		{"usage", usageError("bad %s", "flag"), 2, "error: bad flag\n"},
		{"silent", &ExitError{Code: 8}, 8, ""},
		{"cobra unknown command", errors.New(`unknown command "x" for "agentrun"`), 2, "error: unknown command \"x\" for \"agentrun\"\n"},
		{"cobra flag", errors.New("unknown flag: --nope"), 2, "error: unknown flag: --nope\n"},
		{"other", errors.New("boom"), 1, "error: boom\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			if code := Report(tc.err, &buf); code != tc.code || buf.String() != tc.stderr {
				t.Fatalf("Report = %d %q, want %d %q", code, buf.String(), tc.code, tc.stderr)
			}
		})
	}
}

func TestEventLine(t *testing.T) {
	t.Parallel()
	ts := time.Date(2026, 3, 1, 12, 0, 0, 500e6, time.UTC)
	e := api.Event{Seq: 3, Time: ts, Type: "step.completed", StepKey: "bash/1", Message: "go test ./..."}
	want := ts.Local().Format("2006-01-02T15:04:05.000Z07:00") + "  step.completed     bash/1                   go test ./..."
	if got := eventLine(e); got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	e = api.Event{Time: ts, Type: "phase"}
	if got := eventLine(e); !strings.HasSuffix(got, "phase              -") {
		t.Fatalf("got %q", got)
	}
}

// newRoot builds a root like cmd/agentrun's, for tests that run commands without a server.
// newRoot builds a command tree; AddGlobalFlags binds package-level flag variables, so tests that
// build roots do not run in parallel.
func newRoot() (*cobra.Command, *bytes.Buffer, *bytes.Buffer) {
	root := &cobra.Command{Use: "agentrun", SilenceUsage: true, SilenceErrors: true}
	AddGlobalFlags(root)
	root.AddCommand(Commands()...)
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	return root, &out, &errOut
}

func TestCommandTree(t *testing.T) {
	root, _, _ := newRoot()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Short == "" && c != root {
			t.Errorf("%s has no Short", c.CommandPath())
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	for _, path := range [][]string{
		{"agents", "create"}, {"agents", "list"}, {"agents", "get"},
		{"runs", "start"}, {"runs", "wait"}, {"runs", "message"}, {"runs", "answer"}, {"runs", "steps"}, {"runs", "read-file"},
		{"runs", "timeline"}, {"runs", "resolve"}, {"runs", "cancel"}, {"runs", "list"}, {"runs", "get"},
		{"agentrun", "answer"}, {"ar", "steps"}, {"agentrun", "send"},
		{"apply"}, {"get"}, {"wait"}, {"delete"}, {"cancel"}, {"patch"}, {"create", "agentrun"}, {"create", "agentgroup"},
		{"server", "capabilities"}, {"version"},
	} {
		c, rest, err := root.Find(path)
		if err != nil || len(rest) != 0 || c.Name() != path[len(path)-1] && !c.HasAlias(path[len(path)-1]) {
			t.Errorf("command %v not found (got %v %v %v)", path, c.CommandPath(), rest, err)
		}
	}
}

// These run commands that fail before they need a server.
func TestUsageErrors(t *testing.T) {
	cases := [][]string{
		{"runs", "start"},
		{"runs", "wait", "a", "b"},
		{"runs", "message", "r"},
		{"runs", "resolve", "r"},
		{"runs", "resolve", "r", "--retry", "--skip"},
		{"runs", "start", "notes", "--body", "{not json"},
		{"agents", "create"},
		{"get"},
		{"get", "pods"},
		{"get", "ar", "-o", "xml"},
		{"wait", "ar/x"},
		{"wait", "ar/x", "--for=condition=Ready"},
		{"apply"},
		{"patch", "ag/x"},
		{"create", "agentrun", "x"},
		{"runs", "bogus"},
		{"runs", "start", "notes", "--no-such-flag"},
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			root, _, _ := newRoot()
			root.SetArgs(args)
			err := root.Execute()
			var buf bytes.Buffer
			if code := Report(err, &buf); code != ExitUsage {
				t.Fatalf("exit %d (%v), want %d", code, err, ExitUsage)
			}
		})
	}
}

func TestHelpAndVersion(t *testing.T) {
	root, out, _ := newRoot()
	root.SetArgs([]string{"help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"agents", "runs", "apply", "wait", "--server", "--token"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, out.String())
		}
	}
	root, out, _ = newRoot()
	root.SetArgs([]string{"version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "agentrun ") {
		t.Fatalf("version printed %q", out.String())
	}
}
