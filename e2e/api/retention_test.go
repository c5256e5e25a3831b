package api

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

const retentionScript = `
entries:
  - name: done
    match: "write-it"
    turns:
      - tool_calls:
          - name: write
            input: {path: out.md, content: "the payload"}
      - text: "I wrote out.md."
  - name: ask
    match: "ask-me"
    turns:
      - tool_calls:
          - name: ask_person
            input: {question: "Which region?"}
      - text: "ok"
`

// TestRetentionPurgesFinishedRuns: the real server's retention job, its clock moved a month ahead
// through the test hooks' clock file, purges a finished run's payloads (steps' arguments and
// results, events' data, the run folder) and says so in its status (`get -o yaml`), keeps its
// phase, answer preview, cost and step list, and leaves a run that waits on a question whole.
func TestRetentionPurgesFinishedRuns(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, retentionScript)
	clock := filepath.Join(t.TempDir(), "clock")
	e.Start("AGENTRUN_DEV_CLOCK_FILE=" + clock)
	CreateCounterAgent(t, e, `["write","ask_person"]`)
	for name, input := range map[string]string{"finished": "write-it", "waiting": "ask-me"} {
		body := `{"kind":"AgentRun","metadata":{"name":"` + name + `"},"spec":{"agent":"worker","input":"` + input + `"}}`
		if st := e.Do("POST", "/v2/agentruns", body, nil); st != 201 {
			t.Fatalf("create %s: HTTP %d", name, st)
		}
	}
	done := e.WaitPhase("finished", time.Minute, api.PhaseSucceeded)
	e.WaitPhase("waiting", time.Minute, api.PhaseWaiting)
	if st := e.Do("GET", "/v2/agentruns/finished/files/out.md", nil, nil); st != 200 {
		t.Fatalf("out.md before the purge: HTTP %d", st)
	}
	// A day later nothing is purged: the job runs (every 100 ms here) but the run is recent.
	writeClock(t, clock, time.Now().Add(24*time.Hour))
	time.Sleep(time.Second)
	if r := e.GetRun("finished"); r.Status.PayloadsPurgedAt != nil {
		t.Fatalf("purged a day after it ended: %v, want kept for 30 days", r.Status.PayloadsPurgedAt)
	}
	month := time.Now().Add(31 * 24 * time.Hour)
	writeClock(t, clock, month)
	deadline := time.Now().Add(30 * time.Second)
	var r api.AgentRun
	for {
		r = e.GetRun("finished")
		if r.Status.PayloadsPurgedAt != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a month later the finished run is not purged:\n%s", Tail(e.Stderr.String(), 3000))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if d := r.Status.PayloadsPurgedAt.Sub(month); d < -time.Second || d > time.Second {
		t.Errorf("payloadsPurgedAt = %v, want the server's (moved) clock %v", r.Status.PayloadsPurgedAt, month)
	}
	if r.Status.Phase != api.PhaseSucceeded || r.Status.Answer == nil || r.Status.Answer.Preview != done.Status.Answer.Preview ||
		r.Status.Cost == nil || r.Status.Cost.TotalUSD != done.Status.Cost.TotalUSD || len(r.Status.Turns) != len(done.Status.Turns) {
		t.Errorf("status after the purge = %+v, want phase, answer preview, cost and turns as before (%+v)", r.Status, done.Status)
	}
	steps := e.Steps("finished")
	if len(steps) == 0 {
		t.Fatal("the step list is gone after the purge")
	}
	for _, s := range steps {
		if len(s.Args) != 0 || len(s.Result) != 0 {
			t.Errorf("step %s keeps args %s result %s", s.Key, s.Args, s.Result)
		}
	}
	if st := e.Do("GET", "/v2/agentruns/finished/files/out.md", nil, nil); st != 404 {
		t.Errorf("out.md after the purge: HTTP %d, want 404", st)
	}
	res := e.MustCLI(0, "agentrun", "answer", "finished")
	if strings.TrimSpace(res.Stdout) != strings.TrimSpace(done.Status.Answer.Preview) {
		t.Errorf("answer after the purge = %q, want the preview %q", res.Stdout, done.Status.Answer.Preview)
	}
	res = e.MustCLI(0, "get", "agentrun/finished", "-o", "yaml")
	if !strings.Contains(res.Stdout, "payloadsPurgedAt:") {
		t.Errorf("get -o yaml does not say the payloads were purged:\n%s", res.Stdout)
	}

	w := e.GetRun("waiting")
	if w.Status.PayloadsPurgedAt != nil || w.Status.Phase != api.PhaseWaiting {
		t.Errorf("the waiting run: %+v, want untouched", w.Status)
	}
	for _, s := range e.Steps("waiting") {
		if s.State == api.StepCompleted && len(s.Result) == 0 && len(s.Args) == 0 {
			t.Errorf("the waiting run's step %s lost its payloads", s.Key)
		}
	}
	e.MustCLI(0, "runs", "message", "waiting", "--content", "Europe")
	e.WaitPhase("waiting", time.Minute, api.PhaseSucceeded)
}

func writeClock(t *testing.T, path string, now time.Time) {
	t.Helper()
	if err := os.WriteFile(path, []byte(now.UTC().Format(time.RFC3339Nano)), 0o600); err != nil {
		t.Fatal(err)
	}
}
