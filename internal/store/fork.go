package store

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync/atomic"

	"agentrun.dev/agentrun/internal/api"
)

// Forks makes a run that goes on from one step of another (docs/crash-safety.md, "Fork a run
// from a step").
type Forks interface {
	// ForkRun creates f.Run (a new run, as CreateRun does, with first as its first events) whose
	// journal is the source's steps PlanFork keeps, marked CopiedFrom the source and renumbered
	// from 1, whose run folder is the source's as those steps saved it (FileHistory), with the
	// messages those steps consumed, then f.Message as its next message when set, all in one
	// transaction: a crash leaves the fork whole or absent. The source is not changed. It returns
	// the *RuleError PlanFork refuses with, ErrNotFound if the source does not exist, and
	// ErrAlreadyExists if the fork's name is taken.
	ForkRun(ctx context.Context, f Fork, first ...api.Event) error
}

// Fork is what ForkRun makes: the run (spec and status filled by the caller), its source and the
// step it forks at, and an optional first message.
type Fork struct {
	Run     *api.AgentRun
	Source  string
	AtStep  string
	Message string
}

// ForkMessageKey is the message key of fork run's own message (its --message): one no copied
// message has (a fork of a fork copies its source's), so the run can tell it at the fork point.
func ForkMessageKey(run string) string { return "fork:" + run }

// ForkPlan is what a fork copies of its source, decided by PlanFork.
type ForkPlan struct {
	// Steps are the copied steps, in order, renumbered 1..n and marked CopiedFrom, with no cost.
	Steps []api.Step
	// At is the source's seq of the step forked at: the folder is what the saves tagged with a
	// step seq up to it left (FileHistory).
	At int64
	// LastMessage is the highest message seq the copied steps consumed: the source's messages up
	// to it are copied (seq kept), and the fork's own come after.
	LastMessage int64
	// Origins are the source's seqs of the copied steps, in order.
	Origins []int64
}

// PlanFork is ForkRun's rule, run on what the backend read in its transaction: the source's
// status and steps (in seq order) and the key forked at. It refuses a source whose payloads were
// purged (RunPurged), a key the source has no step for (StepNotFound), and a step that is not
// completed (StepNotCompleted). It keeps every completed step numbered at or below the step (a
// workflow's concurrent branches may have completed steps numbered before it after it; they and
// the files they saved are kept together, so the fork's journal and folder agree).
func PlanFork(source string, st api.AgentRunStatus, steps []api.Step, at string) (ForkPlan, error) {
	if st.PayloadsPurgedAt != nil {
		return ForkPlan{}, refuse(RefusedState, api.CodeRunPurged, "", "run %s had its recorded payloads purged by retention at %s: it cannot be forked", source, st.PayloadsPurgedAt.Format("2006-01-02T15:04:05Z07:00"))
	}
	var target *api.Step
	for i := range steps {
		if steps[i].Key == at {
			target = &steps[i]
			break
		}
	}
	if target == nil {
		return ForkPlan{}, refuse(RefusedMissing, api.CodeStepNotFound, "atStep", "run %s has no step %q (see `agentrun runs steps %s`)", source, at, source)
	}
	if target.State != api.StepCompleted {
		return ForkPlan{}, refuse(RefusedState, api.CodeStepNotCompleted, "atStep", "step %s of run %s is %s, not Completed: a fork starts after a completed step", at, source, target.State)
	}
	p := ForkPlan{At: target.Seq}
	for _, s := range steps {
		if s.Seq > target.Seq || s.State != api.StepCompleted {
			continue
		}
		p.Origins = append(p.Origins, s.Seq)
		if s.Kind == api.StepKindMessage || s.Kind == api.StepKindQuestion {
			var m api.Message
			if json.Unmarshal(s.Result, &m) == nil && m.Seq > p.LastMessage {
				p.LastMessage = m.Seq
			}
		}
		cp := s
		cp.Seq = int64(len(p.Steps) + 1)
		cp.CopiedFrom = source
		zero := int64(0)
		cp.CostMicros = &zero
		p.Steps = append(p.Steps, cp)
	}
	return p, nil
}

// NewTag maps a save's tag (a source step seq, at most At) to the fork's numbering: how many
// copied steps the source numbered at or below it, so a fork of the fork finds the same folder.
func (p ForkPlan) NewTag(tag int64) int64 {
	var n int64
	for _, o := range p.Origins {
		if o <= tag {
			n++
		}
	}
	return n
}

// HistoryStep is the step whose seq tags a write's files in the folder's history: the step the
// write completes (or ends), or "" for a save with none (a run parking to be resolved saves what
// its interrupted step left), which is tagged with the run's highest step seq instead. It is the
// last step ended: the records of reads held for this write (journal Spec.Held) come before the
// step whose files these are.
func (w Write) HistoryStep() string {
	for i := len(w.Steps) - 1; i >= 0; i-- {
		if w.Steps[i].State != api.StepStarted {
			return w.Steps[i].Key
		}
	}
	return ""
}

// FileVersion is one saved change of a run folder in its history: the folder as of step seq S
// is, for each path, the last version (by Version, the order of saves) tagged at or below S,
// unless that one is a deletion.
type FileVersion struct {
	Version int64
	Tag     int64
	FileWrite
}

// FolderAt is the folder the history's versions (in Version order) leave at or below tag.
func FolderAt(history []FileVersion, tag int64) []FileWrite {
	last := map[string]FileWrite{}
	var order []string
	for _, v := range history {
		if v.Tag > tag {
			continue
		}
		if _, ok := last[v.Path]; !ok {
			order = append(order, v.Path)
		}
		last[v.Path] = v.FileWrite
	}
	var out []FileWrite
	for _, p := range order {
		if f := last[p]; !f.Deleted {
			out = append(out, f)
		}
	}
	return out
}

// devForkPause is a test hook (the binary's dev flag only): ForkRun stops inside its
// transaction, everything written and nothing committed, so a test can SIGKILL it there.
var devForkPause atomic.Bool

// SetDevForkPause turns the fork pause point on or off (AGENTRUN_DEV_PAUSE_AT=in-fork).
func SetDevForkPause(on bool) { devForkPause.Store(on) }

// DevForkPause is called by a backend inside ForkRun's transaction, before it commits.
func DevForkPause(source string) {
	if !devForkPause.Load() {
		return
	}
	fmt.Fprintf(os.Stderr, "AGENTRUN_DEV_PAUSED in-fork %s\n", source)
	select {} // until the test kills the process
}
