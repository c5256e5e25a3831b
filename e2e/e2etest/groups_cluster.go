package e2etest

import (
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/model/fake"
)

// StartSecondServer starts another `serve --no-runner` on the cluster's store, with its own data
// folder: its admission loop races the first server's.
func (c *Cluster) StartSecondServer() *Proc {
	c.T.Helper()
	p := &Proc{Name: "server2", Stderr: &SyncBuffer{}}
	cmd := exec.Command(BinPath, "serve", "--listen", "127.0.0.1:0", "--no-runner", "--data", filepath.Join(c.Dir, "server2"), "--log-level", "debug")
	cmd.Env = c.BaseEnv()
	cmd.Stderr, cmd.Stdout = p.Stderr, p.Stderr
	if err := cmd.Start(); err != nil {
		c.T.Fatalf("start a second server: %v", err)
	}
	p.cmd, p.Exited = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(p.Exited) }()
	c.T.Cleanup(p.Kill)
	return p
}

// interval is one model call of a member run at the scripted model server.
type interval struct {
	run        string
	Start, End time.Time
	Completed  bool
}

func MemberCalls(m *fake.Server, prefix string, latency time.Duration) map[string][]interval {
	out := map[string][]interval{}
	for _, call := range m.Calls() {
		if !strings.HasPrefix(call.FirstUser, prefix) {
			continue // the router's calls start "Route this request"
		}
		out[call.FirstUser] = append(out[call.FirstUser], interval{call.FirstUser, call.Time, call.Time.Add(latency), call.Completed})
	}
	return out
}

// MaxConcurrentRuns is the most distinct runs with a model call in flight at one moment.
func MaxConcurrentRuns(calls map[string][]interval) int {
	type edge struct {
		t     time.Time
		delta int
		run   string
	}
	var edges []edge
	for run, iv := range calls {
		for _, i := range iv {
			edges = append(edges, edge{i.Start, 1, run}, edge{i.End, -1, run})
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
