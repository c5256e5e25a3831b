package cluster

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// privatePostgres starts a PostgreSQL server of its own (initdb in a temp folder, a free port), so
// a test can restart it without disturbing anything else. It skips when the server binaries are
// missing. It returns the URL and a function that restarts the server.
func privatePostgres(t *testing.T) (string, func()) {
	t.Helper()
	if os.Getenv("AGENTRUN_TEST_POSTGRES_URL") == "" {
		t.Skip("PostgreSQL tests skipped: set AGENTRUN_TEST_POSTGRES_URL (CI does)")
	}
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(bins) == 0 {
		t.Skip("PostgreSQL restart test skipped: no PostgreSQL server binaries (/usr/lib/postgresql/*/bin)")
	}
	bin := filepath.Dir(bins[len(bins)-1])
	dir, err := os.MkdirTemp("", "agentrun-pg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// PostgreSQL refuses to run as root: run it as the postgres user when we are root.
	as := func(args ...string) *exec.Cmd { return exec.Command(args[0], args[1:]...) }
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skip("PostgreSQL restart test skipped: running as root and there is no postgres user")
		}
		var uid, gid int
		fmt.Sscan(u.Uid, &uid)
		fmt.Sscan(u.Gid, &gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		as = func(args ...string) *exec.Cmd {
			return exec.Command("runuser", append([]string{"-u", "postgres", "--"}, args...)...)
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := as(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", port, dir)
	ctl := func(args ...string) {
		t.Helper()
		cmd := as(append([]string{filepath.Join(bin, "pg_ctl"), "-D", data, "-l", filepath.Join(dir, "log"), "-o", opts, "-w"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Fatalf("pg_ctl %v: %v\n%s\n%s", args, err, out, log)
		}
	}
	ctl("start")
	t.Cleanup(func() { as(filepath.Join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "stop").Run() })
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), func() { ctl("-m", "fast", "restart") }
}

// PostgreSQL restarted under load: the server and runners reconnect and carry on; nothing is lost
// and nothing completed is done twice.
func TestPGRestartUnderLoad(t *testing.T) {
	t.Parallel()
	url, restart := privatePostgres(t)
	e := NewEnv(t, strings.ReplaceAll(clusterScript, "latency: 40ms", "latency: 400ms"))
	e.Extra = append(e.Extra, "AGENTRUN_STORE_URL="+url)
	c := &Cluster{Env: e, StoreURL: url, LeaseTTL: "3s", Runners: map[string]*Proc{}}
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
	c.StartServer()
	CreateCounterAgent(t, c.Env, `["dev_count","write"]`)
	names := createTaskRuns(t, c.Env, 100)
	c.StartRunner("r1", "--max-runs", "20")
	c.StartRunner("r2", "--max-runs", "20")
	time.Sleep(1500 * time.Millisecond)
	restart()
	t.Log("PostgreSQL restarted")
	by := waitAllDone(t, c, len(names), 3*time.Minute, nil)
	if len(by[api.PhaseFailed])+len(by[api.PhaseCancelled]) > 0 {
		for _, r := range by[api.PhaseFailed] {
			t.Errorf("%s failed: %s %s", r.Metadata.Name, r.Status.Reason, r.Status.Message)
		}
		t.FailNow()
	}
	t.Logf("%d succeeded, %d need resolution", len(by[api.PhaseSucceeded]), len(by[api.PhaseNeedsResolution]))
	resolveAll(t, c, by)
	by = waitAllDone(t, c, len(names), time.Minute, nil)
	if len(by[api.PhaseSucceeded]) != len(names) {
		t.Fatalf("%d of %d succeeded after resolution", len(by[api.PhaseSucceeded]), len(names))
	}
	checkNoDoubleWork(t, c, names, false)
}
