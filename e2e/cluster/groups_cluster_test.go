package cluster

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
)

const groupClusterScript = `
entries:
  - name: limited
    match: "ga-"
    turns:
      - text: "done"
        latency: 600ms
  - name: costly
    match: "gb-"
    turns:
      - text: "done"
        latency: 400ms
        usage: {input_tokens: 20000, output_tokens: 1000}
`

// Invariants of groups while runners are SIGKILLed under load (PostgreSQL, a server and three
// runners): active runs never exceed maxActive, no dependant starts before its dependencies
// succeeded, and the members never spend more than the group's cap.
func TestPGGroupInvariantsUnderRunnerKills(t *testing.T) {
	t.Parallel()
	c := NewCluster(t, groupClusterScript)
	c.StartServer()
	// A call is charged at most the worst case reserved before it (its input, estimated from the
	// request, and maxTokens of output); 4,096 output tokens make that over $0.02, so gb's scripted
	// usage costs each run enough that the cap binds after about a dozen runs whatever tools the
	// request carries (with 1,024 it bound only when a sandbox's tool definitions enlarged the
	// request, and failed on a machine without bubblewrap).
	if st := c.Do("PUT", "/v2/agents/gw", `{"metadata":{"name":"gw"},"spec":{"model":{"access":"Nodus","families":["haiku"]},"maxTokens":4096,"perRunMaxCostUSD":"0.10"}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	for _, g := range []string{
		`{"kind":"AgentGroup","metadata":{"name":"ga"},"spec":{"agent":"gw","limits":{"maxActive":4}}}`,
		`{"kind":"AgentGroup","metadata":{"name":"gb"},"spec":{"agent":"gw","limits":{"maxActive":100,"maxCostUSD":"0.35"}}}`,
	} {
		if st := c.Do("POST", "/v2/agentgroups", g, nil); st != 201 {
			t.Fatalf("create group: HTTP %d", st)
		}
	}
	// ga: 50 independent runs, then 10 that each wait for two earlier ones; in batches of 20.
	deps := map[string][]string{}
	var items []string
	flush := func(group string) {
		if len(items) == 0 {
			return
		}
		body := `{"kind":"AgentRunList","items":[` + strings.Join(items, ",") + `]}`
		if st, b := c.Post("/v2/agentruns", body, map[string]string{"Idempotency-Key": fmt.Sprintf("%s-%d", group, rand.Int64())}); st != 201 {
			t.Fatalf("batch: HTTP %d %s", st, b)
		}
		items = nil
	}
	for i := range 60 {
		key := fmt.Sprintf("t%02d", i)
		var d []string
		if i >= 50 {
			d = []string{fmt.Sprintf("t%02d", i-50), fmt.Sprintf("t%02d", i-40)}
			deps["ga-"+key] = []string{"ga-" + d[0], "ga-" + d[1]}
		}
		dj := "[]"
		if d != nil {
			dj = fmt.Sprintf("[%q,%q]", d[0], d[1])
		}
		items = append(items, fmt.Sprintf(`{"spec":{"agent":"gw","group":"ga","taskKey":%q,"dependsOn":%s,"input":"ga-%s"}}`, key, dj, key))
		if len(items) == 20 {
			flush("ga")
		}
	}
	flush("ga")
	for i := range 20 {
		key := fmt.Sprintf("t%02d", i)
		items = append(items, fmt.Sprintf(`{"spec":{"agent":"gw","group":"gb","taskKey":%q,"input":"gb-%s"}}`, key, key))
	}
	flush("gb")
	for _, n := range []string{"r1", "r2", "r3"} {
		c.StartRunner(n, "--max-runs", "30")
	}
	// A second server on the same store runs admission too (and is killed now and then).
	second := c.StartSecondServer()
	capM, _ := cost.ParseUSD("0.35")
	check := func() (ga, gb api.AgentGroup) {
		ga, gb = c.GetGroup("ga"), c.GetGroup("gb")
		if n := ga.Status.Counts.Active + ga.Status.Counts.Waiting; n > 4 {
			t.Errorf("group ga has %d admitted unfinished runs, maxActive 4", n)
		}
		if spent, err := cost.ParseUSD(gb.Status.Cost.TotalUSD); err != nil || spent > capM {
			t.Errorf("group gb spent %s (cap 0.35)", gb.Status.Cost.TotalUSD)
		}
		return ga, gb
	}
	kills := 0
	lastKill := time.Now()
	deadline := time.Now().Add(4 * time.Minute)
	for {
		ga, gb := check()
		gbStuck := gb.Status.Counts.Active == 0 && gb.Status.Counts.Waiting == 0 && gb.Status.Counts.Queued > 0 &&
			gb.Status.BlockedReasons[api.ReasonMaxCostReached] == gb.Status.Counts.Queued
		if ga.Status.Counts.Succeeded == 60 && gbStuck {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("groups did not settle: ga %+v, gb %+v %v", ga.Status.Counts, gb.Status.Counts, gb.Status.BlockedReasons)
		}
		if time.Since(lastKill) > 1500*time.Millisecond {
			victim := []string{"r1", "r2", "r3"}[rand.IntN(3)]
			c.Runners[victim].Kill()
			c.StartRunner(victim, "--max-runs", "30")
			kills++
			if kills%3 == 0 {
				second.Kill()
				second = c.StartSecondServer()
			}
			lastKill = time.Now()
		}
		time.Sleep(100 * time.Millisecond)
	}
	if kills < 3 {
		t.Errorf("only %d runners were killed while the groups ran", kills)
	}
	// The last second server may have been started just before the groups settled: it is given
	// time to come up (checking the instant the loop ended failed on a loaded machine when it
	// had printed no more than its first line).
	serving := func() bool { return strings.Contains(second.Stderr.String(), "serving at") }
	for deadline := time.Now().Add(30 * time.Second); !serving() && time.Now().Before(deadline); {
		select {
		case <-second.Exited:
			deadline = time.Time{}
		case <-time.After(100 * time.Millisecond):
		}
	}
	select {
	case <-second.Exited:
		t.Errorf("the second server exited:\n%s", Tail(second.Stderr.String(), 3000))
	default:
		if !serving() {
			t.Errorf("the second server is not serving 30 s after the groups settled:\n%s", Tail(second.Stderr.String(), 3000))
		}
	}
	// No more than maxActive runs of ga had a model call in flight at once.
	gaCalls := MemberCalls(c.Model, "ga-", 600*time.Millisecond)
	if m := MaxConcurrentRuns(gaCalls); m > 4 {
		t.Errorf("%d runs of ga called the model at once; maxActive is 4", m)
	} else {
		t.Logf("ga: at most %d runs called the model at once (maxActive 4); %d kills", m, kills)
	}
	// No dependant called the model before its dependencies' calls had all completed.
	for run, ds := range deps {
		first := time.Time{}
		for _, iv := range gaCalls["ga-"+strings.TrimPrefix(run, "ga-")] {
			if first.IsZero() || iv.Start.Before(first) {
				first = iv.Start
			}
		}
		r := c.GetRun(run)
		for _, d := range ds {
			dr := c.GetRun(d)
			if dr.Status.Phase != api.PhaseSucceeded || dr.Status.FinishedAt == nil || r.Status.StartedAt == nil || r.Status.StartedAt.Before(*dr.Status.FinishedAt) {
				t.Errorf("%s started %v, dependency %s %s finished %v", run, r.Status.StartedAt, d, dr.Status.Phase, dr.Status.FinishedAt)
			}
			for _, iv := range gaCalls[d] {
				if iv.Completed && first.Before(iv.End.Add(-50*time.Millisecond)) {
					t.Errorf("%s called the model at %v, before dependency %s's call ended at %v", run, first, d, iv.End)
				}
			}
		}
	}
	// gb stopped under its cap; raising the cap lets the rest finish.
	_, gb := check()
	t.Logf("gb: %d succeeded under the 0.35 cap, spent %s, %d wait for room", gb.Status.Counts.Succeeded, gb.Status.Cost.TotalUSD, gb.Status.Counts.Queued)
	if gb.Status.Counts.Succeeded == 0 || gb.Status.Counts.Succeeded == 20 {
		t.Errorf("gb: %d of 20 succeeded under the cap; the cap did not bind", gb.Status.Counts.Succeeded)
	}
	if st := c.Do("PATCH", "/v2/agentgroups/gb", `{"spec":{"limits":{"maxCostUSD":"2.00"},"sealed":true}}`, nil); st != 200 {
		t.Fatalf("raise gb's cap: HTTP %d", st)
	}
	deadline = time.Now().Add(2 * time.Minute)
	for {
		gb = c.GetGroup("gb")
		if gb.Status.Phase == api.GroupSucceeded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gb after raising the cap: %s %+v", gb.Status.Phase, gb.Status.Counts)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
