package journal_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/store"
)

func heldRead(key string) journal.Spec {
	return journal.Spec{Key: key, Kind: api.StepKindTool, Title: "ls .", Args: map[string]string{"path": "."}, Safe: true, Brief: true, Held: true}
}

// nextModelCall is the step the built-in loop runs after its reads: its intent commit carries
// them. While its effect runs, it reports what the store holds of the reads.
func nextModelCall(t *testing.T, h *harness, j *journal.Journal, reads ...string) {
	t.Helper()
	spec := journal.Spec{Key: "t1/model", Kind: api.StepKindModel, Title: "model call", Args: map[string]int{"messages": 3}}
	if _, err := j.Do(bg, spec, func(ctx context.Context) (any, *int64, error) {
		for _, key := range reads {
			if s := h.step(key); s.State != api.StepCompleted && s.State != api.StepFailed {
				t.Errorf("during the next model call the store holds %s as %q, want its outcome (the intent commit carries it)", key, s.State)
			}
		}
		return "answer", nil, nil
	}); err != nil {
		t.Fatalf("next model call: %v", err)
	}
}

// A Held read makes no commit of its own: the next step's intent commit carries its record, so
// a read and a model call cost two commits, not three; the store has the read Completed before
// the model call runs, and the timeline has the read's start, its end, then the call's start.
func TestHeldReadRidesWithTheNextCommit(t *testing.T) {
	h := newHarness(t)
	j, cs := h.openCounting(h.lease)
	read := heldRead("t0/tool/0")
	out, err := j.Do(bg, read, func(context.Context) (any, *int64, error) { return "a.txt", nil, nil })
	if err != nil || string(out.Result) != `"a.txt"` {
		t.Fatalf("Do: %+v, %v", out, err)
	}
	if cs.commits != 0 {
		t.Errorf("the held read made %d commits, want 0", cs.commits)
	}
	if !j.Completed(read.Key) {
		t.Error("the drive does not see the held read completed")
	}
	if steps, err := h.st.ListSteps(bg, h.run); err != nil || len(steps) != 0 {
		t.Errorf("before the next commit the store holds %v (%v), want nothing", steps, err)
	}
	nextModelCall(t, h, j, read.Key)
	if cs.commits != 2 {
		t.Errorf("a held read and a model call made %d commits, want 2", cs.commits)
	}
	if s := h.step(read.Key); s.State != api.StepCompleted || s.Attempt != 1 || string(s.Result) != `"a.txt"` || s.ArgsHash == "" {
		t.Errorf("read %s attempt %d result %s hash %q, want Completed attempt 1 with its result and hash", s.State, s.Attempt, s.Result, s.ArgsHash)
	}
	evs := h.events()
	started, completed, next := slices.Index(evs, "step.started "+read.Key), slices.Index(evs, "step.completed "+read.Key), slices.Index(evs, "step.started t1/model")
	if started < 0 || completed < started || next < completed {
		t.Errorf("events %v: want the read's start, its end, then t1/model's start", evs)
	}
	// Replayed under a new lease, neither runs again.
	h.replaysUnrun(read, `"a.txt"`)
}

// Several reads held in a row (one model reply's tool calls) all go in the one next commit, a
// failed one recorded Failed with its error.
func TestHeldReadsAndAFailureShareTheNextCommit(t *testing.T) {
	h := newHarness(t)
	j, cs := h.openCounting(h.lease)
	if _, err := j.Do(bg, heldRead("t0/tool/0"), func(context.Context) (any, *int64, error) { return "a.txt", nil, nil }); err != nil {
		t.Fatalf("first read: %v", err)
	}
	boom := errors.New("b.txt: no such file")
	if _, err := j.Do(bg, heldRead("t0/tool/1"), func(context.Context) (any, *int64, error) { return nil, nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("second read: %v, want %v", err, boom)
	}
	if cs.commits != 0 {
		t.Errorf("two held reads made %d commits, want 0", cs.commits)
	}
	nextModelCall(t, h, j, "t0/tool/0", "t0/tool/1")
	if cs.commits != 2 {
		t.Errorf("%d commits, want 2", cs.commits)
	}
	if s := h.step("t0/tool/1"); s.State != api.StepFailed || s.Error != boom.Error() {
		t.Errorf("failed read %s %q, want Failed %q", s.State, s.Error, boom)
	}
	if evs := h.events(); !slices.Contains(evs, "step.failed t0/tool/1") {
		t.Errorf("events %v: want the failure on the timeline", evs)
	}
}

// A drive that ends before its next commit (killed: its context ends, nothing more is written)
// leaves the held read unrecorded: the next drive runs it again from attempt 1, as a safe step
// is repeated, and the timeline has no start of a step the store lacks.
func TestHeldReadLostWithItsDriveRunsAgain(t *testing.T) {
	h := newHarness(t)
	read := heldRead("t0/tool/0")
	eff := &effect{result: "contents"}
	j := h.open(h.lease)
	if _, err := j.Do(bg, read, eff.fn); err != nil {
		t.Fatalf("Do: %v", err)
	}
	// The process dies here: j is dropped with the read held.
	if steps, err := h.st.ListSteps(bg, h.run); err != nil || len(steps) != 0 {
		t.Fatalf("the store holds %v (%v), want no step", steps, err)
	}
	if evs := h.events(); slices.Contains(evs, "step.started "+read.Key) {
		t.Errorf("events %v carry a start of %s, which the store does not have", evs, read.Key)
	}
	j2 := h.open(h.takeOver())
	out, err := j2.Do(bg, read, eff.fn)
	if err != nil || out.Replayed || string(out.Result) != `"contents"` {
		t.Fatalf("after the takeover: %+v, %v", out, err)
	}
	if eff.calls != 2 {
		t.Errorf("the read ran %d times, want 2", eff.calls)
	}
	nextModelCall(t, h, j2, read.Key)
	if s := h.step(read.Key); s.State != api.StepCompleted || s.Attempt != 1 {
		t.Errorf("read %s attempt %d, want Completed attempt 1", s.State, s.Attempt)
	}
}

// Held means nothing without Brief and Safe, and a record that carries files or a status is
// written at once: each of these commits its own outcome before Do returns.
func TestHeldOnlyHoldsAPlainBriefRecord(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*journal.Spec)
		want int
	}{
		{"not brief", func(s *journal.Spec) { s.Brief = false }, 2},
		{"not safe", func(s *journal.Spec) { s.Safe = false }, 2},
		{"with files", func(s *journal.Spec) {
			s.Files = func() ([]store.FileWrite, error) {
				return []store.FileWrite{{Path: "notes.txt", Content: []byte("x"), Mode: 0o644}}, nil
			}
		}, 1},
		{"with a status", func(s *journal.Spec) {
			s.Status = func(json.RawMessage, *int64) (*api.AgentRunStatus, error) {
				return &api.AgentRunStatus{Phase: api.PhaseRunning, AgentRevision: 1}, nil
			}
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			j, cs := h.openCounting(h.lease)
			spec := heldRead("t0/tool/0")
			tc.edit(&spec)
			if _, err := j.Do(bg, spec, func(context.Context) (any, *int64, error) { return "a.txt", nil, nil }); err != nil {
				t.Fatalf("Do: %v", err)
			}
			if cs.commits != tc.want {
				t.Errorf("%d commits, want %d", cs.commits, tc.want)
			}
			if s := h.step(spec.Key); s.State != api.StepCompleted {
				t.Errorf("the store holds %s as %q right after Do, want Completed", spec.Key, s.State)
			}
		})
	}
}

// forkFolderAt forks the harness's run at step at and returns the fork's folder.
func (h *harness) forkFolderAt(at string) []store.File {
	h.t.Helper()
	fk := &api.AgentRun{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "AgentRun"}, Metadata: api.ObjectMeta{Name: "fork-1"},
		Spec: api.AgentRunSpec{Agent: "agent-a", Input: "hello", MaxCostUSD: "1.00"}, Status: api.AgentRunStatus{Phase: api.PhaseQueued, AgentRevision: 1}}
	if err := h.st.ForkRun(bg, store.Fork{Run: fk, Source: h.run, AtStep: at}); err != nil {
		h.t.Fatalf("ForkRun at %s: %v", at, err)
	}
	files, err := h.st.ListFiles(bg, "fork-1")
	if err != nil {
		h.t.Fatalf("ListFiles: %v", err)
	}
	return files
}

func writeNotes(key string) journal.Spec {
	return journal.Spec{Key: key, Kind: api.StepKindTool, Title: "write notes.txt", Args: map[string]string{"path": "notes.txt"}, Concurrent: true,
		Files: func() ([]store.FileWrite, error) {
			return []store.FileWrite{{Path: "notes.txt", Content: []byte("v1"), Mode: 0o644}}, nil
		}}
}

// A commit that carries a held read and saves files (a rollback's stop step restoring the
// folder) tags the files with its own step, not the read's: a fork at the read has the folder
// as the read saw it.
func TestHeldReadLeavesTheFilesTagToTheStepThatSavedThem(t *testing.T) {
	h := newHarness(t)
	j := h.open(h.lease)
	if _, err := j.Do(bg, writeNotes("t0/tool/0"), func(context.Context) (any, *int64, error) { return "ok", nil, nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Do(bg, heldRead("t1/tool/0"), func(context.Context) (any, *int64, error) { return "v1", nil, nil }); err != nil {
		t.Fatal(err)
	}
	stop := journal.Spec{Key: "t1/stop", Kind: api.StepKindStop, Title: "turn rolled back", Args: map[string]any{"at": "t1/tool/1"},
		Files: func() ([]store.FileWrite, error) { return []store.FileWrite{{Path: "notes.txt", Deleted: true}}, nil }}
	if _, err := j.Record(bg, stop, map[string]string{"at": "t1/tool/1"}); err != nil {
		t.Fatal(err)
	}
	if files := h.forkFolderAt("t1/tool/0"); len(files) != 1 || string(files[0].Content) != "v1" {
		t.Errorf("a fork at the held read has folder %+v, want notes.txt = v1 (the restore came after the read)", files)
	}
}

// Under a gate, a branch's write that completes after a sibling's held read tags its files with
// its own step: a fork at the write has the file it saved.
func TestHeldReadOfASiblingLeavesTheWriteItsFiles(t *testing.T) {
	h := newHarness(t)
	j := h.open(h.lease)
	var mu sync.Mutex
	j.Gate(&mu)
	readDone := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // a write that ends after the sibling's read
		defer wg.Done()
		mu.Lock()
		defer mu.Unlock()
		if _, err := j.Do(bg, writeNotes("wf/a"), func(context.Context) (any, *int64, error) { <-readDone; return "ok", nil, nil }); err != nil {
			t.Error(err)
		}
	}()
	go func() { // a held read, once the write's intent is committed
		defer wg.Done()
		for {
			mu.Lock()
			if _, ok := j.Lookup("wf/a"); ok {
				break
			}
			mu.Unlock()
			time.Sleep(time.Millisecond)
		}
		defer mu.Unlock()
		read := heldRead("wf/b")
		read.Concurrent = true
		if _, err := j.Do(bg, read, func(context.Context) (any, *int64, error) { return "x", nil, nil }); err != nil {
			t.Error(err)
		}
		close(readDone)
	}()
	wg.Wait()
	if files := h.forkFolderAt("wf/a"); len(files) != 1 || string(files[0].Content) != "v1" {
		t.Errorf("a fork at the write has folder %+v, want notes.txt = v1, the file it saved", files)
	}
}
