package webhooks

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

const script = ApprovalsScript + `  - name: hello
    match: "Say hello"
    turns:
      - text: "hello"
`

// install runs npm ci in the receiver's folder once for the package's tests (two at once would
// remove each other's node_modules): skip is why the tests skip, "" when it installed.
var install struct {
	once sync.Once
	skip string
	err  error
}

// receiverDir installs the receiver's pinned dependencies, or skips saying why.
func receiverDir(t *testing.T) (node, dir string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("Node.js is not installed: the receiver verifies deliveries with the standardwebhooks npm library")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed: it installs the standardwebhooks library the receiver verifies with")
	}
	dir, err = filepath.Abs("receiver")
	if err != nil {
		t.Fatal(err)
	}
	install.once.Do(func() {
		lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
		if err != nil {
			install.err = err
			return
		}
		if strings.Contains(string(lock), `"resolved"`) {
			install.err = fmt.Errorf("receiver/package-lock.json carries resolved URLs: install with the folder's .npmrc")
			return
		}
		cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--prefer-offline")
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			install.skip = fmt.Sprintf("npm ci could not install standardwebhooks (no registry reachable?): %v\n%s", err, Tail(string(b), 2000))
		}
	})
	if install.err != nil {
		t.Fatal(install.err)
	}
	if install.skip != "" {
		t.Skip(install.skip)
	}
	return node, dir
}

type received struct {
	ID       string `json:"id"`
	Verified bool   `json:"verified"`
	Error    string `json:"error"`
	Payload  struct {
		Type      string         `json:"type"`
		Timestamp string         `json:"timestamp"`
		Data      map[string]any `json:"data"`
	} `json:"payload"`
}

func readReceived(t *testing.T, path string) []received {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []received
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r received
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("receiver line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// TestDeliveriesSurviveADownReceiverAndAKill: runs finish and wait on a person while the receiver
// is down; the server is SIGKILLed after those commits and before any delivery; once the
// receiver is up again (a minute later) it gets every event, each webhook-id exactly once, each
// verified by the standardwebhooks library, with the run, agent, phase, cost and console link.
func TestDeliveriesSurviveADownReceiverAndAKill(t *testing.T) {
	t.Parallel()
	node, dir := receiverDir(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // nothing listens there until the receiver starts: it is down

	e := NewEnv(t, script)
	args := []string{"serve", "--listen", "127.0.0.1:0", "--log-level", "debug", "--webhook-allow", "127.0.0.1"}
	env := "AGENTRUN_WEBHOOK_RETRY_BASE=1s"
	e.StartWith(args, env)
	if st := e.Do("PUT", "/v2/agents/careful", ApprovalsAgent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	hook := fmt.Sprintf(`apiVersion: agentrun.dev/v1
kind: Webhook
metadata: {name: ops}
spec:
  url: http://127.0.0.1:%d/hook
  events: [run.succeeded, run.failed, run.waiting, approval.requested]
  secretRef: ops-hook
`, port)
	// Bad input is refused with its field and code, and nothing is stored.
	bad := e.CLIIn(e.Dir, strings.Replace(hook, "run.failed", "run.exploded", 1), "apply", "-f", "-")
	if bad.Code == 0 || !strings.Contains(bad.Stderr, "spec.events[1]") || !strings.Contains(bad.Stderr, "run.exploded") {
		t.Fatalf("apply with an unknown event: code %d, %s", bad.Code, bad.Stderr)
	}
	blocked := e.Do("POST", "/v2/webhooks", `{"metadata":{"name":"meta"},"spec":{"url":"http://169.254.169.254/x","events":["run.failed"],"secretRef":"s"}}`, nil)
	if blocked != 422 {
		t.Errorf("a webhook to the metadata address: HTTP %d, want 422 WebhookBlocked", blocked)
	}
	e.MustCLIIn(hook, 0, "apply", "-f", "-")

	// A person makes the signing secret; it is printed once.
	const password = "correct horse battery staple"
	e.MustCLIIn(password+"\n", 0, "login", "--setup-code", e.SetupCode(), "--password-stdin")
	secret := strings.TrimSpace(e.MustCLI(0, "webhooks", "rotate", "ops").Stdout)
	e.MustCLI(0, "login", "--logout")
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("rotate printed %q", secret)
	}
	if r := e.CLI(e.Dir, "webhooks", "rotate", "ops"); r.Code == 0 {
		t.Errorf("the API token rotated a webhook's secret")
	}

	downSince := time.Now()
	e.StartRun("careful", "c1", "Count carefully: one") // waits on an approval
	e.StartRun("careful", "h1", "Say hello")            // succeeds
	e.WaitPhase("c1", 30*time.Second, api.PhaseWaiting)
	e.WaitPhase("h1", 30*time.Second, api.PhaseSucceeded)
	// The events are committed; the first attempts fail against the closed port.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var h struct {
			Items []api.WebhookDelivery `json:"items"`
		}
		e.Do("GET", "/v2/webhooks/ops/deliveries", nil, &h)
		failed := 0
		for _, d := range h.Items {
			if d.State == api.DeliveryPending && d.Attempts > 0 {
				failed++
			}
		}
		if len(h.Items) == 3 && failed == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("deliveries while the receiver is down: %+v", h.Items)
		}
		time.Sleep(200 * time.Millisecond)
	}
	hist := e.MustCLI(0, "webhooks", "history", "ops")
	if !strings.Contains(hist.Stdout, "Pending") || !strings.Contains(hist.Stdout, "connection refused") {
		t.Errorf("history while down:\n%s", hist.Stdout)
	}
	firstURL := e.URL // the runs' console links are on it
	e.Kill()          // SIGKILL: the deliveries are committed, none delivered
	e.StartWith(args, env)
	e.MustCLI(0, "webhooks", "test", "ops")

	// The receiver comes back a minute after it went down.
	if wait := time.Minute - time.Since(downSince); wait > 0 {
		time.Sleep(wait)
	}
	out := filepath.Join(t.TempDir(), "received.jsonl")
	rcv := exec.Command(node, filepath.Join(dir, "receiver.mjs"), fmt.Sprint(port), out)
	rcv.Env = append(os.Environ(), "WEBHOOK_SECRET="+secret)
	rcv.Stderr = os.Stderr
	if err := rcv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rcv.Process.Kill(); rcv.Wait() })

	want := map[string]string{api.WebhookRunWaiting: "c1", api.WebhookApprovalRequested: "c1", api.WebhookRunSucceeded: "h1", api.WebhookTest: ""}
	deadline = time.Now().Add(60 * time.Second)
	var got []received
	for {
		got = readReceived(t, out)
		types := map[string]bool{}
		for _, r := range got {
			types[r.Payload.Type] = true
		}
		if len(types) == len(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receiver got %+v, want one of each of %v", got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // a duplicate would arrive by now
	got = readReceived(t, out)
	ids := map[string]int{}
	for _, r := range got {
		ids[r.ID]++
		if !r.Verified {
			t.Errorf("delivery %s did not verify with standardwebhooks: %s", r.ID, r.Error)
			continue
		}
		run, ok := want[r.Payload.Type]
		if !ok {
			t.Errorf("unexpected event %s", r.Payload.Type)
			continue
		}
		if run == "" {
			continue
		}
		d := r.Payload.Data
		cost, _ := d["cost"].(map[string]any)
		if d["run"] != run || d["agent"] != "careful" || d["consoleURL"] != firstURL+"/runs/"+run || cost == nil || r.Payload.Timestamp == "" {
			t.Errorf("%s payload %+v", r.Payload.Type, r.Payload)
		}
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("webhook-id %s received %d times, want once", id, n)
		}
	}
	if len(ids) != len(want) {
		t.Errorf("received %d webhook-ids, want %d", len(ids), len(want))
	}
	var h struct {
		Items []api.WebhookDelivery `json:"items"`
	}
	e.Do("GET", "/v2/webhooks/ops/deliveries", nil, &h)
	for _, d := range h.Items {
		if d.State != api.DeliveryDelivered || len(d.History) == 0 || !d.History[len(d.History)-1].Delivered {
			t.Errorf("history of %s: %+v", d.ID, d)
		}
	}
	if strings.Contains(e.Stderr.String(), strings.TrimPrefix(secret, "whsec_")) {
		t.Errorf("the signing secret is in the server's log")
	}
	hist = e.MustCLI(0, "webhooks", "history", "ops", "-o", "json")
	if strings.Contains(hist.Stdout, strings.TrimPrefix(secret, "whsec_")) {
		t.Errorf("the signing secret is in the history")
	}
	// Listed and deleted like the other kinds.
	if got := e.MustCLI(0, "get", "webhooks").Stdout; !strings.Contains(got, "ops") || !strings.Contains(got, "run.succeeded") {
		t.Errorf("get webhooks:\n%s", got)
	}
	e.MustCLI(0, "delete", "webhook/ops")
	if st := e.Do("GET", "/v2/webhooks/ops", nil, nil); st != 404 {
		t.Errorf("GET a deleted webhook: HTTP %d", st)
	}
}

// TestTwoRunnersOnPostgresDeliverEachEventOnce: a server and two runners on one PostgreSQL store
// each run the dispatcher; every run's run.succeeded reaches the receiver once, verified.
func TestTwoRunnersOnPostgresDeliverEachEventOnce(t *testing.T) {
	t.Parallel()
	node, dir := receiverDir(t)
	c := NewCluster(t, script)
	// One deployment, one seal key: every process opens the webhook's signing secret.
	c.Extra = append(c.Extra, "AGENTRUN_SEAL_KEY="+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)))
	allow := []string{"--webhook-allow", "127.0.0.1"}
	c.Env.StartWith(append([]string{"serve", "--listen", "127.0.0.1:0", "--no-runner", "--log-level", "debug"}, allow...), "AGENTRUN_WEBHOOK_RETRY_BASE=1s")
	for _, name := range []string{"a", "b"} {
		c.StartRunner(name, allow...)
	}
	if st := c.Do("PUT", "/v2/agents/careful", ApprovalsAgent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	c.MustCLIIn(fmt.Sprintf("kind: Webhook\nmetadata: {name: done}\nspec: {url: \"http://127.0.0.1:%d/\", events: [run.succeeded], secretRef: done-hook}\n", port), 0, "apply", "-f", "-")
	const password = "correct horse battery staple"
	c.MustCLIIn(password+"\n", 0, "login", "--setup-code", c.SetupCode(), "--password-stdin")
	secret := strings.TrimSpace(c.MustCLI(0, "webhooks", "rotate", "done").Stdout)
	c.MustCLI(0, "login", "--logout")

	out := filepath.Join(t.TempDir(), "received.jsonl")
	rcv := exec.Command(node, filepath.Join(dir, "receiver.mjs"), fmt.Sprint(port), out)
	rcv.Env = append(os.Environ(), "WEBHOOK_SECRET="+secret)
	rcv.Stderr = os.Stderr
	if err := rcv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rcv.Process.Kill(); rcv.Wait() })

	const n = 12
	for i := range n {
		c.StartRun("careful", fmt.Sprintf("h%d", i), "Say hello")
	}
	for i := range n {
		c.WaitPhase(fmt.Sprintf("h%d", i), 60*time.Second, api.PhaseSucceeded)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(readReceived(t, out)) < n && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // a duplicate would arrive by now
	got := readReceived(t, out)
	ids, runs := map[string]int{}, map[string]int{}
	for _, r := range got {
		if !r.Verified || r.Payload.Type != api.WebhookRunSucceeded {
			t.Errorf("delivery %s: verified %v (%s), type %s", r.ID, r.Verified, r.Error, r.Payload.Type)
			continue
		}
		ids[r.ID]++
		runs[fmt.Sprint(r.Payload.Data["run"])]++
	}
	if len(ids) != n || len(runs) != n || len(got) != n {
		t.Errorf("received %d deliveries, %d webhook-ids, %d runs; want %d of each", len(got), len(ids), len(runs), n)
	}
	for id, k := range ids {
		if k != 1 {
			t.Errorf("webhook-id %s received %d times", id, k)
		}
	}
	t.Logf("delivered by the server %d, runner a %d, runner b %d", strings.Count(c.Stderr.String(), "webhook delivered"),
		strings.Count(c.Runners["a"].Stderr.String(), "webhook delivered"), strings.Count(c.Runners["b"].Stderr.String(), "webhook delivered"))
}

// startReceiver starts the Node receiver on a free port with secret; its deliveries go to the
// returned file.
func startReceiver(t *testing.T, node, dir, secret string) (port int, out string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	out = filepath.Join(t.TempDir(), "received.jsonl")
	rcv := exec.Command(node, filepath.Join(dir, "receiver.mjs"), fmt.Sprint(port), out)
	rcv.Env = append(os.Environ(), "WEBHOOK_SECRET="+secret)
	var started SyncBuffer
	rcv.Stdout, rcv.Stderr = &started, os.Stderr
	if err := rcv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rcv.Process.Kill(); rcv.Wait() })
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(started.String(), "listening") {
		if time.Now().After(deadline) {
			t.Fatal("the receiver did not start listening")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return port, out
}

// TestTriggerFailedAndCancelledAndTheAgentsFilter: a fire of a stopped agent is trigger.failed, a
// cancelled run run.cancelled, both verified; a webhook for another agent gets neither.
func TestTriggerFailedAndCancelledAndTheAgentsFilter(t *testing.T) {
	t.Parallel()
	node, dir := receiverDir(t)
	e := NewEnv(t, script)
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", "debug", "--webhook-allow", "127.0.0.1"})
	if st := e.Do("PUT", "/v2/agents/careful", ApprovalsAgent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	// The secret first (set by a person), then the receiver that knows it, then the webhooks.
	const password = "correct horse battery staple"
	e.MustCLIIn(password+"\n", 0, "login", "--setup-code", e.SetupCode(), "--password-stdin")
	if st := e.Do("PUT", "/v2/webhooks/all", `{"kind":"Webhook","metadata":{"name":"all"},"spec":{"url":"http://127.0.0.1:9/","events":["trigger.failed","run.cancelled"],"secretRef":"all-hook"}}`, nil); st != 201 {
		t.Fatalf("create webhook: HTTP %d", st)
	}
	secret := strings.TrimSpace(e.MustCLI(0, "webhooks", "rotate", "all").Stdout)
	e.MustCLI(0, "login", "--logout")
	port, out := startReceiver(t, node, dir, secret)
	for _, doc := range []string{
		fmt.Sprintf(`{"kind":"Webhook","metadata":{"name":"all"},"spec":{"url":"http://127.0.0.1:%d/all","events":["trigger.failed","run.cancelled"],"secretRef":"all-hook"}}`, port),
		fmt.Sprintf(`{"kind":"Webhook","metadata":{"name":"other"},"spec":{"url":"http://127.0.0.1:%d/other","events":["trigger.failed","run.cancelled"],"agents":["someone-else"],"secretRef":"all-hook"}}`, port),
	} {
		var w api.Webhook
		if err := json.Unmarshal([]byte(doc), &w); err != nil {
			t.Fatal(err)
		}
		if st := e.Do("PUT", "/v2/webhooks/"+w.Metadata.Name, doc, nil); st != 200 && st != 201 {
			t.Fatalf("apply webhook %s: HTTP %d", w.Metadata.Name, st)
		}
	}

	e.StartRun("careful", "c1", "Count carefully: one")
	e.WaitPhase("c1", 30*time.Second, api.PhaseWaiting)
	e.MustCLI(0, "cancel", "agentrun/c1")
	e.WaitPhase("c1", 30*time.Second, api.PhaseCancelled)
	if st := e.Do("PUT", "/v2/triggers/nightly", `{"kind":"Trigger","metadata":{"name":"nightly"},"spec":{"agent":"careful","input":"Say hello","schedule":{"cron":"0 2 * * *"}}}`, nil); st != 201 {
		t.Fatalf("create trigger: HTTP %d", st)
	}
	if st := e.Do("PATCH", "/v2/agents/careful", `{"spec":{"state":"Stopped"}}`, nil); st != 200 {
		t.Fatalf("stop the agent: HTTP %d", st)
	}
	if st := e.Do("POST", "/v2/triggers/nightly/fire", `{}`, nil); st != 201 {
		t.Fatalf("fire: HTTP %d", st)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(readReceived(t, out)) < 2 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // anything more (the other webhook's, a duplicate) would arrive by now
	got := readReceived(t, out)
	types := map[string]map[string]any{}
	for _, r := range got {
		if !r.Verified {
			t.Errorf("delivery %s did not verify: %s", r.ID, r.Error)
		}
		types[r.Payload.Type] = r.Payload.Data
	}
	if len(got) != 2 || types[api.WebhookRunCancelled]["run"] != "c1" || types[api.WebhookRunCancelled]["phase"] != "Cancelled" {
		t.Fatalf("received %+v", got)
	}
	tf := types[api.WebhookTriggerFailed]
	if tf["trigger"] != "nightly" || tf["agent"] != "careful" || !strings.Contains(fmt.Sprint(tf["message"]), "stopped") {
		t.Errorf("trigger.failed data %+v", tf)
	}
	if h := e.MustCLI(0, "webhooks", "history", "other").Stdout; strings.Contains(h, "msg_") {
		t.Errorf("a webhook for another agent has deliveries:\n%s", h)
	}
}
