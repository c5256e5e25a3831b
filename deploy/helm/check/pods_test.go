package check

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/lib/pq" // PostgreSQL's database/sql driver (in Helm's module graph already)
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// The pods' commands run: the server and runner containers the chart renders (on PostgreSQL) are
// started as the real agentrun binary with the rendered arguments and environment (Secret keys,
// the pod's name, $(VAR) expansion resolved as the kubelet does), as the pod's user on a volume
// Kubernetes would hand it (root-owned, group-writable for fsGroup), and every probe the chart
// declares must answer 200 on the port it names. Skips without AGENTRUN_BIN (.ci/run builds one)
// or AGENTRUN_TEST_POSTGRES_URL.
func TestPodCommandsRunTheBinary(t *testing.T) {
	bin := os.Getenv("AGENTRUN_BIN")
	if bin == "" {
		t.Skip("set AGENTRUN_BIN to an agentrun binary to run the pods' commands (.ci/run does)")
	}
	base := os.Getenv("AGENTRUN_TEST_POSTGRES_URL")
	if base == "" {
		t.Skip("set AGENTRUN_TEST_POSTGRES_URL to run the pods' commands on PostgreSQL (.ci/run does)")
	}
	storeURL := freshSchema(t, base)
	serverPort, metricsPort := freePort(t), freePort(t)
	// The model vendor is the binary's scripted model server (the one stand-in), reached through
	// the chart's env value.
	modelURL := startModelServer(t, bin)
	r := render(t, map[string]any{
		"store":   map[string]any{"url": storeURL},
		"server":  map[string]any{"port": serverPort},
		"runners": map[string]any{"replicas": 1, "metricsPort": metricsPort},
		"env": []any{
			map[string]any{"name": "ANTHROPIC_API_KEY", "value": "scripted"},
			map[string]any{"name": "ANTHROPIC_BASE_URL", "value": modelURL},
		},
	})
	runPods(t, bin, r, "rel-agentrun-server", "rel-agentrun-runner")
	// A run, through the Service's port with the token from the Secret, is driven to its end by
	// the runner pod (the server has no runner of its own here).
	token := string(r.get(t, "Secret", "rel-agentrun").(*corev1.Secret).Data["AGENTRUN_TOKEN"])
	api := fmt.Sprintf("http://127.0.0.1:%d", serverPort)
	agent := `{"apiVersion":"agentrun.dev/v1","kind":"Agent","metadata":{"name":"hello"},
		"spec":{"model":{"access":"Server","provider":"anthropic","name":"claude-sonnet-4-5"},"perRunMaxCostUSD":"1.00"}}`
	if st, b := call(t, token, "PUT", api+"/v2/agents/hello", agent); st != 201 {
		t.Fatalf("create agent: HTTP %d %s", st, b)
	}
	st, b := call(t, token, "POST", api+"/v2/agents/hello/runs", `{"input":{"content":"Say hello from a runner pod"}}`)
	var run struct {
		Metadata struct{ Name string } `json:"metadata"`
		Status   struct {
			Phase, Message, Runner string
			Answer                 *struct{ Text string }
		} `json:"status"`
	}
	if st != 201 || json.Unmarshal(b, &run) != nil {
		t.Fatalf("start run: HTTP %d %s", st, b)
	}
	deadline := time.Now().Add(60 * time.Second)
	for run.Status.Phase != "Succeeded" && run.Status.Phase != "Failed" {
		if time.Now().After(deadline) {
			t.Fatalf("run %s still %q after 60 s", run.Metadata.Name, run.Status.Phase)
		}
		time.Sleep(100 * time.Millisecond)
		_, b := call(t, token, "GET", api+"/v2/agentruns/"+run.Metadata.Name, "")
		json.Unmarshal(b, &run)
	}
	if run.Status.Phase != "Succeeded" || !strings.HasPrefix(run.Status.Runner, "rel-agentrun-runner-") {
		t.Errorf("run %s: %s %q on runner %q, want Succeeded on the runner pod", run.Metadata.Name, run.Status.Phase, run.Status.Message, run.Status.Runner)
	}
	// The default values: one server, its in-process runner and SQLite on its volume.
	runPods(t, bin, render(t, map[string]any{"server": map[string]any{"port": freePort(t)}}), "rel-agentrun-server")
}

// startModelServer runs `agentrun dev model-server` with a script that answers every turn.
func startModelServer(t *testing.T, bin string) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(script, []byte(`entries:
  - name: router
    match: "Route this request"
    turns:
      - text: '{"family": "sonnet", "confidence": 0.9}'
  - name: hello
    match: "*"
    turns:
      - text: "hello from a runner pod"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(bin, "dev", "model-server", "--script", script, "--addr", addr)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "http://" + addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("the scripted model server did not listen on %s:\n%s", addr, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// call makes an API request with the bearer token and returns the status and body.
func call(t *testing.T, token, method, url, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// runPods starts the named Deployments' containers and waits for each probe to answer 200.
func runPods(t *testing.T, bin string, r rendered, names ...string) {
	t.Helper()
	secret := r.get(t, "Secret", "rel-agentrun").(*corev1.Secret)
	for _, name := range names {
		d := r.get(t, "Deployment", name).(*appsv1.Deployment)
		p := startPod(t, bin, d, secret)
		c := d.Spec.Template.Spec.Containers[0]
		ports := map[string]int32{}
		for _, cp := range c.Ports {
			ports[cp.Name] = cp.ContainerPort
		}
		for what, pr := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
			port := pr.HTTPGet.Port.IntValue()
			if port == 0 {
				port = int(ports[pr.HTTPGet.Port.String()])
			}
			url := fmt.Sprintf("http://127.0.0.1:%d%s", port, pr.HTTPGet.Path)
			if err := p.waitOK(url); err != nil {
				t.Errorf("%s: %s probe %s: %v\n%s", name, what, url, err, p.out.String())
			}
		}
	}
}

type pod struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

// startPod runs a Deployment's container as its pod would: /data is a fresh folder owned by root
// and group-writable for the pod's fsGroup (as a volume is handed over), the process runs as
// runAsUser/runAsGroup when this test runs as root.
func startPod(t *testing.T, bin string, d *appsv1.Deployment, secret *corev1.Secret) *pod {
	t.Helper()
	ps := d.Spec.Template.Spec
	c := ps.Containers[0]
	vol := filepath.Join(openDir(t), "data")
	if err := os.Mkdir(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	asRoot := os.Geteuid() == 0
	if asRoot && ps.SecurityContext != nil && ps.SecurityContext.FSGroup != nil {
		if err := os.Chown(vol, 0, int(*ps.SecurityContext.FSGroup)); err != nil {
			t.Fatal(err)
		}
		os.Chmod(vol, 0o2775|os.ModeSetgid)
	}
	podName := d.Name + "-7d9f8b-x2k4q"
	env := map[string]string{}
	var order []string
	for _, e := range c.Env {
		v := e.Value
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			if ref.Name != secret.Name {
				t.Fatalf("%s: %s from Secret %s, not the rendered one", d.Name, e.Name, ref.Name)
			}
			b, ok := secret.Data[ref.Key]
			if !ok {
				t.Fatalf("%s: %s from key %s the Secret does not have", d.Name, e.Name, ref.Key)
			}
			v = string(b)
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			v = podName
		case e.ValueFrom != nil:
			t.Fatalf("%s: %s from a source this test does not resolve: %+v", d.Name, e.Name, e.ValueFrom)
		}
		env[e.Name] = expand(v, env)
		order = append(order, e.Name)
	}
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = onVolume(expand(a, env), vol)
	}
	cmd := exec.Command(bin, args...)
	tmp := filepath.Join(openDir(t), "tmp")
	if err := os.Mkdir(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(tmp, 0o777|os.ModeSticky)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + vol, "TMPDIR=" + tmp}
	for _, k := range order {
		cmd.Env = append(cmd.Env, k+"="+onVolume(env[k], vol))
	}
	if asRoot && ps.SecurityContext != nil && ps.SecurityContext.RunAsUser != nil {
		gid := uint32(*ps.SecurityContext.RunAsUser)
		if ps.SecurityContext.RunAsGroup != nil {
			gid = uint32(*ps.SecurityContext.RunAsGroup)
		}
		groups := []uint32{}
		if ps.SecurityContext.FSGroup != nil {
			groups = append(groups, uint32(*ps.SecurityContext.FSGroup))
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(*ps.SecurityContext.RunAsUser), Gid: gid, Groups: groups}}
	}
	p := &pod{cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", d.Name, err)
	}
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", d.Name, p.out.String())
		}
	})
	return p
}

// openDir is a fresh folder others may traverse (t.TempDir's are 0700 to all but this user),
// so a process running as the pod's user reaches the folders made in it.
func openDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "helm-check-pod")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand resolves $(VAR) from the variables defined so far, as the kubelet does.
func expand(s string, env map[string]string) string {
	return varRef.ReplaceAllStringFunc(s, func(m string) string {
		if v, ok := env[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// onVolume maps a path under the pod's /data mount to the test's folder for it.
func onVolume(s, vol string) string {
	if s == "/data" || strings.HasPrefix(s, "/data/") {
		return vol + strings.TrimPrefix(s, "/data")
	}
	return s
}

// waitOK polls url until it answers 200, for at most 60 s (a start that migrates the store).
func (p *pod) waitOK(url string) error {
	deadline := time.Now().Add(60 * time.Second)
	last := "no answer"
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return fmt.Errorf("the process exited (%v) while waiting for a 200", p.cmd.ProcessState)
		default:
		}
		resp, err := http.Get(url)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
			last = fmt.Sprintf("HTTP %d %s", resp.StatusCode, strings.TrimSpace(string(b)))
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("no 200 within 60 s; last: %s", last)
}

func freshSchema(t *testing.T, base string) string {
	t.Helper()
	db, err := sql.Open("postgres", base)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	schema := fmt.Sprintf("helm_%d_%d", time.Now().UnixNano()%1e9, rand.IntN(1e6))
	if _, err := db.ExecContext(context.Background(), "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema on %s: %v", base, err)
	}
	t.Cleanup(func() {
		if db, err := sql.Open("postgres", base); err == nil {
			db.Exec("DROP SCHEMA " + schema + " CASCADE")
			db.Close()
		}
	})
	u, err := neturl.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// syncBuffer is a process's output, written and read from different goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
