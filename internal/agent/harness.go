package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/gateway"
	"agentrun.dev/agentrun/internal/harness"
	"agentrun.dev/agentrun/internal/model"
)

// harnessGateway is the runner process's one gateway listener, started with its first harness run
// and closed by CloseAll.
type harnessGateway struct {
	once sync.Once
	gw   *gateway.Gateway
	err  error
}

func (e *Engine) gateway() (*gateway.Gateway, error) {
	e.gw.once.Do(func() {
		g := gateway.New(e.Log)
		if err := g.Start(); err != nil {
			e.gw.err = err
			return
		}
		e.gw.gw = g
	})
	return e.gw.gw, e.gw.err
}

func (e *Engine) closeGateway() {
	if e.gw.gw != nil {
		e.gw.gw.Close()
	}
}

// mcpName is the MCP server name harnesses see our tools under (Claude Code: mcp__agentrun__write).
const mcpName = "agentrun"

// hostRun is a harness run's side of the gateway: every model call and tool call the harness makes
// comes here, one at a time (mu), and goes through the same journal, cap guard, credits, approvals
// and tools as the built-in loop's. The first error that stops the drive (a park, a lost lease) is
// kept and the harness's context cancelled, so the drive ends with it.
type hostRun struct {
	d    *drive
	ctx  context.Context
	stop context.CancelCauseFunc
	wire gateway.Wire
	name string
	// prefix puts the steps under a workflow agent node's key ("" for the run's own loop), and
	// turnCost, when set, is that node's turn cost (the run's loop uses the drive's).
	prefix   string
	turnCost *cost.Total
	// home is a workflow agent node's home slot in the run's computer (takeNodeHome): which
	// slot is not content, since a node may have another after a restart.
	home string

	// mu is the lock every call takes: the drive's own for the run's loop, the workflow host's
	// for an agent node (shared with the other nodes' effects).
	mu *sync.Mutex
	// n is the number of model calls so far in this drive (replayed ones included): call n is
	// journal step t{n}/model, and the tool calls after it t{n}/tool/{i}, as in the built-in loop.
	n int
	// tools counts the tool calls since the last model call, and counts the token counts asked
	// of the vendor since then (MaxCountsPerModelCall).
	tools   int
	counts  int
	cur     *turnState
	err     error
	clamped bool
	// proposal is set for a learning run's proposal turn: it keeps the model of the turn before
	// it, as the built-in loop's proposal call does, with no routing call of its own.
	proposal bool
	// stopped is set when a message stopped the current turn (ifbusy_harness.go), redrive when
	// that was a rollback, which starts the harness again from the journal; turn names the
	// current turn's prompt ("input", "m2"; "" for a learning proposal's).
	stopped *api.TurnStop
	redrive bool
	turn    string
	// proc is the run's own loop's harness process (nil for a workflow node's), which a stop
	// interrupts through the harness's own protocol when it can (harness.Interrupter).
	proc harness.Process
}

func (h *hostRun) fail(err error) error {
	if h.err == nil {
		h.err = err
		h.stop(err)
	}
	return err
}

// divergence is a replayed call that differs from the recorded one.
type divergence struct{ key, why string }

func (e *divergence) Error() string { return "replay diverged at " + e.key + ": " + e.why }

// CallTool is one of the run's tools called over MCP: the built-in loop's toolCall (strict decode,
// approvals and the server's deny set, ask_person, the journal, the computer).
func (h *hostRun) CallTool(_ context.Context, name string, input json.RawMessage) (string, bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		return "", false, h.err
	}
	if h.redrive {
		return "", false, h.fail(errRedrive)
	}
	// The call belongs to the last model call (the one that asked for it).
	turn := max(h.n-1, 0)
	i := h.tools
	h.tools++
	call := model.Block{Type: model.BlockToolUse, ID: fmt.Sprintf("h%d_%d", turn, i), Name: name, Input: input}
	var blk model.Block
	var err error
	if h.prefix != "" {
		blk, err = h.d.toolStep(h.ctx, h.prefix+fmt.Sprintf("t%d/tool/%d", turn, i), h.prefix+fmt.Sprintf("t%d/model", turn+1), call)
	} else {
		blk, err = h.d.toolCall(h.ctx, turn, i, call)
	}
	if err != nil {
		return "", false, h.fail(err)
	}
	return blk.Content, blk.IsError, nil
}

// permit answers a harness's permission request for a tool: ours (served over MCP, where our
// approvals decide) are allowed; the harness's own tools are refused, since the agent gets its
// tools and nothing else.
func (h *hostRun) permit(_ context.Context, tool string, input json.RawMessage) (bool, string, error) {
	if tool == harness.ClaudeSkillTool {
		return h.openHarnessSkill(input)
	}
	if n, ok := strings.CutPrefix(tool, "mcp__"+mcpName+"__"); ok && h.d.allowed(n) {
		return true, "", nil
	}
	return false, fmt.Sprintf("%s is not available to this agent: its tools are the %s MCP server's", tool, mcpName), nil
}

// beginTurn chooses the model of a new prompt (routed or the agent's), as the built-in loop does.
func (h *hostRun) beginTurn(prompt string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.d
	d.promptTools, h.tools = 0, 0
	modelID, chosen := d.acc.model, "agent"
	switch {
	case h.proposal:
		modelID = d.learnModel()
		if n := len(d.status.Turns); n > 0 && d.status.Turns[n-1].ChosenBy != "" {
			chosen = d.status.Turns[n-1].ChosenBy
		}
	case d.acc.routed:
		ts, err := d.route(h.ctx, h.n, prompt)
		if err != nil {
			return err
		}
		h.cur = &ts
		return nil
	}
	d.turnCost = cost.Total{}
	h.cur = d.newTurn(modelID, chosen)
	return nil
}

// harnessLoop drives a run whose agent names an external harness: install it, start it with the
// run's gateway token and tools, send it the input and each message as a turn, and finish, park or
// fail the run as the built-in loop does. Nothing the harness does is trusted to persist: a
// restarted drive starts it again and replays it from the journal.
func (d *drive) harnessLoop(ctx context.Context, prompt string, msgN int, defs []model.ToolDef) error {
	drv, err := d.harnessDriver()
	if err != nil {
		return err
	}
	hr, err := d.startHarness(ctx, drv, defs, "", new(sync.Mutex), nil)
	if err != nil {
		return err
	}
	home := hr.home
	defer func() {
		// Kept while the run waits (the next drive reuses it); gone once the run is over.
		if api.Finished(d.status.Phase) {
			os.RemoveAll(home)
		}
	}()
	defer hr.stop()
	ht := &harnessTurns{d: d, h: hr.h, proc: hr.proc, skips: d.rolledBackTurns(), cur: "input"}
	if strings.TrimSpace(d.run.Spec.Input) == "" {
		ht.cur = fmt.Sprintf("m%d", msgN-1)
	}
	for {
		text, err := ht.turn(ctx, prompt)
		if err != nil {
			return err
		}
		stopped, redrive := ht.end(text)
		if redrive {
			// The harness's history holds the discarded turn: it starts again from the journal.
			return errRedrive
		}
		why := "the turn is done; waiting for your next message"
		if stopped {
			// A message stopped the turn: it (after any queued before it) is the next turn.
			why = "waiting for the message that stopped the turn"
		} else if done, err := ht.finish(ctx); done || err != nil {
			return err
		}
		next, err := d.nextMessage(ctx, msgN, why)
		if err != nil {
			return err
		}
		ht.cur = fmt.Sprintf("m%d", msgN)
		msgN++
		prompt = next
	}
}

// harnessTurns gives the run's harness its user turns. cur names the prompt of the next turn,
// for a rollback; skips are the turns rollbacks discarded, which the harness is not given again.
type harnessTurns struct {
	d     *drive
	h     *hostRun
	proc  harness.Process
	skips map[string]rolledBack
	cur   string
}

// turn is one user turn of the harness: its final text, or why the drive stops. A turn a
// rollback discarded is not given to the harness (skipTurn).
func (t *harnessTurns) turn(ctx context.Context, prompt string) (string, error) {
	h := t.h
	if err := h.beginTurn(prompt); err != nil {
		return "", err
	}
	h.mu.Lock()
	h.beginRollbackTurn(t.cur)
	t.cur = ""
	skip, skipped := t.skips[h.turn]
	var skipErr error
	if skipped && h.turn != "" {
		skipErr = h.skipTurn(skip.ts, skip.stop)
	}
	h.mu.Unlock()
	if skipped && h.turn != "" {
		return "", skipErr
	}
	text, err := t.proc.Turn(h.ctx, prompt)
	h.mu.Lock()
	herr := h.err
	h.mu.Unlock()
	if err := t.d.harnessTurnEnd(ctx, herr, err); err != nil {
		return "", err
	}
	return text, nil
}

// end closes a turn whose final text is text: the run's answer, unless a message stopped the turn
// (stopped), or rolled it back (redrive).
func (t *harnessTurns) end(text string) (stopped, redrive bool) {
	h := t.h
	h.mu.Lock()
	defer h.mu.Unlock()
	stopped, redrive = h.stopped != nil, h.redrive
	h.stopped = nil
	if !stopped {
		t.d.setAnswer(text)
	}
	return stopped, redrive
}

// finish ends the run after a turn when no message waits and the run is not kept alive (done),
// after a learning agent's proposal: its model calls are the run's, through the gateway under the
// cap, in the harness's next user turn.
func (t *harnessTurns) finish(ctx context.Context) (done bool, err error) {
	d, h := t.d, t.h
	pending, err := d.e.Store.ListMessages(ctx, d.run.Metadata.Name, d.lastMsg)
	if err != nil {
		return true, err
	}
	if len(pending) > 0 || d.run.Spec.KeepAlive {
		return false, nil
	}
	turn := func(prompt string) (string, error) { return t.turn(ctx, prompt) }
	if err := d.learnFrom(ctx, true, func(ctx context.Context, fresh *bool) (json.RawMessage, error) {
		h.mu.Lock()
		h.proposal = true
		h.mu.Unlock()
		return d.harnessProposal(ctx, h.name, turn, fresh)
	}); err != nil {
		return true, err
	}
	return true, d.finishAnswer(ctx)
}

// harnessTurnEnd is why a harness turn stops the drive, or nil: herr is what the host's calls
// failed with during the turn (a replay divergence parks the run), err what the turn itself
// returned (the harness failed).
func (d *drive) harnessTurnEnd(ctx context.Context, herr, err error) error {
	if herr != nil {
		var dv *divergence
		if errors.As(herr, &dv) {
			return d.diverged(ctx, dv)
		}
		return herr
	}
	if err != nil {
		return d.harnessFailed(err)
	}
	return nil
}

// harnessDriver is the agent's harness, or why this runner cannot run it with the run's provider.
func (d *drive) harnessDriver() (harness.Driver, error) {
	drv, ok := harness.Lookup(string(d.spec.Harness))
	if !ok {
		return nil, &failure{api.ReasonHarnessUnavailable, fmt.Sprintf("harness %q is not built into this runner (built: %s)", d.spec.Harness, strings.Join(harness.Names(), ", "))}
	}
	// Said now rather than as the vendor's 404 on its first call.
	if _, err := harnessWire(drv, d.acc.provider.Name()); err != nil {
		return nil, err
	}
	return drv, nil
}

// providerWires are the wire formats each provider's API serves, its own first: Anthropic's the
// Messages API only; OpenAI's Chat Completions (what the built-in loop calls, so an
// OpenAI-compatible server given as OPENAI_BASE_URL serves it too) and Responses; OpenRouter's
// both and an Anthropic-compatible Messages API.
var providerWires = map[string][]gateway.Wire{
	"anthropic":  {gateway.WireAnthropic},
	"openai":     {gateway.WireChat, gateway.WireResponses},
	"openrouter": {gateway.WireChat, gateway.WireResponses, gateway.WireAnthropic},
}

// harnessWire is the wire drv's model calls speak on provider: the first the provider serves that
// drv can be configured for, so a call is forwarded as the harness sent it; else Responses on
// Anthropic, which the gateway translates to Messages (codex); else a failure saying which
// providers would do. A provider not listed gets the harness's own first wire.
func harnessWire(drv harness.Driver, provider string) (gateway.Wire, error) {
	if w, ok := pickWire(drv.Wires(), provider); ok {
		return w, nil
	}
	var would []string
	for _, p := range slices.Sorted(maps.Keys(providerWires)) {
		if _, ok := pickWire(drv.Wires(), p); ok {
			would = append(would, p)
		}
	}
	return "", &failure{api.ReasonHarnessUnavailable, fmt.Sprintf("harness %s speaks the %s API, which provider %s does not serve (it serves %s): give the agent spec.model.provider %s (or make one the server's default provider)",
		drv.Name(), wireList(drv.Wires()), provider, wireList(providerWires[provider]), strings.Join(would, " or "))}
}

func pickWire(speaks []gateway.Wire, provider string) (gateway.Wire, bool) {
	served, known := providerWires[provider]
	if !known {
		return speaks[0], true
	}
	for _, w := range served {
		if slices.Contains(speaks, w) {
			return w, true
		}
	}
	if provider == "anthropic" && slices.Contains(speaks, gateway.WireResponses) {
		return gateway.WireResponses, true
	}
	return "", false
}

// wireList names wires as people know the APIs.
func wireList(ws []gateway.Wire) string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Title()
	}
	return strings.Join(out, ", ")
}

// harnessRun is a started harness: its host side, its process and its home.
type harnessRun struct {
	h    *hostRun
	proc harness.Process
	home string
	// undo is what stop does, last first: stop the process, release its home slot and its gateway
	// token, end its context.
	undo []func()
}

// stop stops the process, releases its gateway token and ends its context.
func (hr *harnessRun) stop() {
	for i := len(hr.undo) - 1; i >= 0; i-- {
		hr.undo[i]()
	}
}

// startHarness installs drv and starts it with the run's gateway token and the tools defs, its
// calls taking mu. node is a workflow agent node's step key: its calls are journaled under it,
// in a home of its own, on turn cur, and mu (held by the caller) is let go while it starts; ""
// is the run's own loop, whose turns begin with each prompt.
func (d *drive) startHarness(ctx context.Context, drv harness.Driver, defs []model.ToolDef, node string, mu *sync.Mutex, cur *turnState) (*harnessRun, error) {
	pkg := drv.Package()
	bin, err := d.installHarness(ctx, pkg)
	if err != nil {
		return nil, err
	}
	gw, err := d.e.gateway()
	if err != nil {
		return nil, &failure{api.ReasonHarnessUnavailable, err.Error()}
	}
	wire, err := harnessWire(drv, d.acc.provider.Name())
	if err != nil {
		return nil, err
	}
	hctx, stop := context.WithCancelCause(ctx)
	h := &hostRun{d: d, ctx: hctx, stop: stop, wire: wire, name: drv.Name(), mu: mu, cur: cur}
	hr := &harnessRun{h: h, undo: []func(){func() { stop(nil) }}}
	ok := false
	defer func() {
		if !ok {
			hr.stop()
		}
	}()
	if node != "" {
		h.prefix, h.turnCost = node+"/", &cost.Total{}
	}
	tools, htools := harnessTools(defs)
	token, release := gw.Register(d.run.Metadata.Name, wire, h, tools)
	hr.undo = append(hr.undo, release) // the token dies with the drive (or the node)
	if err := d.harnessHomeOf(ctx, hr, node, mu); err != nil {
		return nil, err
	}
	sess := d.harnessSession(h, gw, bin, hr.home, token, htools)
	where, err := d.harnessInComputer(hctx, &sess, gw)
	if err != nil {
		return nil, &failure{api.ReasonHarnessUnavailable, err.Error()}
	}
	if err := d.startProcess(hr, drv, sess, node); err != nil {
		return nil, err
	}
	ok = true
	what := ""
	if node != "" {
		what = " for workflow node " + node
	}
	d.j.Emit(api.Event{Type: api.EventHarnessStarted, Message: fmt.Sprintf("started %s (%s) %s%s; its model calls and tools go through this runner's gateway", drv.Name(), pkg.Spec(), where, what)})
	return hr, nil
}

// installHarness installs pkg if it is not yet (each step of it on the run's timeline) and
// returns its executable.
func (d *drive) installHarness(ctx context.Context, pkg harness.Package) (string, error) {
	bin, err := harness.Install(ctx, d.e.DataDir, pkg, func(msg string) {
		d.j.Emit(api.Event{Type: api.EventHarnessInstall, Message: msg})
		d.j.Commit(ctx, &d.status, false, nil)
	})
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", &failure{api.ReasonHarnessUnavailable, err.Error()}
	}
	return bin, nil
}

// harnessTools are the tools defs as the gateway serves them over MCP and as the driver is told
// of them.
func harnessTools(defs []model.ToolDef) ([]gateway.Tool, []harness.Tool) {
	var tools []gateway.Tool
	var htools []harness.Tool
	for _, t := range defs {
		tools = append(tools, gateway.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
		htools = append(htools, harness.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
	}
	return tools, htools
}

// harnessHomeOf makes hr's home: the run's harness home for its own loop; for a workflow agent
// node ("" is none) one of its own, since nodes of a map run at once: inside the computer one of
// the slots guarded there (let go with hr), else a folder under the run's named by the node.
func (d *drive) harnessHomeOf(ctx context.Context, hr *harnessRun, node string, mu *sync.Mutex) error {
	home := harnessHome(d.e.DataDir, d.run.Metadata.Name)
	if node != "" && d.runsInComputer() {
		slotHome, release, err := d.takeNodeHome(ctx, node, mu)
		if err != nil {
			return err
		}
		hr.undo = append(hr.undo, release)
		home, hr.h.home = slotHome, slotHome
	} else if node != "" {
		sum := sha256.Sum256([]byte(node))
		home = filepath.Join(home, "nodes", hex.EncodeToString(sum[:8]))
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("harness home: %w", err)
	}
	hr.home = home
	return nil
}

// harnessSession is what h's harness is started with: the gateway endpoint of its wire and its
// token, the run's tools over MCP, the model to ask for and the agent's limit and instructions.
func (d *drive) harnessSession(h *hostRun, gw *gateway.Gateway, bin, home, token string, tools []harness.Tool) harness.Session {
	run := d.run.Metadata.Name
	askModel := d.acc.model
	if askModel == "" {
		askModel, _ = familyModel(d.e.Prices, d.acc.provider.Name(), "sonnet")
	}
	// The instructions are the built-in loop's system prompt: the agent's skills (its own and the
	// learned ones) and a learning run's notes index; the harness opens a skill or a note with the
	// run's skill and note tools, served over MCP like the other tools.
	return harness.Session{Run: run, Bin: bin, Dir: d.folder, Home: home, GatewayURL: h.wire.BaseURL(gw.URL()), Token: token, Wire: h.wire,
		Headers: map[string]string{gateway.RunHeader: run}, MCPURL: gw.URL() + "/v2/gateway/runs/" + run + "/mcp", MCPName: mcpName,
		Tools: tools, Model: askModel, MaxTokens: d.maxTokens(), Instructions: d.system(), Skills: d.harnessSkills(),
		Env: harness.BaseEnv(os.Getenv("PATH"), home), Permit: h.permit}
}

// startProcess starts hr's harness with sess. A node's harness may call the gateway while it
// starts, and those calls take the node's mu, which its caller holds: it is let go meanwhile.
func (d *drive) startProcess(hr *harnessRun, drv harness.Driver, sess harness.Session, node string) error {
	h := hr.h
	if node != "" {
		h.mu.Unlock()
	}
	proc, err := drv.Start(h.ctx, sess)
	if node != "" {
		h.mu.Lock()
	}
	if err != nil {
		return d.harnessFailed(err)
	}
	hr.undo = append(hr.undo, proc.Stop)
	hr.proc = proc
	if node == "" {
		h.mu.Lock()
		h.proc = proc
		h.mu.Unlock()
	}
	return nil
}

// dropHarnessHome removes a finished run's harness home (its config, with the dead token, and the
// harness's own files): a run cancelled, failed or past its deadline while its harness was
// stopped, or while it waited, ends here rather than in harnessLoop.
func (d *drive) dropHarnessHome() {
	if d.e.DataDir == "" || d.run == nil {
		return
	}
	if err := os.RemoveAll(harnessHome(d.e.DataDir, d.run.Metadata.Name)); err != nil {
		d.log.Warn("remove the harness home", "err", err)
	}
}

// harnessFailed turns a harness's own failure into HarnessError, its stderr on the timeline.
func (d *drive) harnessFailed(err error) error {
	var ee *harness.ExitError
	if errors.As(err, &ee) {
		d.j.Emit(api.Event{Type: api.EventHarnessExited, Message: ee.Error(), Data: mustRaw(map[string]any{"stderr": ee.Tail})})
		return &failure{api.ReasonHarnessError, ee.Error()}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &failure{api.ReasonHarnessError, err.Error()}
}

// diverged parks a run whose replay went another way than its journal.
func (d *drive) diverged(ctx context.Context, dv *divergence) error {
	d.status.Phase, d.status.Reason = api.PhaseNeedsResolution, api.ReasonReplayDiverged
	d.status.Message = fmt.Sprintf("step %s: after a restart %s; the run cannot be replayed from its journal (cancel it, or start a new run)", dv.key, dv.why)
	d.status.WaitingOn = &api.WaitingOn{Kind: "resolution", StepKey: dv.key, Detail: dv.why}
	d.j.Emit(api.Event{Type: api.EventRunDiverged, StepKey: dv.key, Message: d.status.Message})
	return d.parkWithFolder(ctx)
}
