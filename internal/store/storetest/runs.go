package storetest

import (
	"sort"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

func testRuns(t *testing.T, open opener) {
	t.Run("CreatePreservesSpecAndStatus", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		deadline := time.Now().UTC().Add(time.Hour).Truncate(time.Millisecond)
		mk := func() *api.AgentRun {
			r := newRun("run-1", "agent-a")
			r.Metadata.Labels = map[string]string{"env": "test"}
			r.Spec = api.AgentRunSpec{
				Agent: "agent-a", Input: "summarise the repo", KeepAlive: true, Deadline: "30m",
				MaxCostUSD: "2.50", Group: "g1", TaskKey: "t1", DependsOn: []string{"run-0"},
			}
			r.Status = api.AgentRunStatus{
				Phase: api.PhaseQueued, Reason: "DependencyWait", Message: "waiting for run-0",
				AgentRevision: 3, Deadline: &deadline,
				Cost: &api.RunCost{TotalUSD: "0.00", LimitUSD: "2.50"},
			}
			return r
		}
		r, want := mk(), mk()
		if err := s.CreateRun(bg, r); err != nil {
			t.Fatalf("CreateRun: %v", err)
		}
		got := mustGetRun(t, s, "run-1")
		for _, c := range []struct {
			what string
			r    *api.AgentRun
		}{{"run passed to CreateRun", r}, {"GetRun", got}} {
			m := c.r.Metadata
			if m.Name != "run-1" {
				t.Errorf("%s: name = %q, want run-1", c.what, m.Name)
			}
			if m.UID == "" {
				t.Errorf("%s: uid is empty, want it set", c.what)
			}
			if m.ResourceVersion == "" {
				t.Errorf("%s: resourceVersion is empty, want it set", c.what)
			}
			if m.CreationTimestamp == nil || m.CreationTimestamp.IsZero() {
				t.Errorf("%s: creationTimestamp = %v, want it set", c.what, m.CreationTimestamp)
			}
			if !sameValue(m.Labels, want.Metadata.Labels) {
				t.Errorf("%s: labels = %v, want %v", c.what, m.Labels, want.Metadata.Labels)
			}
			if !sameValue(c.r.Spec, want.Spec) {
				t.Errorf("%s: spec = %s, want %s", c.what, js(c.r.Spec), js(want.Spec))
			}
			checkStatus(t, c.what, c.r.Status, want.Status)
		}
		if r.Metadata.UID != got.Metadata.UID {
			t.Errorf("CreateRun set uid %q, GetRun returns %q; want the same", r.Metadata.UID, got.Metadata.UID)
		}
		other := mustCreateRun(t, s, "run-2")
		if other.Metadata.UID == r.Metadata.UID {
			t.Errorf("two runs share uid %q, want distinct", r.Metadata.UID)
		}
	})

	t.Run("CreateWithFirstEvents", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		// The first event has no time (the server's run.created): the store stamps it.
		if err := s.CreateRun(bg, newRun("run-1", "agent-a"), api.Event{Type: "run.created", Message: "queued"}, ev("Note", "second")); err != nil {
			t.Fatalf("CreateRun with events: %v", err)
		}
		// A name taken adds no events to the run that has it.
		wantErr(t, "CreateRun(duplicate, with an event)", s.CreateRun(bg, newRun("run-1", "agent-b"), ev("run.created", "again")), store.ErrAlreadyExists)
		if err := s.AppendEvents(bg, "run-1", []api.Event{ev("Note", "later")}); err != nil {
			t.Fatalf("AppendEvents: %v", err)
		}
		evs, err := s.ListEvents(bg, "run-1", 0, 0)
		if err != nil {
			t.Fatalf("ListEvents: %v", err)
		}
		var got []string
		for i, e := range evs {
			got = append(got, e.Message)
			if e.Seq != int64(i+1) {
				t.Errorf("event %q has seq %d, want %d", e.Message, e.Seq, i+1)
			}
		}
		if want := []string{"queued", "second", "later"}; !sameValue(got, want) {
			t.Errorf("timeline = %q, want %q (the creation's events first, in order; none from the refused duplicate)", got, want)
		}
		if evs[0].Type != "run.created" || evs[0].Time.IsZero() {
			t.Errorf("first event: type %q, time %v; want run.created with a time", evs[0].Type, evs[0].Time)
		}
	})

	t.Run("CreateDuplicate", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		dup := newRun("run-1", "agent-b")
		wantErr(t, "CreateRun(duplicate)", s.CreateRun(bg, dup), store.ErrAlreadyExists)
		if got := mustGetRun(t, s, "run-1"); got.Spec.Agent != "agent-a" {
			t.Errorf("after a refused duplicate create, spec.agent = %q, want the first run's %q", got.Spec.Agent, "agent-a")
		}
	})

	t.Run("GetUnknown", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		_, err := s.GetRun(bg, "nope")
		wantErr(t, "GetRun(unknown)", err, store.ErrNotFound)
		wantErr(t, "DeleteRun(unknown)", s.DeleteRun(bg, "nope"), store.ErrNotFound)
		_, err = s.RequestCancel(bg, "nope")
		wantErr(t, "RequestCancel(unknown)", err, store.ErrNotFound)
		_, _, err = s.AddMessage(bg, "nope", "", "hi")
		wantErr(t, "AddMessage(unknown run)", err, store.ErrNotFound)
	})

	t.Run("ListFilters", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		runs := []struct {
			name, agent string
			phase       api.Phase
		}{
			{"r1", "agent-a", api.PhaseQueued},
			{"r2", "agent-b", api.PhaseQueued},
			{"r3", "agent-a", api.PhaseWaiting},
			{"r4", "agent-a", api.PhaseQueued},
			{"r5", "agent-b", api.PhaseWaiting},
		}
		for _, x := range runs {
			r := newRun(x.name, x.agent)
			r.Status.Phase = x.phase
			if err := s.CreateRun(bg, r); err != nil {
				t.Fatalf("CreateRun(%s): %v", x.name, err)
			}
		}
		for _, c := range []struct {
			f    store.RunFilter
			want []string
		}{
			{store.RunFilter{}, []string{"r1", "r2", "r3", "r4", "r5"}},
			{store.RunFilter{Agent: "agent-a"}, []string{"r1", "r3", "r4"}},
			{store.RunFilter{Agent: "agent-b"}, []string{"r2", "r5"}},
			{store.RunFilter{Agent: "agent-z"}, nil},
			{store.RunFilter{Phase: api.PhaseWaiting}, []string{"r3", "r5"}},
			{store.RunFilter{Phase: api.PhaseQueued, Agent: "agent-a"}, []string{"r1", "r4"}},
			{store.RunFilter{Phase: api.PhaseSucceeded}, nil},
		} {
			got := listRunNames(t, s, c.f)
			if !sameValue(got, c.want) {
				t.Errorf("ListRuns(%+v) = %v, want %v", c.f, got, c.want)
			}
		}
		for _, c := range []struct {
			f      store.RunFilter
			n      int
			within []string
		}{
			{store.RunFilter{Limit: 2}, 2, []string{"r1", "r2", "r3", "r4", "r5"}},
			{store.RunFilter{Limit: 2, Agent: "agent-a"}, 2, []string{"r1", "r3", "r4"}},
			{store.RunFilter{Limit: 10, Phase: api.PhaseWaiting}, 2, []string{"r3", "r5"}},
			{store.RunFilter{Limit: 1, Phase: api.PhaseWaiting, Agent: "agent-b"}, 1, []string{"r5"}},
		} {
			got := listRunNames(t, s, c.f)
			if len(got) != c.n || !subset(got, c.within) {
				t.Errorf("ListRuns(%+v) = %v, want %d of %v", c.f, got, c.n, c.within)
			}
		}
		// Newest first is the exact reverse of the default order, and Offset pages through it.
		inOrder := func(f store.RunFilter) []string {
			runs, err := s.ListRuns(bg, f)
			if err != nil {
				t.Fatalf("ListRuns(%+v): %v", f, err)
			}
			var names []string
			for _, r := range runs {
				names = append(names, r.Metadata.Name)
			}
			return names
		}
		oldest := inOrder(store.RunFilter{})
		var newest []string
		for i := len(oldest) - 1; i >= 0; i-- {
			newest = append(newest, oldest[i])
		}
		for _, c := range []struct {
			f    store.RunFilter
			want []string
		}{
			{store.RunFilter{Newest: true}, newest},
			{store.RunFilter{Newest: true, Limit: 2, Offset: 1}, newest[1:3]},
			{store.RunFilter{Newest: true, Offset: 3}, newest[3:]},
			{store.RunFilter{Limit: 2, Offset: 4}, oldest[4:]},
			{store.RunFilter{Newest: true, Offset: 9}, nil},
		} {
			if got := inOrder(c.f); !sameValue(got, c.want) {
				t.Errorf("ListRuns(%+v) = %v, want %v (all, oldest first: %v)", c.f, got, c.want, oldest)
			}
		}
		if got := inOrder(store.RunFilter{Newest: true, Agent: "agent-a", Limit: 1}); len(got) != 1 || got[0] != lastOf(oldest, map[string]bool{"r1": true, "r3": true, "r4": true}) {
			t.Errorf("the newest run of agent-a = %v (all, oldest first: %v)", got, oldest)
		}
	})

	t.Run("DeleteRemovesEverything", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "run-1")
		l := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		mustCommit(t, s, l, store.Write{
			Steps:   []api.Step{startedStep("s1", 1)},
			Events:  []api.Event{ev("StepStarted", "s1")},
			Release: true,
		})
		if err := s.AppendEvents(bg, "run-1", []api.Event{ev("Note", "from the server")}); err != nil {
			t.Fatalf("AppendEvents: %v", err)
		}
		if _, _, err := s.AddMessage(bg, "run-1", "k1", "hello"); err != nil {
			t.Fatalf("AddMessage: %v", err)
		}
		// The message poked the run: it is claimable now, and must not be once deleted.
		if err := s.DeleteRun(bg, "run-1"); err != nil {
			t.Fatalf("DeleteRun: %v", err)
		}
		_, err := s.GetRun(bg, "run-1")
		wantErr(t, "GetRun after DeleteRun", err, store.ErrNotFound)
		if names := listRunNames(t, s, store.RunFilter{}); len(names) != 0 {
			t.Errorf("ListRuns after DeleteRun = %v, want none", names)
		}
		checkGone := func(when string) {
			t.Helper()
			if steps, err := s.ListSteps(bg, "run-1"); err != nil && !errIs(err, store.ErrNotFound) {
				t.Errorf("ListSteps %s: %v, want no error or ErrNotFound", when, err)
			} else if len(steps) != 0 {
				t.Errorf("ListSteps %s = %s, want none", when, js(steps))
			}
			if evs, err := s.ListEvents(bg, "run-1", 0, 0); err != nil && !errIs(err, store.ErrNotFound) {
				t.Errorf("ListEvents %s: %v, want no error or ErrNotFound", when, err)
			} else if len(evs) != 0 {
				t.Errorf("ListEvents %s = %s, want none", when, js(evs))
			}
			if msgs, err := s.ListMessages(bg, "run-1", 0); err != nil && !errIs(err, store.ErrNotFound) {
				t.Errorf("ListMessages %s: %v, want no error or ErrNotFound", when, err)
			} else if len(msgs) != 0 {
				t.Errorf("ListMessages %s = %s, want none", when, js(msgs))
			}
		}
		checkGone("after DeleteRun")
		mustNotClaim(t, s, "after DeleteRun of a poked run")
		wantErr(t, "DeleteRun twice", s.DeleteRun(bg, "run-1"), store.ErrNotFound)

		// A new run with the same name starts clean: nothing of the old one leaks back.
		mustCreateRun(t, s, "run-1")
		checkGone("of a new run with the deleted run's name")
		msg, created, err := s.AddMessage(bg, "run-1", "k1", "second life")
		if err != nil {
			t.Fatalf("AddMessage on the new run: %v", err)
		}
		if !created || msg.Payload != "second life" {
			t.Errorf("AddMessage(key k1) on the new run = (%s, created %v), want a new message %q (keys of the deleted run must not leak)", js(msg), created, "second life")
		}
		l2 := mustClaim(t, s, newOwner("runner"), "run-1", longTTL)
		mustCommit(t, s, l2, store.Write{Events: []api.Event{ev("Started", "")}})
		if evs := mustListEvents(t, s, "run-1", 0, 0); !sameValue(eventSeqs(evs), []int64{1}) {
			t.Errorf("events of the new run have seqs %v, want [1]", eventSeqs(evs))
		}
	})
}

func testCountRuns(t *testing.T, open opener) {
	t.Run("ByPhase", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		if c, err := s.CountRuns(bg); err != nil || len(c) != 0 {
			t.Fatalf("CountRuns of an empty store = %v, %v", c, err)
		}
		mustCreateRun(t, s, "run-1")
		finish(t, s, "run-1", api.PhaseSucceeded)
		mustCreateRun(t, s, "run-2")
		mustCreateRun(t, s, "run-3")
		c, err := s.CountRuns(bg)
		if err != nil || c[string(api.PhaseQueued)] != 2 || c[string(api.PhaseSucceeded)] != 1 || len(c) != 2 {
			t.Errorf("CountRuns = %v, %v; want 2 Queued and 1 Succeeded", c, err)
		}
	})
}

// lastOf is the last name of list that is in set.
func lastOf(list []string, set map[string]bool) string {
	for i := len(list) - 1; i >= 0; i-- {
		if set[list[i]] {
			return list[i]
		}
	}
	return ""
}

func listRunNames(t *testing.T, s store.Store, f store.RunFilter) []string {
	t.Helper()
	runs, err := s.ListRuns(bg, f)
	if err != nil {
		t.Fatalf("ListRuns(%+v): %v", f, err)
	}
	var names []string
	for _, r := range runs {
		names = append(names, r.Metadata.Name)
	}
	sort.Strings(names)
	return names
}

func subset(got, within []string) bool {
	set := map[string]bool{}
	for _, w := range within {
		set[w] = true
	}
	for _, g := range got {
		if !set[g] {
			return false
		}
		delete(set, g) // no duplicates
	}
	return true
}

// checkStatus compares the fields of a run status the suite writes.
func checkStatus(t *testing.T, what string, got, want api.AgentRunStatus) {
	t.Helper()
	if got.Phase != want.Phase {
		t.Errorf("%s: status.phase = %q, want %q", what, got.Phase, want.Phase)
	}
	if got.Reason != want.Reason {
		t.Errorf("%s: status.reason = %q, want %q", what, got.Reason, want.Reason)
	}
	if got.Message != want.Message {
		t.Errorf("%s: status.message = %q, want %q", what, got.Message, want.Message)
	}
	if got.AgentRevision != want.AgentRevision {
		t.Errorf("%s: status.agentRevision = %d, want %d", what, got.AgentRevision, want.AgentRevision)
	}
	if (got.Deadline == nil) != (want.Deadline == nil) || (got.Deadline != nil && !got.Deadline.Equal(*want.Deadline)) {
		t.Errorf("%s: status.deadline = %v, want %v", what, got.Deadline, want.Deadline)
	}
	if !sameValue(got.WaitingOn, want.WaitingOn) {
		t.Errorf("%s: status.waitingOn = %s, want %s", what, js(got.WaitingOn), js(want.WaitingOn))
	}
	if !sameValue(got.Answer, want.Answer) {
		t.Errorf("%s: status.answer = %s, want %s", what, js(got.Answer), js(want.Answer))
	}
	if !sameValue(got.Cost, want.Cost) {
		t.Errorf("%s: status.cost = %s, want %s", what, js(got.Cost), js(want.Cost))
	}
	if !sameValue(got.Turns, want.Turns) {
		t.Errorf("%s: status.turns = %s, want %s", what, js(got.Turns), js(want.Turns))
	}
}

func testCancelRequested(t *testing.T, open opener) {
	t.Run("ListsOnlyAskedRuns", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		for _, n := range []string{"run-1", "run-2", "run-3"} {
			mustCreateRun(t, s, n)
		}
		if got, err := s.CancelRequested(bg, []string{"run-1", "run-2", "run-3"}); err != nil || len(got) != 0 {
			t.Fatalf("CancelRequested before any cancel = %v, %v", got, err)
		}
		if _, err := s.RequestCancel(bg, "run-2"); err != nil {
			t.Fatal(err)
		}
		got, err := s.CancelRequested(bg, []string{"run-1", "run-2", "nope"})
		if err != nil || len(got) != 1 || got[0] != "run-2" {
			t.Errorf("CancelRequested = %v, %v; want [run-2]", got, err)
		}
		if got, err := s.CancelRequested(bg, nil); err != nil || len(got) != 0 {
			t.Errorf("CancelRequested(nil) = %v, %v", got, err)
		}
	})
}
