package group

import (
	"testing"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

func TestStatus(t *testing.T) {
	m := func(phase api.Phase, reason api.Reason, admitted bool, wait api.Reason) store.Member {
		return store.Member{Phase: phase, Reason: reason, Admitted: admitted, Wait: wait, SpentMicros: 10_000}
	}
	sealed := func(sealed bool) *api.AgentGroup {
		return &api.AgentGroup{Metadata: api.ObjectMeta{Name: "g"}, Spec: api.AgentGroupSpec{Sealed: sealed, Limits: api.GroupLimits{MaxCostUSD: "0.60"}}}
	}
	cancelled := sealed(false)
	cancelled.Status.CancelRequested = true
	evalPending := sealed(true)
	evalPending.Spec.Evaluation = &api.EvaluationSpec{}
	evalPending.Status.Evaluation = &api.EvaluationStatus{Pending: 1}
	evalFailed := sealed(true)
	evalFailed.Spec.Evaluation = &api.EvaluationSpec{}
	evalFailed.Status.Evaluation = &api.EvaluationStatus{Error: "no agent"}
	cases := []struct {
		name    string
		g       *api.AgentGroup
		members []store.Member
		phase   api.GroupPhase
		reason  api.Reason
	}{
		{"sealed and empty", sealed(true), nil, api.GroupSucceeded, ""},
		{"not sealed", sealed(false), []store.Member{m(api.PhaseSucceeded, "", true, "")}, api.GroupRunning, ""},
		{"all succeeded", sealed(true), []store.Member{m(api.PhaseSucceeded, "", true, "")}, api.GroupSucceeded, ""},
		{"one unfinished", sealed(true), []store.Member{m(api.PhaseSucceeded, "", true, ""), m(api.PhaseQueued, api.ReasonGroupWait, false, api.ReasonMaxActiveReached)}, api.GroupRunning, ""},
		{"a run failed", sealed(true), []store.Member{m(api.PhaseFailed, api.ReasonModelError, true, "")}, api.GroupFailed, api.ReasonRunsFailed},
		{"dependency failed", sealed(true), []store.Member{m(api.PhaseCancelled, api.ReasonDependencyFailed, false, "")}, api.GroupFailed, api.ReasonRunsFailed},
		{"user cancelled one", sealed(true), []store.Member{m(api.PhaseCancelled, api.ReasonUserCancelled, true, "")}, api.GroupSucceeded, ""},
		{"cancelling", cancelled, []store.Member{m(api.PhaseRunning, "", true, "")}, api.GroupCancelling, ""},
		{"cancelled", cancelled, []store.Member{m(api.PhaseCancelled, api.ReasonUserCancelled, true, "")}, api.GroupCancelled, api.ReasonUserCancelled},
		{"evaluation grading", evalPending, []store.Member{m(api.PhaseSucceeded, "", true, "")}, api.GroupRunning, ""},
		{"evaluation failed", evalFailed, nil, api.GroupFailed, "EvaluationFailed"},
	}
	for _, c := range cases {
		st := Status(c.g, c.members)
		if st.Phase != c.phase || st.Reason != c.reason {
			t.Errorf("%s: %s/%s, want %s/%s", c.name, st.Phase, st.Reason, c.phase, c.reason)
		}
	}
	st := Status(sealed(false), []store.Member{
		m(api.PhaseQueued, api.ReasonDependencyWait, false, api.ReasonDependencyWait),
		m(api.PhaseQueued, api.ReasonGroupWait, false, api.ReasonMaxCostReached),
		m(api.PhaseQueued, "", true, ""),
		m(api.PhaseRunning, "", true, ""),
		m(api.PhaseWaiting, api.ReasonMessage, true, ""),
		m(api.PhaseSucceeded, "", true, ""),
	})
	want := api.GroupCounts{Queued: 2, Active: 2, Waiting: 1, Succeeded: 1}
	if st.Counts != want || st.BlockedReasons[api.ReasonDependencyWait] != 1 || st.BlockedReasons[api.ReasonMaxCostReached] != 1 {
		t.Errorf("counts %+v blocked %v", st.Counts, st.BlockedReasons)
	}
	if st.Cost.TotalUSD != "0.06" || st.Cost.LimitUSD != "0.60" {
		t.Errorf("cost %+v", st.Cost)
	}
}
