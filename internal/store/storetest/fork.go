package storetest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// forkSource records on run "src" (the only claimable run): m0 consuming message 1, t0/model,
// t0/tool/0 writing a.txt and b.txt, t0/tool/1 changing a.txt and deleting b.txt, then message
// 2 arriving unconsumed, a t1/model started and never completed, and leaves it parked.
func forkSource(t *testing.T, s store.Store) {
	t.Helper()
	mustCreateRun(t, s, "src")
	m1, _, err := s.AddMessage(bg, "src", "k1", "first message")
	if err != nil {
		t.Fatalf("AddMessage: %v", err)
	}
	l := mustClaim(t, s, newOwner("r"), "src", longTTL)
	msg := startedStep("m0", 1)
	msg.Kind = "message"
	done := msg
	done.State, done.Result, done.CompletedAt = api.StepCompleted, json.RawMessage(js(m1)), ptr(time.Now().UTC())
	mustCommit(t, s, l, store.Write{Steps: []api.Step{msg, done}})
	for _, k := range []string{"t0/model", "t0/tool/0", "t0/tool/1"} {
		mustCommit(t, s, l, store.Write{Steps: []api.Step{startedStep(k, 1)}})
		w := store.Write{Steps: []api.Step{completedStep(k, 1, `{"ok":"`+k+`"}`, 7)}}
		switch k {
		case "t0/tool/0":
			w.Files = []store.FileWrite{{Path: "a.txt", Content: []byte("a as of tool 0"), Mode: 0o644}, {Path: "b.txt", Content: []byte("b"), Mode: 0o600}}
		case "t0/tool/1":
			w.Files = []store.FileWrite{{Path: "a.txt", Content: []byte("a as of tool 1"), Mode: 0o644}, {Path: "b.txt", Deleted: true}}
		}
		mustCommit(t, s, l, w)
	}
	if _, _, err := s.AddMessage(bg, "src", "k2", "second message"); err != nil {
		t.Fatalf("AddMessage: %v", err)
	}
	mustCommit(t, s, l, store.Write{Steps: []api.Step{startedStep("t1/model", 1)}})
	// Ended (so it is never claimable again): a fork may be made of a run in any phase.
	mustCommit(t, s, l, store.Write{Release: true, Status: &api.AgentRunStatus{Phase: api.PhaseCancelled, AgentRevision: 1}})
}

func forkRun(name string) *api.AgentRun {
	r := newRun(name, "agent-a")
	r.Spec.MaxCostUSD = "2.00"
	return r
}

func testForks(t *testing.T, open opener) {
	t.Run("CopiesStepsFolderAndMessagesAsOfTheStep", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		forkSource(t, s)
		before := mustListSteps(t, s, "src")
		beforeFiles, _ := s.ListFiles(bg, "src")
		fk := forkRun("fork-1")
		if err := s.ForkRun(bg, store.Fork{Run: fk, Source: "src", AtStep: "t0/tool/0", Message: "go on differently"}, ev(api.EventRunForked, "forked")); err != nil {
			t.Fatalf("ForkRun: %v", err)
		}
		if fk.Metadata.UID == "" || fk.Metadata.CreationTimestamp == nil {
			t.Errorf("fork metadata = %+v, want uid and creation time set", fk.Metadata)
		}
		steps := mustListSteps(t, s, "fork-1")
		var keys []string
		for i, st := range steps {
			keys = append(keys, st.Key)
			if st.Seq != int64(i+1) || st.CopiedFrom != "src" || st.State != api.StepCompleted || st.CostMicros == nil || *st.CostMicros != 0 {
				t.Errorf("copied step %d = %s, want seq %d, copiedFrom src, Completed, cost 0", i, js(st), i+1)
			}
		}
		if js(keys) != `["m0","t0/model","t0/tool/0"]` {
			t.Fatalf("fork steps = %v, want the completed steps up to t0/tool/0", keys)
		}
		orig := findStep(t, before, "t0/tool/0")
		if got := steps[2]; !sameJSON(got.Result, orig.Result) || !sameJSON(got.Args, orig.Args) || got.ArgsHash != orig.ArgsHash || got.Title != orig.Title {
			t.Errorf("copied t0/tool/0 = %s, want the source's args, hash and result %s", js(got), js(orig))
		}
		files, err := s.ListFiles(bg, "fork-1")
		if err != nil || len(files) != 2 || files[0].Path != "a.txt" || string(files[0].Content) != "a as of tool 0" ||
			files[1].Path != "b.txt" || string(files[1].Content) != "b" || files[1].Mode != 0o600 {
			t.Fatalf("fork folder = %s, %v; want a.txt and b.txt as tool 0 left them", js(files), err)
		}
		msgs, err := s.ListMessages(bg, "fork-1", 0)
		if err != nil || len(msgs) != 2 || msgs[0].Seq != 1 || msgs[0].Payload != "first message" || msgs[0].Key != "k1" ||
			msgs[1].Seq != 2 || msgs[1].Payload != "go on differently" || msgs[1].Key != store.ForkMessageKey("fork-1") {
			t.Fatalf("fork messages = %s, %v; want the consumed message, then the fork's", js(msgs), err)
		}
		evs := mustListEvents(t, s, "fork-1", 0, 0)
		if len(evs) != 1 || evs[0].Type != api.EventRunForked || evs[0].Seq != 1 {
			t.Errorf("fork events = %s, want run.forked first", js(evs))
		}
		got := mustGetRun(t, s, "fork-1")
		if got.Spec.MaxCostUSD != "2.00" || got.Status.Phase != api.PhaseQueued {
			t.Errorf("fork run = %s", js(got))
		}
		// The source is as it was.
		if after := mustListSteps(t, s, "src"); js(after) != js(before) {
			t.Errorf("source steps changed by the fork:\n%s\nwant\n%s", js(after), js(before))
		}
		if after, _ := s.ListFiles(bg, "src"); len(after) != len(beforeFiles) || string(after[0].Content) != "a as of tool 1" {
			t.Errorf("source folder changed by the fork: %s", js(after))
		}
		// The fork is claimable, its journal continues after the copied steps, and its next
		// message is its own.
		l := mustClaim(t, s, newOwner("r"), "fork-1", longTTL)
		mustCommit(t, s, l, store.Write{Steps: []api.Step{startedStep("t1/model", 1)}})
		if st := mustListSteps(t, s, "fork-1"); len(st) != 4 || st[3].Seq != 4 || st[3].CopiedFrom != "" {
			t.Errorf("fork's own step = %s, want seq 4, not copied", js(st[len(st)-1]))
		}
		m, _, err := s.AddMessage(bg, "fork-1", "", "later")
		if err != nil || m.Seq != 3 {
			t.Errorf("fork's next message = %+v, %v; want seq 3", m, err)
		}
	})
	t.Run("ALaterStepAndAForkOfAFork", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		forkSource(t, s)
		if err := s.ForkRun(bg, store.Fork{Run: forkRun("fork-2"), Source: "src", AtStep: "t0/tool/1"}); err != nil {
			t.Fatalf("ForkRun: %v", err)
		}
		files, _ := s.ListFiles(bg, "fork-2")
		if len(files) != 1 || files[0].Path != "a.txt" || string(files[0].Content) != "a as of tool 1" {
			t.Fatalf("fork at t0/tool/1 folder = %s, want a.txt as tool 1 left it and b.txt deleted", js(files))
		}
		if msgs, _ := s.ListMessages(bg, "fork-2", 0); len(msgs) != 1 {
			t.Errorf("fork messages = %s, want only the consumed one (message 2 came after)", js(msgs))
		}
		// A fork of the fork finds the folder as of its copied steps.
		if err := s.ForkRun(bg, store.Fork{Run: forkRun("fork-3"), Source: "fork-2", AtStep: "t0/tool/0"}); err != nil {
			t.Fatalf("ForkRun of a fork: %v", err)
		}
		files, _ = s.ListFiles(bg, "fork-3")
		if len(files) != 2 || string(files[0].Content) != "a as of tool 0" {
			t.Fatalf("fork of the fork folder = %s, want the folder as of t0/tool/0", js(files))
		}
		if st := mustListSteps(t, s, "fork-3"); len(st) != 3 || st[2].CopiedFrom != "fork-2" {
			t.Errorf("fork of the fork steps = %s", js(st))
		}
	})
	t.Run("AForkOfAForkWithMessages", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		forkSource(t, s)
		// A fork made with a message, which its run took: a fork of it copies that message and
		// takes its own after it.
		if err := s.ForkRun(bg, store.Fork{Run: forkRun("fork-4"), Source: "src", AtStep: "t0/tool/1", Message: "first fork's"}); err != nil {
			t.Fatalf("ForkRun: %v", err)
		}
		l := mustClaim(t, s, newOwner("r"), "fork-4", longTTL)
		fm := startedStep("t1/message", 1)
		fm.Kind = "message"
		fmDone := fm
		m4, _ := s.ListMessages(bg, "fork-4", 1)
		fmDone.State, fmDone.Result, fmDone.CompletedAt = api.StepCompleted, json.RawMessage(js(m4[0])), ptr(time.Now().UTC())
		mustCommit(t, s, l, store.Write{Steps: []api.Step{fm, fmDone}})
		if err := s.ForkRun(bg, store.Fork{Run: forkRun("fork-5"), Source: "fork-4", AtStep: "t1/message", Message: "second fork's"}); err != nil {
			t.Fatalf("ForkRun of a fork that took its message, with a message: %v", err)
		}
		msgs, _ := s.ListMessages(bg, "fork-5", 0)
		if len(msgs) != 3 || msgs[1].Key != store.ForkMessageKey("fork-4") || msgs[2].Key != store.ForkMessageKey("fork-5") || msgs[2].Payload != "second fork's" {
			t.Errorf("fork of a fork messages = %s", js(msgs))
		}
	})
	// A step started and ended in one write with files (a turn's rollback stop restoring the
	// folder) tags them with its own number: a fork as of the step before has the folder before.
	t.Run("FilesOfAStepStartedInTheSameWrite", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "src")
		l := mustClaim(t, s, newOwner("r"), "src", longTTL)
		mustCommit(t, s, l, store.Write{Steps: []api.Step{startedStep("t0/tool/0", 1)}})
		mustCommit(t, s, l, store.Write{Steps: []api.Step{completedStep("t0/tool/0", 1, `"wrote"`, 0)},
			Files: []store.FileWrite{{Path: "a.txt", Content: []byte("written by tool 0"), Mode: 0o644}}})
		// Two steps inserted, the last of which ends with the folder restored.
		mustCommit(t, s, l, store.Write{Steps: []api.Step{
			startedStep("t0/read", 1), completedStep("t0/read", 1, `"read"`, 0),
			startedStep("t0/stop", 1), completedStep("t0/stop", 1, `"rolled back"`, 0),
		}, Files: []store.FileWrite{{Path: "a.txt", Deleted: true}}})
		mustCommit(t, s, l, store.Write{Release: true, Status: &api.AgentRunStatus{Phase: api.PhaseCancelled, AgentRevision: 1}})
		for _, c := range []struct {
			at   string
			want string
		}{{"t0/tool/0", "written by tool 0"}, {"t0/read", "written by tool 0"}, {"t0/stop", ""}} {
			fk := forkRun("fork-" + strings.ReplaceAll(c.at, "/", "-"))
			if err := s.ForkRun(bg, store.Fork{Run: fk, Source: "src", AtStep: c.at}, ev(api.EventRunForked, "forked")); err != nil {
				t.Fatalf("ForkRun at %s: %v", c.at, err)
			}
			files, err := s.ListFiles(bg, fk.Metadata.Name)
			got := ""
			if len(files) == 1 {
				got = string(files[0].Content)
			}
			if err != nil || len(files) > 1 || got != c.want {
				t.Errorf("fork at %s: folder %s, %v; want a.txt %q (empty: none)", c.at, js(files), err, c.want)
			}
		}
	})

	t.Run("Refusals", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		forkSource(t, s)
		code := func(err error) api.Code {
			if re, ok := store.AsRuleError(err); ok {
				return re.Code
			}
			return ""
		}
		err := s.ForkRun(bg, store.Fork{Run: forkRun("f1"), Source: "src", AtStep: "t1/model"})
		if code(err) != api.CodeStepNotCompleted {
			t.Errorf("fork at a started step = %v, want StepNotCompleted", err)
		}
		err = s.ForkRun(bg, store.Fork{Run: forkRun("f2"), Source: "src", AtStep: "t9/tool/0"})
		if code(err) != api.CodeStepNotFound {
			t.Errorf("fork at an unknown step = %v, want StepNotFound", err)
		}
		err = s.ForkRun(bg, store.Fork{Run: forkRun("f3"), Source: "nope", AtStep: "t0/model"})
		mustErr(t, "fork of a missing run", err, store.ErrNotFound)
		err = s.ForkRun(bg, store.Fork{Run: forkRun("src"), Source: "src", AtStep: "t0/model"})
		mustErr(t, "fork named as an existing run", err, store.ErrAlreadyExists)
		for _, n := range []string{"f1", "f2", "f3"} {
			if _, err := s.GetRun(bg, n); !errIs(err, store.ErrNotFound) {
				t.Errorf("refused fork %s was stored: %v", n, err)
			}
		}
		// A run whose payloads retention purged cannot be forked.
		mustCreateRun(t, s, "old")
		start := time.Now().UTC()
		recordRun(t, s, "old", api.PhaseSucceeded, start)
		now := start.Add(store.DefaultRetention + 24*time.Hour)
		if _, err := s.PurgePayloads(bg, now.Add(-store.DefaultRetention), now, 10); err != nil {
			t.Fatalf("PurgePayloads: %v", err)
		}
		err = s.ForkRun(bg, store.Fork{Run: forkRun("f4"), Source: "old", AtStep: "t1/model"})
		if code(err) != api.CodeRunPurged {
			t.Errorf("fork of a purged run = %v, want RunPurged", err)
		}
	})
	t.Run("ParkedFolderSaveCounts", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustCreateRun(t, s, "p")
		l := mustClaim(t, s, newOwner("r"), "p", longTTL)
		mustCommit(t, s, l, store.Write{Steps: []api.Step{startedStep("t0/tool/0", 1)}})
		// Parked to be resolved: the folder as the interrupted step left it, with no step.
		mustCommit(t, s, l, store.Write{Files: []store.FileWrite{{Path: "half.txt", Content: []byte("half"), Mode: 0o644}}})
		mustCommit(t, s, l, store.Write{Steps: []api.Step{completedStep("t0/tool/0", 2, `{"skipped":true}`, 0)}})
		mustCommit(t, s, l, store.Write{Steps: []api.Step{startedStep("t1/model", 1)}})
		mustCommit(t, s, l, store.Write{Steps: []api.Step{completedStep("t1/model", 1, `{}`, 3)}})
		if err := s.ForkRun(bg, store.Fork{Run: forkRun("pf"), Source: "p", AtStep: "t1/model"}); err != nil {
			t.Fatalf("ForkRun: %v", err)
		}
		if files, _ := s.ListFiles(bg, "pf"); len(files) != 1 || string(files[0].Content) != "half" {
			t.Errorf("fork folder = %s, want the file the interrupted step left", js(files))
		}
	})
	t.Run("DeleteRunDropsTheHistory", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		forkSource(t, s)
		if err := s.DeleteRun(bg, "src"); err != nil {
			t.Fatalf("DeleteRun: %v", err)
		}
		// A new run of the same name has no history of the old one.
		mustCreateRun(t, s, "src")
		l := mustClaim(t, s, newOwner("r"), "src", longTTL)
		mustCommit(t, s, l, store.Write{Steps: []api.Step{startedStep("t0/model", 1)}})
		mustCommit(t, s, l, store.Write{Steps: []api.Step{completedStep("t0/model", 1, `{}`, 1)}})
		if err := s.ForkRun(bg, store.Fork{Run: forkRun("f"), Source: "src", AtStep: "t0/model"}); err != nil {
			t.Fatalf("ForkRun: %v", err)
		}
		if files, _ := s.ListFiles(bg, "f"); len(files) != 0 {
			t.Errorf("fork of a new run of a deleted one's name has files %s", js(files))
		}
	})
}
