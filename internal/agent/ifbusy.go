package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/runfolder"
	"agentrun.dev/agentrun/internal/store"
)

// A message with ifBusy interrupt or rollback stops the built-in loop's turn in flight
// (docs/api.md, "A message to a busy run"). The loop has checkpoints before each model call and
// each tool call; at one the journal does not yet hold, a steering message not yet handled stops
// the turn, and a model call in flight is cancelled (Steer) and recorded Interrupted. The stop is
// itself a journal step, t{n}/stop (api.TurnStop), so a replay stops at the same checkpoint and
// rebuilds the same conversation: the stop is taken once, whatever crashes around it.

// errSteered is the cause a model call in flight is cancelled with when a message stops its turn.
var errSteered = errors.New("a message stopped the turn")

// steering is one drive's view of messages that stop its turn.
type steering struct {
	// check: a steering message may be waiting; the next live checkpoint asks the store.
	check atomic.Bool
	// floor is the highest message seq consumed or handled: a poke for one at or below it is stale.
	floor atomic.Int64
	// handled is the highest seq a stop step handled (the drive's goroutine only).
	handled int64

	mu sync.Mutex
	// cancel stops the model call in flight that a steering message may stop (nil: none).
	cancel context.CancelCauseFunc
	// in, out are the tokens the last stopped call's stream had reported (streamed).
	in, out int64
}

// streamed keeps the tokens a stopped call's stream had reported, for its stop step.
func (s *steering) streamed(in, out int64) {
	s.mu.Lock()
	s.in, s.out = in, out
	s.mu.Unlock()
}

// takeStreamed is what streamed kept, cleared.
func (s *steering) takeStreamed() (in, out int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, out, s.in, s.out = s.in, s.out, 0, 0
	return in, out
}

// poke is a steering message seq arriving: the next checkpoint looks, and a model call in flight
// is stopped unless the message was already consumed or handled.
func (s *steering) poke(seq int64) {
	s.check.Store(true)
	if seq <= s.floor.Load() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancel != nil {
		s.cancel(errSteered)
	}
}

// seen raises the floor to seq.
func (s *steering) seen(seq int64) {
	for {
		cur := s.floor.Load()
		if seq <= cur || s.floor.CompareAndSwap(cur, seq) {
			return
		}
	}
}

// steerable is ctx for a model call a steering message may cancel, and its release.
func (s *steering) steerable(ctx context.Context) (context.Context, func()) {
	cctx, cancel := context.WithCancelCause(ctx)
	s.mu.Lock()
	s.cancel = cancel
	s.mu.Unlock()
	return cctx, func() {
		s.mu.Lock()
		s.cancel = nil
		s.mu.Unlock()
		cancel(nil)
	}
}

// Steer tells the drive of run on this runner (if any) that message seq asks to stop its turn in
// flight: the runner calls it when it finds one in the store, the server in this process at once.
func (e *Engine) Steer(run string, seq int64) {
	e.mu.Lock()
	d := e.driving[run]
	e.mu.Unlock()
	if d != nil {
		d.steer.poke(seq)
	}
}

type steerableKey struct{}

// withSteerable marks ctx so that the model call made under it can be stopped by a message.
func withSteerable(ctx context.Context) context.Context {
	return context.WithValue(ctx, steerableKey{}, true)
}

// steerCall runs call under a context a steering message cancels when ctx is marked
// (withSteerable), and turns that cancellation into journal.ErrStopped.
func (d *drive) steerCall(ctx context.Context, call func(context.Context) (*model.Response, error)) (*model.Response, error) {
	if ctx.Value(steerableKey{}) == nil {
		return call(ctx)
	}
	cctx, release := d.steer.steerable(ctx)
	defer release()
	resp, err := call(cctx)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(cctx), errSteered) {
		return nil, fmt.Errorf("%w (ifBusy: the model call was cancelled)", journal.ErrStopped)
	}
	return resp, err
}

// pendingSteer is the first message not yet consumed that asks to stop the turn and no stop
// step handled, when the store may hold one (nil: none).
func (d *drive) pendingSteer(ctx context.Context) (*api.Message, error) {
	if !d.steer.check.Swap(false) {
		return nil, nil
	}
	msgs, err := d.e.Store.ListMessages(ctx, d.run.Metadata.Name, d.lastMsg)
	if err != nil {
		d.steer.check.Store(true)
		return nil, err
	}
	for _, m := range msgs {
		if m.IfBusy.Steers() && m.Seq > d.steer.handled {
			d.steer.check.Store(true) // until a stop step handles it
			return &m, nil
		}
	}
	return nil, nil
}

// stopAt is the checkpoint before step key of model call n: the stop the journal recorded there
// (replay), or, when live (the journal does not hold the step's outcome), the stop a steering
// message asks for now. nil: go on. fresh reports a stop not yet recorded.
func (d *drive) stopAt(ctx context.Context, n int, key string, live bool) (ts *api.TurnStop, fresh bool, err error) {
	if st, ok := d.j.Lookup(stopKey(n)); ok && st.State == api.StepCompleted {
		var rec api.TurnStop
		if err := json.Unmarshal(st.Result, &rec); err != nil {
			return nil, false, fmt.Errorf("replay %s: %w", stopKey(n), err)
		}
		if rec.At == key {
			return &rec, false, nil
		}
		return nil, false, nil
	}
	if !live {
		return nil, false, nil
	}
	m, err := d.pendingSteer(ctx)
	if m == nil || err != nil {
		return nil, false, err
	}
	return &api.TurnStop{Mode: m.IfBusy, Seq: m.Seq, At: key}, true, nil
}

func stopKey(n int) string { return fmt.Sprintf("t%d/stop", n) }

// turnKey matches the keys of the built-in loop's turn steps (a message, a routing, model or tool
// call, an approval), which a rollback marks; a computer or MCP start is not the turn's.
var turnKey = regexp.MustCompile(`^(m\d+|t\d+/.+)$`)

// stopTurn takes stop ts at model call n (recording it when fresh): a rollback takes the
// conversation back to the turn's start and restores the run folder as the turn found it, and
// the next message (the steering one, after any queued before it) starts the next turn. The
// caller has already answered the tool calls the turn will not run.
func (d *drive) stopTurn(ctx context.Context, n int, c *conversation, ts *api.TurnStop, fresh bool) error {
	if fresh {
		spec := journal.Spec{Key: stopKey(n), Kind: api.StepKindStop, Args: map[string]any{"at": ts.At, "seq": ts.Seq}}
		data := map[string]any{"seq": ts.Seq, "at": ts.At}
		if ts.Mode == api.IfBusyRollback {
			ts.RolledBack = d.turnSteps(c.turnKey)
			restored, err := d.restoreTurnFolder(d.turnPreImages(c.turnKey))
			if err != nil {
				return err
			}
			spec.Files = d.folderChanges
			spec.Title = fmt.Sprintf("turn rolled back at %s by message %d", ts.At, ts.Seq)
			data["rolledBack"], data["restoredFiles"] = ts.RolledBack, restored
			d.j.Emit(api.Event{Type: api.EventTurnRolledBack, StepKey: ts.At, Data: mustRaw(data),
				Message: fmt.Sprintf("message %d rolled the turn back at %s: %d steps discarded, %d files of the run folder restored", ts.Seq, ts.At, len(ts.RolledBack), restored)})
		} else {
			spec.Title = fmt.Sprintf("turn interrupted at %s by message %d", ts.At, ts.Seq)
			d.j.Emit(api.Event{Type: api.EventRunInterrupted, StepKey: ts.At, Data: mustRaw(data),
				Message: fmt.Sprintf("message %d interrupted the turn at %s; it starts the next turn", ts.Seq, ts.At)})
		}
		if _, err := d.j.Record(ctx, spec, ts); err != nil {
			return err
		}
	}
	if err := d.accountStopped(ctx, n, c, ts); err != nil {
		return err
	}
	d.steer.handled = max(d.steer.handled, ts.Seq)
	d.steer.seen(ts.Seq)
	if ts.Mode == api.IfBusyRollback {
		c.messages = c.messages[:c.turnStart]
	}
	next, err := d.nextMessage(ctx, c.msgN, "waiting for the message that stopped the turn")
	if err != nil {
		return err
	}
	c.startTurn(d, fmt.Sprintf("m%d", c.msgN))
	c.msgN++
	c.messages = append(c.messages, userText(next))
	c.prompt, c.cur = next, nil
	return nil
}

// startTurn marks the start of a prompt's turn: what a rollback goes back to, and from which
// step (key, "" for the run's input) its steps are the turn's.
func (c *conversation) startTurn(d *drive, key string) {
	c.turnStart, c.turnKey = len(c.messages), key
	d.turnPre = nil
	if !d.onHarness() {
		d.turnPre = map[string]*store.File{} // a harness's turn is not rolled back
	}
}

// turnSteps are the keys of the current turn's steps in the journal, from its first: the step
// first (its message; "" for the run's input, whose turn starts the journal) on.
func (d *drive) turnSteps(first string) []string {
	keys := d.j.Keys()
	from := 0
	if first != "" {
		from = len(keys)
		for i, k := range keys {
			if k == first {
				from = i
				break
			}
		}
	}
	var out []string
	for _, k := range keys[from:] {
		if turnKey.MatchString(k) {
			out = append(out, k)
		}
	}
	return out
}

// preImage is what the store held of a path before the current turn first changed it.
type preImage struct {
	Path    string `json:"path"`
	Absent  bool   `json:"absent,omitempty"`
	Content []byte `json:"content,omitempty"`
	Mode    uint32 `json:"mode,omitempty"`
}

// notePre keeps, for a rollback, what the store held of each path a step of the current turn
// changes, before the first change (Absent: the file did not exist). It is called with step key's
// folder changes before they are saved. For an agent with spec.ifBusy rollback it records them
// as the step KEY/pre (kind turn.pre), so a rollback after a restart, a takeover or a park in the
// same turn finds them too; otherwise only this drive keeps them.
func (d *drive) notePre(key string, writes []store.FileWrite) error {
	if d.turnPre == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var fresh []preImage
	for _, w := range writes {
		if _, ok := d.turnPre[w.Path]; ok {
			continue
		}
		f, err := d.e.Store.GetFile(ctx, d.run.Metadata.Name, w.Path)
		switch {
		case errors.Is(err, store.ErrNotFound):
			d.turnPre[w.Path] = nil
			fresh = append(fresh, preImage{Path: w.Path, Absent: true})
		case err != nil:
			return fmt.Errorf("keep %s for a rollback: %w", w.Path, err)
		default:
			d.turnPre[w.Path] = &f
			fresh = append(fresh, preImage{Path: w.Path, Content: f.Content, Mode: f.Mode})
		}
	}
	if len(fresh) == 0 || key == "" || d.spec.IfBusy != api.IfBusyRollback {
		// Kept by this drive only: the journal keeps them for agents whose messages roll back by
		// default, so other runs' journals carry no copy of every file they change.
		return nil
	}
	paths := make([]string, len(fresh))
	for i, p := range fresh {
		paths[i] = p.Path
	}
	_, err := d.j.Record(ctx, journal.Spec{Key: key + "/pre", Kind: api.StepKindTurnPre, Title: fmt.Sprintf("files before %s (kept for a rollback)", key), Args: map[string]any{"paths": paths}}, fresh)
	return err
}

// turnPreImages are the pre-images the current turn's steps recorded (KEY/pre), the first for
// each path, with this drive's own for paths none recorded.
func (d *drive) turnPreImages(first string) map[string]*store.File {
	out := map[string]*store.File{}
	for _, k := range d.turnSteps(first) {
		st, ok := d.j.Lookup(k)
		if !ok || st.Kind != api.StepKindTurnPre || st.State != api.StepCompleted {
			continue
		}
		var pres []preImage
		if json.Unmarshal(st.Result, &pres) != nil {
			continue
		}
		for _, p := range pres {
			if _, seen := out[p.Path]; seen {
				continue
			}
			if p.Absent {
				out[p.Path] = nil
			} else {
				out[p.Path] = &store.File{Path: p.Path, Content: p.Content, Mode: p.Mode}
			}
		}
	}
	for p, f := range d.turnPre {
		if _, seen := out[p]; !seen {
			out[p] = f
		}
	}
	return out
}

// restoreTurnFolder puts back on disk what the current turn changed (pre, turnPreImages) and
// returns how many files it restored; the caller saves the folder's changes with the stop step.
func (d *drive) restoreTurnFolder(pre map[string]*store.File) (int, error) {
	d.turnPre = nil // the restore's own changes are not the turn's
	if len(pre) == 0 {
		return 0, nil
	}
	root, err := runfolder.Open(d.folder)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	for p, f := range pre {
		if f == nil {
			err = root.Remove(p)
		} else {
			err = root.WriteFile(p, f.Content, fs.FileMode(f.Mode)&fs.ModePerm)
		}
		if err != nil {
			return 0, fmt.Errorf("rollback: restore %s: %w", p, err)
		}
	}
	return len(pre), nil
}

// notRun answers the tool calls a stopped turn does not run.
func notRun(calls []model.Block, ts *api.TurnStop) []model.Block {
	out := make([]model.Block, 0, len(calls))
	for _, call := range calls {
		out = append(out, model.Block{Type: model.BlockToolResult, ToolUseID: call.ID, IsError: true,
			Content: fmt.Sprintf("not run: a new message (%d) interrupted the turn before this call", ts.Seq)})
	}
	return out
}

// accountStopped counts the model call a message stopped at model call n, when it was in flight
// (its step t{n}/model Interrupted): a call of unknown cost, never $0, since the vendor may have
// billed what it streamed; the tokens its stream had reported are on the stop step. Done at the
// stop, live or replayed, so a restarted drive counts the call as the first did.
func (d *drive) accountStopped(ctx context.Context, n int, c *conversation, ts *api.TurnStop) error {
	st, ok := d.j.Lookup(fmt.Sprintf("t%d/model", n))
	if !ok || st.State != api.StepInterrupted {
		return nil
	}
	if c.cur == nil {
		// A replay stops before the turn's model is chosen; the live drive had chosen it (the
		// journal holds the choice).
		cur, err := d.chooseModel(ctx, n, c.prompt)
		if err != nil {
			return err
		}
		c.cur = cur
	}
	d.accountTurn(c.cur.index, &d.turnCost, stoppedResult(ts), nil)
	return nil
}

// stoppedResult is a stopped call's usage as its stop recorded it.
func stoppedResult(ts *api.TurnStop) modelResult {
	var mr modelResult
	mr.Response.Usage.InputTokens, mr.Response.Usage.OutputTokens = ts.InputTokens, ts.OutputTokens
	return mr
}
