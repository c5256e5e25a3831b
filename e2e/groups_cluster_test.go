package e2e

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/model/fake"
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

// startSecondServer starts another `serve --no-runner` on the cluster's store, with its own data
// folder: its admission loop races the first server's.
func (c *cluster) startSecondServer() *proc {
	c.t.Helper()
	p := &proc{name: "server2", stderr: &syncBuffer{}}
	cmd := exec.Command(binPath, "serve", "--listen", "127.0.0.1:0", "--no-runner", "--data", filepath.Join(c.dir, "server2"), "--log-level", "debug")
	cmd.Env = c.baseEnv()
	cmd.Stderr, cmd.Stdout = p.stderr, p.stderr
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("start a second server: %v", err)
	}
	p.cmd, p.exited = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(p.exited) }()
	c.t.Cleanup(p.kill)
	return p
}

// interval is one model call of a member run at the scripted model server.
type interval struct {
	run        string
	start, end time.Time
	completed  bool
}

func memberCalls(m *fake.Server, prefix string, latency time.Duration) map[string][]interval {
	out := map[string][]interval{}
	for _, call := range m.Calls() {
		if !strings.HasPrefix(call.FirstUser, prefix) {
			continue // the router's calls start "Route this request"
		}
		out[call.FirstUser] = append(out[call.FirstUser], interval{call.FirstUser, call.Time, call.Time.Add(latency), call.Completed})
	}
	return out
}

// maxConcurrentRuns is the most distinct runs with a model call in flight at one moment.
func maxConcurrentRuns(calls map[string][]interval) int {
	type edge struct {
		t     time.Time
		delta int
		run   string
	}
	var edges []edge
	for run, iv := range calls {
		for _, i := range iv {
			edges = append(edges, edge{i.start, 1, run}, edge{i.end, -1, run})
		}
	}
	sort.Slice(edges, func(a, b int) bool {
		if edges[a].t.Equal(edges[b].t) {
			return edges[a].delta < edges[b].delta
		}
		return edges[a].t.Before(edges[b].t)
	})
	inFlight := map[string]int{}
	best := 0
	for _, e := range edges {
		inFlight[e.run] += e.delta
		if inFlight[e.run] == 0 {
			delete(inFlight, e.run)
		}
		best = max(best, len(inFlight))
	}
	return best
}

// Invariants of groups while runners are SIGKILLed under load (PostgreSQL, a server and three
// runners): active runs never exceed maxActive, no dependant starts before its dependencies
// succeeded, and the members never spend more than the group's cap.
func TestPGGroupInvariantsUnderRunnerKills(t *testing.T) {
	t.Parallel()
	c := newCluster(t, groupClusterScript)
	c.startServer()
	// A call is charged at most the worst case reserved before it (its input, estimated from the
	// request, and maxTokens of output); 4,096 output tokens make that over $0.02, so gb's scripted
	// usage costs each run enough that the cap binds after about a dozen runs whatever tools the
	// request carries (with 1,024 it bound only when a sandbox's tool definitions enlarged the
	// request, and failed on a machine without bubblewrap).
	if st := c.do("PUT", "/v2/agents/gw", `{"metadata":{"name":"gw"},"spec":{"model":{"access":"Nodus","families":["haiku"]},"maxTokens":4096,"perRunMaxCostUSD":"0.10"}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	for _, g := range []string{
		`{"kind":"AgentGroup","metadata":{"name":"ga"},"spec":{"agent":"gw","limits":{"maxActive":4}}}`,
		`{"kind":"AgentGroup","metadata":{"name":"gb"},"spec":{"agent":"gw","limits":{"maxActive":100,"maxCostUSD":"0.35"}}}`,
	} {
		if st := c.do("POST", "/v2/agentgroups", g, nil); st != 201 {
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
		if st, b := c.post("/v2/agentruns", body, map[string]string{"Idempotency-Key": fmt.Sprintf("%s-%d", group, rand.Int64())}); st != 201 {
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
		c.startRunner(n, "--max-runs", "30")
	}
	// A second server on the same store runs admission too (and is killed now and then).
	second := c.startSecondServer()
	capM, _ := cost.ParseUSD("0.35")
	check := func() (ga, gb api.AgentGroup) {
		ga, gb = c.getGroup("ga"), c.getGroup("gb")
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
			c.runners[victim].kill()
			c.startRunner(victim, "--max-runs", "30")
			kills++
			if kills%3 == 0 {
				second.kill()
				second = c.startSecondServer()
			}
			lastKill = time.Now()
		}
		time.Sleep(100 * time.Millisecond)
	}
	if kills < 3 {
		t.Errorf("only %d runners were killed while the groups ran", kills)
	}
	select {
	case <-second.exited:
		t.Errorf("the second server exited:\n%s", tail(second.stderr.String(), 3000))
	default:
		if !strings.Contains(second.stderr.String(), "serving at") {
			t.Errorf("the second server is not serving:\n%s", tail(second.stderr.String(), 3000))
		}
	}
	// No more than maxActive runs of ga had a model call in flight at once.
	gaCalls := memberCalls(c.model, "ga-", 600*time.Millisecond)
	if m := maxConcurrentRuns(gaCalls); m > 4 {
		t.Errorf("%d runs of ga called the model at once; maxActive is 4", m)
	} else {
		t.Logf("ga: at most %d runs called the model at once (maxActive 4); %d kills", m, kills)
	}
	// No dependant called the model before its dependencies' calls had all completed.
	for run, ds := range deps {
		first := time.Time{}
		for _, iv := range gaCalls["ga-"+strings.TrimPrefix(run, "ga-")] {
			if first.IsZero() || iv.start.Before(first) {
				first = iv.start
			}
		}
		r := c.getRun(run)
		for _, d := range ds {
			dr := c.getRun(d)
			if dr.Status.Phase != api.PhaseSucceeded || dr.Status.FinishedAt == nil || r.Status.StartedAt == nil || r.Status.StartedAt.Before(*dr.Status.FinishedAt) {
				t.Errorf("%s started %v, dependency %s %s finished %v", run, r.Status.StartedAt, d, dr.Status.Phase, dr.Status.FinishedAt)
			}
			for _, iv := range gaCalls[d] {
				if iv.completed && first.Before(iv.end.Add(-50*time.Millisecond)) {
					t.Errorf("%s called the model at %v, before dependency %s's call ended at %v", run, first, d, iv.end)
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
	if st := c.do("PATCH", "/v2/agentgroups/gb", `{"spec":{"limits":{"maxCostUSD":"2.00"},"sealed":true}}`, nil); st != 200 {
		t.Fatalf("raise gb's cap: HTTP %d", st)
	}
	deadline = time.Now().Add(2 * time.Minute)
	for {
		gb = c.getGroup("gb")
		if gb.Status.Phase == api.GroupSucceeded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gb after raising the cap: %s %+v", gb.Status.Phase, gb.Status.Counts)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
