package e2etest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/harness"
)

// harnessInstalls holds, per driver name, the one install of its pinned package for this test
// process.
var harnessInstalls sync.Map

type harnessInstall struct {
	once        sync.Once
	cache, skip string
}

// InstalledHarness returns the harness cache folder holding driver name's pinned package (the
// cache AGENTRUN_HARNESS_CACHE names, which .ci/run fills, or a shared temporary one), installing
// it with npm the first time this test process asks; the test skips, saying why, when it cannot
// be installed.
func InstalledHarness(t *testing.T, name string) string {
	t.Helper()
	v, _ := harnessInstalls.LoadOrStore(name, &harnessInstall{})
	h := v.(*harnessInstall)
	h.once.Do(func() { h.cache, h.skip = cachedHarness(t, name) })
	if h.skip != "" {
		t.Skip(h.skip)
	}
	return h.cache
}

// cachedHarness installs driver name's pinned package into the cache unless it is there; skip
// says why it cannot be.
func cachedHarness(t *testing.T, name string) (cache, skip string) {
	cache = os.Getenv(harness.CacheEnv)
	if cache == "" {
		cache = filepath.Join(os.TempDir(), "agentrun-harness-cache")
	}
	d, _ := harness.Lookup(name)
	os.Setenv(harness.CacheEnv, cache) // the test process looks there too (Installed)
	_, err := harness.InstallTo(t.Context(), cache, d.Package(), func(msg string) { t.Log(msg) })
	if _, ok := harness.Installed(t.TempDir(), d.Package()); !ok {
		return "", fmt.Sprintf("%s cannot be installed with npm here (%v): skipping the %s tests", d.Package().Spec(), err, name)
	}
	return cache, ""
}

// runnerChildren lists the processes still running whose environment has a HOME in the data
// folder's harness-home: every harness gets one there. (pi sets its process title, which
// overwrites its command line, so the command line cannot tell.)
func runnerChildren(dir string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, en := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", en.Name(), "environ"))
		if err != nil || !bytes.Contains(b, []byte("HOME="+filepath.Join(dir, "harness-home"))) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", en.Name(), "cmdline"))
		out = append(out, en.Name()+": "+string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
	}
	return out
}

// NoneLeft waits until no process of the harness is left in the data folder.
func (h HarnessCase) NoneLeft(t *testing.T, dir string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		p := h.Procs(dir)
		if len(p) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s processes still running: %v", h.Name, p)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// HarnessCase is one harness the scenarios every harness runs (harness_scenarios.go: HarnessQuickstart,
// HarnessApprovalAndDeny, ...) are given: its name, the prefix its model gives our tools' names,
// how its processes are found, and where what it shows of a run differs from the others.
type HarnessCase struct {
	Name, Prefix string
	Procs        func(dir string) []string
	// PrintedRegion says whether the quickstart's output shows region.md as this harness gives it
	// (nil: exactly as written: "# Europe\n\nNotes about Europe.\n").
	PrintedRegion func(out string) bool
	// Unrouted is the model that answers every call when this harness's provider is not routed (the
	// provider's default); empty: the router chooses sonnet, with its own step before the first call.
	Unrouted string
	// SecondAnswer says whether the keep-alive run's second answer is right (nil: exactly
	// "second answer: and more").
	SecondAnswer func(preview string) bool
	// WhileParked, when set, checks more of the approval scenario's run c1 while it waits on a
	// person, before the approval.
	WhileParked func(t *testing.T, e *Env)
}

var PiCase = HarnessCase{Name: "pi", Procs: runnerChildren}

// Script is harnessScript with the harness's tool names.
func (h HarnessCase) Script() string { return strings.ReplaceAll(HarnessScript, "TOOL_", h.Prefix) }

// NewPiEnv is NewEnv with the harness cache (holding pi) given to the server.
func NewPiEnv(t *testing.T) *Env {
	t.Helper()
	cache := InstalledHarness(t, "pi")
	e := NewEnv(t, PiCase.Script())
	e.Extra = append(e.Extra, harness.CacheEnv+"="+cache)
	return e
}

const HarnessScript = `
entries:
  - name: router
    match: "Route this request"
    turns:
      - text: '{"family": "sonnet", "confidence": 0.9}'
  - name: notes
    match: "Ask me which region"
    turns:
      - text: "I'll ask which region."
        tool_calls:
          - name: TOOL_ask_person
            input: {question: "Which region should I cover?"}
      - tool_calls:
          - name: TOOL_write
            input: {path: region.md, content: "# {{last_tool_result}}\n\nNotes about {{last_tool_result}}.\n"}
      - text: "I wrote region.md."
  - name: careful
    match: "Count carefully"
    turns:
      - text: "I need to count this once."
        tool_calls:
          - name: TOOL_write
            input: {path: "secret.txt", content: "leak"}
      - tool_calls:
          - name: TOOL_dev_count
            input: {label: "careful"}
      - text: "counted"
  - name: crash
    match: "Crash test"
    turns:
      - tool_calls:
          - name: TOOL_dev_count
            input: {label: "crash"}
      - tool_calls:
          - name: TOOL_write
            input: {path: "after.txt", content: "done"}
      - text: "finished"
  - name: hello
    match: "Say hello"
    turns:
      - text: "hello from the scripted model"
  - name: keep
    match: "Keep talking"
    turns:
      - text: "first answer"
      - text: "second answer: {{last_user}}"
  - name: slow
    match: "Be slow"
    turns:
      - text: "too late"
        latency: 60s
`
