// Package storetest is the conformance suite every store.Store backend must pass: it checks,
// through the interface only, the contract written in the comments of package store (agents and
// their immutable revisions, runs, messages, the journal, the event timeline, and the lease,
// fencing, release and wake-up rules: docs/architecture.md, "The store contract" and "Leases and
// fencing"). A backend's own test calls Run with a function that returns a fresh, empty store for
// each subtest; Run closes each store when its subtest ends.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// Run runs the whole suite; newStore returns a fresh, empty store for each subtest (the backend's
// test decides how: a temp file for SQLite, a fresh schema for PostgreSQL).
func Run(t *testing.T, newStore func(t *testing.T) store.Store) {
	open := func(t *testing.T) store.Store {
		t.Helper()
		s := newStore(t)
		if s == nil {
			t.Fatal("newStore returned nil")
		}
		t.Cleanup(func() { _ = s.Close() })
		if s.Backend() == "" {
			t.Error("Backend() = \"\", want a backend name")
		}
		return s
	}
	t.Run("Agents", func(t *testing.T) { testAgents(t, open) })
	t.Run("Runs", func(t *testing.T) { testRuns(t, open) })
	t.Run("Claims", func(t *testing.T) { testClaims(t, open) })
	t.Run("Fencing", func(t *testing.T) { testFencing(t, open) })
	t.Run("Journal", func(t *testing.T) { testJournal(t, open) })
	t.Run("ReleaseAndWake", func(t *testing.T) { testReleaseAndWake(t, open) })
	t.Run("Messages", func(t *testing.T) { testMessages(t, open) })
	t.Run("IfBusy", func(t *testing.T) { testIfBusy(t, open) })
	t.Run("Cancel", func(t *testing.T) { testCancel(t, open) })
	t.Run("ResolveStep", func(t *testing.T) { testResolveStep(t, open) })
	t.Run("Events", func(t *testing.T) { testEvents(t, open) })
	t.Run("Status", func(t *testing.T) { testStatus(t, open) })
	t.Run("Concurrency", func(t *testing.T) { testConcurrency(t, open) })
	t.Run("WaitWork", func(t *testing.T) { testWaitWork(t, open) })
	t.Run("CountRuns", func(t *testing.T) { testCountRuns(t, open) })
	t.Run("CancelRequested", func(t *testing.T) { testCancelRequested(t, open) })
	t.Run("Requeue", func(t *testing.T) { testRequeue(t, open) })
	t.Run("Transitions", func(t *testing.T) { testTransitions(t, open) })
	t.Run("Files", func(t *testing.T) { testFiles(t, open) })
	t.Run("Runners", func(t *testing.T) { testRunners(t, open) })
	t.Run("Groups", func(t *testing.T) { testGroups(t, open) })
	t.Run("Environments", func(t *testing.T) { testEnvironments(t, open) })
	t.Run("Credits", func(t *testing.T) { testCredits(t, open) })
	t.Run("Learning", func(t *testing.T) { testLearning(t, open) })
	t.Run("Ping", func(t *testing.T) { testPing(t, open) })
	t.Run("Retention", func(t *testing.T) { testRetention(t, open) })
	t.Run("Skills", func(t *testing.T) { testSkills(t, open) })
	t.Run("Triggers", func(t *testing.T) { testTriggers(t, open) })
	t.Run("Webhooks", func(t *testing.T) { testWebhooks(t, open) })
	t.Run("Forks", func(t *testing.T) { testForks(t, open) })
}

// opener opens a fresh store for one subtest.
type opener func(t *testing.T) store.Store

// Durations used throughout. longTTL outlives every test; shortTTL is meant to run out.
const (
	longTTL  = 10 * time.Minute
	shortTTL = 50 * time.Millisecond
	// patience bounds every wait for something that should happen soon.
	patience = 5 * time.Second
)

var bg = context.Background()

// ownerSeq makes owner names unique across the suite.
var ownerSeq atomic.Int64

func newOwner(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, ownerSeq.Add(1))
}

// newAgent returns a minimal valid agent.
func newAgent(name string) *api.Agent {
	return &api.Agent{
		TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Agent"},
		Metadata: api.ObjectMeta{Name: name, Labels: map[string]string{"team": "core"}},
		Spec: api.AgentSpec{
			DisplayName:      "Agent " + name,
			System:           "You are a careful assistant.",
			Model:            api.ModelSpec{Access: "Server", Provider: "anthropic", Name: "claude-test"},
			Tools:            []string{"read", "write"},
			Harness:          "builtin",
			MaxTokens:        api.DefaultMaxTokens,
			MaxToolCalls:     api.DefaultMaxToolCalls,
			PerRunMaxCostUSD: api.DefaultPerRunMaxCostUSD,
		},
	}
}

// newRun returns a minimal valid queued run of agent.
func newRun(name, agent string) *api.AgentRun {
	return &api.AgentRun{
		TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "AgentRun"},
		Metadata: api.ObjectMeta{Name: name},
		Spec:     api.AgentRunSpec{Agent: agent, Input: "hello " + name, MaxCostUSD: "1.00"},
		Status:   api.AgentRunStatus{Phase: api.PhaseQueued, AgentRevision: 1},
	}
}

func mustCreateAgent(t *testing.T, s store.Store, name string) *api.Agent {
	t.Helper()
	a := newAgent(name)
	if err := s.CreateAgent(bg, a); err != nil {
		t.Fatalf("CreateAgent(%q): %v", name, err)
	}
	return a
}

func mustCreateRun(t *testing.T, s store.Store, name string) *api.AgentRun {
	t.Helper()
	r := newRun(name, "agent-a")
	if err := s.CreateRun(bg, r); err != nil {
		t.Fatalf("CreateRun(%q): %v", name, err)
	}
	return r
}

func mustGetRun(t *testing.T, s store.Store, name string) *api.AgentRun {
	t.Helper()
	r, err := s.GetRun(bg, name)
	if err != nil {
		t.Fatalf("GetRun(%q): %v", name, err)
	}
	return r
}

// claim calls ClaimRuns(owner, 100, ttl) and returns the leases by run name.
func claim(t *testing.T, s store.Store, owner string, ttl time.Duration) map[string]store.Lease {
	t.Helper()
	before := time.Now()
	leases, err := s.ClaimRuns(bg, owner, 100, ttl)
	if err != nil {
		t.Fatalf("ClaimRuns(%q): %v", owner, err)
	}
	got := map[string]store.Lease{}
	for _, l := range leases {
		if _, dup := got[l.Run]; dup {
			t.Errorf("ClaimRuns(%q) returned run %q twice", owner, l.Run)
		}
		if l.Owner != owner {
			t.Errorf("ClaimRuns(%q): lease on %q has owner %q, want %q", owner, l.Run, l.Owner, owner)
		}
		if l.Generation < 1 {
			t.Errorf("ClaimRuns(%q): lease on %q has generation %d, want >= 1", owner, l.Run, l.Generation)
		}
		// Allow a second of clock skew between the store clock and ours.
		if l.ExpiresAt.Before(before.Add(ttl).Add(-time.Second)) {
			t.Errorf("ClaimRuns(%q, ttl %v): lease on %q expires at %v, want about %v", owner, ttl, l.Run, l.ExpiresAt, before.Add(ttl))
		}
		got[l.Run] = l
	}
	return got
}

// mustClaim claims and expects exactly the one run named.
func mustClaim(t *testing.T, s store.Store, owner, run string, ttl time.Duration) store.Lease {
	t.Helper()
	got := claim(t, s, owner, ttl)
	l, ok := got[run]
	if !ok || len(got) != 1 {
		t.Fatalf("ClaimRuns(%q): claimed %v, want exactly run %q", owner, leaseNames(got), run)
	}
	return l
}

// eventuallyClaim claims repeatedly until the run named is claimed, for at most patience.
func eventuallyClaim(t *testing.T, s store.Store, owner, run string, ttl time.Duration) store.Lease {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		got := claim(t, s, owner, ttl)
		if l, ok := got[run]; ok {
			if len(got) != 1 {
				t.Fatalf("ClaimRuns(%q): claimed %v, want exactly run %q", owner, leaseNames(got), run)
			}
			return l
		}
		if len(got) > 0 {
			t.Fatalf("ClaimRuns(%q): claimed %v, want exactly run %q", owner, leaseNames(got), run)
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %q was not claimable within %v", run, patience)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mustNotClaim expects that no run is claimable.
func mustNotClaim(t *testing.T, s store.Store, why string) {
	t.Helper()
	owner := newOwner("probe")
	got := claim(t, s, owner, longTTL)
	if len(got) != 0 {
		t.Fatalf("%s: ClaimRuns claimed %v, want nothing claimable", why, leaseNames(got))
	}
}

func leaseNames(m map[string]store.Lease) []string {
	var names []string
	for n, l := range m {
		names = append(names, fmt.Sprintf("%s(gen %d)", n, l.Generation))
	}
	return names
}

func mustCommit(t *testing.T, s store.Store, l store.Lease, w store.Write) store.Signals {
	t.Helper()
	sig, err := s.Commit(bg, l, w)
	if err != nil {
		t.Fatalf("Commit(run %q, gen %d): %v", l.Run, l.Generation, err)
	}
	return sig
}

// release commits nothing but a release with the given wake time.
func release(t *testing.T, s store.Store, l store.Lease, wakeAt *time.Time) store.Signals {
	t.Helper()
	return mustCommit(t, s, l, store.Write{Release: true, WakeAt: wakeAt})
}

func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: got error %v, want errors.Is(err, %v)", what, err, want)
	}
}

func mustErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want errors.Is(err, %v)", what, err, want)
	}
}

// sameJSON reports whether two JSON documents are equal as values (backends may reformat them).
func sameJSON(a, b []byte) bool {
	if len(bytes.TrimSpace(a)) == 0 || len(bytes.TrimSpace(b)) == 0 {
		return len(bytes.TrimSpace(a)) == len(bytes.TrimSpace(b))
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(va, vb)
}

// sameValue compares two values through their JSON form, so nil and empty slices or maps agree.
func sameValue(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return reflect.DeepEqual(a, b)
	}
	return sameJSON(ja, jb)
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}

func ptr[T any](v T) *T { return &v }

// findStep returns the step with key, or fails.
func findStep(t *testing.T, steps []api.Step, key string) api.Step {
	t.Helper()
	for _, st := range steps {
		if st.Key == key {
			return st
		}
	}
	t.Fatalf("no step %q in %s", key, js(steps))
	return api.Step{}
}

func mustListSteps(t *testing.T, s store.Store, run string) []api.Step {
	t.Helper()
	steps, err := s.ListSteps(bg, run)
	if err != nil {
		t.Fatalf("ListSteps(%q): %v", run, err)
	}
	return steps
}

func mustListEvents(t *testing.T, s store.Store, run string, after int64, limit int) []api.Event {
	t.Helper()
	evs, err := s.ListEvents(bg, run, after, limit)
	if err != nil {
		t.Fatalf("ListEvents(%q, %d, %d): %v", run, after, limit, err)
	}
	return evs
}

func eventSeqs(evs []api.Event) []int64 {
	seqs := []int64{}
	for _, e := range evs {
		seqs = append(seqs, e.Seq)
	}
	return seqs
}

func ev(typ api.EventType, msg string) api.Event {
	return api.Event{Time: time.Now().UTC(), Type: typ, Message: msg}
}

func startedStep(key string, attempt int) api.Step {
	return api.Step{
		Key:       key,
		Kind:      "tool",
		State:     api.StepStarted,
		Title:     "step " + key,
		Attempt:   attempt,
		ArgsHash:  "hash-" + key,
		Args:      json.RawMessage(`{"path":"/tmp/` + key + `"}`),
		StartedAt: time.Now().UTC(),
	}
}

func completedStep(key string, attempt int, result string, cost int64) api.Step {
	st := startedStep(key, attempt)
	st.State = api.StepCompleted
	st.Result = json.RawMessage(result)
	st.CostMicros = ptr(cost)
	st.CompletedAt = ptr(time.Now().UTC())
	return st
}

func errIs(err, target error) bool { return errors.Is(err, target) }
