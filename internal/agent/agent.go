// Package agent is the built-in agent loop (harness "builtin"): a model turn, the tool calls it
// asks for, and again, until the model answers without tools. Every model call, tool call, message
// received and question answered is a journal step, so a drive that restarts replays the
// conversation from recorded results and continues where the last one stopped. The loop parks the
// run (releasing its lease) whenever it waits on someone: a message, an answer, a resolution.
//
// It is more than the built-in loop: Engine is the runner's Driver for every run, so this package
// also hosts external harnesses (harness.go, harness_call.go: their model calls through
// internal/gateway, their tools over MCP) and workflows (workflow.go: the engine's effects as
// journal steps), and owns what all three share: the tool path (catalog, policy, journal,
// computer), the cap guard and credits (money.go), the run's computer and its folder
// (docs/architecture.md, "A run's life", "Tool calls").
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/catalog"
	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/livetext"
	"agentrun.dev/agentrun/internal/metrics"
	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/runfolder"
	"agentrun.dev/agentrun/internal/secret"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/tools"
	"agentrun.dev/agentrun/internal/tools/webfetch"
)

// Engine drives runs with the built-in loop.
type Engine struct {
	Store store.Store
	// LiveText, when set, carries the model's text to the run page while each call streams
	// (livetext.go); nothing depends on it.
	LiveText *livetext.Hub
	Models   *model.Config
	// DataDir holds run folders at DataDir/runs/NAME.
	DataDir string
	// ConsoleURL is the server's base URL, for status.consoleURL.
	ConsoleURL string
	Log        *slog.Logger
	// RunnerName is recorded in status.runner.
	RunnerName string
	// ServerDeny is the server's deny set: tool patterns refused for every agent.
	ServerDeny []string
	// Computers are the computer providers this runner can use.
	Computers *computer.Registry

	mu sync.Mutex
	// live keeps runs' computers between drives while they wait (see endDrive, Reap).
	live *computer.Live
	// driving are the runs being driven now, each by its drive: a run parked by one drive may be
	// claimed again and driven by the next before the first has finished ending (endDrive).
	driving map[string]*drive
	// Prices is the price table (nil: the embedded one).
	Prices *cost.Table
	// Router is the routing strategy, RouterModel (default) or RouterRules.
	Router string
	// Secrets opens the sealed secrets BYOK runs name (nil: BYOK runs fail).
	Secrets Secrets
	// Fetch makes web_fetch's requests (nil: public addresses only).
	Fetch *webfetch.Fetcher
	// gw is the gateway external harnesses call (harness.go).
	gw harnessGateway
	// wfs are the workflows earlier drives validated (wfcache.go).
	wfs wfCache
}

// RunFolder is where a run's files live.
func RunFolder(dataDir, run string) string { return runfolder.Path(dataDir, run) }

// park is returned inside a drive when the run has parked itself (status written, lease released).
var errParked = errors.New("run parked")

// drive is one claim's worth of work on one run.
type drive struct {
	e *Engine
	// live redacts the model's live text (livetext.go).
	live   liveRedaction
	j      *journal.Journal
	run    *api.AgentRun
	spec   *api.AgentSpec
	status api.AgentRunStatus
	folder string
	// nodeHomes are the free workflow agent node harness homes of the run's computer
	// (takeNodeHome), made once.
	nodeHomes     chan int
	nodeHomesOnce sync.Once
	// lastMsg is the seq of the last message consumed (from replayed steps).
	lastMsg int64
	// saved indexes the run folder as the store has it.
	saved folderIndex
	// turnText is the model's text in the current turn (an approval shows it as the reason).
	turnText string
	// comp is the run's computer, created when a tool first needs it in this drive.
	comp computer.Computer
	// parked is set when the drive ended by parking the run (waiting on someone).
	parked bool
	log    *slog.Logger
	// acc is how the run reaches its model; spent what it cost so far; turnCost the current turn's.
	acc      *access
	spent    spend
	turnCost cost.Total
	// reserved is each model call's worst case checked by guard in this drive: its most charge.
	reserved map[string]reservation
	resMu    sync.Mutex // reserved is read by effects that run outside a workflow's drive lock
	// settled is closed (and replaced) whenever a reservation settles: a call held back by its
	// siblings' worst cases (guard) looks again then.
	settled chan struct{}
	// promptTools counts the tool calls of the current turn (spec.maxToolCalls bounds them).
	promptTools int
	// holdReads is set while the built-in loop runs a turn's tool calls (toolCalls): what runs
	// next is the next model call, whose intent commit carries the reads' records
	// (journal.Spec.Held). A harness's or a workflow's tool call (a learned workflow's too, run
	// as one of these calls: inWorkflow) is followed by whatever its caller does next, so its
	// reads commit their own.
	holdReads bool
	// skills are the agent revision's skills by name (loadSkills).
	skills map[string]*api.Skill
	// learn is a learning agent's folder as the run started from it (loadLearning).
	learn *learnState
	// mcp are the agent's MCP servers and their ticked tools (startMCP).
	mcp *mcpState
	// offered are the tools the run is offered (a learned workflow's agent nodes get them too);
	// inWorkflow is set while a learned workflow runs as a tool call (one does not call another).
	offered    []model.ToolDef
	inWorkflow bool
	// tools encodes the built-in loop's tool list once for all its model calls (model.Tools).
	tools *model.Tools
	// forkChecked is set once a fork looked for its message at the fork point (fork.go).
	forkChecked bool
	// secretDetector finds the secrets the drive opened (its own model key) in content it puts on
	// a span (redact).
	secretDetector *secret.Detector
	// steer is how messages that stop a turn reach the built-in loop (ifbusy.go); turnPre is what
	// the store held of each file the current turn changed, for a rollback (nil: not kept).
	steer   steering
	turnPre map[string]*store.File
}

// Drive runs one claimed run until it finishes, parks, or ctx ends (lease lost, runner stopping,
// cancellation). It returns nil when the run finished or parked.
func (e *Engine) Drive(ctx context.Context, lease store.Lease) (err error) {
	run, err := e.Store.GetRun(ctx, lease.Run)
	if err != nil {
		return fmt.Errorf("drive %s: %w", lease.Run, err)
	}
	j, err := journal.Open(ctx, e.Store, lease)
	if err != nil {
		return err
	}
	d := &drive{e: e, j: j, run: run, status: run.Status, folder: RunFolder(e.DataDir, run.Metadata.Name),
		log: e.Log.With("run", run.Metadata.Name, "generation", lease.Generation)}
	d.steer.check.Store(true) // a message that stops the turn may have come before this drive
	e.mu.Lock()
	if e.driving == nil {
		e.driving = map[string]*drive{}
	}
	e.driving[run.Metadata.Name] = d
	e.mu.Unlock()
	defer d.endDrive()
	// No write of this drive lands after it ends (a step's end sent ahead: journal.Spec.Ahead),
	// for the runner may claim the run again at once; and it lands before the drive's MCP
	// servers and computer go (endDrive).
	defer func() {
		if serr := j.Settle(ctx); serr != nil && err == nil {
			err = serr
		}
	}()
	if api.Finished(d.status.Phase) {
		_, err := j.Commit(ctx, nil, true, nil)
		return err
	}
	ctx, span := d.startDriveSpan(ctx)
	defer func() { d.endDriveSpan(span, err) }()
	if run.Status.CancelRequested {
		return d.finish(ctx, api.PhaseCancelled, api.ReasonUserCancelled, "cancelled by a user")
	}
	var dctx context.Context = ctx
	if d.status.Deadline != nil {
		if !time.Now().Before(*d.status.Deadline) {
			return d.finish(ctx, api.PhaseFailed, api.ReasonDeadlineExceeded, "the run's deadline passed at "+d.status.Deadline.Format(time.RFC3339))
		}
		var cancel context.CancelFunc
		dctx, cancel = context.WithDeadline(ctx, *d.status.Deadline)
		defer cancel()
	}
	err = d.loop(dctx)
	switch {
	case err == nil, errors.Is(err, errParked):
		return nil
	case errors.Is(err, store.ErrFenced):
		d.log.Warn("lease lost; dropping run", "err", err)
		return err
	case errors.Is(err, errRedrive):
		return err // the runner claims the run again at once; the next drive replays it
	case errors.Is(err, journal.ErrCancelled):
		return d.finish(ctx, api.PhaseCancelled, api.ReasonUserCancelled, "cancelled by a user")
	}
	if d.status.Deadline != nil && !time.Now().Before(*d.status.Deadline) && ctx.Err() == nil {
		return d.finish(ctx, api.PhaseFailed, api.ReasonDeadlineExceeded, "the run's deadline passed at "+d.status.Deadline.Format(time.RFC3339))
	}
	if ctx.Err() != nil {
		return ctx.Err() // runner stopping or lease lost: the next owner replays
	}
	var nr *journal.NeedsResolution
	if errors.As(err, &nr) {
		d.status.Phase, d.status.Reason = api.PhaseNeedsResolution, api.ReasonInterrupted
		d.status.Message = fmt.Sprintf("step %s (%s) was interrupted and may or may not have taken effect; inspect it, then resolve with retry, skip or complete", nr.Step.Key, nr.Step.Title)
		d.status.WaitingOn = &api.WaitingOn{Kind: "resolution", StepKey: nr.Step.Key, Detail: nr.Step.Title}
		// Parked, as the loop's own parks are: no error for the runner to log or act on.
		if err := d.parkWithFolder(ctx); !errors.Is(err, errParked) {
			return err
		}
		return nil
	}
	var fe *failure
	if errors.As(err, &fe) {
		return d.finish(ctx, api.PhaseFailed, fe.reason, fe.msg)
	}
	if errors.Is(err, store.ErrUnavailable) {
		// Not the run's fault: the runner gives it back and it is replayed once the store answers.
		d.log.Warn("store unavailable; the run will be retried", "err", err)
		return err
	}
	d.log.Error("run failed", "err", err)
	return d.finish(ctx, api.PhaseFailed, api.ReasonInternalError, err.Error())
}

// failure ends the run as Failed with a reason.
type failure struct {
	reason api.Reason
	msg    string
}

func (f *failure) Error() string { return string(f.reason) + ": " + f.msg }

func (d *drive) finish(ctx context.Context, phase api.Phase, reason api.Reason, msg string) error {
	// The run may be ending because its own context ended (deadline); the final write still goes
	// out under the lease.
	ctx = context.WithoutCancel(ctx)
	now := time.Now().UTC()
	d.status.Phase, d.status.Reason, d.status.Message = phase, reason, msg
	d.status.WaitingOn = nil
	d.status.FinishedAt = &now
	d.status.CancelRequested = false
	d.j.Emit(api.Event{Type: api.FinishEvent(phase), Message: msg})
	_, err := d.j.Commit(ctx, &d.status, true, nil)
	if err != nil {
		return fmt.Errorf("finish run %s: %w", d.run.Metadata.Name, err)
	}
	d.dropHarnessHome()
	return nil
}

// park writes a waiting status and releases the lease; the run wakes when poked or at wakeAt
// (the deadline, if any, so a waiting run still fails on time).
func (d *drive) park(ctx context.Context, ev *api.Event) error {
	if ev != nil {
		d.j.Emit(*ev)
	}
	if _, err := d.j.Commit(ctx, &d.status, true, d.status.Deadline); err != nil {
		return err
	}
	d.parked = true
	return errParked
}

// loop drives the run: it prepares the drive, then hands the conversation to the workflow
// engine, a harness or the built-in turns.
func (d *drive) loop(ctx context.Context) error {
	defs, err := d.prepare(ctx)
	if err != nil {
		return err
	}
	if err := d.loadLearning(ctx); err != nil {
		return err
	}
	defs = d.withLearnedTools(defs)
	if len(d.spec.Workflow) > 0 {
		// A workflow runs in the server's engine whatever the harness (workflow.go).
		return d.workflowLoop(ctx, defs)
	}
	c := &conversation{prompt: d.run.Spec.Input}
	if strings.TrimSpace(d.run.Spec.Input) != "" {
		c.startTurn(d, "")
		c.messages = append(c.messages, userText(d.run.Spec.Input))
	} else {
		text, err := d.nextMessage(ctx, c.msgN, "waiting for the first message")
		if err != nil {
			return err
		}
		c.startTurn(d, fmt.Sprintf("m%d", c.msgN))
		c.msgN++
		c.prompt = text
		c.messages = append(c.messages, userText(text))
	}
	d.status.Turns = d.status.Turns[:0]
	d.spent = spend{}
	d.updateCost(nil)
	if d.onHarness() {
		return d.harnessLoop(ctx, c.prompt, c.msgN, defs)
	}
	d.tools = model.EncodeTools(defs)
	for n := 0; ; n++ {
		done, err := d.turn(ctx, n, c, defs)
		if err != nil || done {
			return err
		}
	}
}

// prepare owns everything before the first step: the pinned agent revision, the model key, the
// run folder (emptied or restored), the model access, skills, the offered tools, and the Running
// status with its run.started or run.resumed event.
func (d *drive) prepare(ctx context.Context) ([]model.ToolDef, error) {
	if d.run.Status.AgentRevision == 0 {
		return nil, &failure{api.ReasonInternalError, "run is not pinned to an agent revision"}
	}
	spec, err := d.e.Store.GetAgentRevision(ctx, d.run.Spec.Agent, d.run.Status.AgentRevision)
	if err != nil {
		return nil, fmt.Errorf("load agent %s revision %d: %w", d.run.Spec.Agent, d.run.Status.AgentRevision, err)
	}
	d.spec = spec
	if err := d.waitForModelKey(ctx); err != nil {
		return nil, err
	}
	var restored int
	if d.j.Steps() == 0 {
		// A run that has done nothing yet has nothing in the store to restore; start it in an
		// empty folder (a deleted run of the same name may have left one on this disk).
		if err := os.RemoveAll(d.folder); err != nil {
			return nil, fmt.Errorf("run folder: %w", err)
		}
		if err := os.MkdirAll(d.folder, 0o755); err != nil {
			return nil, fmt.Errorf("run folder: %w", err)
		}
		d.saved = folderIndex{}
	} else {
		if d.j.Forked() && d.run.Status.StartedAt == nil {
			// A fork's first drive: its folder is the store's copy only (a deleted run of the
			// same name may have left files on this disk).
			if err := os.RemoveAll(d.folder); err != nil {
				return nil, fmt.Errorf("run folder: %w", err)
			}
		}
		saved, n, err := restoreFolder(ctx, d.e.Store, d.run.Metadata.Name, d.folder)
		if err != nil {
			return nil, err
		}
		d.saved, restored = saved, n
	}
	if restored > 0 {
		d.j.Emit(api.Event{Type: api.EventFolderRestored, Message: fmt.Sprintf("restored %d files of the run folder from the store", restored)})
	}
	if d.e.Prices == nil {
		d.e.Prices = cost.Default()
	}
	acc, err := d.resolveAccess(ctx)
	if err != nil {
		return nil, err
	}
	d.acc = acc
	if err := d.loadSkills(ctx); err != nil {
		return nil, err
	}
	defs, err := d.toolDefs()
	if err != nil {
		return nil, &failure{api.ReasonToolError, err.Error()}
	}

	resumed := d.j.Steps() > 0 || d.status.Phase != api.PhaseQueued
	if d.status.Phase == api.PhaseRunning {
		// Claimed mid-run: the previous holder died or gave it back without parking it.
		metrics.Takeovers.Inc()
		trace.SpanFromContext(ctx).AddEvent("takeover", trace.WithAttributes(attribute.Int64("agentrun.lease.generation", d.j.Lease().Generation)))
	}
	now := time.Now().UTC()
	if d.status.StartedAt == nil {
		d.status.StartedAt = &now
	}
	d.status.Phase, d.status.Reason, d.status.Message, d.status.WaitingOn = api.PhaseRunning, "", "", nil
	d.status.Runner = d.e.RunnerName
	msg := "started on runner " + d.e.RunnerName
	typ := api.EventRunStarted
	if resumed {
		msg = fmt.Sprintf("resumed on runner %s; replaying %d recorded steps", d.e.RunnerName, d.j.Steps())
		typ = api.EventRunResumed
	}
	d.j.Emit(api.Event{Type: typ, Message: msg})
	if resumed {
		sig, err := d.j.Commit(ctx, &d.status, false, nil)
		if err != nil {
			return nil, err
		}
		if sig.CancelRequested {
			return nil, journal.ErrCancelled
		}
	} else {
		// A fresh run's next commit is its first step's intent (a model or routing call, or the
		// first message) or its park, with no effect before it: the Running status and the
		// run.started event ride with that commit, which also reports a cancellation.
		d.j.Stage(&d.status)
	}
	// The MCP servers start after the run's start: a stdio server inside the run's computer makes
	// that computer, a step of this drive, which a fresh run's timeline shows after run.started.
	return append(defs, d.mcpToolDefs(ctx)...), nil
}

// conversation is the built-in loop's state across turns: the messages so far, the prompt the
// current turn answers, how many messages were consumed (journal steps m{n}), and the model the
// current prompt was given (nil until chosen).
type conversation struct {
	messages []model.Message
	prompt   string
	msgN     int
	cur      *turnState
	// turnStart is len(messages) before the current prompt; turnKey the step that brought it
	// ("" for the run's input): what a rollback goes back to (startTurn).
	turnStart int
	turnKey   string
}

// turn runs model call n of the built-in loop (journal step t{n}/model) and what follows it: the
// tool calls it asks for (steps t{n}/tool{i}), or, when it answers without tools, the answer and
// the wait for the next message. done is true when the run finished.
func (d *drive) turn(ctx context.Context, n int, c *conversation, defs []model.ToolDef) (done bool, err error) {
	key := fmt.Sprintf("t%d/model", n)
	if ts, fresh, err := d.stopAt(ctx, n, key, !d.j.Completed(key)); err != nil || ts != nil {
		if err != nil {
			return false, err
		}
		return false, d.stopTurn(ctx, n, c, ts, fresh)
	}
	if c.cur == nil {
		// A new prompt: choose its model once, for every call of the turn.
		if c.cur, err = d.chooseModel(ctx, n, c.prompt); err != nil {
			return false, err
		}
	}
	if err := d.forkMessage(ctx, n, c); err != nil {
		return false, err
	}
	resp, err := d.modelCall(withSteerable(ctx), n, c.cur, c.messages, defs)
	if errors.Is(err, journal.ErrStopped) {
		// A message stopped the call (recorded Interrupted): the turn stops here.
		ts, fresh, serr := d.stopAt(ctx, n, key, true)
		if serr != nil {
			return false, serr
		}
		if ts == nil {
			return false, &failure{api.ReasonInternalError, "a model call was stopped for a message the run does not have"}
		}
		return false, d.stopTurn(ctx, n, c, ts, fresh)
	}
	if err != nil {
		return false, err
	}
	c.messages = append(c.messages, model.Message{Role: "assistant", Content: resp.Content})

	var calls []model.Block
	var text strings.Builder
	for _, b := range resp.Content {
		switch b.Type {
		case model.BlockToolUse:
			calls = append(calls, b)
		case model.BlockText:
			text.WriteString(b.Text)
		}
	}
	d.turnText = text.String()
	if len(calls) > 0 {
		results, ts, fresh, err := d.toolCalls(ctx, n, calls)
		if err != nil {
			return false, err
		}
		c.messages = append(c.messages, model.Message{Role: "user", Content: results})
		if ts != nil {
			return false, d.stopTurn(ctx, n, c, ts, fresh)
		}
		return false, nil
	}
	if resp.StopReason == model.StopMaxTokens && text.Len() == 0 {
		return false, &failure{api.ReasonModelError, fmt.Sprintf("the model stopped at maxTokens (%d) without an answer", d.spec.MaxTokens)}
	}
	d.setAnswer(text.String())
	return d.answered(ctx, c)
}

// chooseModel picks the model of the prompt whose first model call is n: the router's choice
// (journal step t{n}/route) on routed access, else the agent's model. It starts the prompt's
// entry in status.turns and resets the prompt's tool-call count.
func (d *drive) chooseModel(ctx context.Context, n int, prompt string) (*turnState, error) {
	d.promptTools = 0
	if d.acc.routed {
		ts, err := d.route(ctx, n, prompt)
		if err != nil {
			return nil, err
		}
		return &ts, nil
	}
	d.turnCost = cost.Total{}
	return d.newTurn(d.acc.model, "agent"), nil
}

// newTurn starts an entry of status.turns on modelID, chosen by chosenBy, at no cost yet, and
// returns its state.
func (d *drive) newTurn(modelID, chosenBy string) *turnState {
	d.status.Turns = append(d.status.Turns, api.Turn{Index: len(d.status.Turns) + 1, Model: modelID, Family: familyOf(d.e.Prices, modelID), ChosenBy: chosenBy, CostUSD: (&cost.Total{}).String()})
	return &turnState{index: len(d.status.Turns) - 1, model: modelID, chosenBy: chosenBy}
}

// maxTokens is the output limit of every model call of the run: the agent's, or the default.
func (d *drive) maxTokens() int {
	if d.spec.MaxTokens > 0 {
		return d.spec.MaxTokens
	}
	return api.DefaultMaxTokens
}

// modelCall makes (or replays) model call n as journal step t{n}/model on the turn's model: the
// cost guard before it, then its usage and cost added to the turn and the run, written with its
// result.
func (d *drive) modelCall(ctx context.Context, n int, cur *turnState, conv []model.Message, defs []model.ToolDef) (*model.Response, error) {
	provider := d.acc.provider
	modelName := cur.model
	// Every call bounds its output, so its worst case is bounded too.
	maxTokens := d.maxTokens()
	req := &model.Request{Model: modelName, System: d.system(), Messages: lastImages(conv, maxImages), Tools: defs, MaxTokens: maxTokens, Stream: true,
		Encoded: d.tools}
	key := fmt.Sprintf("t%d/model", n)
	// Encoded once for the cost guard's bound and the journal's hash.
	hash, size := digestRequest(req)
	if err := d.guard(ctx, key, req, size, modelName); err != nil {
		return nil, err
	}
	title := fmt.Sprintf("model call (%s, turn %d)", modelName, n+1)
	// The built-in loop's call: what follows its reply until the next commit is local (folder
	// reads, the next request's encoding), so the reply's commit goes ahead without it.
	mr, err := d.modelStep(ctx, key, title, provider, req, hash, len(conv), true, func(mr modelResult, c *int64) {
		d.accountCall(cur, mr, c)
	})
	if err != nil {
		return nil, err
	}
	return &mr.Response, nil
}

// digestRequest is what a model call's journal step and cost guard need of its encoded request
// (model.MarshalRequest's bytes): their hash and their length, or -1 when the request does not
// encode (the guard then encodes it itself). The encoding is hashed as it is made, never held
// whole: a run waits seconds on the call, and the tools' encoding is shared by every run.
func digestRequest(req *model.Request) (journal.Hashed, int64) {
	h := journal.NewHasher()
	if err := model.WriteRequest(h, req); err != nil {
		return journal.Hashed(journal.Hash(journal.Encoded(nil))), -1
	}
	return h.Hashed(), h.Len()
}

// modelStep is one journaled model call, the one way every model call of a run is made (a turn,
// a learning call, a workflow question): the request, hashed (digestRequest) with the encoding
// the cost guard bounds, reaches the provider at most once for the step; add puts the recorded usage and
// cost into the status exactly once, in the commit of the call's result, or after it when the
// result was replayed or completed by a person. ahead: the result's commit need not be waited
// for (journal.Spec.Ahead), for a caller that does only local work before its next commit.
func (d *drive) modelStep(ctx context.Context, key, title string, provider model.Provider, req *model.Request, hash journal.Hashed, messages int, ahead bool, add func(mr modelResult, c *int64)) (modelResult, error) {
	defer d.settle(key)
	ctx = withModelRequest(ctx, req)
	var mr modelResult
	accounted := false
	account := func(result json.RawMessage, c *int64, copied bool) error {
		mr = modelResult{}
		if err := json.Unmarshal(result, &mr); err != nil {
			return fmt.Errorf("decode %s result: %w", key, err)
		}
		if copied {
			mr.VendorMicros = new(int64) // a fork's copied call cost this run nothing
		}
		accounted = true
		add(mr, c)
		return nil
	}
	out, err := d.j.Do(ctx, journal.Spec{Key: key, Kind: api.StepKindModel, Title: title,
		Args: map[string]any{"provider": provider.Name(), "model": req.Model, "messages": messages}, HashOf: hash,
		// A call on the server's own key is safe to repeat; on the user's own key it is not.
		Safe: !d.acc.byok, Bill: !d.acc.byok && d.bills(key), Concurrent: true, Ahead: ahead,
		// The status with this call's usage and cost is written with its result.
		Status: func(result json.RawMessage, c *int64) (*api.AgentRunStatus, error) {
			if err := account(result, c, false); err != nil {
				return nil, err
			}
			return &d.status, nil
		}},
		func(ctx context.Context) (any, *int64, error) {
			ctx, done := d.liveText(ctx, key)
			defer done()
			resp, err := d.steerCall(ctx, func(ctx context.Context) (*model.Response, error) { return d.callModel(ctx, provider, req) })
			if err != nil {
				return nil, nil, err
			}
			recorded, vendor := d.callCost(resp, req.Model, key)
			return modelResult{Response: *resp, VendorMicros: vendor}, recorded, nil
		})
	if err != nil {
		return modelResult{}, err
	}
	if !accounted {
		// Replayed, or completed by a person: not accounted with a commit of the call's own.
		if err := account(out.Result, out.CostMicros, out.Copied); err != nil {
			return modelResult{}, err
		}
		if !out.Replayed {
			if _, err := d.j.Commit(ctx, &d.status, false, nil); err != nil {
				return modelResult{}, err
			}
		}
	}
	return mr, nil
}

// toolCalls runs (or replays) the tool calls model call n asked for, in order, and returns their
// tool_result blocks; they count toward the prompt's spec.maxToolCalls.
// Before each call, a message may stop the turn (stopAt): the calls not run are answered so, and
// the stop is returned.
func (d *drive) toolCalls(ctx context.Context, n int, calls []model.Block) ([]model.Block, *api.TurnStop, bool, error) {
	d.holdReads = true
	defer func() { d.holdReads = false }()
	results := make([]model.Block, 0, len(calls))
	for i, call := range calls {
		key := fmt.Sprintf("t%d/tool/%d", n, i)
		// A call the journal has (even one cut off by a crash) goes its own way: it is not stopped
		// here, so it is never run twice.
		_, recorded := d.j.Lookup(key)
		ts, fresh, err := d.stopAt(ctx, n, key, !recorded)
		if err != nil {
			return nil, nil, false, err
		}
		if ts != nil {
			d.promptTools += i
			return append(results, notRun(calls[i:], ts)...), ts, fresh, nil
		}
		res, err := d.toolCall(ctx, n, i, call)
		if err != nil {
			return nil, nil, false, err
		}
		results = append(results, res)
	}
	d.promptTools += len(calls)
	return results, nil, false, nil
}

// answered follows a turn the model answered without tools: a message that arrived meanwhile, or
// on a keep-alive run the next one (parking until it comes), starts the next prompt; otherwise a
// learning agent proposes what to keep and the run succeeds.
func (d *drive) answered(ctx context.Context, c *conversation) (done bool, err error) {
	// A message that arrived while the run worked is read after the turn.
	pending, err := d.e.Store.ListMessages(ctx, d.run.Metadata.Name, d.lastMsg)
	if err != nil {
		return false, err
	}
	if len(pending) == 0 && !d.run.Spec.KeepAlive {
		// A learning agent's run proposes what to keep before it ends.
		if err := d.learnTurn(ctx, c.messages, true); err != nil {
			return false, err
		}
		return true, d.finishAnswer(ctx)
	}
	next, err := d.nextMessage(ctx, c.msgN, "the turn is done; waiting for your next message")
	if err != nil {
		return false, err
	}
	c.startTurn(d, fmt.Sprintf("m%d", c.msgN))
	c.msgN++
	c.messages = append(c.messages, userText(next))
	c.prompt, c.cur = next, nil
	return false, nil
}

func (d *drive) finishAnswer(ctx context.Context) error {
	return d.finish(ctx, api.PhaseSucceeded, api.ReasonCompleted, "")
}

// setAnswer keeps the whole answer in the run folder's journal-owned file and a 4 KiB preview in
// status.
func (d *drive) setAnswer(text string) {
	prev := text
	truncated := false
	if len(prev) > api.AnswerPreviewSize {
		cut := api.AnswerPreviewSize
		for cut > 0 && !utf8Start(prev[cut]) {
			cut--
		}
		prev, truncated = prev[:cut], true
	}
	d.status.Answer = &api.Answer{Preview: prev, Truncated: truncated, Bytes: len(text)}
	d.j.Emit(api.Event{Type: api.EventAnswer, Message: api.FirstLine(text, 200), Data: mustRaw(map[string]string{"answer": text})})
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

func mustRaw(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func userText(s string) model.Message {
	return model.Message{Role: "user", Content: []model.Block{{Type: model.BlockText, Text: s}}}
}

// nextMessage consumes the next message as journal step m{n}, or parks the run waiting for one.
func (d *drive) nextMessage(ctx context.Context, n int, waiting string) (string, error) {
	key := fmt.Sprintf("m%d", n)
	if st, ok := d.j.Lookup(key); ok && st.State == api.StepCompleted {
		var m api.Message
		if err := json.Unmarshal(st.Result, &m); err != nil {
			return "", fmt.Errorf("replay message step %s: %w", key, err)
		}
		d.lastMsg = m.Seq
		d.steer.seen(m.Seq)
		return m.Payload, nil
	}
	msgs, err := d.e.Store.ListMessages(ctx, d.run.Metadata.Name, d.lastMsg)
	if err != nil {
		return "", err
	}
	if len(msgs) == 0 {
		d.status.Phase, d.status.Reason, d.status.Message = api.PhaseWaiting, api.ReasonMessage, waiting
		d.status.WaitingOn = &api.WaitingOn{Kind: "message", Detail: waiting}
		if !d.run.Spec.KeepAlive && n > 0 {
			// Not reachable: a run without keepAlive finishes when no message is pending.
			return "", &failure{api.ReasonInternalError, "waiting for a message on a run without keepAlive"}
		}
		return "", d.park(ctx, &api.Event{Type: api.EventRunWaiting, Message: "waiting for a message"})
	}
	m := msgs[0]
	if _, err := d.j.Record(ctx, journal.Spec{Key: key, Kind: api.StepKindMessage, Title: "message received: " + api.FirstLine(m.Payload, 80), Args: map[string]int64{"after": d.lastMsg}}, m); err != nil {
		return "", err
	}
	d.lastMsg = m.Seq
	d.steer.seen(m.Seq)
	return m.Payload, nil
}

// toolDefs are the tools the model is offered: those spec.tools lists and those that come with
// the computer (see OfferedTools).
func (d *drive) toolDefs() ([]model.ToolDef, error) { return d.computerToolDefs() }

// toolCall runs (or replays) one tool call and returns its tool_result block.
func (d *drive) toolCall(ctx context.Context, turn, i int, call model.Block) (model.Block, error) {
	key := fmt.Sprintf("t%d/tool/%d", turn, i)
	result := func(content string, isErr bool) model.Block {
		return model.Block{Type: model.BlockToolResult, ToolUseID: call.ID, Content: content, IsError: isErr}
	}
	if d.promptTools+i >= d.spec.MaxToolCalls { // counted over the whole turn (prompt)
		why := fmt.Sprintf("at most %d tool calls per turn (spec.maxToolCalls)", d.spec.MaxToolCalls)
		d.refused(fmt.Sprintf("t%d/model", turn+1), key, call.Name, why)
		return result("not run: "+why, true), nil
	}
	return d.toolStep(ctx, key, fmt.Sprintf("t%d/model", turn+1), call)
}

// toolStep runs (or replays) one tool call as journal step key, straight down: the name resolved
// once to its kind (resolveTool), the agent's tools, the strict decoder, the server's deny set
// and the approvals, then the kind's handler. A workflow's call node comes here with its
// execution path as key. next is the step whose presence in the journal says this call is being
// replayed (its refusal was already on the timeline); "" when none says so.
func (d *drive) toolStep(ctx context.Context, key, next string, call model.Block) (model.Block, error) {
	ctx = withToolCall(ctx, call)
	result := func(content string, isErr bool) model.Block {
		return model.Block{Type: model.BlockToolResult, ToolUseID: call.ID, Content: content, IsError: isErr}
	}
	rt := d.resolveTool(call.Name)
	if rt.kind == toolLearned {
		return d.runLearnedWorkflow(ctx, key, call, rt.workflow, result)
	}
	if !rt.allowed {
		d.refused(next, key, call.Name, "not available to this agent")
		return result(fmt.Sprintf("tool %q is not available to this agent", call.Name), true), nil
	}
	// One strict decode of the input: the policy decides on it, the journal titles the step with
	// it and the tool runs it, so what is approved is what runs. A bad input (a key in another
	// case, a key given twice, an unknown key) is the model's mistake, answered as the result.
	in, err := catalog.Decode(call.Name, call.Input)
	var bad *catalog.InputError
	if errors.As(err, &bad) {
		d.refused(next, key, call.Name, "bad input: "+bad.Msg)
		return result(fmt.Sprintf("%s: %s; the call did not run", call.Name, bad.Msg), true), nil
	}
	if err != nil {
		return result(fmt.Sprintf("tool %q is not available on this server", call.Name), true), nil
	}
	if rt.kind == toolAskPerson {
		return d.askPerson(ctx, key, in, result)
	}
	if why, code, address := d.serverToolRefusal(call.Name, in); why != "" {
		d.refusedCode(next, key, call.Name, why, code, address)
		return result(fmt.Sprintf("%s refused (code %s): %s; the call did not run", call.Name, code, why), true), nil
	}
	if ok, refusal, err := d.approval(ctx, key, call, in); err != nil {
		return model.Block{}, err
	} else if !ok {
		return result(refusal, true), nil
	}
	if rt.kind == toolUnknown {
		return result(fmt.Sprintf("tool %q is not available on this server", call.Name), true), nil
	}
	out, err := d.execute(ctx, key, rt, call, in)
	if err != nil {
		return model.Block{}, err
	}
	return d.toolOutcome(key, out, result)
}

// execute runs (or replays) a resolved, decoded and approved call as its journal step, by its
// kind's handler; toolStep turns the outcome into the result the model reads, in one place.
func (d *drive) execute(ctx context.Context, key string, rt resolvedTool, call model.Block, in catalog.Input) (journal.Outcome, error) {
	switch rt.kind {
	case toolServer:
		switch call.Name {
		case catalog.WebFetchName:
			return d.webFetch(ctx, key, call, in)
		case catalog.SkillName:
			return d.readSkill(ctx, key, call, in)
		}
		return d.readNote(ctx, key, call, in)
	case toolMCP:
		return d.mcpCall(ctx, key, rt.mcp, call, in)
	case toolComputer:
		return d.computerCall(ctx, key, rt.computer, call, in)
	case toolBuiltin:
		return d.builtinCall(ctx, key, rt.builtin, call, in)
	}
	return journal.Outcome{}, fmt.Errorf("tool %q: no handler for its kind %d", call.Name, rt.kind)
}

// builtinCall runs (or replays) a call of a tool of internal/tools on the run folder.
func (d *drive) builtinCall(ctx context.Context, key string, tool tools.Tool, call model.Block, in catalog.Input) (journal.Outcome, error) {
	// A read-only folder tool (read, ls, grep) is quick and safe to repeat: its intent goes in
	// one commit with its result (journal.Spec.Brief), a turn that uses one commits once less;
	// in the built-in loop that commit is the next model call's intent (Held), once less again.
	ro := tool.ReadOnly()
	spec := journal.Spec{Key: key, Kind: api.StepKindTool, Title: call.Name + " " + summarize(in), Args: map[string]any{"tool": call.Name, "input": call.Input}, Safe: ro, Brief: ro, Held: ro && d.holdReads && !d.inWorkflow, Concurrent: true}
	if !ro {
		spec.Files = d.filesOf(key)
	}
	out, err := d.j.Do(ctx, spec,
		func(ctx context.Context) (any, *int64, error) {
			r, err := tool.RunInput(ctx, tools.Env{Root: d.folder}, in)
			if err != nil {
				return nil, nil, err
			}
			return r, nil, nil
		})
	if err != nil {
		return journal.Outcome{}, err
	}
	return out, nil
}

// refused puts a tool call that was answered without running (the model is told why) on the
// timeline, where a person sees it: it makes no step. It goes out with the next commit. A turn
// replayed after a restart (the journal has the next turn's model call) does not repeat it.
func (d *drive) refused(next, key, tool, why string) { d.refusedCode(next, key, tool, why, "", "") }

// refusedCode is refused with the refusal's stable code (api/codes.go) and the address it
// refused (web_fetch's URL) in the event's data.
func (d *drive) refusedCode(next, key, tool, why string, code api.Code, address string) {
	if _, replayed := d.j.Lookup(next); replayed && next != "" {
		return
	}
	data := map[string]string{"tool": tool, "why": why}
	msg := fmt.Sprintf("%s refused: %s", tool, why)
	if address != "" {
		data["address"] = address
	}
	if code != "" {
		data["code"] = string(code)
		msg = fmt.Sprintf("%s refused (%s): %s", tool, code, why)
	}
	d.j.Emit(api.Event{Type: api.EventToolRefused, StepKey: key, Message: msg, Data: mustRaw(data)})
}

// folderChanges are the run folder's changes since the last save, to save with a step that may
// have changed files.
func (d *drive) folderChanges() ([]store.FileWrite, error) { return d.folderChangesOf("") }

// filesOf is folderChanges for step key's completion: what a rollback needs of the files it
// changes is kept under the step (notePre).
func (d *drive) filesOf(key string) func() ([]store.FileWrite, error) {
	return func() ([]store.FileWrite, error) { return d.folderChangesOf(key) }
}

func (d *drive) folderChangesOf(key string) ([]store.FileWrite, error) {
	next, writes, err := d.saved.changes(d.folder)
	if err != nil {
		return nil, err
	}
	if err := d.notePre(key, writes); err != nil {
		return nil, err
	}
	d.saved = next
	return writes, nil
}

// toolOutcome turns a tool step's outcome into the tool_result the model reads, with the
// pictures a computer tool's result names loaded from the run folder.
func (d *drive) toolOutcome(key string, out journal.Outcome, result func(string, bool) model.Block) (model.Block, error) {
	if out.Skipped {
		return result("this call was interrupted by a crash and a person chose to skip it: it may or may not have taken effect; check before relying on it", true), nil
	}
	var r tools.Result
	if err := json.Unmarshal(out.Result, &r); err != nil {
		return model.Block{}, fmt.Errorf("decode %s result: %w", key, err)
	}
	b := result(r.Content, r.IsError)
	if len(r.Images) > 0 {
		b.Images, b.Content = d.loadImages(r.Images, b.Content)
	}
	return b, nil
}

// summarize is the text that names a call on its journal step, from its decoded input.
func summarize(in catalog.Input) string { return api.FirstLine(in.Title(), 80) }

// askPerson turns an ask_person call into a question: the next message is the answer.
func (d *drive) askPerson(ctx context.Context, key string, decoded catalog.Input, result func(string, bool) model.Block) (model.Block, error) {
	in, ok := decoded.Value.(*catalog.AskPerson)
	if !ok || strings.TrimSpace(in.Question) == "" {
		return result(`ask_person needs {"question": "..."}`, true), nil
	}
	if st, ok := d.j.Lookup(key); ok && st.State == api.StepCompleted {
		var m api.Message
		if err := json.Unmarshal(st.Result, &m); err != nil {
			return model.Block{}, fmt.Errorf("replay answer step %s: %w", key, err)
		}
		d.lastMsg = m.Seq
		d.steer.seen(m.Seq)
		return result(m.Payload, false), nil
	}
	msgs, err := d.e.Store.ListMessages(ctx, d.run.Metadata.Name, d.lastMsg)
	if err != nil {
		return model.Block{}, err
	}
	if len(msgs) == 0 {
		d.status.Phase, d.status.Reason, d.status.Message = api.PhaseWaiting, api.ReasonQuestion, in.Question
		d.status.WaitingOn = &api.WaitingOn{Kind: "question", StepKey: key, Question: in.Question}
		if in.Takeover {
			// The person takes the controls of the run's computer, then answers to hand them back.
			d.status.WaitingOn.Kind, d.status.WaitingOn.Detail = "takeover", "the agent asks you to take over its computer; answer when you hand it back"
		}
		return model.Block{}, d.park(ctx, &api.Event{Type: api.EventRunQuestion, StepKey: key, Message: in.Question})
	}
	m := msgs[0]
	if _, err := d.j.Record(ctx, journal.Spec{Key: key, Kind: api.StepKindQuestion, Title: "asked: " + api.FirstLine(in.Question, 80), Args: map[string]any{"question": in.Question}}, m); err != nil {
		return model.Block{}, err
	}
	d.lastMsg = m.Seq
	d.steer.seen(m.Seq)
	// Back to work: the waiting status is cleared at the next status write.
	d.status.Phase, d.status.Reason, d.status.Message, d.status.WaitingOn = api.PhaseRunning, "", "", nil
	return result(m.Payload, false), nil
}

// callModel calls the provider, retrying transient errors a few times with backoff (model.Retry).
func (d *drive) callModel(ctx context.Context, p model.Provider, req *model.Request) (*model.Response, error) {
	var resp *model.Response
	err := model.Retry(ctx, func(attempt int, err error) {
		d.log.Warn("model call failed; retrying", "attempt", attempt, "err", err)
	}, func() (bool, error) {
		start := time.Now()
		r, err := p.Complete(ctx, req)
		metrics.ModelSeconds.Since(start, p.Name())
		if err == nil {
			resp = r
			return false, nil
		}
		var ae *model.APIError
		return ctx.Err() == nil && errors.As(err, &ae) && ae.Retryable, err
	})
	if err == nil {
		return resp, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, &failure{api.ReasonModelError, err.Error()}
}
