package store

import (
	"errors"
	"testing"

	"agentrun.dev/agentrun/internal/api"
)

func waiting(reason api.Reason, on *api.WaitingOn) api.AgentRunStatus {
	return api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: reason, Message: "waits", WaitingOn: on}
}

// TestTransitions is the table of the run transitions: for each action, which rows move to
// Queued (with which message), which are left alone, and which are refused.
func TestTransitions(t *testing.T) {
	question := waiting(api.ReasonQuestion, &api.WaitingOn{Kind: "question", Question: "Which?"})
	idle := waiting(api.ReasonMessage, nil)
	approval := waiting(api.ReasonApproval, &api.WaitingOn{Kind: "approval", StepKey: "t0/tool/0/approval"})
	credits := waiting(api.ReasonCredits, &api.WaitingOn{Kind: "credits"})
	capped := waiting(api.ReasonMaxCostReached, nil)
	interrupted := api.AgentRunStatus{Phase: api.PhaseNeedsResolution, WaitingOn: &api.WaitingOn{Kind: "resolution", StepKey: "t0/tool/1"}}
	running := api.AgentRunStatus{Phase: api.PhaseRunning}
	done := api.AgentRunStatus{Phase: api.PhaseSucceeded}
	row := func(st api.AgentRunStatus, leased bool) RunRow {
		return RunRow{Phase: st.Phase, Status: st, Leased: leased}
	}

	cases := []struct {
		name    string
		do      func() (*api.AgentRunStatus, error)
		want    string // the message of the requeued status; "" for none
		wantErr error
	}{
		{"message answers a question", func() (*api.AgentRunStatus, error) { return MessageRun(row(question, false)) }, msgMessageArrived, nil},
		{"message wakes an idle keep-alive run", func() (*api.AgentRunStatus, error) { return MessageRun(row(idle, false)) }, msgMessageArrived, nil},
		{"message leaves an approval wait", func() (*api.AgentRunStatus, error) { return MessageRun(row(approval, false)) }, "", nil},
		{"message leaves a held run to its holder", func() (*api.AgentRunStatus, error) { return MessageRun(row(question, true)) }, "", nil},
		{"message to a running run", func() (*api.AgentRunStatus, error) { return MessageRun(row(running, true)) }, "", nil},
		{"message to a finished run", func() (*api.AgentRunStatus, error) { return MessageRun(row(done, false)) }, "", ErrFinished},
		{"resolve the interrupted step", func() (*api.AgentRunStatus, error) { return ResolveRun(row(interrupted, false), "t0/tool/1", "retry") },
			"resolved (retry); waiting for a runner to continue", nil},
		{"approve the asked step", func() (*api.AgentRunStatus, error) {
			return ResolveRun(row(approval, false), "t0/tool/0/approval", "approve")
		}, "resolved (approve); waiting for a runner to continue", nil},
		{"resolve another step", func() (*api.AgentRunStatus, error) { return ResolveRun(row(interrupted, false), "t0/tool/2", "skip") }, "", ErrNotWaiting},
		{"resolve a run waiting on a question", func() (*api.AgentRunStatus, error) { return ResolveRun(row(question, false), "", "skip") }, "", ErrNotWaiting},
		{"resolve a held run", func() (*api.AgentRunStatus, error) { return ResolveRun(row(interrupted, true), "t0/tool/1", "skip") }, "", nil},
		{"credits wake a run waiting on credits", func() (*api.AgentRunStatus, error) { return CreditsAdded(row(credits, false)), nil }, msgCreditsAdded, nil},
		{"credits leave a question", func() (*api.AgentRunStatus, error) { return CreditsAdded(row(question, false)), nil }, "", nil},
		{"credits leave a held run", func() (*api.AgentRunStatus, error) { return CreditsAdded(row(credits, true)), nil }, "", nil},
		{"credits leave a run waiting on its cap", func() (*api.AgentRunStatus, error) { return CreditsAdded(row(capped, false)), nil }, "", nil},
		{"cancel a waiting run", func() (*api.AgentRunStatus, error) { return nil, CancelRun(row(question, false)) }, "", nil},
		{"cancel a finished run", func() (*api.AgentRunStatus, error) { return nil, CancelRun(row(done, false)) }, "", ErrFinished},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, err := c.do()
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("error %v, want %v", err, c.wantErr)
			}
			switch {
			case c.want == "" && st != nil:
				t.Errorf("status rewritten to %+v, want it left alone", st)
			case c.want != "" && st == nil:
				t.Errorf("status left alone, want Queued with %q", c.want)
			case c.want != "" && (st.Phase != api.PhaseQueued || st.Reason != "" || st.WaitingOn != nil || st.Message != c.want):
				t.Errorf("status %+v, want Queued, no reason, nothing waited on, message %q", st, c.want)
			}
		})
	}
}

func TestRaiseCap(t *testing.T) {
	spec := api.AgentRunSpec{Agent: "a", MaxCostUSD: "0.10"}
	cost := func() *api.RunCost { return &api.RunCost{TotalUSD: "0.09", LimitUSD: "0.10", NeededUSD: "0.12"} }
	capped := api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: api.ReasonMaxCostReached, Cost: cost()}
	question := api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: api.ReasonQuestion, Cost: cost()}
	noCost := api.AgentRunStatus{Phase: api.PhaseWaiting, Reason: api.ReasonQuestion}

	t.Run("parked on its cap", func(t *testing.T) {
		in := capped
		sp, st := RaiseCap(spec, RunRow{Phase: in.Phase, Status: in}, "0.12")
		if sp.MaxCostUSD != "0.12" || st == nil || st.Phase != api.PhaseQueued || st.Message != msgCapRaised || st.Cost.LimitUSD != "0.12" {
			t.Fatalf("spec %+v status %+v", sp, st)
		}
		if in.Cost.LimitUSD != "0.10" || spec.MaxCostUSD != "0.10" {
			t.Errorf("the rule changed its inputs: %+v %+v", in.Cost, spec)
		}
	})
	t.Run("parked on something else", func(t *testing.T) {
		_, st := RaiseCap(spec, RunRow{Phase: question.Phase, Status: question}, "0.50")
		if st == nil || st.Phase != api.PhaseWaiting || st.Reason != api.ReasonQuestion || st.Cost.LimitUSD != "0.50" {
			t.Fatalf("status %+v, want still waiting on the question with the new limit shown", st)
		}
	})
	t.Run("no cost yet", func(t *testing.T) {
		if _, st := RaiseCap(spec, RunRow{Phase: noCost.Phase, Status: noCost}, "0.50"); st != nil {
			t.Fatalf("status %+v, want it left alone", st)
		}
	})
	t.Run("held by a runner", func(t *testing.T) {
		sp, st := RaiseCap(spec, RunRow{Phase: capped.Phase, Status: capped, Leased: true}, "0.50")
		if sp.MaxCostUSD != "0.50" || st != nil {
			t.Fatalf("spec %+v status %+v, want the spec raised and the status left to the holder", sp, st)
		}
	})
}

func TestPlanReservation(t *testing.T) {
	cases := []struct {
		name                           string
		enforced                       bool
		added, charged, others, amount int64
		want                           ReserveResult
	}{
		{"not enforced", false, 0, 0, 0, 500, ReserveResult{}},
		{"covered", true, 1000, 200, 300, 500, ReserveResult{Enforced: true, OK: true, Available: 500, ReservedByOthers: 300}},
		{"short by one", true, 1000, 200, 300, 501, ReserveResult{Enforced: true, Available: 500, ReservedByOthers: 300}},
		{"overspent", true, 100, 150, 0, 1, ReserveResult{Enforced: true, Available: -50}},
	}
	for _, c := range cases {
		if got := PlanReservation(c.enforced, c.added, c.charged, c.others, c.amount); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestChargeTotals(t *testing.T) {
	n := int64(420)
	if c, u := ChargeTotals(Charge{Amount: &n}); c != 420 || u != 0 {
		t.Errorf("priced: %d, %d", c, u)
	}
	if c, u := ChargeTotals(Charge{}); c != 0 || u != 1 {
		t.Errorf("unpriced: %d, %d; want it counted unknown, not $0", c, u)
	}
}

func TestCheckMemberRefusals(t *testing.T) {
	g := &api.AgentGroup{Spec: api.AgentGroupSpec{Agent: "a", Limits: api.GroupLimits{MaxPending: 2}}}
	g.Metadata.Name = "g"
	run := func(agent, key string, deps ...string) *api.AgentRun {
		return &api.AgentRun{Spec: api.AgentRunSpec{Agent: agent, Group: "g", TaskKey: key, DependsOn: deps}}
	}
	cancelled, sealed := *g, *g
	cancelled.Status.CancelRequested = true
	sealed.Spec.Sealed = true
	cases := []struct {
		name    string
		g       *api.AgentGroup
		r       *api.AgentRun
		pending int
		refusal Refusal
		code    api.Code
		field   string
	}{
		{"cancelled group", &cancelled, run("a", "x"), 0, RefusedState, api.CodeGroupCancelled, "spec.group"},
		{"sealed group", &sealed, run("a", "x"), 0, RefusedState, api.CodeGroupSealed, "spec.group"},
		{"other agent", g, run("b", "x"), 0, RefusedInvalid, api.CodeInvalid, "spec.agent"},
		{"queue full", g, run("a", "x"), 2, RefusedState, api.CodeMaxPendingReached, "spec.group"},
		{"key taken", g, run("a", "have"), 0, RefusedState, api.CodeAlreadyExists, "spec.taskKey"},
		{"dependency missing", g, run("a", "x", "have", "later"), 0, RefusedInvalid, api.CodeInvalid, "spec.dependsOn[1]"},
	}
	for _, c := range cases {
		err := CheckMember(c.g, c.r, c.pending, map[string]bool{"have": true})
		re, ok := AsRuleError(err)
		if !ok || re.Refusal != c.refusal || re.Code != c.code || re.Field != c.field {
			t.Errorf("%s: %v (%+v), want %v %s on %s", c.name, err, re, c.refusal, c.code, c.field)
		}
	}
	if err := CheckMember(g, run("a", "x", "have"), 1, map[string]bool{"have": true}); err != nil {
		t.Errorf("a good member: %v", err)
	}
}

func TestAddMember(t *testing.T) {
	g := &api.AgentGroup{Spec: api.AgentGroupSpec{Agent: "a"}, Status: api.AgentGroupStatus{AgentRevision: 3}}
	g.Metadata.Name = "g"
	bg := &BatchGroup{Group: g, Unfinished: 1, Seq: 7}
	first := &api.AgentRun{Spec: api.AgentRunSpec{Agent: "a", Group: "g", TaskKey: "one", MaxCostUSD: "0.25"}}
	m, err := bg.AddMember(first, map[string]bool{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Seq != 8 || m.Wait != "" || m.DependsOn == nil || m.CapMicros != 250000 || first.Status.AgentRevision != 3 || first.Status.Reason != api.ReasonGroupWait {
		t.Errorf("first member %+v, status %+v", m, first.Status)
	}
	second := &api.AgentRun{Spec: api.AgentRunSpec{Agent: "a", Group: "g", TaskKey: "two", DependsOn: []string{"one"}}}
	m, err = bg.AddMember(second, map[string]bool{"one": true})
	if err != nil {
		t.Fatal(err)
	}
	if m.Seq != 9 || m.Wait != api.ReasonDependencyWait || bg.Unfinished != 3 {
		t.Errorf("second member %+v, batch %+v", m, bg)
	}
}

func TestSmallRules(t *testing.T) {
	if err := CheckVersion("agent", "a", "3", ""); err != nil {
		t.Errorf("no resourceVersion given: %v", err)
	}
	if err := CheckVersion("agent", "a", "3", "3"); err != nil {
		t.Errorf("the current resourceVersion: %v", err)
	}
	if err := CheckVersion("agent", "a", "3", "2"); !errors.Is(err, ErrConflict) {
		t.Errorf("a stale resourceVersion: %v, want ErrConflict", err)
	}
	if AgentSpecChanged(api.AgentSpec{Tools: nil}, api.AgentSpec{Tools: []string{}}) {
		t.Error("nil and empty tools count as a change")
	}
	if !AgentSpecChanged(api.AgentSpec{System: "a"}, api.AgentSpec{System: "b"}) {
		t.Error("a new system prompt does not count as a change")
	}
	if GroupSpecChanged(api.AgentGroupSpec{Agent: "a"}, api.AgentGroupSpec{Agent: "a"}) || !GroupSpecChanged(api.AgentGroupSpec{Agent: "a"}, api.AgentGroupSpec{Agent: "b"}) {
		t.Error("GroupSpecChanged")
	}
	for _, c := range []struct {
		group string
		phase api.Phase
		want  bool
	}{{"", api.PhaseQueued, true}, {"g", api.PhaseQueued, false}, {"", api.PhaseCancelled, false}} {
		r := &api.AgentRun{Spec: api.AgentRunSpec{Group: c.group}, Status: api.AgentRunStatus{Phase: c.phase}}
		if got := ClaimableOnCreate(r); got != c.want {
			t.Errorf("ClaimableOnCreate(group %q, %s) = %v", c.group, c.phase, got)
		}
	}
	for _, c := range []struct {
		u    MemberUpdate
		want UpdateKind
	}{
		{MemberUpdate{Admit: true, Status: api.AgentRunStatus{Phase: api.PhaseQueued}}, UpdateAdmit},
		{MemberUpdate{Status: api.AgentRunStatus{Phase: api.PhaseCancelled}}, UpdateFinish},
		{MemberUpdate{Status: api.AgentRunStatus{Phase: api.PhaseQueued}, Wait: api.ReasonMaxActiveReached}, UpdateWait},
	} {
		if got := c.u.Kind(); got != c.want {
			t.Errorf("Kind of %+v = %v, want %v", c.u, got, c.want)
		}
	}
	var ie *ItemError
	if err := BatchItemError(0, 1, GroupNotFound("g")); !errors.As(err, &ie) {
		t.Errorf("a refused single item is not named: %v", err)
	}
	if err := BatchItemError(0, 1, ErrUnavailable); errors.As(err, &ie) || !errors.Is(err, ErrUnavailable) {
		t.Errorf("a store failure of a single item: %v, want it as it is", err)
	}
	if err := BatchItemError(2, 3, ErrUnavailable); !errors.As(err, &ie) || ie.Index != 2 {
		t.Errorf("a failure in a batch of 3: %v, want items[2]", err)
	}
}

func TestUpdateVersions(t *testing.T) {
	cur := &api.Agent{Spec: api.AgentSpec{System: "a"}, Status: api.AgentStatus{Revision: 4}}
	cur.Metadata.Name, cur.Metadata.ResourceVersion, cur.Metadata.Generation = "a", "7", 3
	same := &api.Agent{Spec: api.AgentSpec{System: "a"}}
	v, err := UpdateAgentVersions(cur, same)
	if err != nil || v != (Versions{ResourceVersion: 8, Generation: 3, Revision: 4}) {
		t.Errorf("labels-only update: %+v, %v", v, err)
	}
	changed := &api.Agent{Spec: api.AgentSpec{System: "b"}}
	changed.Metadata.ResourceVersion = "7"
	v, err = UpdateAgentVersions(cur, changed)
	if err != nil || v != (Versions{ResourceVersion: 8, Generation: 4, Revision: 5, SpecChanged: true}) || v.String() != "8" {
		t.Errorf("spec update: %+v, %v", v, err)
	}
	changed.Metadata.ResourceVersion = "6"
	if _, err := UpdateAgentVersions(cur, changed); !errors.Is(err, ErrConflict) {
		t.Errorf("stale update: %v", err)
	}
	if changed.Metadata.ResourceVersion != "6" || cur.Metadata.ResourceVersion != "7" {
		t.Error("the rule changed its inputs")
	}

	g := &api.AgentGroup{Spec: api.AgentGroupSpec{Agent: "a"}}
	g.Metadata.Name, g.Metadata.ResourceVersion, g.Metadata.Generation = "g", "2", 1
	refused := errors.New("refused")
	if _, err := UpdateGroupVersions(g, &api.AgentGroup{Spec: api.AgentGroupSpec{Agent: "a"}}, func(*api.AgentGroup) error { return refused }); !errors.Is(err, refused) {
		t.Errorf("a refusing check: %v", err)
	}
	v, err = UpdateGroupVersions(g, &api.AgentGroup{Spec: api.AgentGroupSpec{Agent: "a", Limits: api.GroupLimits{MaxActive: 3}}}, nil)
	if err != nil || v.ResourceVersion != 3 || v.Generation != 2 {
		t.Errorf("group spec update: %+v, %v", v, err)
	}
}
