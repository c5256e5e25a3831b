package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/gateway"
	"agentrun.dev/agentrun/internal/gateway/translate"
	"agentrun.dev/agentrun/internal/harness"
	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/metrics"
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

// gatewayResult is a harness model step's recorded result: the summary the accounting reads and
// the vendor's answer as it was, so a replay answers byte for byte.
type gatewayResult struct {
	modelResult
	HTTPStatus  int    `json:"httpStatus"`
	ContentType string `json:"contentType,omitempty"`
	Body        []byte `json:"body"`
	// Wire is the wire format of Body when it is not the harness's: the gateway translated the
	// call (a Responses call answered by Anthropic) and translates Body back at every drive.
	Wire gateway.Wire `json:"wire,omitempty"`
}

// modelCall is one harness model call on its way through ModelCall: shaped for the turn (shape),
// guarded, made as journal step key (upstream) or replayed from it, accounted and answered (reply).
type modelCall struct {
	key, model string
	maxTokens  int
	provider   model.Provider
	// body is the harness's request with the turn's model and limit put in; out is it encoded, as
	// the harness's wire has it; norm is it as the replay check compares it.
	body      map[string]json.RawMessage
	out, norm []byte
	// fwd and fwdBody are what goes to the vendor, speaking vendorWire: the call as shaped, or
	// for a Responses call on Anthropic its translation tr (the journal records the vendor's
	// answer; every drive translates it back).
	fwd        gateway.Call
	fwdBody    []byte
	vendorWire gateway.Wire
	tr         *translate.Translation
	// steerable: a message may stop the call (the run's own loop, not a workflow's agent node).
	steerable bool
	// made is the result of the call made in this drive (nil for one the journal answers) as it
	// was built, and text its reply's text: neither is decoded or summarised again. accounted is
	// set once the step's own commit has accounted it.
	made      *gatewayResult
	text      string
	accounted bool
}

func (h *hostRun) ModelCall(rctx context.Context, c gateway.Call) (gateway.Reply, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err == nil && h.redrive {
		// A call after a rollback's stop would be recorded where the next turn's goes.
		return gateway.Reply{}, h.fail(errRedrive)
	}
	body, err := h.open(c)
	if err != nil {
		return gateway.Reply{}, err
	}
	if h.cur == nil {
		return gateway.Reply{}, &gateway.BadRequest{Msg: "a model call outside a turn"}
	}
	d, ctx := h.d, h.ctx
	// The call ends the tool calls of the one before it and the token counts it allowed.
	d.promptTools += h.tools
	h.tools, h.counts = 0, 0
	mc, err := h.shape(c, body)
	if err != nil {
		return gateway.Reply{}, err
	}
	if mc.steerable {
		ts, fresh, err := d.stopAt(ctx, h.n, mc.key, !d.j.Completed(mc.key))
		if err != nil {
			return gateway.Reply{}, h.fail(err)
		}
		if ts != nil {
			return h.stopCall(ctx, rctx, mc.key, ts, fresh, mc.body, mc.out)
		}
	}
	if err := d.guard(ctx, mc.key, &model.Request{Model: mc.model, MaxTokens: mc.maxTokens}, mc.fwdBody, mc.model); err != nil {
		return gateway.Reply{}, h.fail(err)
	}
	defer d.settle(mc.key)
	res, err := h.step(mc)
	if errors.Is(err, journal.ErrNondeterminism) {
		return gateway.Reply{}, h.fail(&divergence{key: mc.key, why: "the harness sent a different request than the one recorded (beyond session ids, metadata and cache keys)"})
	}
	if errors.Is(err, journal.ErrStopped) {
		// A message stopped the call while the vendor answered it.
		ts, fresh, serr := d.stopAt(ctx, h.n, mc.key, true)
		if serr != nil {
			return gateway.Reply{}, h.fail(serr)
		}
		if ts == nil {
			return gateway.Reply{}, h.fail(&failure{api.ReasonInternalError, "a model call was stopped for a message the run does not have"})
		}
		return h.stopCall(ctx, rctx, mc.key, ts, fresh, mc.body, mc.out)
	}
	if err != nil {
		return gateway.Reply{}, h.fail(err)
	}
	gr, err := h.recorded(mc, res)
	if err != nil {
		return gateway.Reply{}, h.fail(err)
	}
	h.n++
	return h.reply(mc, gr)
}

// open begins a model call or a token count: the run still goes on in this drive (else the error
// that stopped it) and the body is a JSON object (else the harness's 400).
func (h *hostRun) open(c gateway.Call) (map[string]json.RawMessage, error) {
	if h.err != nil {
		return nil, h.err
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(c.Body, &body); err != nil {
		return nil, &gateway.BadRequest{Msg: "the body is not a JSON object: " + err.Error()}
	}
	return body, nil
}

// encode is body as it goes on (out) and as the replay check compares it (norm), with the run
// folder and this run's harness homes as placeholders.
func (h *hostRun) encode(body map[string]json.RawMessage) (out, norm []byte) {
	d := h.d
	out, _ = json.Marshal(body)
	return out, gateway.Normalize(body, d.folder, h.home, harnessHome(d.e.DataDir, d.run.Metadata.Name))
}

// shape makes c, whose body is body, the turn's call: the turn's model and the agent's output
// limit, whatever the harness asked for (the cap's worst case is computed on them), and for a
// Responses call on Anthropic its translation.
func (h *hostRun) shape(c gateway.Call, body map[string]json.RawMessage) (*modelCall, error) {
	d := h.d
	mc := &modelCall{key: h.prefix + fmt.Sprintf("t%d/model", h.n), model: h.cur.model, maxTokens: d.maxTokens(),
		provider: d.acc.provider, body: body, steerable: h.prefix == "" && !h.proposal}
	if asked := gateway.LimitCall(h.wire, body, mc.model, mc.maxTokens); asked > mc.maxTokens && !h.clamped && !d.j.Completed(mc.key) {
		h.clamped = true
		d.j.Emit(api.Event{Type: api.EventGatewayClamped, StepKey: mc.key, Message: fmt.Sprintf("%s asked for %d output tokens a call; the gateway clamps every call to the agent's maxTokens (%d)", h.name, asked, mc.maxTokens)})
	}
	mc.out, mc.norm = h.encode(body)
	mc.fwd, mc.fwdBody, mc.vendorWire = c, mc.out, h.wire
	if h.wire == gateway.WireResponses && mc.provider.Name() == "anthropic" {
		if err := h.translateCall(mc); err != nil {
			return nil, err
		}
	}
	return mc, nil
}

// translateCall has mc go to Anthropic as a Messages call, and says so at the run's first call.
func (h *hostRun) translateCall(mc *modelCall) error {
	d := h.d
	tr, err := translate.Request(mc.out)
	if err != nil {
		return &gateway.BadRequest{Msg: err.Error()}
	}
	hdr := http.Header{"Content-Type": {"application/json"}}
	if tr.Stream {
		hdr.Set("Accept", "text/event-stream")
	}
	mc.tr = tr
	mc.fwd, mc.fwdBody, mc.vendorWire = gateway.Call{Wire: gateway.WireAnthropic, Path: "/messages", Header: hdr}, tr.Body, gateway.WireAnthropic
	if _, seen := d.j.Lookup(h.prefix + "t0/model"); !seen && h.n == 0 {
		msg := fmt.Sprintf("%s speaks the OpenAI Responses API and this run's model access is Anthropic's: the gateway translates each call to the Messages API and each answer back (the journal keeps Anthropic's bytes)", h.name)
		if len(tr.Dropped) > 0 {
			msg += "; tools Anthropic does not serve are left out: " + strings.Join(tr.Dropped, ", ")
		}
		d.j.Emit(api.Event{Type: api.EventGatewayTranslated, StepKey: mc.key, Message: msg})
	}
	return nil
}

// step is mc's journal step: the call made now (upstream), accounted in the step's own commit,
// or answered from the journal.
func (h *hostRun) step(mc *modelCall) (journal.Outcome, error) {
	d := h.d
	return d.j.Do(h.ctx, journal.Spec{Key: mc.key, Kind: "model", Title: fmt.Sprintf("model call (%s via %s, call %d)", mc.model, h.name, h.n+1),
		Args:   harnessCallArgs(h.name, mc.provider.Name(), mc.model, len(mc.out), mc.tr != nil),
		HashOf: journal.Encoded(mc.norm), Safe: !d.acc.byok, Bill: !d.acc.byok && d.bills(mc.key), Concurrent: true,
		Status: func(_ json.RawMessage, c *int64) (*api.AgentRunStatus, error) {
			// The result is the one upstream just built: accounted as it is, not decoded again.
			h.account(mc.made.modelResult, c, false)
			mc.accounted = true
			return &d.status, nil
		}},
		func(ctx context.Context) (any, *int64, error) { return h.upstream(ctx, mc) })
}

// upstream is mc's effect: the call forwarded to the vendor (under a context a message cancels,
// when it may stop the call), and its answer summarised once for the step and priced.
func (h *hostRun) upstream(ctx context.Context, mc *modelCall) (any, *int64, error) {
	d := h.d
	ctx, done := d.liveText(ctx, mc.key)
	defer done()
	forward := func(ctx context.Context) (int, string, []byte, error) {
		return d.forward(ctx, mc.provider, mc.fwd, mc.fwdBody)
	}
	var status int
	var ctype string
	var data []byte
	var err error
	if mc.steerable {
		status, ctype, data, err = d.steerForward(ctx, mc.vendorWire, forward)
	} else {
		status, ctype, data, err = forward(ctx)
	}
	if err != nil {
		return nil, nil, err
	}
	sum := gateway.Summarize(mc.vendorWire, data)
	resp := model.Response{Model: sum.Model, StopReason: sum.StopReason, Usage: sum.Usage}
	if sum.Text != "" {
		// The reply's text, for people reading the step (a workflow tree's value preview).
		resp.Content = []model.Block{{Type: model.BlockText, Text: sum.Text}}
	}
	recorded, vendor := d.callCost(&resp, mc.model, mc.key)
	gr := gatewayResult{modelResult: modelResult{Response: resp, VendorMicros: vendor}, HTTPStatus: status, ContentType: ctype, Body: data}
	if mc.vendorWire != h.wire {
		gr.Wire = mc.vendorWire
	}
	mc.made, mc.text = &gr, sum.Text
	return gr, recorded, nil
}

// recorded is mc's result: the one made now, or the journal's decoded once, then accounted when
// the step's commit did not (a replayed step, one a person resolved).
func (h *hostRun) recorded(mc *modelCall, res journal.Outcome) (*gatewayResult, error) {
	gr := mc.made
	if gr == nil {
		gr = new(gatewayResult)
		if err := json.Unmarshal(res.Result, gr); err != nil {
			return nil, fmt.Errorf("decode %s result: %w", mc.key, err)
		}
	}
	if !mc.accounted {
		h.account(gr.modelResult, res.CostMicros, res.Copied)
		if !res.Replayed {
			if _, err := h.d.j.Commit(h.ctx, &h.d.status, false, nil); err != nil {
				return nil, err
			}
		}
	}
	return gr, nil
}

// account adds a call's usage and cost c to the turn (a workflow node's turn cost for a node) and
// the run's totals; a fork's copied call cost this run nothing.
func (h *hostRun) account(mr modelResult, c *int64, copied bool) {
	if copied {
		mr.VendorMicros = new(int64)
	}
	tc := h.turnCost
	if tc == nil {
		tc = &h.d.turnCost
	}
	h.d.accountTurn(h.cur.index, tc, mr, c)
}

// reply is the harness's answer to mc from its result gr: the vendor's bytes as recorded,
// translated back when they are of another wire than the harness's.
func (h *hostRun) reply(mc *modelCall, gr *gatewayResult) (gateway.Reply, error) {
	recWire := h.wire
	if gr.Wire != "" {
		recWire = gr.Wire
	}
	// The model's text in this call is the reason an approval of the tool calls it asks for shows.
	if mc.made != nil {
		h.d.turnText = mc.text
	} else {
		h.d.turnText = gateway.Summarize(recWire, gr.Body).Text
	}
	if recWire == h.wire {
		return gateway.Reply{Status: gr.HTTPStatus, ContentType: gr.ContentType, Body: gr.Body}, nil
	}
	if mc.tr == nil {
		return gateway.Reply{}, h.fail(&failure{api.ReasonModelError, fmt.Sprintf("step %s recorded a %s answer, which this drive cannot translate for %s (the run's provider changed?)", mc.key, recWire, h.name)})
	}
	translated, ctype, err := mc.tr.Response(gr.Body)
	if err != nil {
		return gateway.Reply{}, h.fail(&failure{api.ReasonModelError, fmt.Sprintf("step %s: %v", mc.key, err)})
	}
	return gateway.Reply{Status: gr.HTTPStatus, ContentType: ctype, Body: translated}, nil
}

// Refused stops the drive when the gateway refuses one of the harness's model calls (it asked the
// vendor to act on its own): the run fails HarnessError saying what and where.
func (h *hostRun) Refused(msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fail(&failure{api.ReasonHarnessError, fmt.Sprintf("harness %s sent a model call the gateway refuses: %s", h.name, msg)})
}

// harnessCallArgs are a harness model step's arguments, as people see them.
func harnessCallArgs(name, provider, model string, bytes int, translated bool) map[string]any {
	a := map[string]any{"harness": name, "provider": provider, "model": model, "bytes": bytes}
	if translated {
		a["translated"] = "openai-responses to anthropic-messages"
	}
	return a
}

// forward sends the harness's request to the vendor as it is (with the turn's model and limit),
// retrying transient failures as the built-in loop's calls do, and reads the whole answer.
func (d *drive) forward(ctx context.Context, p model.Provider, c gateway.Call, body []byte) (int, string, []byte, error) {
	fw, ok := p.(model.Forwarder)
	if !ok {
		return 0, "", nil, &failure{api.ReasonModelError, "provider " + p.Name() + " cannot forward harness calls"}
	}
	var status int
	var ctype string
	var data, cut []byte
	err := model.Retry(ctx, func(attempt int, err error) {
		d.log.Warn("harness model call failed; retrying", "attempt", attempt, "err", err)
	}, func() (bool, error) {
		start := time.Now()
		resp, err := fw.Forward(ctx, c.Path, c.Header, body)
		var read []byte
		if err == nil {
			var rd io.Reader = resp.Body
			if s := model.SinkOf(ctx); s != nil {
				// People watching the run see the text as the vendor streams it.
				rd = gateway.StreamText(c.Wire, resp.Body, s.Text)
			}
			read, err = io.ReadAll(rd)
			resp.Body.Close()
		}
		metrics.ModelSeconds.Since(start, p.Name())
		if ctx.Err() != nil {
			// What was read is returned too: a stop reads the usage the cut stream reported.
			cut = read
			return false, ctx.Err()
		}
		retry := err != nil
		if err == nil {
			if resp.StatusCode/100 == 2 {
				status, ctype, data = resp.StatusCode, resp.Header.Get("Content-Type"), read
				return false, nil
			}
			retry = resp.StatusCode == 429 || resp.StatusCode >= 500
			err = fmt.Errorf("%s answered %d: %s", p.Name(), resp.StatusCode, clipText(strings.TrimSpace(string(read)), 500))
		}
		return retry, err
	})
	if err == nil {
		return status, ctype, data, nil
	}
	if ctx.Err() != nil {
		return 0, "", cut, ctx.Err()
	}
	return 0, "", nil, &failure{api.ReasonModelError, err.Error()}
}

// accountCall adds a model call's usage and cost to the run's status, as the built-in loop does.
func (d *drive) accountCall(cur *turnState, mr modelResult, c *int64) {
	d.accountTurn(cur.index, &d.turnCost, mr, c)
}

// accountTurn adds a model call's usage and cost to turn idx (whose running cost is turnCost)
// and to the run's totals: the one place a call's tokens and cost reach the status.
func (d *drive) accountTurn(idx int, turnCost *cost.Total, mr modelResult, c *int64) {
	d.spent.total.Add(micros(c))
	d.spent.vendor.Add(micros(mr.VendorMicros))
	turnCost.Add(micros(c))
	t := &d.status.Turns[idx]
	t.ModelCalls++
	if mr.Response.Model != "" {
		t.Model = mr.Response.Model
	}
	u := mr.Response.Usage
	t.InputTokens += u.InputTokens
	t.OutputTokens += u.OutputTokens
	t.CacheReadTokens += u.CacheReadInputTokens
	t.CacheWriteTokens += u.CacheCreationInputTokens
	t.CacheWrite1hTokens += u.CacheCreation1hInputTokens
	t.ReasoningTokens += u.ReasoningTokens
	t.CostUSD = turnCost.String()
	d.updateCost(nil)
}

// MaxCountsPerModelCall bounds the token counts (count_tokens) a harness may have the vendor
// answer between two model calls of its run: they are not billed, and without a bound a harness
// could make any number of vendor calls the run's cap never sees. Claude Code asks for a few.
const MaxCountsPerModelCall = 16

// countLimitReply is the refusal of a count past MaxCountsPerModelCall, in both shapes a client
// reads (the vendor's error object and ours), as the gateway's own refusals are.
func countLimitReply() gateway.Reply {
	msg := fmt.Sprintf("this run has asked for %d token counts since its last model call, the most it may (count_tokens is not billed): estimate the count, or make the model call", MaxCountsPerModelCall)
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": "rate_limit_error", "message": msg},
		"code": api.CodeTokenCountLimit, "message": msg})
	return gateway.Reply{Status: http.StatusTooManyRequests, ContentType: "application/json", Body: b}
}

// countResult is a token count step's recorded result: the vendor's answer as it was.
type countResult struct {
	HTTPStatus  int    `json:"httpStatus"`
	ContentType string `json:"contentType,omitempty"`
	Body        []byte `json:"body"`
	// InputTokens is the count the answer gave (0 for a refusal), shown with the step.
	InputTokens int64 `json:"inputTokens"`
}

// CountTokens is a token count (Anthropic's count_tokens) as a journal step: keyed by the request
// (count/HASH of it normalized as a model call's replay check is), so a harness started again
// after a crash, which asks the same count again, is answered from the journal and the vendor is
// not asked twice. It is safe (no effect: an interrupted count is asked again), never billed and
// not a turn's model call; the agentrun_gateway_counts_total metric counts it. The vendor's answer
// goes back as it is, a refusal too (a harness estimates the count itself then): the run has not
// stopped, so it is not the 503 of a model call that could not be made.
func (h *hostRun) CountTokens(_ context.Context, c gateway.Call) (gateway.Reply, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	body, err := h.open(c)
	if err != nil {
		return gateway.Reply{}, err
	}
	d, ctx := h.d, h.ctx
	// Counted for the model the call would go to, as a model call's model is the turn's.
	modelName := d.acc.model
	if h.cur != nil {
		modelName = h.cur.model
	}
	if modelName != "" {
		body["model"], _ = json.Marshal(modelName)
	}
	out, norm := h.encode(body)
	sum := sha256.Sum256(norm)
	key := "count/" + hex.EncodeToString(sum[:6])
	// A count the journal answers costs the vendor nothing; one the vendor answers is a call the
	// cap does not see, so a run has at most MaxCountsPerModelCall of them before its next model
	// call (which the cap does see). Past that the harness is refused and estimates itself.
	if !d.j.Completed(key) {
		if h.counts >= MaxCountsPerModelCall {
			return countLimitReply(), nil
		}
		h.counts++
	}
	provider := d.acc.provider
	res, err := d.j.Do(ctx, journal.Spec{Key: key, Kind: "count", Title: fmt.Sprintf("token count (%s via %s)", modelName, h.name),
		Args: map[string]any{"harness": h.name, "provider": provider.Name(), "model": modelName, "bytes": len(out)}, HashOf: journal.Encoded(norm), Safe: true},
		func(ctx context.Context) (any, *int64, error) { return countUpstream(ctx, provider, c, out) })
	if errors.Is(err, journal.ErrNondeterminism) {
		// Not reachable by a harness (the key is the request's hash), but said plainly if it is.
		return gateway.Reply{}, h.fail(&divergence{key: key, why: "a token count's request differs from the one recorded under its hash"})
	}
	if err != nil {
		return gateway.Reply{}, h.fail(err)
	}
	var cr countResult
	if err := json.Unmarshal(res.Result, &cr); err != nil {
		return gateway.Reply{}, h.fail(fmt.Errorf("decode %s result: %w", key, err))
	}
	outcome := "vendor"
	if res.Replayed {
		outcome = "journal"
	}
	metrics.GatewayCounts.Inc(provider.Name(), outcome)
	return gateway.Reply{Status: cr.HTTPStatus, ContentType: cr.ContentType, Body: cr.Body}, nil
}

// countUpstream asks provider for the token count c with body out. A failure to reach it is the
// harness's 502 answer (recorded: it estimates the count then), not an error of the run.
func countUpstream(ctx context.Context, provider model.Provider, c gateway.Call, out []byte) (any, *int64, error) {
	fw, ok := provider.(model.Forwarder)
	if !ok {
		return nil, nil, &failure{api.ReasonModelError, "provider " + provider.Name() + " cannot forward harness calls"}
	}
	start := time.Now()
	resp, err := fw.Forward(ctx, c.Path, c.Header, out)
	var data []byte
	if err == nil {
		data, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	metrics.ModelSeconds.Since(start, provider.Name())
	if ctx.Err() != nil {
		return nil, nil, ctx.Err()
	}
	if err != nil {
		msg, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": "api_error", "message": "count_tokens: " + provider.Name() + ": " + err.Error()}})
		return countResult{HTTPStatus: http.StatusBadGateway, ContentType: "application/json", Body: msg}, nil, nil
	}
	cr := countResult{HTTPStatus: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: data}
	if resp.StatusCode/100 == 2 {
		var n struct {
			InputTokens int64 `json:"input_tokens"`
		}
		json.Unmarshal(data, &n)
		cr.InputTokens = n.InputTokens
	}
	return cr, nil, nil
}

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
	h, proc, hctx := hr.h, hr.proc, hr.h.ctx
	run, home := d.run.Metadata.Name, hr.home
	defer func() {
		// Kept while the run waits (the next drive reuses it); gone once the run is over.
		if api.Finished(d.status.Phase) {
			os.RemoveAll(home)
		}
	}()
	defer hr.stop()
	// cur names the prompt of the next turn, for a rollback; skips are the turns rollbacks
	// discarded, which the harness is not given again.
	skips := d.rolledBackTurns()
	cur := "input"
	if strings.TrimSpace(d.run.Spec.Input) == "" {
		cur = fmt.Sprintf("m%d", msgN-1)
	}
	// turn is one user turn of the harness: its final text, or why the drive stops. A turn a
	// rollback discarded is not given to the harness (skipTurn).
	turn := func(prompt string) (string, error) {
		if err := h.beginTurn(prompt); err != nil {
			return "", err
		}
		h.mu.Lock()
		h.beginRollbackTurn(cur)
		cur = ""
		skip, skipped := skips[h.turn]
		var skipErr error
		if skipped && h.turn != "" {
			skipErr = h.skipTurn(skip.ts, skip.stop)
		}
		h.mu.Unlock()
		if skipped && h.turn != "" {
			return "", skipErr
		}
		text, err := proc.Turn(hctx, prompt)
		h.mu.Lock()
		herr := h.err
		h.mu.Unlock()
		if err := d.harnessTurnEnd(ctx, herr, err); err != nil {
			return "", err
		}
		return text, nil
	}
	for {
		text, err := turn(prompt)
		if err != nil {
			return err
		}
		h.mu.Lock()
		stopped, redrive := h.stopped, h.redrive
		h.stopped = nil
		if stopped == nil {
			d.setAnswer(text)
		}
		h.mu.Unlock()
		if redrive {
			// The harness's history holds the discarded turn: it starts again from the journal.
			return errRedrive
		}
		if stopped != nil {
			// A message stopped the turn: it (after any queued before it) is the next turn.
			next, err := d.nextMessage(ctx, msgN, "waiting for the message that stopped the turn")
			if err != nil {
				return err
			}
			cur = fmt.Sprintf("m%d", msgN)
			msgN++
			prompt = next
			continue
		}
		pending, err := d.e.Store.ListMessages(ctx, run, d.lastMsg)
		if err != nil {
			return err
		}
		if len(pending) == 0 && !d.run.Spec.KeepAlive {
			// A learning agent's run proposes what to keep in the harness's next user turn: its
			// model calls are the run's, through the gateway under the cap, as every other turn's.
			if err := d.learnFrom(ctx, true, func(ctx context.Context, fresh *bool) (json.RawMessage, error) {
				h.mu.Lock()
				h.proposal = true
				h.mu.Unlock()
				return d.harnessProposal(ctx, h.name, turn, fresh)
			}); err != nil {
				return err
			}
			return d.finishAnswer(ctx)
		}
		next, err := d.nextMessage(ctx, msgN, "the turn is done; waiting for your next message")
		if err != nil {
			return err
		}
		cur = fmt.Sprintf("m%d", msgN)
		msgN++
		prompt = next
	}
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
	// stop stops the process, releases its gateway token and ends its context.
	stop func()
}

// startHarness installs drv and starts it with the run's gateway token and the tools defs, its
// calls taking mu. node is a workflow agent node's step key: its calls are journaled under it,
// in a home of its own, on turn cur, and mu (held by the caller) is let go while it starts; ""
// is the run's own loop, whose turns begin with each prompt.
func (d *drive) startHarness(ctx context.Context, drv harness.Driver, defs []model.ToolDef, node string, mu *sync.Mutex, cur *turnState) (*harnessRun, error) {
	pkg := drv.Package()
	bin, err := harness.Install(ctx, d.e.DataDir, pkg, func(msg string) {
		d.j.Emit(api.Event{Type: api.EventHarnessInstall, Message: msg})
		d.j.Commit(ctx, &d.status, false, nil)
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &failure{api.ReasonHarnessUnavailable, err.Error()}
	}
	gw, err := d.e.gateway()
	if err != nil {
		return nil, &failure{api.ReasonHarnessUnavailable, err.Error()}
	}
	wire, err := harnessWire(drv, d.acc.provider.Name())
	if err != nil {
		return nil, err
	}
	run := d.run.Metadata.Name
	hctx, stop := context.WithCancelCause(ctx)
	h := &hostRun{d: d, ctx: hctx, stop: stop, wire: wire, name: drv.Name(), mu: mu, cur: cur}
	hr := &harnessRun{h: h}
	undo := []func(){func() { stop(nil) }}
	hr.stop = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	ok := false
	defer func() {
		if !ok {
			hr.stop()
		}
	}()
	if node != "" {
		h.prefix, h.turnCost = node+"/", &cost.Total{}
	}
	var tools []gateway.Tool
	var htools []harness.Tool
	for _, t := range defs {
		tools = append(tools, gateway.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
		htools = append(htools, harness.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
	}
	token, release := gw.Register(run, h.wire, h, tools)
	undo = append(undo, release) // the token dies with the drive (or the node)
	home := harnessHome(d.e.DataDir, run)
	if node != "" && d.runsInComputer() {
		// An agent node's harness has a home of its own (nodes of a map run at once): inside the
		// computer one of the slots guarded there.
		slotHome, release, err := d.takeNodeHome(ctx, node, mu)
		if err != nil {
			return nil, err
		}
		undo = append(undo, release)
		home, h.home = slotHome, slotHome
	} else if node != "" {
		sum := sha256.Sum256([]byte(node))
		home = filepath.Join(home, "nodes", hex.EncodeToString(sum[:8]))
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("harness home: %w", err)
	}
	hr.home = home
	maxTokens := d.maxTokens()
	askModel := d.acc.model
	if askModel == "" {
		askModel, _ = familyModel(d.e.Prices, d.acc.provider.Name(), "sonnet")
	}
	// The instructions are the built-in loop's system prompt: the agent's skills (its own and the
	// learned ones) and a learning run's notes index; the harness opens a skill or a note with the
	// run's skill and note tools, served over MCP like the other tools.
	sess := harness.Session{Run: run, Bin: bin, Dir: d.folder, Home: home, GatewayURL: wire.BaseURL(gw.URL()), Token: token, Wire: wire,
		Headers: map[string]string{gateway.RunHeader: run}, MCPURL: gw.URL() + "/v2/gateway/runs/" + run + "/mcp", MCPName: mcpName,
		Tools: htools, Model: askModel, MaxTokens: maxTokens, Instructions: d.system(), Skills: d.harnessSkills(),
		Env: harness.BaseEnv(os.Getenv("PATH"), home), Permit: h.permit}
	where, err := d.harnessInComputer(hctx, &sess, gw)
	if err != nil {
		return nil, &failure{api.ReasonHarnessUnavailable, err.Error()}
	}
	if node != "" {
		// A node's harness may call the gateway while it starts, and those calls take mu.
		mu.Unlock()
	}
	proc, err := drv.Start(hctx, sess)
	if node != "" {
		mu.Lock()
	}
	if err != nil {
		return nil, d.harnessFailed(err)
	}
	undo = append(undo, proc.Stop)
	hr.proc = proc
	if node == "" {
		mu.Lock()
		h.proc = proc
		mu.Unlock()
	}
	ok = true
	what := ""
	if node != "" {
		what = " for workflow node " + node
	}
	d.j.Emit(api.Event{Type: api.EventHarnessStarted, Message: fmt.Sprintf("started %s (%s) %s%s; its model calls and tools go through this runner's gateway", drv.Name(), pkg.Spec(), where, what)})
	return hr, nil
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
