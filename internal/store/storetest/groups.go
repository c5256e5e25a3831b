package storetest

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

func newGroup(name string, maxActive int, maxCost string) *api.AgentGroup {
	g := &api.AgentGroup{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "AgentGroup"},
		Metadata: api.ObjectMeta{Name: name},
		Spec:     api.AgentGroupSpec{Agent: "agent-a", Limits: api.GroupLimits{MaxActive: maxActive, MaxPending: api.DefaultMaxPending, MaxCostUSD: maxCost}}}
	return g
}

func mustCreateGroup(t *testing.T, s store.Store, g *api.AgentGroup) {
	t.Helper()
	if err := s.CreateGroup(bg, g); err != nil {
		t.Fatalf("CreateGroup(%q): %v", g.Metadata.Name, err)
	}
}

func member(group, task string, deps ...string) *api.AgentRun {
	r := newRun(group+"-"+task, "agent-a")
	r.Spec.Group, r.Spec.TaskKey, r.Spec.DependsOn, r.Spec.MaxCostUSD = group, task, deps, "0.10"
	return r
}

func mustCreateRuns(t *testing.T, s store.Store, runs ...*api.AgentRun) {
	t.Helper()
	if _, _, err := s.CreateRuns(bg, runs, "", ""); err != nil {
		t.Fatalf("CreateRuns: %v", err)
	}
}

func admit(t *testing.T, s store.Store, group string) int {
	t.Helper()
	n, err := s.AdmitGroup(bg, group, time.Now())
	if err != nil {
		t.Fatalf("AdmitGroup(%q): %v", group, err)
	}
	return n
}

func claimedNames(t *testing.T, s store.Store) []string {
	t.Helper()
	return runNames(claim(t, s, newOwner("runner"), longTTL))
}

func runNames(m map[string]store.Lease) []string {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// apiCode is the stable code of a store rule's refusal (a *store.RuleError), "" if err is none.
func apiCode(err error) api.Code {
	if e, ok := store.AsRuleError(err); ok {
		return e.Code
	}
	return ""
}

// finishLeased commits a terminal phase under l and releases it.
func finishLeased(t *testing.T, s store.Store, l store.Lease, phase api.Phase, total string) {
	t.Helper()
	mustCommit(t, s, l, store.Write{Status: &api.AgentRunStatus{Phase: phase, Reason: api.ReasonCompleted, AgentRevision: 1,
		Cost: &api.RunCost{TotalUSD: total}}, Release: true})
}

func testGroups(t *testing.T, open opener) {
	t.Run("CRUD", func(t *testing.T) {
		s := open(t)
		g := newGroup("g", 2, "0.60")
		mustCreateGroup(t, s, g)
		if g.Metadata.UID == "" || g.Metadata.ResourceVersion != "1" || g.Metadata.CreationTimestamp == nil {
			t.Errorf("CreateGroup did not fill metadata: %+v", g.Metadata)
		}
		mustErr(t, "CreateGroup twice", s.CreateGroup(bg, newGroup("g", 2, "")), store.ErrAlreadyExists)
		got, err := s.GetGroup(bg, "g")
		if err != nil || got.Spec.Limits.MaxActive != 2 || got.Spec.Limits.MaxCostUSD != "0.60" {
			t.Fatalf("GetGroup = %+v, %v", got, err)
		}
		_, err = s.GetGroup(bg, "nope")
		mustErr(t, "GetGroup(missing)", err, store.ErrNotFound)
		got.Spec.Limits.MaxActive = 4
		if err := s.UpdateGroup(bg, got, nil); err != nil {
			t.Fatalf("UpdateGroup: %v", err)
		}
		if got.Metadata.ResourceVersion != "2" || got.Metadata.Generation != 2 {
			t.Errorf("after update: rv %s generation %d", got.Metadata.ResourceVersion, got.Metadata.Generation)
		}
		stale := newGroup("g", 5, "0.60")
		stale.Metadata.ResourceVersion = "1"
		mustErr(t, "UpdateGroup(stale rv)", s.UpdateGroup(bg, stale, nil), store.ErrConflict)
		refused := errors.New("refused")
		g2, _ := s.GetGroup(bg, "g")
		if err := s.UpdateGroup(bg, g2, func(*api.AgentGroup) error { return refused }); !errors.Is(err, refused) {
			t.Errorf("UpdateGroup with a refusing check: %v", err)
		}
		if _, err := s.SetGroupStatus(bg, "g", "", api.AgentGroupStatus{AgentRevision: 7}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SetGroupStatus(bg, "g", "1", api.AgentGroupStatus{}); !errors.Is(err, store.ErrConflict) {
			t.Errorf("SetGroupStatus with a stale resourceVersion: %v", err)
		}
		if got, _ := s.GetGroup(bg, "g"); got.Status.AgentRevision != 7 || got.Spec.Limits.MaxActive != 4 {
			t.Errorf("after SetGroupStatus: %+v", got)
		}
		gs, err := s.ListGroups(bg)
		if err != nil || len(gs) != 1 {
			t.Errorf("ListGroups = %d, %v", len(gs), err)
		}
	})

	t.Run("MembersWaitForAdmission", func(t *testing.T) {
		s := open(t)
		mustCreateGroup(t, s, newGroup("g", 2, ""))
		mustCreateRun(t, s, "solo") // not a member: claimable at once
		mustCreateRuns(t, s, member("g", "a"), member("g", "b"), member("g", "c"))
		if got := claimedNames(t, s); fmt.Sprint(got) != "[solo]" {
			t.Fatalf("before admission claimed %v, want only [solo]", got)
		}
		r := mustGetRun(t, s, "g-a")
		if r.Status.Phase != api.PhaseQueued || r.Status.Reason != api.ReasonGroupWait || r.Spec.Group != "g" {
			t.Errorf("new member: %+v", r.Status)
		}
		// Pokes (a message, a cancel request on an admitted run) never make an unadmitted member claimable.
		if _, _, err := s.AddMessage(bg, "g-c", "", "hi"); err != nil {
			t.Fatal(err)
		}
		if n := admit(t, s, "g"); n != 2 {
			t.Fatalf("admitted %d, want 2 (maxActive)", n)
		}
		if n := admit(t, s, "g"); n != 0 {
			t.Fatalf("second pass admitted %d, want 0", n)
		}
		c := mustGetRun(t, s, "g-c")
		if c.Status.Reason != api.ReasonGroupWait || c.Status.Message == "" {
			t.Errorf("third member: %+v", c.Status)
		}
		owner := newOwner("runner")
		leases := claim(t, s, owner, longTTL)
		if fmt.Sprint(runNames(leases)) != "[g-a g-b]" {
			t.Fatalf("claimed %v, want [g-a g-b]", runNames(leases))
		}
		ms, err := s.GroupMembers(bg, "g")
		if err != nil || len(ms) != 3 || ms[0].Name != "g-a" || !ms[0].Admitted || ms[2].Admitted || ms[2].Wait != api.ReasonMaxActiveReached {
			t.Fatalf("GroupMembers = %+v, %v", ms, err)
		}
		finishLeased(t, s, leases["g-a"], api.PhaseSucceeded, "0.01")
		if n := admit(t, s, "g"); n != 1 {
			t.Fatalf("after one finished, admitted %d, want 1", n)
		}
		if got := claimedNames(t, s); fmt.Sprint(got) != "[g-c]" {
			t.Fatalf("claimed %v, want [g-c]", got)
		}
		if names := listRunNames(t, s, store.RunFilter{Group: "g"}); fmt.Sprint(names) != "[g-a g-b g-c]" {
			t.Errorf("ListRuns(group g) = %v", names)
		}
		evs := mustListEvents(t, s, "g-a", 0, 0)
		if len(evs) == 0 || evs[0].Type != "run.admitted" {
			t.Errorf("g-a events: %+v", evs)
		}
	})

	t.Run("Dependencies", func(t *testing.T) {
		s := open(t)
		mustCreateGroup(t, s, newGroup("g", 10, ""))
		mustCreateRuns(t, s, member("g", "a"), member("g", "b"), member("g", "c", "a", "b"), member("g", "d", "c"), member("g", "e", "b"))
		if n := admit(t, s, "g"); n != 2 {
			t.Fatalf("admitted %d, want 2 (a and b)", n)
		}
		if r := mustGetRun(t, s, "g-c"); r.Status.Reason != api.ReasonDependencyWait {
			t.Errorf("c: %+v", r.Status)
		}
		leases := claim(t, s, newOwner("runner"), longTTL)
		finishLeased(t, s, leases["g-a"], api.PhaseSucceeded, "0")
		if n := admit(t, s, "g"); n != 0 {
			t.Fatalf("with b unfinished admitted %d, want 0", n)
		}
		finishLeased(t, s, leases["g-b"], api.PhaseFailed, "0")
		admit(t, s, "g")
		for name, want := range map[string]api.Reason{"g-c": api.ReasonDependencyFailed, "g-e": api.ReasonDependencyFailed, "g-d": api.ReasonDependencyCancelled} {
			r := mustGetRun(t, s, name)
			if r.Status.Phase != api.PhaseCancelled || r.Status.Reason != want || r.Status.FinishedAt == nil {
				t.Errorf("%s: %s/%s, want Cancelled/%s", name, r.Status.Phase, r.Status.Reason, want)
			}
		}
		mustNotClaim(t, s, "every member has ended")
	})

	t.Run("CostCap", func(t *testing.T) {
		s := open(t)
		mustCreateGroup(t, s, newGroup("g", 10, "0.25"))
		mustCreateRuns(t, s, member("g", "a"), member("g", "b"), member("g", "c"))
		if n := admit(t, s, "g"); n != 2 {
			t.Fatalf("admitted %d, want 2 (two caps of 0.10 fit under 0.25)", n)
		}
		ms, _ := s.GroupMembers(bg, "g")
		if ms[2].Wait != api.ReasonMaxCostReached {
			t.Errorf("c waits for %q, want MaxCostReached", ms[2].Wait)
		}
		leases := claim(t, s, newOwner("runner"), longTTL)
		// a spent 0.08: 0.08 + 0.10 (b's cap) + 0.10 > 0.25, c still waits.
		finishLeased(t, s, leases["g-a"], api.PhaseSucceeded, "0.08")
		if n := admit(t, s, "g"); n != 0 {
			t.Fatalf("admitted %d, want 0", n)
		}
		// b spent 0.02: 0.08 + 0.02 + 0.10 <= 0.25.
		finishLeased(t, s, leases["g-b"], api.PhaseSucceeded, "0.02")
		if n := admit(t, s, "g"); n != 1 {
			t.Fatalf("admitted %d, want 1", n)
		}
	})

	t.Run("Refusals", func(t *testing.T) {
		s := open(t)
		mustCreateGroup(t, s, newGroup("g", 10, ""))
		_, _, err := s.CreateRuns(bg, []*api.AgentRun{member("nope", "a")}, "", "")
		if apiCode(err) != api.CodeGroupNotFound {
			t.Errorf("member of a missing group: %v", err)
		}
		_, _, err = s.CreateRuns(bg, []*api.AgentRun{member("g", "c", "a")}, "", "")
		if apiCode(err) != api.CodeInvalid {
			t.Errorf("dependency not in the group: %v", err)
		}
		other := member("g", "x")
		other.Spec.Agent = "agent-b"
		if _, _, err := s.CreateRuns(bg, []*api.AgentRun{other}, "", ""); apiCode(err) != api.CodeInvalid {
			t.Errorf("member of another agent: %v", err)
		}
		// All or nothing: the second item fails, the first is not created.
		_, _, err = s.CreateRuns(bg, []*api.AgentRun{member("g", "a"), member("g", "b", "zz")}, "", "")
		var ie *store.ItemError
		if !errors.As(err, &ie) || ie.Index != 1 {
			t.Errorf("batch with a bad second item: %v", err)
		}
		if names := listRunNames(t, s, store.RunFilter{Group: "g"}); len(names) != 0 {
			t.Errorf("a failed batch left runs: %v", names)
		}
		// List order: a dependency earlier in the same batch is fine.
		mustCreateRuns(t, s, member("g", "a"), member("g", "b", "a"))
		_, _, err = s.CreateRuns(bg, []*api.AgentRun{member("g", "a")}, "", "")
		if !errors.Is(err, store.ErrAlreadyExists) {
			t.Errorf("task key used twice: %v", err)
		}
		g, _ := s.GetGroup(bg, "g")
		g.Spec.Sealed = true
		if err := s.UpdateGroup(bg, g, nil); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.CreateRuns(bg, []*api.AgentRun{member("g", "c")}, "", ""); apiCode(err) != api.CodeGroupSealed {
			t.Errorf("member of a sealed group: %v", err)
		}
		small := newGroup("small", 10, "")
		small.Spec.Limits.MaxPending = 1
		mustCreateGroup(t, s, small)
		if _, _, err := s.CreateRuns(bg, []*api.AgentRun{member("small", "a"), member("small", "b")}, "", ""); apiCode(err) != api.CodeMaxPendingReached {
			t.Errorf("beyond maxPending: %v", err)
		}
	})

	t.Run("Idempotency", func(t *testing.T) {
		s := open(t)
		mustCreateGroup(t, s, newGroup("g", 10, ""))
		first, replayed, err := s.CreateRuns(bg, []*api.AgentRun{member("g", "a"), member("g", "b")}, "key-1", "h1")
		if err != nil || replayed || len(first) != 2 {
			t.Fatalf("first batch: %d runs, replayed %v, %v", len(first), replayed, err)
		}
		again, replayed, err := s.CreateRuns(bg, []*api.AgentRun{member("g", "a"), member("g", "b")}, "key-1", "h1")
		if err != nil || !replayed || len(again) != 2 || again[0].Metadata.UID != first[0].Metadata.UID {
			t.Fatalf("repeated batch: %d runs, replayed %v, %v", len(again), replayed, err)
		}
		if _, _, err := s.CreateRuns(bg, []*api.AgentRun{member("g", "c")}, "key-1", "h2"); apiCode(err) != api.CodeIdempotencyReused {
			t.Errorf("key reused with another batch: %v", err)
		}
		// Concurrent batches with one key: one creates, the others replay.
		var wg sync.WaitGroup
		errs := make([]error, 6)
		for i := range errs {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				_, _, errs[i] = s.CreateRuns(bg, []*api.AgentRun{member("g", "x")}, "key-2", "hx")
			}(i)
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("concurrent batch %d: %v", i, err)
			}
		}
	})

	t.Run("CancelAndDelete", func(t *testing.T) {
		s := open(t)
		mustCreateGroup(t, s, newGroup("g", 1, ""))
		mustCreateRuns(t, s, member("g", "a"), member("g", "b"), member("g", "c"))
		admit(t, s, "g")
		leases := claim(t, s, newOwner("runner"), longTTL)
		finishLeased(t, s, leases["g-a"], api.PhaseSucceeded, "0")
		admit(t, s, "g")
		requested, err := s.CancelGroup(bg, "g")
		if err != nil || fmt.Sprint(requested) != "[g-b]" {
			t.Fatalf("CancelGroup = %v, %v; want [g-b] (admitted, unfinished)", requested, err)
		}
		if r := mustGetRun(t, s, "g-a"); r.Status.Phase != api.PhaseSucceeded {
			t.Errorf("finished run changed: %s", r.Status.Phase)
		}
		if r := mustGetRun(t, s, "g-c"); r.Status.Phase != api.PhaseCancelled || r.Status.Reason != api.ReasonUserCancelled {
			t.Errorf("unadmitted run: %s/%s", r.Status.Phase, r.Status.Reason)
		}
		if r := mustGetRun(t, s, "g-b"); !r.Status.CancelRequested {
			t.Errorf("admitted run not asked to cancel: %+v", r.Status)
		}
		if g, _ := s.GetGroup(bg, "g"); !g.Status.CancelRequested {
			t.Errorf("group not marked cancelled")
		}
		if _, _, err := s.CreateRuns(bg, []*api.AgentRun{member("g", "d")}, "", ""); apiCode(err) != api.CodeGroupCancelled {
			t.Errorf("member of a cancelled group: %v", err)
		}
		mustCreateRun(t, s, "solo")
		names, err := s.DeleteGroup(bg, "g")
		sort.Strings(names)
		if err != nil || fmt.Sprint(names) != "[g-a g-b g-c]" {
			t.Fatalf("DeleteGroup = %v, %v", names, err)
		}
		_, err = s.GetRun(bg, "g-a")
		mustErr(t, "GetRun after DeleteGroup", err, store.ErrNotFound)
		_, err = s.GetGroup(bg, "g")
		mustErr(t, "GetGroup after DeleteGroup", err, store.ErrNotFound)
		mustGetRun(t, s, "solo")
		_, err = s.DeleteGroup(bg, "g")
		mustErr(t, "DeleteGroup twice", err, store.ErrNotFound)
	})

	// Admission from many goroutines at once (as from several servers) never exceeds maxActive
	// or the cost cap.
	t.Run("ConcurrentAdmission", func(t *testing.T) {
		s := open(t)
		mustCreateGroup(t, s, newGroup("g", 3, "0.50"))
		var runs []*api.AgentRun
		for i := range 20 {
			runs = append(runs, member("g", fmt.Sprintf("t%02d", i)))
		}
		mustCreateRuns(t, s, runs...)
		var wg sync.WaitGroup
		var mu sync.Mutex
		total := 0
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := s.AdmitGroup(bg, "g", time.Now())
				if err != nil {
					t.Errorf("AdmitGroup: %v", err)
				}
				mu.Lock()
				total += n
				mu.Unlock()
			}()
		}
		wg.Wait()
		if total != 3 {
			t.Fatalf("concurrent admission admitted %d, want 3", total)
		}
		if got := claimedNames(t, s); len(got) != 3 {
			t.Fatalf("claimed %v, want 3", got)
		}
		groups, err := s.GroupsToAdmit(bg)
		if err != nil || fmt.Sprint(groups) != "[g]" {
			t.Errorf("GroupsToAdmit = %v, %v", groups, err)
		}
	})

	t.Run("DeadlineBeforeAdmission", func(t *testing.T) {
		s := open(t)
		mustCreateGroup(t, s, newGroup("g", 1, ""))
		a, b := member("g", "a"), member("g", "b")
		past := time.Now().Add(-time.Second).UTC()
		b.Status.Deadline = &past
		mustCreateRuns(t, s, a, b)
		admit(t, s, "g")
		if r := mustGetRun(t, s, "g-b"); r.Status.Phase != api.PhaseFailed || r.Status.Reason != api.ReasonDeadlineExceeded {
			t.Errorf("b: %s/%s, want Failed/DeadlineExceeded", r.Status.Phase, r.Status.Reason)
		}
	})
}

func testEnvironments(t *testing.T, open opener) {
	s := open(t)
	env := &api.Environment{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Environment"}, Metadata: api.ObjectMeta{Name: "acme/math"},
		Spec: api.EnvironmentSpec{Version: "1.0.0", Grader: api.GraderSpec{Kind: "exact"},
			Splits: map[string][]api.Task{"test": {{ID: "t1", Prompt: "1+1?", Answer: []byte(`"2"`)}}}}}
	created, err := s.PutEnvironment(bg, env)
	if err != nil || !created {
		t.Fatalf("PutEnvironment = %v, %v", created, err)
	}
	if created, err := s.PutEnvironment(bg, env); err != nil || created {
		t.Errorf("PutEnvironment again = %v, %v; want unchanged", created, err)
	}
	other := *env
	other.Spec.Description = "changed"
	if _, err := s.PutEnvironment(bg, &other); !errors.Is(err, store.ErrAlreadyExists) {
		t.Errorf("PutEnvironment with other content under the same version: %v", err)
	}
	v2 := other
	v2.Spec.Version = "1.1.0"
	if _, err := s.PutEnvironment(bg, &v2); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetEnvironment(bg, "acme/math", "1.0.0")
	if err != nil || got.Spec.Description != "" || string(got.Spec.Splits["test"][0].Answer) != `"2"` {
		t.Fatalf("GetEnvironment = %+v, %v", got, err)
	}
	if _, err := s.GetEnvironment(bg, "acme/math", "9"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetEnvironment(missing) = %v", err)
	}
	if l, err := s.ListEnvironments(bg); err != nil || len(l) != 2 {
		t.Errorf("ListEnvironments = %d, %v", len(l), err)
	}
}
