package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/model/fake"
)

// TakeoverSample is one runner SIGKILLed while it holds a run inside a 2 s model call, with
// another runner up; times are from the database (lease expiry) and the journal and timeline the
// new runner writes (same host, same clock).
type TakeoverSample struct {
	LeaseTTLMs float64 `json:"leaseTtlMs"`
	Run        string  `json:"run"`
	Killed     string  `json:"killed"`
	NewOwner   string  `json:"newOwner"`
	// KillAfterCallMs: the killed runner's model call arrived at the model server this long
	// before the kill (the call takes 2 s, so the run was mid-turn).
	KillAfterCallMs float64 `json:"killAfterCallMs"`
	// KillToExpiryMs: SIGKILL → the lease's expiry as the database held it after the kill.
	KillToExpiryMs float64 `json:"killToExpiryMs"`
	// ExpiryToResumedMs: lease expiry → the new runner's run.resumed event (claimed, agent
	// loaded, folder restored, first commit).
	ExpiryToResumedMs float64 `json:"expiryToResumedMs"`
	// ExpiryToFirstStepMs: lease expiry → startedAt of the first step the new runner recorded
	// (the interrupted model call, started again: attempt 2).
	ExpiryToFirstStepMs float64 `json:"expiryToFirstStepMs"`
	FirstStep           string  `json:"firstStep"`
	// KillToFirstStepMs is what a user waits: SIGKILL → work continues.
	KillToFirstStepMs float64 `json:"killToFirstStepMs"`
	Phase             string  `json:"phase"`
	Journal           string  `json:"journal"`
}

// TakeoverResult is every sample, with a summary of the short-TTL ones.
type TakeoverResult struct {
	Samples []TakeoverSample `json:"samples"`
	// ExpiryToFirstStep and KillToFirstStep summarize the samples with the short TTL.
	ExpiryToFirstStep Dist `json:"expiryToFirstStep"`
	KillToFirstStep   Dist `json:"killToFirstStep"`
}

const takeoverModelLatency = 2 * time.Second

func takeoverScript() *fake.Script {
	return &fake.Script{Entries: []fake.Entry{{Name: "takeover", Match: "*", Turns: []fake.Turn{
		{ToolCalls: []fake.ToolCall{{Name: "write", Input: json.RawMessage(`{"path":"out.txt","content":"before the kill"}`)}}},
		{Text: "done", Latency: fake.Duration(takeoverModelLatency)},
	}}}}
}

func runTakeover(c config, root string) (*TakeoverResult, error) {
	sch, err := newSchema(c.pg, "bench_takeover")
	if err != nil {
		return nil, err
	}
	defer sch.drop(c.keep)
	w, err := startWorld(c, root, "takeover", takeoverScript(), 4, worldOpts{storeURL: sch.url, noRunner: true})
	if err != nil {
		return nil, err
	}
	defer w.stop()
	if err := w.createAgent("bench-takeover", []string{"write"}); err != nil {
		return nil, err
	}
	res := &TakeoverResult{}
	ttls := make([]time.Duration, 0, c.takeoverSamples+1)
	for i := 0; i < c.takeoverSamples; i++ {
		ttls = append(ttls, c.takeoverTTL)
	}
	if c.takeoverDefault {
		ttls = append(ttls, 0) // the runner's default (30 s)
	}
	var short, shortKill []time.Duration
	for i, ttl := range ttls {
		desc := "default 30s"
		if ttl > 0 {
			desc = ttl.String()
		}
		progress("takeover: sample %d/%d, lease TTL %s", i+1, len(ttls), desc)
		s, err := takeoverSample(w, sch, i, ttl)
		if s != nil {
			res.Samples = append(res.Samples, *s)
		}
		if err != nil {
			return res, fmt.Errorf("sample %d: %w", i+1, err)
		}
		if ttl > 0 {
			short = append(short, time.Duration(s.ExpiryToFirstStepMs*float64(time.Millisecond)))
			shortKill = append(shortKill, time.Duration(s.KillToFirstStepMs*float64(time.Millisecond)))
		}
	}
	res.ExpiryToFirstStep, res.KillToFirstStep = dist(short), dist(shortKill)
	return res, nil
}

func takeoverSample(w *world, sch *pgSchema, i int, ttl time.Duration) (*TakeoverSample, error) {
	var extra []string
	if ttl > 0 {
		extra = []string{"--lease-ttl", ttl.String()}
	}
	aName, bName := fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)
	since := time.Now()
	a, err := w.startRunner(aName, extra...)
	if err != nil {
		return nil, err
	}
	defer a.stop()
	if err := w.waitRunners(since, a); err != nil {
		return nil, err
	}
	name := fmt.Sprintf("takeover-%d", i)
	if _, err := w.startRunBody("bench-takeover", map[string]any{"name": name, "input": name}); err != nil {
		return nil, err
	}
	// Wait until runner a is inside the slow model call of turn 1.
	var callAt time.Time
	for deadline := time.Now().Add(30 * time.Second); callAt.IsZero(); time.Sleep(5 * time.Millisecond) {
		for _, c := range w.model.Calls() {
			if c.FirstUser == name && c.Turn == 1 {
				callAt = c.Time
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("runner %s never made the turn-1 model call of %s:\n%s", aName, name, a.logTail())
		}
	}
	// Another runner is up before the kill.
	since = time.Now()
	b, err := w.startRunner(bName, extra...)
	if err != nil {
		return nil, err
	}
	defer b.stop()
	if err := w.waitRunners(since, b); err != nil {
		return nil, err
	}
	// Kill halfway through the call.
	time.Sleep(time.Until(callAt.Add(takeoverModelLatency / 2)))
	s := &TakeoverSample{LeaseTTLMs: msf(ttl), Run: name, Killed: aName}
	if ttl == 0 {
		s.LeaseTTLMs = msf(30 * time.Second)
	}
	killAt := time.Now()
	a.kill()
	s.KillAfterCallMs = msf(killAt.Sub(callAt))
	if killAt.Sub(callAt) > takeoverModelLatency-200*time.Millisecond {
		return s, fmt.Errorf("runner %s was killed %s after its model call started: too late to be mid-turn", aName, killAt.Sub(callAt))
	}
	var owner string
	var expires time.Time
	err = sch.query(func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, `SELECT COALESCE(lease_owner, ''), lease_expires_at FROM runs WHERE name = $1`, name).Scan(&owner, &expires)
	})
	if err != nil {
		return s, fmt.Errorf("read the lease of %s: %w", name, err)
	}
	if owner != aName {
		return s, fmt.Errorf("after the kill %s is leased to %q, want %s", name, owner, aName)
	}
	s.KillToExpiryMs = msf(expires.Sub(killAt))
	var run api.AgentRun
	for deadline := time.Now().Add(time.Until(expires) + 30*time.Second); ; time.Sleep(20 * time.Millisecond) {
		if run, err = w.getRun(name); err != nil {
			return s, err
		}
		if api.Finished(run.Status.Phase) || run.Status.Phase == api.PhaseNeedsResolution {
			break
		}
		if time.Now().After(deadline) {
			return s, fmt.Errorf("%s still %s 30 s after its lease expired", name, run.Status.Phase)
		}
	}
	s.Phase, s.NewOwner = string(run.Status.Phase), run.Status.Runner
	steps, err := w.steps(name)
	if err != nil {
		return s, err
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i].Seq < steps[j].Seq })
	var first *api.Step
	for k := range steps {
		st := &steps[k]
		s.Journal += fmt.Sprintf("%s:%s:%d ", st.Key, st.State, st.Attempt)
		if st.StartedAt.After(killAt) && (first == nil || st.StartedAt.Before(first.StartedAt)) {
			first = st
		}
	}
	evs, err := w.events(name)
	if err != nil {
		return s, err
	}
	for _, ev := range evs {
		if ev.Type == "run.resumed" && ev.Time.After(killAt) {
			s.ExpiryToResumedMs = msf(ev.Time.Sub(expires))
			break
		}
	}
	if run.Status.Phase != api.PhaseSucceeded || s.NewOwner != bName {
		return s, fmt.Errorf("%s ended %s on %q, want Succeeded on %s", name, run.Status.Phase, s.NewOwner, bName)
	}
	if first == nil {
		return s, fmt.Errorf("%s: no step started after the kill (journal %s)", name, s.Journal)
	}
	s.FirstStep = fmt.Sprintf("%s attempt %d", first.Key, first.Attempt)
	s.ExpiryToFirstStepMs = msf(first.StartedAt.Sub(expires))
	s.KillToFirstStepMs = msf(first.StartedAt.Sub(killAt))
	return s, nil
}

func printTakeover(r *TakeoverResult) {
	fmt.Println()
	fmt.Println("== takeover: a runner SIGKILLed mid-turn (inside a 2 s model call), another runner up (PostgreSQL) ==")
	fmt.Printf("  %-6s %-12s %8s %12s %14s %16s %14s  %s\n", "TTL", "run", "kill ms", "kill→expiry", "expiry→resumed", "expiry→1st step", "kill→1st step", "first step recorded by the new runner")
	fmt.Printf("  %-6s %-12s %8s %12s %14s %16s %14s\n", "", "", "in call", "ms", "ms", "ms", "ms")
	for _, s := range r.Samples {
		ttl := time.Duration(s.LeaseTTLMs * float64(time.Millisecond)).String()
		fmt.Printf("  %-6s %-12s %8.0f %12.0f %14.1f %16.1f %14.0f  %s on %s (%s)\n", ttl, s.Run, s.KillAfterCallMs, s.KillToExpiryMs, s.ExpiryToResumedMs, s.ExpiryToFirstStepMs, s.KillToFirstStepMs, s.FirstStep, s.NewOwner, s.Phase)
	}
	if r.ExpiryToFirstStep.N > 0 {
		printDistHeader("ms, short TTL")
		fmt.Print(r.ExpiryToFirstStep.row("lease expiry → first new step"))
		fmt.Print(r.KillToFirstStep.row("SIGKILL → first new step"))
	}
}
