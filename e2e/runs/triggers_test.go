package runs

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/trigger"
)

// Issue 15: triggers. Webhook and GitHub deliveries are signed here the way their senders sign
// them (the published test vectors pin the signing), sent to the real binary, and their fires and
// runs read back through the API and the CLI.

const triggersScript = `
entries:
  - name: router
    match: "Route this request"
    turns:
      - text: '{"family": "sonnet", "confidence": 0.9}'
  - name: asks
    match: "Ask first"
    turns:
      - tool_calls:
          - name: ask_person
            input: {question: "Shall I go on?"}
      - text: "went on"
  - name: anything
    match: "*"
    turns:
      - text: "(scripted) {{last_user}}"
`

const triggersAgent = `{"apiVersion":"agentrun.dev/v1","kind":"Agent","metadata":{"name":"leads"},
 "spec":{"model":{"access":"Server","provider":"anthropic","name":"claude-sonnet-4-5"},"tools":["ask_person"],"perRunMaxCostUSD":"1.00"}}`

func fires(e *Env, name string) []api.TriggerFire {
	e.T.Helper()
	var out struct {
		Items []api.TriggerFire `json:"items"`
	}
	if st := e.Do("GET", "/v2/triggers/"+name+"/fires?limit=0", nil, &out); st != 200 {
		e.T.Fatalf("GET fires of %s: HTTP %d", name, st)
	}
	return out.Items
}

// triggerRuns lists the runs a trigger's fires started (by the run label).
func triggerRuns(e *Env, name string) []api.AgentRun {
	e.T.Helper()
	var list api.List[api.AgentRun]
	if st := e.Do("GET", "/v2/agentruns", nil, &list); st != 200 {
		e.T.Fatalf("list runs: HTTP %d", st)
	}
	var out []api.AgentRun
	for _, r := range list.Items {
		if r.Metadata.Labels[api.LabelTrigger] == name {
			out = append(out, r)
		}
	}
	return out
}

func mustUnauthorized(t *testing.T, what string, st int, body []byte) {
	t.Helper()
	var e api.Error
	json.Unmarshal(body, &e)
	if st != 401 || e.Code != api.CodeUnauthorized || e.Message != "unauthorized" || e.Field != "" {
		t.Errorf("%s: HTTP %d %s, want 401 saying only unauthorized", what, st, body)
	}
}

func TestTriggerBadInputStoresNothing(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, triggersScript)
	e.Start()
	if st := e.Do("PUT", "/v2/agents/leads", triggersAgent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	for _, c := range []struct{ what, spec, field string }{
		{"an invalid cron", `{"agent":"leads","schedule":{"cron":"0 25 * * *","timeZone":"Europe/Berlin"}}`, "spec.schedule.cron"},
		{"an unknown time zone", `{"agent":"leads","schedule":{"cron":"0 9 * * MON","timeZone":"Europe/Atlantis"}}`, "spec.schedule.timeZone"},
		{"an unknown agent", `{"agent":"nobody","schedule":{"cron":"0 9 * * MON"}}`, "spec.agent"},
		{"a template that does not render against the test payload", `{"agent":"leads","input":"Lead {{.body.lead.email}}","webhook":{"secretRef":"s"},"testPayload":{"lead":{"name":"x"}}}`, "spec.input"},
		{"a template that does not parse", `{"agent":"leads","input":"Lead {{.body","webhook":{"secretRef":"s"}}`, "spec.input"},
		{"two kinds", `{"agent":"leads","webhook":{"secretRef":"s"},"schedule":{"cron":"0 9 * * MON"}}`, "spec"},
	} {
		var ae api.Error
		st := e.Do("PUT", "/v2/triggers/bad", `{"apiVersion":"agentrun.dev/v1","kind":"Trigger","metadata":{"name":"bad"},"spec":`+c.spec+`}`, &ae)
		if st < 400 || st >= 500 || ae.Field != c.field {
			t.Errorf("%s: HTTP %d %+v, want a 4xx naming %s", c.what, st, ae, c.field)
		}
	}
	if st := e.Do("GET", "/v2/triggers/bad", nil, nil); st != 404 {
		t.Errorf("a refused trigger was stored: GET HTTP %d", st)
	}
	// The CLI refuses before it sends anything, naming the field.
	dir := t.TempDir()
	WriteFile(t, dir, "bad.yaml", "apiVersion: agentrun.dev/v1\nkind: Trigger\nmetadata: {name: bad}\nspec:\n  agent: leads\n  schedule: {cron: \"every monday\", timeZone: Europe/Berlin}\n")
	if res := e.CLI(dir, "apply", "-f", "bad.yaml"); res.Code != 1 || !strings.Contains(res.Stderr, "spec.schedule.cron") || !strings.Contains(res.Stderr, "nothing was applied") {
		t.Errorf("apply of an invalid cron: exit %d\n%s", res.Code, res.Stderr)
	}
	var list api.List[api.Trigger]
	if st := e.Do("GET", "/v2/triggers", nil, &list); st != 200 || len(list.Items) != 0 {
		t.Errorf("triggers after refusals: HTTP %d %+v", st, list.Items)
	}
}

func TestTriggerWebhook(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, triggersScript)
	e.Start()
	if st := e.Do("PUT", "/v2/agents/leads", triggersAgent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	dir := t.TempDir()
	WriteFile(t, dir, "trigger.yaml", `apiVersion: agentrun.dev/v1
kind: Trigger
metadata: {name: inbound-lead}
spec:
  agent: leads
  input: "Score this lead: {{.body.lead.email}}"
  maxCostUSD: "0.25"
  webhook: {secretRef: lead-hook}
  testPayload: {lead: {email: test@example.com}}
`)
	if res := e.MustCLI(0, "apply", "-f", filepath.Join(dir, "trigger.yaml")); !strings.Contains(res.Stdout, "trigger/inbound-lead created") {
		t.Fatalf("apply: %s", res.Stdout)
	}
	var tr api.Trigger
	if st := e.Do("GET", "/v2/triggers/inbound-lead", nil, &tr); st != 200 || tr.Status.WebhookURL != e.URL+"/v2/hooks/inbound-lead" || tr.Status.Kind != "webhook" {
		t.Fatalf("GET trigger: HTTP %d %+v", st, tr.Status)
	}
	// `get triggers` shows what `triggers` does (kind, agent, URL), not only a name and an age.
	if res := e.MustCLI(0, "get", "triggers"); !strings.Contains(res.Stdout, "KIND") || !strings.Contains(res.Stdout, e.URL+"/v2/hooks/inbound-lead") {
		t.Errorf("get triggers:\n%s", res.Stdout)
	}
	// Before the secret is set nothing verifies.
	now := time.Now().Unix()
	body := []byte(`{"lead": {"email": "ada@example.com"}}`)
	st, b := e.Hook("inbound-lead", StandardHeaders("msg_early", now, trigger.SignStandard(VecSecret, "msg_early", now, body)), body)
	mustUnauthorized(t, "a delivery before the secret is set", st, b)

	// Only a signed-in person sets the signing secret (the spec's published test secret here).
	if st := e.Do("PUT", "/v2/secrets/lead-hook", `{"data":{"WEBHOOK_SECRET":"`+VecSecret+`"}}`, nil); st != 403 {
		t.Fatalf("the API token wrote a signing secret: HTTP %d", st)
	}
	session := e.PersonSession()
	if st := e.DoAs(session, "PUT", "/v2/secrets/lead-hook", `{"data":{"WEBHOOK_SECRET":"`+VecSecret+`"}}`, nil); st != 200 {
		t.Fatalf("a person setting the signing secret: HTTP %d", st)
	}

	// The specification's own vector: signed right, but its timestamp (2021) is far outside the
	// 5-minute tolerance, so the binary refuses it as a replay.
	st, b = e.Hook("inbound-lead", map[string]string{"webhook-id": VecID, "webhook-timestamp": VecTS, "webhook-signature": VecSig}, []byte(VecBody))
	mustUnauthorized(t, "the published vector with its 2021 timestamp", st, b)

	// A fresh delivery signed with the same secret: one fire, one capped run.
	h := StandardHeaders("msg_1", now, trigger.SignStandard(VecSecret, "msg_1", now, body))
	st, b = e.Hook("inbound-lead", h, body)
	var fa FireAnswer
	json.Unmarshal(b, &fa)
	if st != 201 || fa.Replayed || fa.Fire.Outcome != api.FireStarted || fa.Fire.Run == "" || fa.Fire.DeliveryID != "msg_1" {
		t.Fatalf("a signed delivery: HTTP %d %s", st, b)
	}
	run := e.WaitPhase(fa.Fire.Run, 60*time.Second, "Succeeded")
	if run.Spec.Input != "Score this lead: ada@example.com" || run.Spec.MaxCostUSD != "0.25" || run.Status.Cost == nil || run.Status.Cost.LimitUSD != "0.25" {
		t.Errorf("the fire's run: input %q cap %q cost %+v", run.Spec.Input, run.Spec.MaxCostUSD, run.Status.Cost)
	}
	// The same delivery again (a sender's retry): 200, the first record, no second run.
	st, b = e.Hook("inbound-lead", h, body)
	var again FireAnswer
	json.Unmarshal(b, &again)
	if st != 200 || !again.Replayed || again.Fire.Run != fa.Fire.Run {
		t.Errorf("a replayed delivery: HTTP %d %s", st, b)
	}
	// A retry re-signed with a fresh timestamp keeps its id: still one run.
	later := now + 1
	st, _ = e.Hook("inbound-lead", StandardHeaders("msg_1", later, trigger.SignStandard(VecSecret, "msg_1", later, body)), body)
	if st != 200 {
		t.Errorf("a re-signed retry of msg_1: HTTP %d", st)
	}
	if runs := triggerRuns(e, "inbound-lead"); len(runs) != 1 {
		t.Errorf("%d runs after a delivery and two replays, want 1", len(runs))
	}

	// One bit changed, a missing signature, an expired or future timestamp, an unknown trigger:
	// 401 and nothing more.
	sig := trigger.SignStandard(VecSecret, "msg_2", now, body)
	raw, _ := base64.StdEncoding.DecodeString(sig[3:])
	raw[0] ^= 1
	st, b = e.Hook("inbound-lead", StandardHeaders("msg_2", now, "v1,"+base64.StdEncoding.EncodeToString(raw)), body)
	mustUnauthorized(t, "one bit of the signature changed", st, b)
	st, b = e.Hook("inbound-lead", StandardHeaders("msg_2", now, sig), append([]byte(nil), bytes.Replace(body, []byte("ada"), []byte("adb"), 1)...))
	mustUnauthorized(t, "one letter of the body changed", st, b)
	st, b = e.Hook("inbound-lead", map[string]string{"webhook-id": "msg_2", "webhook-timestamp": strconv.FormatInt(now, 10)}, body)
	mustUnauthorized(t, "no signature", st, b)
	old := now - 301
	st, b = e.Hook("inbound-lead", StandardHeaders("msg_2", old, trigger.SignStandard(VecSecret, "msg_2", old, body)), body)
	mustUnauthorized(t, "a timestamp 5 minutes and 1 second old", st, b)
	st, b = e.Hook("nobody", StandardHeaders("msg_2", now, sig), body)
	mustUnauthorized(t, "an unknown trigger", st, b)
	big := bytes.Repeat([]byte("x"), trigger.MaxBody+1)
	if st, _ := e.Hook("inbound-lead", StandardHeaders("msg_big", now, trigger.SignStandard(VecSecret, "msg_big", now, big)), big); st != 413 {
		t.Errorf("a body over 1 MiB: HTTP %d, want 413", st)
	}
	if runs := triggerRuns(e, "inbound-lead"); len(runs) != 1 {
		t.Errorf("%d runs after refused deliveries, want 1", len(runs))
	}

	// Rotation: a person only; the old secret verifies during the hold, the new one at once.
	if st := e.Do("POST", "/v2/triggers/inbound-lead/rotate", `{}`, nil); st != 403 {
		t.Errorf("the API token rotated a secret: HTTP %d", st)
	}
	var rot struct {
		Secret string `json:"secret"`
	}
	if st := e.DoAs(session, "POST", "/v2/triggers/inbound-lead/rotate", `{"hold":"1h"}`, &rot); st != 200 || !strings.HasPrefix(rot.Secret, "whsec_") {
		t.Fatalf("rotate: HTTP %d %+v", st, rot)
	}
	for i, secret := range []string{VecSecret, rot.Secret} {
		id := fmt.Sprintf("msg_rot_%d", i)
		if st, b := e.Hook("inbound-lead", StandardHeaders(id, now, trigger.SignStandard(secret, id, now, body)), body); st != 201 {
			t.Errorf("after rotation, secret %d: HTTP %d %s", i, st, b)
		}
	}

	// test renders and starts nothing; history lists the fires.
	WriteFile(t, dir, "event.json", `{"lead": {"email": "grace@example.com"}}`)
	res := e.MustCLI(0, "triggers", "test", "inbound-lead", "--payload", "@"+filepath.Join(dir, "event.json"))
	if !strings.Contains(res.Stdout, `"input": "Score this lead: grace@example.com"`) || !strings.Contains(res.Stdout, `"maxCostUSD": "0.25"`) {
		t.Errorf("triggers test: %s", res.Stdout)
	}
	WriteFile(t, dir, "nolead.json", `{"contact": {}}`)
	if res := e.CLI(dir, "triggers", "test", "inbound-lead", "--payload", "@nolead.json"); res.Code != 1 || !strings.Contains(res.Stderr, "lead") {
		t.Errorf("triggers test with a payload the input cannot render: exit %d %s", res.Code, res.Stderr)
	}
	if runs := triggerRuns(e, "inbound-lead"); len(runs) != 3 {
		t.Errorf("%d runs after triggers test, want 3 (test starts none)", len(runs))
	}
	res = e.MustCLI(0, "triggers", "history", "inbound-lead")
	if !strings.Contains(res.Stdout, fa.Fire.Run) || !strings.Contains(res.Stdout, "msg_1") || strings.Count(res.Stdout, "webhook") != 3 {
		t.Errorf("triggers history:\n%s", res.Stdout)
	}
	if res := e.MustCLI(0, "get", "triggers"); !strings.Contains(res.Stdout, "inbound-lead") {
		t.Errorf("get triggers:\n%s", res.Stdout)
	}
	res = e.MustCLI(0, "describe", "trigger/inbound-lead")
	if flat := strings.Join(strings.Fields(res.Stdout), " "); !strings.Contains(flat, "Webhook URL: "+e.URL+"/v2/hooks/inbound-lead") ||
		!strings.Contains(flat, "Run cap: $0.25") || !strings.Contains(flat, fa.Fire.Run) {
		t.Errorf("describe trigger:\n%s", res.Stdout)
	}
	e.MustCLI(0, "delete", "trigger/inbound-lead")
	if st := e.Do("GET", "/v2/triggers/inbound-lead", nil, nil); st != 404 {
		t.Errorf("after delete: HTTP %d", st)
	}
}

func TestTriggerGitHub(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, triggersScript)
	e.Start()
	if st := e.Do("PUT", "/v2/agents/leads", triggersAgent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	if st := e.Do("PUT", "/v2/triggers/pr-review", `{"kind":"Trigger","metadata":{"name":"pr-review"},"spec":{"agent":"leads",
	  "input":"Review {{.pull_request.html_url}} ({{.action}})",
	  "github":{"secretRef":"gh-hook","events":["pull_request"],"actions":["opened","synchronize","reopened"],"repositories":["octo/repo"]}}}`, nil); st != 201 {
		t.Fatalf("create trigger: HTTP %d", st)
	}
	session := e.PersonSession()
	if st := e.DoAs(session, "PUT", "/v2/secrets/gh-hook", map[string]any{"data": map[string]string{"WEBHOOK_SECRET": GhSecret}}, nil); st != 200 {
		t.Fatalf("set the secret: HTTP %d", st)
	}
	// GitHub's published example signature verifies (a ping is answered); one bit changed does not.
	st, b := e.Hook("pr-review", map[string]string{"X-Hub-Signature-256": GhSig, "X-GitHub-Event": "ping", "X-GitHub-Delivery": "d-ping"}, []byte(GhBody))
	var pong FireAnswer
	json.Unmarshal(b, &pong)
	if st != 200 || !pong.OK {
		t.Errorf("GitHub's example signature on a ping: HTTP %d %s", st, b)
	}
	st, b = e.Hook("pr-review", map[string]string{"X-Hub-Signature-256": GhSig[:len(GhSig)-1] + "6", "X-GitHub-Event": "ping", "X-GitHub-Delivery": "d-ping"}, []byte(GhBody))
	mustUnauthorized(t, "GitHub's example with one bit changed", st, b)

	pr := func(action, repo string) []byte {
		return []byte(fmt.Sprintf(`{"action":%q,"number":7,"pull_request":{"html_url":"https://github.com/%s/pull/7"},"repository":{"full_name":%q}}`, action, repo, repo))
	}
	deliver := func(delivery string, body []byte) (int, FireAnswer) {
		st, b := e.Hook("pr-review", map[string]string{"X-Hub-Signature-256": trigger.SignGitHub(GhSecret, body), "X-GitHub-Event": "pull_request", "X-GitHub-Delivery": delivery}, body)
		var fa FireAnswer
		json.Unmarshal(b, &fa)
		return st, fa
	}
	st, fa := deliver("d-1", pr("opened", "octo/repo"))
	if st != 201 || fa.Fire.Run == "" || fa.Fire.Source != "github" {
		t.Fatalf("an opened pull request: HTTP %d %+v", st, fa)
	}
	if r := e.GetRun(fa.Fire.Run); r.Spec.Input != "Review https://github.com/octo/repo/pull/7 (opened)" || r.Spec.MaxCostUSD != "1.00" {
		t.Errorf("the run: input %q cap %q (want the agent's cap)", r.Spec.Input, r.Spec.MaxCostUSD)
	}
	if st, again := deliver("d-1", pr("opened", "octo/repo")); st != 200 || !again.Replayed || again.Fire.Run != fa.Fire.Run {
		t.Errorf("a redelivery of d-1: HTTP %d %+v", st, again)
	}
	if st, ig := deliver("d-2", pr("closed", "octo/repo")); st != 200 || !ig.Ignored {
		t.Errorf("a closed pull request: HTTP %d %+v", st, ig)
	}
	if st, ig := deliver("d-3", pr("opened", "someone/else")); st != 200 || !ig.Ignored {
		t.Errorf("another repository: HTTP %d %+v", st, ig)
	}
	if runs := triggerRuns(e, "pr-review"); len(runs) != 1 {
		t.Errorf("%d runs, want 1", len(runs))
	}
}

// Forbid skips a fire while the last fire's run is unfinished, Replace cancels it; a fire's run
// has the trigger's cap and pauses at it.
func TestTriggerConcurrencyAndCap(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, triggersScript)
	e.Start()
	if st := e.Do("PUT", "/v2/agents/leads", triggersAgent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	mk := func(name, concurrency, maxCost string) {
		spec := map[string]any{"agent": "leads", "input": "Ask first, then go on", "concurrency": concurrency, "schedule": map[string]any{"cron": "0 0 1 1 *"}}
		if maxCost != "" {
			spec["maxCostUSD"] = maxCost
		}
		if st := e.Do("PUT", "/v2/triggers/"+name, map[string]any{"kind": "Trigger", "metadata": map[string]any{"name": name}, "spec": spec}, nil); st != 201 {
			t.Fatalf("create trigger %s: HTTP %d", name, st)
		}
	}
	fire := func(name string) api.TriggerFire {
		t.Helper()
		var fa FireAnswer
		if st := e.Do("POST", "/v2/triggers/"+name+"/fire", `{}`, &fa); st != 201 {
			t.Fatalf("fire %s: HTTP %d", name, st)
		}
		return fa.Fire
	}
	mk("forbid", "Forbid", "")
	first := fire("forbid")
	e.WaitPhase(first.Run, 60*time.Second, "Waiting") // it asks a question: unfinished
	if f := fire("forbid"); f.Outcome != api.FireSkipped || f.Run != "" {
		t.Errorf("Forbid while the last run waits: %+v", f)
	}
	e.Do("POST", "/v2/agentruns/"+first.Run+"/messages", `{"payload":"yes"}`, nil)
	e.WaitPhase(first.Run, 60*time.Second, "Succeeded")
	if f := fire("forbid"); f.Outcome != api.FireStarted || f.Run == "" {
		t.Errorf("Forbid once the last run finished: %+v", f)
	}

	mk("replace", "Replace", "")
	r1 := fire("replace")
	e.WaitPhase(r1.Run, 60*time.Second, "Waiting")
	r2 := fire("replace")
	if r2.Outcome != api.FireReplaced || r2.Run == "" || r2.Run == r1.Run {
		t.Fatalf("Replace: %+v", r2)
	}
	e.WaitPhase(r1.Run, 60*time.Second, "Cancelled")
	e.WaitPhase(r2.Run, 60*time.Second, "Waiting")

	// A cap too small for one call: the run waits at it, with the trigger's cap.
	mk("capped", "Allow", "0.000001")
	c := fire("capped")
	r := e.WaitPhase(c.Run, 60*time.Second, "Waiting")
	if r.Status.Reason != api.ReasonMaxCostReached || r.Spec.MaxCostUSD != "0.000001" || r.Status.Cost == nil || r.Status.Cost.LimitUSD != "0.000001" {
		t.Errorf("the capped fire's run: reason %s cap %s cost %+v", r.Status.Reason, r.Spec.MaxCostUSD, r.Status.Cost)
	}
	// Suspended: a fire is recorded as skipped and starts nothing.
	if res := e.MustCLI(0, "triggers", "suspend", "capped"); !strings.Contains(res.Stdout, "suspended") {
		t.Errorf("suspend: %s", res.Stdout)
	}
	if f := fire("capped"); f.Outcome != api.FireSkipped || f.Run != "" {
		t.Errorf("a fire of a suspended trigger: %+v", f)
	}
	e.MustCLI(0, "triggers", "resume", "capped")
	if res := e.MustCLI(0, "triggers", "fire", "capped"); !strings.Contains(res.Stderr, "Started agentrun/capped-") {
		t.Errorf("triggers fire: %s", res.Stderr)
	}
}

// clockFile is the test hooks' trigger clock: the scheduler of the binary reads now from it.
type clockFile string

func (c clockFile) set(t *testing.T, at string) {
	t.Helper()
	if err := os.WriteFile(string(c), []byte(at), 0o600); err != nil {
		t.Fatal(err)
	}
}

// waitFire waits until trigger name has a fire for the slot (RFC 3339, UTC) and returns it.
func waitFire(e *Env, name, slot string) api.TriggerFire {
	e.T.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for _, f := range fires(e, name) {
			if f.ScheduledTime != nil && f.ScheduledTime.UTC().Format(time.RFC3339) == slot {
				return f
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.T.Fatalf("trigger %s never fired for slot %s: %+v\n%s", name, slot, fires(e, name), e.Stderr.String())
	return api.TriggerFire{}
}

// step moves the clock and waits until the scheduler has looked at that time: the marker trigger
// (every minute, suspended, named to come last) records each minute it sees, and one tick looks
// at every trigger in name order.
func step(e *Env, clock clockFile, at string) {
	e.T.Helper()
	clock.set(e.T, at)
	ts, _ := time.Parse(time.RFC3339, at)
	waitFire(e, "zz-marker", ts.UTC().Truncate(time.Minute).Format(time.RFC3339))
}

func startedSlots(fs []api.TriggerFire) []string {
	var out []string
	for _, f := range fs {
		if f.Outcome == api.FireStarted && f.ScheduledTime != nil {
			out = append(out, f.ScheduledTime.UTC().Format(time.RFC3339))
		}
	}
	sort.Strings(out)
	return out
}

func putSchedule(t *testing.T, e *Env, name, cron, zone, missed string, suspend bool) {
	t.Helper()
	spec := map[string]any{"agent": "leads", "input": "Report for {{.scheduledTime}}", "suspend": suspend,
		"schedule": map[string]any{"cron": cron, "timeZone": zone, "missed": missed}}
	if st := e.Do("PUT", "/v2/triggers/"+name, map[string]any{"kind": "Trigger", "metadata": map[string]any{"name": name}, "spec": spec}, nil); st != 201 {
		t.Fatalf("create trigger %s: HTTP %d", name, st)
	}
}

// A cron in Europe/Berlin across both 2027 transitions, with the scheduler's clock injected
// (test hooks), then the missed-slot policies after the server was down.
func TestTriggerScheduleClock(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, triggersScript)
	clock := clockFile(filepath.Join(t.TempDir(), "clock"))
	clock.set(t, "2027-03-27T12:00:00Z")
	e.Extra = append(e.Extra, "AGENTRUN_DEV_CLOCK_FILE="+string(clock))
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", "debug", "--no-runner"})
	if st := e.Do("PUT", "/v2/agents/leads", triggersAgent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	putSchedule(t, e, "berlin", "30 2 * * *", "Europe/Berlin", "Skip", false)
	putSchedule(t, e, "zz-marker", "* * * * *", "UTC", "Skip", true)
	step(e, clock, "2027-03-27T12:00:00Z")
	// Clocks skip 02:00-03:00 on 28 March: the 02:30 slot fires once, at 03:00 CEST (01:00Z).
	step(e, clock, "2027-03-28T00:59:30Z")
	step(e, clock, "2027-03-28T01:00:05Z")
	waitFire(e, "berlin", "2027-03-28T01:00:00Z")
	step(e, clock, "2027-03-28T01:30:05Z") // 03:30 CEST: the wall time 02:30 never came by another way
	step(e, clock, "2027-03-29T00:30:05Z") // 02:30 CEST
	// Clocks repeat 02:00-03:00 on 31 October: 02:30 fires once, at its first occurrence (00:30Z).
	step(e, clock, "2027-10-31T00:30:05Z")
	step(e, clock, "2027-10-31T01:30:05Z") // 02:30 again, now CET: no second fire
	step(e, clock, "2027-11-01T01:30:05Z") // 02:30 CET
	got := startedSlots(fires(e, "berlin"))
	want := []string{"2027-03-28T01:00:00Z", "2027-03-29T00:30:00Z", "2027-10-31T00:30:00Z", "2027-11-01T01:30:00Z"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Berlin 02:30 fired at %v, want %v", got, want)
	}
	for _, r := range triggerRuns(e, "berlin") {
		if !strings.HasPrefix(r.Spec.Input, "Report for 2027-") {
			t.Errorf("run %s input %q", r.Metadata.Name, r.Spec.Input)
		}
	}

	// Missed slots: both fire on time at 10:00, then the server is down 11:00-15:00. (Their first
	// look, at 09:59:50, finds the 09:00 slot late already: Skip records it, RunOnce runs it.)
	putSchedule(t, e, "hourly-skip", "0 * * * *", "UTC", "Skip", false)
	putSchedule(t, e, "hourly-once", "0 * * * *", "UTC", "RunOnce", false)
	step(e, clock, "2027-11-08T09:59:50Z")
	step(e, clock, "2027-11-08T10:00:05Z")
	waitFire(e, "hourly-skip", "2027-11-08T10:00:00Z")
	waitFire(e, "hourly-once", "2027-11-08T10:00:00Z")
	skipRuns, onceRuns := len(triggerRuns(e, "hourly-skip")), len(triggerRuns(e, "hourly-once"))
	e.Kill()
	clock.set(t, "2027-11-08T15:20:00Z")
	e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", "debug", "--no-runner"})
	step(e, clock, "2027-11-08T15:20:00Z")
	skip, once := fires(e, "hourly-skip"), fires(e, "hourly-once")
	if len(skip) < 2 || skip[0].Outcome != api.FireMissed || skip[0].Run != "" || skip[0].ScheduledTime.UTC().Hour() != 15 ||
		!strings.Contains(skip[0].Message, "5 slot") || skip[1].Outcome != api.FireStarted || skip[1].ScheduledTime.UTC().Hour() != 10 {
		t.Errorf("missed: Skip after 5 slots down: %+v", skip)
	}
	if len(once) < 2 || once[0].Outcome != api.FireStarted || once[0].Run == "" || once[0].ScheduledTime.UTC().Hour() != 15 || once[1].ScheduledTime.UTC().Hour() != 10 {
		t.Errorf("missed: RunOnce after 5 slots down: %+v", once)
	}
	if n := len(triggerRuns(e, "hourly-once")); n != onceRuns+1 {
		t.Errorf("RunOnce made %d runs for 5 missed slots, want 1", n-onceRuns)
	}
	if n := len(triggerRuns(e, "hourly-skip")); n != skipRuns {
		t.Errorf("Skip made %d runs for 5 missed slots, want none", n-skipRuns)
	}
}

// Two servers on one PostgreSQL, both scheduling with one injected clock: every slot is recorded
// once and starts one run.
func TestTriggerTwoServersOnePostgres(t *testing.T) {
	t.Parallel()
	storeURL := PGURL(t)
	clock := clockFile(filepath.Join(t.TempDir(), "clock"))
	clock.set(t, "2027-01-04T08:00:00Z")
	var envs []*Env
	for range 2 {
		e := NewEnv(t, triggersScript)
		// One seal key for both, as a deployment gives every process (signing secrets are sealed).
		e.Extra = append(e.Extra, "AGENTRUN_STORE_URL="+storeURL, "AGENTRUN_DEV_CLOCK_FILE="+string(clock),
			"AGENTRUN_SEAL_KEY="+base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)))
		e.StartWith([]string{"serve", "--listen", "127.0.0.1:0", "--log-level", "debug", "--no-runner"})
		envs = append(envs, e)
	}
	a, b := envs[0], envs[1]
	if st := a.Do("PUT", "/v2/agents/leads", triggersAgent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	putSchedule(t, a, "every-minute", "* * * * *", "UTC", "Skip", false)
	putSchedule(t, a, "zz-marker", "* * * * *", "UTC", "Skip", true)
	step(a, clock, "2027-01-04T08:00:00Z")
	const minutes = 20
	start := time.Date(2027, 1, 4, 8, 1, 0, 0, time.UTC)
	for i := range minutes {
		at := start.Add(time.Duration(i) * time.Minute).Format(time.RFC3339)
		clock.set(t, at)
		// Both servers must have looked at this minute before the clock moves on.
		waitFire(a, "zz-marker", at)
		waitFire(b, "zz-marker", at)
	}
	fires := fires(a, "every-minute")
	slots := map[string]int{}
	started := 0
	for _, f := range fires {
		slots[f.Key]++
		if f.Outcome == api.FireStarted {
			started++
		}
	}
	for k, n := range slots {
		if n != 1 {
			t.Errorf("slot %s recorded %d times", k, n)
		}
	}
	runs := triggerRuns(b, "every-minute")
	if started != minutes+1 || len(runs) != minutes+1 { // and 08:00, the first minute both saw
		t.Errorf("%d fires started and %d runs for %d slots, want one each (fires %+v)", started, len(runs), minutes+1, fires)
	}
	byRun := map[string]bool{}
	for _, r := range runs {
		byRun[r.Metadata.Name] = true
	}
	for _, f := range fires {
		if f.Run != "" && !byRun[f.Run] {
			t.Errorf("fire %s names run %s, which does not exist", f.Key, f.Run)
		}
	}
	t.Logf("%d slots over two servers: %d fire records, %d runs; server a recorded %d of them, server b %d", minutes+1, len(fires), len(runs),
		firedLines(a.Stderr.String(), "every-minute"), firedLines(b.Stderr.String(), "every-minute"))

	// One webhook delivery sent to both servers at once, several times each (a load balancer and
	// a sender's retries): one fire, one run.
	if st := a.Do("PUT", "/v2/triggers/hook", `{"kind":"Trigger","metadata":{"name":"hook"},"spec":{"agent":"leads","input":"{{.body.n}}","webhook":{"secretRef":"hook-secret"}}}`, nil); st != 201 {
		t.Fatalf("create webhook trigger: HTTP %d", st)
	}
	if st := a.DoAs(a.PersonSession(), "PUT", "/v2/secrets/hook-secret", `{"data":{"WEBHOOK_SECRET":"`+VecSecret+`"}}`, nil); st != 200 {
		t.Fatalf("set the secret: HTTP %d", st)
	}
	now := time.Now().Unix()
	body := []byte(`{"n": 1}`)
	h := StandardHeaders("msg_both", now, trigger.SignStandard(VecSecret, "msg_both", now, body))
	statuses := make(chan int, 10)
	for i := range 10 {
		e := envs[i%2]
		go func() {
			req, _ := http.NewRequest("POST", e.URL+"/v2/hooks/hook", bytes.NewReader(body))
			for k, v := range h {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				statuses <- 0
				return
			}
			resp.Body.Close()
			statuses <- resp.StatusCode
		}()
	}
	got := map[int]int{}
	for range 10 {
		got[<-statuses]++
	}
	if got[201] != 1 || got[200] != 9 {
		t.Errorf("one delivery sent 10 times to two servers answered %v, want one 201 and nine 200", got)
	}
	if n := len(triggerRuns(b, "hook")); n != 1 {
		t.Errorf("one delivery to two servers made %d runs", n)
	}
}

// firedLines counts a server's "trigger fired" log lines for a trigger: the fires it recorded.
func firedLines(log, name string) int {
	n := 0
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, `msg="trigger fired"`) && strings.Contains(l, "trigger="+name+" ") {
			n++
		}
	}
	return n
}

// A trigger with spec.group makes each fire's run a task of the group, admitted under its
// limits; a fire whose run cannot be made (the agent stopped) is recorded Failed with why.
func TestTriggerGroupAndFailedFire(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, triggersScript)
	e.Start()
	if st := e.Do("PUT", "/v2/agents/leads", triggersAgent, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	if st := e.Do("PUT", "/v2/agentgroups/batch", `{"kind":"AgentGroup","metadata":{"name":"batch"},"spec":{"agent":"leads","limits":{"maxActive":1}}}`, nil); st != 201 {
		t.Fatalf("create group: HTTP %d", st)
	}
	var ae api.Error
	if st := e.Do("PUT", "/v2/triggers/nightly", `{"kind":"Trigger","metadata":{"name":"nightly"},"spec":{"agent":"leads","group":"nogroup","input":"hi","schedule":{"cron":"0 2 * * *"}}}`, &ae); st != 404 || ae.Field != "spec.group" {
		t.Errorf("a trigger naming a missing group: HTTP %d %+v", st, ae)
	}
	if st := e.Do("PUT", "/v2/triggers/nightly", `{"kind":"Trigger","metadata":{"name":"nightly"},"spec":{"agent":"leads","group":"batch","input":"Summarize the night","schedule":{"cron":"0 2 * * *"}}}`, nil); st != 201 {
		t.Fatalf("create trigger: HTTP %d", st)
	}
	var fa FireAnswer
	if st := e.Do("POST", "/v2/triggers/nightly/fire", `{}`, &fa); st != 201 || fa.Fire.Run == "" || !strings.HasPrefix(fa.Fire.Run, "batch-nightly-") {
		t.Fatalf("fire into a group: HTTP %d %+v", st, fa)
	}
	r := e.WaitPhase(fa.Fire.Run, 60*time.Second, "Succeeded")
	if r.Spec.Group != "batch" || r.Spec.TaskKey == "" {
		t.Errorf("the fire's run is not a task of the group: %+v", r.Spec)
	}
	// The agent stops taking runs: the fire is recorded Failed, with the reason, and no run.
	if st := e.Do("PATCH", "/v2/agents/leads", `{"spec":{"state":"Stopped"}}`, nil); st != 200 {
		t.Fatalf("stop the agent: HTTP %d", st)
	}
	fa = FireAnswer{}
	if st := e.Do("POST", "/v2/triggers/nightly/fire", `{}`, &fa); st != 201 || fa.Fire.Outcome != api.FireFailed || fa.Fire.Run != "" || !strings.Contains(fa.Fire.Message, "stopped") {
		t.Errorf("a fire of a stopped agent: HTTP %d %+v", st, fa)
	}
	if res := e.MustCLI(0, "triggers", "history", "nightly"); !strings.Contains(res.Stdout, "Failed") || !strings.Contains(res.Stdout, "Started") {
		t.Errorf("history:\n%s", res.Stdout)
	}
}
