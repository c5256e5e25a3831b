package e2etest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"github.com/jackc/pgx/v5"
)

// PGURL returns a PostgreSQL URL whose search_path is a fresh schema for this test, or skips.
func PGURL(t *testing.T) string {
	t.Helper()
	base := os.Getenv("AGENTRUN_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("PostgreSQL tests skipped: set AGENTRUN_TEST_POSTGRES_URL (CI does)")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to %s: %v", base, err)
	}
	defer conn.Close(ctx)
	schema := fmt.Sprintf("e2e_%d_%d", time.Now().UnixNano()%1e9, rand.IntN(1e6))
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err == nil {
			c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			c.Close(context.Background())
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	q.Set("pool_max_conns", "3") // several processes per test, several tests at once
	u.RawQuery = q.Encode()
	return u.String()
}

// Proc is one agentrun process of a cluster.
type Proc struct {
	Name   string
	cmd    *exec.Cmd
	Stderr *SyncBuffer
	Exited chan struct{}
}

// Cluster is a server (--no-runner) and runner processes sharing one PostgreSQL store, each with
// its own data folder (no shared disk), and one scripted model server.
type Cluster struct {
	*Env
	StoreURL string
	LeaseTTL string
	Runners  map[string]*Proc
}

func NewCluster(t *testing.T, script string) *Cluster {
	storeURL := PGURL(t)
	e := NewEnv(t, script)
	c := &Cluster{Env: e, StoreURL: storeURL, LeaseTTL: "3s", Runners: map[string]*Proc{}}
	e.Extra = append(e.Extra, "AGENTRUN_STORE_URL="+storeURL)
	t.Cleanup(func() {
		for _, p := range c.Runners {
			p.Kill()
		}
		if t.Failed() {
			for _, p := range c.Runners {
				t.Logf("runner %s stderr (tail):\n%s", p.Name, Tail(p.Stderr.String(), 4000))
			}
		}
	})
	return c
}

func Tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func (p *Proc) Kill() {
	if p.cmd == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.Exited
	p.cmd = nil
}

func (p *Proc) Signal(sig syscall.Signal) { p.cmd.Process.Signal(sig) }

// StartServer starts `serve --no-runner` on the cluster's store.
func (c *Cluster) StartServer() {
	c.T.Helper()
	c.Env.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--no-runner", "--log-level", "debug"})
}

// StartRunner starts (or restarts) a runner with its own data folder.
func (c *Cluster) StartRunner(name string, extraArgs ...string) *Proc {
	c.T.Helper()
	data := filepath.Join(c.Dir, "runner-"+name)
	p := c.Runners[name]
	if p == nil {
		p = &Proc{Name: name, Stderr: &SyncBuffer{}}
		c.Runners[name] = p
	}
	args := append([]string{"runner", "--name", name, "--data", data, "--lease-ttl", c.LeaseTTL, "--log-level", "debug"}, extraArgs...)
	cmd := exec.Command(BinPath, args...)
	cmd.Env = c.BaseEnv()
	cmd.Stderr, cmd.Stdout = p.Stderr, p.Stderr
	fmt.Fprintf(p.Stderr, "---- start %s\n", time.Now().Format(time.TimeOnly))
	if err := cmd.Start(); err != nil {
		c.T.Fatalf("start runner %s: %v", name, err)
	}
	p.cmd = cmd
	p.Exited = make(chan struct{})
	go func(ch chan struct{}) { cmd.Wait(); close(ch) }(p.Exited)
	return p
}

// runsIn lists the runs by phase.
func (c *Cluster) RunsByPhase() map[api.Phase][]api.AgentRun {
	var l api.List[api.AgentRun]
	// While the database restarts a list may find it unreachable: the API says so (503), never
	// an internal error.
	if st := c.Do("GET", "/v2/agentruns", nil, &l); st != 200 && st != 503 {
		c.Env.T.Errorf("GET /v2/agentruns: HTTP %d, want 200 or 503 while the store is unreachable", st)
	}
	out := map[api.Phase][]api.AgentRun{}
	for _, r := range l.Items {
		out[r.Status.Phase] = append(out[r.Status.Phase], r)
	}
	return out
}

func CreateCounterAgent(t *testing.T, e *Env, tools string) {
	t.Helper()
	if st := e.Do("PUT", "/v2/agents/worker", `{"metadata":{"name":"worker"},"spec":{"tools":`+tools+`}}`, nil); st != 201 && st != 200 {
		t.Fatalf("create agent: HTTP %d", st)
	}
}
