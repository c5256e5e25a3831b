package agent

// A harness's model calls and token counts, as the gateway hands them to the run (gateway.Run):
// each model call is shaped for the turn, guarded by the cap, made or replayed as the turn's
// journal step, accounted and answered; a count is a step of its own, never billed.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/gateway"
	"agentrun.dev/agentrun/internal/gateway/translate"
	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/metrics"
	"agentrun.dev/agentrun/internal/model"
)

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

// ModelCall is one model call of the harness, in the order a reader follows it: open (the run
// goes on, the body is an object), shape (the turn's model and limit, a translation), a message's
// stop, guard (the cap), step (the journal: upstream makes the call, or the journal answers it),
// recorded (accounted) and reply.
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
	if err := d.guard(ctx, mc.key, &model.Request{Model: mc.model, MaxTokens: mc.maxTokens}, sizeOf(mc.fwdBody), mc.model); err != nil {
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
