package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/metrics"
	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/secret"
	"agentrun.dev/agentrun/internal/store"
)

// Router strategies (serve/runner --router); the router's rules, prompt and answer are in
// internal/model (route.go), this file journals and charges its decisions.
const (
	RouterModel = model.RouterModel
	RouterRules = model.RouterRules
)

// inputOverhead is added to the bytes of a request when bounding its input tokens: the vendor's own
// framing (roles, tool-use preamble) on top of the text, which is never more tokens than bytes.
const inputOverhead = 1024

// Secrets opens sealed secrets for BYOK runs.
type Secrets interface {
	Open(ctx context.Context, name string) (map[string]string, error)
}

// access is how a drive reaches its model.
type access struct {
	byok     bool
	routed   bool
	provider model.Provider
	model    string // the model when not routed
	families []string
}

// The family helpers live with the router in internal/model; these names keep the loop's
// callers short.
var (
	familyModel    = model.FamilyModel
	familyOf       = model.FamilyOf
	fallbackFamily = model.FallbackFamily
)

func (d *drive) resolveAccess(ctx context.Context) (*access, error) {
	spec := d.spec
	if spec.Model.Access == api.AccessBYOK {
		if d.e.Secrets == nil {
			return nil, &failure{api.ReasonModelError, "this runner cannot open secrets (no seal key)"}
		}
		keys, err := d.e.Secrets.Open(ctx, spec.Model.APIKeySecret)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil, &failure{api.ReasonModelError, fmt.Sprintf("secret %q does not exist: a signed-in person must set it (see docs/money.md#your-own-key)", spec.Model.APIKeySecret)}
			}
			return nil, fmt.Errorf("open secret %s: %w", spec.Model.APIKeySecret, err)
		}
		det := &secret.Detector{}
		for k, v := range keys {
			det.Add("secret:"+spec.Model.APIKeySecret+"/"+k, v)
		}
		d.secretDetector = det
		provider := string(spec.Model.Provider)
		if provider == "" {
			var ok bool
			if provider, ok = model.ProviderForKeys(keys); !ok {
				return nil, &failure{api.ReasonModelError, fmt.Sprintf("secret %q holds none of ANTHROPIC_API_KEY, OPENAI_API_KEY, OPENROUTER_API_KEY", spec.Model.APIKeySecret)}
			}
		}
		kv, _ := model.KeyVar(provider)
		key := strings.TrimSpace(keys[kv])
		if key == "" {
			return nil, &failure{api.ReasonModelError, fmt.Sprintf("secret %q has no %s for provider %s", spec.Model.APIKeySecret, kv, provider)}
		}
		p, err := d.e.Models.WithKey(provider, key)
		if err != nil {
			return nil, &failure{api.ReasonModelError, err.Error()}
		}
		return &access{byok: true, provider: p, model: spec.Model.Name}, nil
	}
	res, err := d.e.Models.Choose(string(spec.Model.Provider), spec.Model.Name, spec.Model.Families)
	if err != nil {
		return nil, &failure{api.ReasonModelError, err.Error()}
	}
	p, _, err := d.e.Models.Resolve(res.Provider, res.Model)
	if err != nil && res.Routed {
		p, _, err = d.e.Models.Resolve(res.Provider, "x") // only the provider matters
	}
	if err != nil {
		return nil, &failure{api.ReasonModelError, err.Error()}
	}
	return &access{routed: res.Routed, provider: p, model: res.Model, families: res.Families}, nil
}

// turnState is the model chosen for the current turn.
type turnState struct {
	index    int // into status.Turns
	model    string
	family   string
	chosenBy string
}

// spend is the run's money so far, rebuilt from the journal on every drive.
type spend struct {
	total  cost.Total // what status.cost.totalUSD shows: billed (server access) or list price (BYOK)
	vendor cost.Total
}

func (d *drive) limit() (cost.Micros, bool) {
	if d.acc != nil && d.acc.byok {
		return 0, false
	}
	if d.run.Spec.MaxCostUSD == "" {
		return 0, false
	}
	m, err := cost.ParseUSD(d.run.Spec.MaxCostUSD)
	return m, err == nil
}

func (d *drive) updateCost(needed *cost.Micros) {
	c := &api.RunCost{TotalUSD: d.spent.total.String(), VendorUSD: d.spent.vendor.String(), Billing: "credits"}
	if d.acc != nil && d.acc.byok {
		c.Billing = "none"
	}
	if l, ok := d.limit(); ok {
		c.LimitUSD = l.String()
	}
	if needed != nil {
		c.NeededUSD = needed.String()
	}
	d.status.Cost = c
}

// inputBound bounds a request's input tokens: a token is never less than a byte, so the bytes of
// the request (system prompt, messages, tool definitions) plus the vendor's framing bound it;
// pictures count by their size (imageTokens), not their bytes.
func inputBound(req *model.Request) int64 {
	return inputBoundOf(req, -1)
}

// inputBoundOf is inputBound with size, when not negative, the length of json.Marshal(req) the
// caller already knows (used as is when req has no pictures to leave out).
func inputBoundOf(req *model.Request, size int64) int64 {
	stripped, images := withoutImages(req)
	if stripped != req || size < 0 {
		enc, _ := json.Marshal(stripped)
		size = int64(len(enc))
	}
	return size + inputOverhead + images
}

// sizeOf is a body's length as the guard takes it: -1 (encode the request) when there is none.
func sizeOf(body []byte) int64 {
	if body == nil {
		return -1
	}
	return int64(len(body))
}

// guard runs before every call on the server's access that is not already recorded: the call's
// worst case (the whole request as input at the dearest input rate, plus maxTokens of output,
// with the markup) must fit under what is left of the run's cap, and is reserved from credits
// (when credits are enforced). Otherwise the run parks: MaxCostReached with the least cap it
// needs, or Credits with the least it needs added. size is the length of the request's encoding
// when the caller knows it, or -1.
func (d *drive) guard(ctx context.Context, key string, req *model.Request, size int64, modelID string) error {
	if d.acc.byok || d.j.Completed(key) {
		return nil
	}
	worst, priced := d.e.Prices.WorstCall(modelID, inputBoundOf(req, size), int64(req.MaxTokens))
	// What the call may be charged, whatever its reply claims (callCost). Calls in flight at the
	// same time (a workflow's map items) each count at their worst case until they settle.
	for held := false; ; {
		open, settled := d.openReservations(key)
		limit, capped := d.limit()
		if !capped || !priced {
			break
		}
		if _, over := cost.OverCap(d.spent.total.Known+open, worst, limit); over {
			// The cap may have been raised since this drive read the run.
			if run, err := d.e.Store.GetRun(ctx, d.run.Metadata.Name); err == nil {
				d.run.Spec.MaxCostUSD = run.Spec.MaxCostUSD
				limit, _ = d.limit()
			}
		}
		needed, over := cost.OverCap(d.spent.total.Known+open, worst, limit)
		if !over {
			break
		}
		if _, alone := cost.OverCap(d.spent.total.Known, worst, limit); !alone && open > 0 {
			// Only the worst cases of calls in flight beside it leave no room: they settle at
			// what they cost (usually far less), so the call waits for one rather than parking
			// the run on a cap it has not reached.
			if !held {
				held = true
				d.j.Emit(api.Event{Type: api.EventCostHeld, StepKey: key, Message: fmt.Sprintf(
					"the next call (%s, %s) may be billed up to $%s: with the worst cases of the calls in flight beside it ($%s) and the $%s spent, the run's $%s cap has no room for it yet, so it waits for one of them to settle",
					key, modelID, worst, open, d.spent.total.Known, limit)})
			}
			var err error
			if d.j.Outside(func() {
				select {
				case <-settled:
				case <-ctx.Done():
					err = fmt.Errorf("call %s waiting for the calls in flight to settle: %w", key, ctx.Err())
				}
			}) {
				if err != nil {
					return err
				}
				continue
			}
		}
		msg := fmt.Sprintf("the next call (%s, %s) may be billed up to $%s and the run has spent $%s of its $%s cap: raise the cap to at least $%s (agentrun runs raise-cap %s %s)",
			key, modelID, worst, d.spent.total.Known, limit, needed, d.run.Metadata.Name, needed)
		d.status.Phase, d.status.Reason, d.status.Message = api.PhaseWaiting, api.ReasonMaxCostReached, msg
		d.status.WaitingOn = &api.WaitingOn{Kind: "cost", StepKey: key, Detail: msg}
		d.updateCost(&needed)
		return d.park(ctx, &api.Event{Type: api.EventRunWaiting, StepKey: key, Message: "cap reached: " + msg})
	}
	d.resMu.Lock()
	d.reserved[key] = reservation{amount: worst, priced: priced, open: priced}
	d.resMu.Unlock()
	res, err := d.e.Store.ReserveCredits(ctx, d.j.Lease(), store.Reservation{Run: d.run.Metadata.Name, StepKey: key, Attempt: d.j.NextAttempt(key), Amount: int64(worst)})
	if err != nil {
		return err
	}
	if !res.Enforced {
		d.resMu.Lock()
		r := d.reserved[key]
		r.unheld = true
		d.reserved[key] = r
		d.resMu.Unlock()
	}
	if res.Enforced && !res.OK {
		needed := cost.CreditsShort(worst, res.Available)
		msg := fmt.Sprintf("out of credits: the next call (%s, %s) may be billed up to $%s and $%s is available; add at least $%s (agentrun credits add %s)",
			key, modelID, worst, cost.Micros(max(res.Available, 0)), needed, needed)
		d.status.Phase, d.status.Reason, d.status.Message = api.PhaseWaiting, api.ReasonCredits, msg
		d.status.WaitingOn = &api.WaitingOn{Kind: "credits", StepKey: key, Detail: msg}
		d.updateCost(&needed)
		// Credits held by other runs' calls in flight come back when they settle: look again soon.
		// Otherwise an add wakes the run; it also looks again now and then, in case the add
		// committed between this reservation and the park.
		recheck := 30 * time.Second
		if res.ReservedByOthers > 0 {
			recheck = 2 * time.Second
		}
		wake := d.status.Deadline
		if t := time.Now().Add(recheck); wake == nil || t.Before(*wake) {
			wake = &t
		}
		d.j.Emit(api.Event{Type: api.EventRunWaiting, StepKey: key, Message: msg})
		if _, err := d.j.Commit(ctx, &d.status, true, wake); err != nil {
			return err
		}
		return errParked
	}
	return nil
}

// reservation is the worst case guard checked for a call on the server's access before it was
// made, and reserved from credits: the most the call is charged. priced is false when the
// requested model is not in the price table, so nothing bounded the call.
type reservation struct {
	amount cost.Micros
	priced bool
	// open: the call has not settled (its cost is not yet in spent).
	open bool
	// unheld: credits were not enforced when the call was guarded, so nothing was reserved.
	unheld bool
}

// bills reports whether the result of call key (on the server's access) is charged to credits
// with its commit: unless guard found credits not enforced (none were ever added). A charge
// applies only against the call's reservation, and with credits never added there is none (nor
// from an earlier attempt: adds never go back to zero), so the commit would carry a statement
// that does nothing; without a guard's answer the call is billed as before.
func (d *drive) bills(key string) bool {
	d.resMu.Lock()
	defer d.resMu.Unlock()
	r, ok := d.reserved[key]
	return !ok || !r.unheld
}

// settle marks the reservation of step key as no longer in flight: its cost, if any, is in spent.
func (d *drive) settle(key string) {
	d.resMu.Lock()
	defer d.resMu.Unlock()
	if r, ok := d.reserved[key]; ok && r.open {
		r.open = false
		d.reserved[key] = r
		if d.settled != nil {
			close(d.settled)
			d.settled = nil
		}
	}
}

// openReservations is the sum of the worst cases of the calls other than key still in flight,
// and a channel closed when one of them settles.
func (d *drive) openReservations(key string) (cost.Micros, <-chan struct{}) {
	d.resMu.Lock()
	defer d.resMu.Unlock()
	if d.reserved == nil {
		d.reserved = map[string]reservation{}
	}
	if d.settled == nil {
		d.settled = make(chan struct{})
	}
	var open cost.Micros
	for k, r := range d.reserved {
		if r.open && k != key {
			open += r.amount
		}
	}
	return open, d.settled
}

// callCost prices the response of the call of step key: what the run records (billed on the
// server's access, list price on BYOK) and the list price; nil when the model is not in the price
// table. On the server's access the charge is bounded by the call's reservation: usage priced
// above it is the vendor's discrepancy, recorded on the timeline (cost.discrepancy) and in the
// metrics, not charged, so a reply claiming any usage cannot take the run past its cap or the
// credits below zero.
func (d *drive) callCost(resp *model.Response, requested, key string) (recorded, vendor *int64) {
	id := resp.Model
	if id == "" {
		id = requested
	}
	p, ok := d.e.Prices.Lookup(id)
	if !ok {
		if p, ok = d.e.Prices.Lookup(requested); !ok {
			return nil, nil
		}
	}
	u := usageOf(resp.Usage)
	v := int64(p.Cost(u))
	if d.acc.byok {
		return &v, &v
	}
	billed := p.Bill(u)
	d.resMu.Lock()
	r, ok := d.reserved[key]
	d.resMu.Unlock()
	if !ok {
		// Not reached: guard runs before every call on the server's access.
		b := int64(billed)
		return &b, &v
	}
	if !r.priced {
		// The answer names a priced model, but the requested one had no worst case to reserve:
		// nothing bounded this charge, so it is unknown, as the requested model's cost is.
		return nil, &v
	}
	charged, excess := cost.Bound(billed, r.amount)
	if excess > 0 {
		metrics.CostDiscrepancies.Inc()
		metrics.CostDiscrepancyMicros.Add(float64(excess))
		data, _ := json.Marshal(map[string]any{"model": id, "usage": resp.Usage, "reportedUSD": billed.String(),
			"reservedUSD": r.amount.String(), "chargedUSD": charged.String(), "excessUSD": excess.String()})
		// callCost runs inside the call's effect, which may be outside the drive's lock.
		d.j.Locked(func() {
			d.j.Emit(api.Event{Type: api.EventCostDiscrepancy, StepKey: key, Data: data, Message: fmt.Sprintf(
				"the vendor reported usage for %s (%s: %d input, %d output tokens) billed at $%s, more than the $%s worst case reserved before the call; charged $%s, the $%s above it is a vendor discrepancy",
				key, id, resp.Usage.InputTokens, resp.Usage.OutputTokens, billed, r.amount, charged, excess)})
		})
	}
	b := int64(charged)
	return &b, &v
}

func usageOf(u model.Usage) cost.Usage {
	return cost.Usage{Input: u.InputTokens, Output: u.OutputTokens, CacheWrite: u.CacheCreationInputTokens,
		CacheWrite1h: u.CacheCreation1hInputTokens, CacheRead: u.CacheReadInputTokens, Reasoning: u.ReasoningTokens}
}

func micros(p *int64) *cost.Micros {
	if p == nil {
		return nil
	}
	m := cost.Micros(*p)
	return &m
}

// modelResult is a model step's recorded result: the response and its list-price cost.
type modelResult struct {
	model.Response
	VendorMicros *int64 `json:"vendorMicros,omitempty"`
}

// routeResult is a route step's recorded result.
type routeResult struct {
	Family     string      `json:"family"`
	Model      string      `json:"model"`
	ChosenBy   string      `json:"chosenBy"`
	Confidence float64     `json:"confidence,omitempty"`
	Reason     string      `json:"reason,omitempty"`
	Router     string      `json:"router,omitempty"`
	Usage      model.Usage `json:"usage,omitzero"`
	// VendorMicros is the routing call's list-price cost.
	VendorMicros *int64 `json:"vendorMicros,omitempty"`
	// Retry, on a first answer that was not the route asked for, is what the corrective retry
	// (step KEY/retry) needs; that step's decision is the turn's.
	Retry *routeRetry `json:"retry,omitempty"`
}

// route decides the family of the turn that starts at model call n, as journal step t{n}/route.
// A completed decision is replayed, never asked again.
func (d *drive) route(ctx context.Context, n int, prompt string) (turnState, error) {
	key := fmt.Sprintf("t%d/route", n)
	allowed := d.acc.families
	fb := model.FallbackFamily(allowed)
	provider := d.acc.provider.Name()
	var out journal.Outcome
	var err error
	var firstCost cost.Total // a corrected routing call's first call
	if d.e.Router == RouterRules {
		out, err = d.j.Do(ctx, journal.Spec{Key: key, Kind: api.StepKindRoute, Title: "route (rules)", Args: map[string]any{"families": allowed, "router": RouterRules}, HashOf: []any{allowed, prompt}, Safe: true},
			func(ctx context.Context) (any, *int64, error) {
				fam, why := model.RulesFamily(prompt, len(d.spec.Tools), allowed)
				id, _ := model.FamilyModel(d.e.Prices, provider, fam)
				zero := int64(0) // no model call: a known zero, billed and at list price
				return routeResult{Family: fam, Model: id, ChosenBy: "rules", Reason: why, Router: RouterRules, VendorMicros: &zero}, &zero, nil
			})
	} else {
		routerModel, _ := model.FamilyModel(d.e.Prices, provider, "haiku")
		req := model.StructuredRequest(model.RouterRequest(routerModel, allowed, prompt), model.RouteSchema)
		if out, err = d.routeStep(ctx, key, routerModel, req, fb, false); err != nil {
			return turnState{}, err
		}
		// An answer that is not the route asked for gets one corrective retry (model.Structured's
		// retry), a step of its own: guarded, billed and replayed like the first.
		var first routeResult
		if err := json.Unmarshal(out.Result, &first); err != nil {
			return turnState{}, fmt.Errorf("decode %s result: %w", key, err)
		}
		if first.Retry != nil {
			retried, err := d.routeStep(ctx, key+"/retry", routerModel, model.RouteSchema.Retry(req, &model.Response{Content: first.Retry.Content}, first.Retry.Problem), fb, true)
			if err != nil {
				return turnState{}, err
			}
			d.spent.total.Add(micros(out.CostMicros))
			if !out.Copied {
				d.spent.vendor.Add(micros(first.VendorMicros))
			}
			firstCost.Add(micros(out.CostMicros))
			out = retried
		}
	}
	var rr routeResult
	if err := json.Unmarshal(out.Result, &rr); err != nil {
		return turnState{}, fmt.Errorf("decode %s result: %w", key, err)
	}
	recorded, vendor := micros(out.CostMicros), micros(rr.VendorMicros)
	if out.Copied {
		zero := cost.Micros(0) // a fork's copied decision cost this run nothing
		vendor = &zero
	}
	if rr.Router == RouterRules {
		// A rules decision made no call and cost nothing; decisions recorded before the list price
		// was stored with them have none, and are zero too.
		zero := cost.Micros(0)
		if recorded == nil {
			recorded = &zero
		}
		if vendor == nil {
			vendor = &zero
		}
	}
	d.spent.total.Add(recorded)
	d.spent.vendor.Add(vendor)
	t := api.Turn{Index: len(d.status.Turns) + 1, Model: rr.Model, Family: rr.Family, ChosenBy: rr.ChosenBy, Confidence: rr.Confidence}
	rc := firstCost
	rc.Add(recorded)
	t.RouteCostUSD = rc.String()
	d.turnCost = rc
	t.CostUSD = rc.String()
	d.status.Turns = append(d.status.Turns, t)
	if !out.Replayed {
		d.j.Emit(api.Event{Type: api.EventTurnRouted, StepKey: key, Message: fmt.Sprintf("turn %d: %s (%s, chosen by %s)%s", t.Index, rr.Model, rr.Family, rr.ChosenBy, reasonSuffix(rr.Reason))})
	}
	return turnState{index: len(d.status.Turns) - 1, model: rr.Model, family: rr.Family, chosenBy: rr.ChosenBy}, nil
}

// routeRetry is a routing answer that was not the route asked for: what was wrong and the
// answer as it came, for the corrective retry's conversation.
type routeRetry struct {
	Problem string        `json:"problem"`
	Content []model.Block `json:"content"`
}

// routeStep makes (or replays) one routing call as step key: the decision, or, when the answer
// is not the route asked for, a fallback holding what the retry needs (final: the retry's own
// answer, so a wrong one falls back for good).
func (d *drive) routeStep(ctx context.Context, key, routerModel string, req *model.Request, fb string, final bool) (journal.Outcome, error) {
	allowed, provider := d.acc.families, d.acc.provider.Name()
	if err := d.guard(ctx, key, req, -1, routerModel); err != nil {
		return journal.Outcome{}, err
	}
	// Its reservation stops counting as in flight once the call is recorded (or not made):
	// left open, the turn's own model call counted the router's worst case a second time.
	defer d.settle(key)
	ctx = withModelRequest(ctx, req)
	title := "route (" + routerModel + ")"
	if final {
		title += " (corrective retry)"
	}
	return d.j.Do(ctx, journal.Spec{Key: key, Kind: api.StepKindRoute, Title: title, Args: map[string]any{"families": allowed, "model": routerModel}, HashOf: req, Safe: true, Bill: d.bills(key)},
		func(ctx context.Context) (any, *int64, error) {
			fallback := func(why string) routeResult {
				id, _ := model.FamilyModel(d.e.Prices, provider, fb)
				return routeResult{Family: fb, Model: id, ChosenBy: "fallback", Reason: why, Router: routerModel}
			}
			cctx, cancel := context.WithTimeout(ctx, model.RouterTimeout)
			defer cancel()
			resp, err := d.acc.provider.Complete(cctx, req)
			if err != nil {
				if ctx.Err() != nil {
					return nil, nil, ctx.Err()
				}
				if cctx.Err() != nil {
					// Cut off at the deadline: the vendor may bill what it did, which no
					// answer told us, so its cost is unknown (not $0).
					return fallback(fmt.Sprintf("router call failed: no answer within %s", model.RouterTimeout)), nil, nil
				}
				zero := int64(0) // refused or unreachable: nothing was done, nothing is charged
				return fallback("router call failed: " + clipText(err.Error(), 300)), &zero, nil
			}
			recorded, vendor := d.callCost(resp, routerModel, key)
			var r routeResult
			ans, problem := model.RouteSchema.Answer(resp)
			switch {
			case problem != "" && final:
				r = fallback("router: " + (&model.StructuredError{Tool: model.RouteSchema.Tool, Problem: problem}).Error())
			case problem != "":
				r = fallback("router: " + problem)
				r.Retry = &routeRetry{Problem: problem, Content: resp.Content}
			default:
				if fam, conf, why := model.RouterAnswer(ans, allowed); why != "" {
					r = fallback(why)
				} else {
					id, _ := model.FamilyModel(d.e.Prices, provider, fam)
					r = routeResult{Family: fam, Model: id, ChosenBy: "jev", Confidence: conf, Router: routerModel}
				}
			}
			r.Usage, r.VendorMicros = resp.Usage, vendor
			return r, recorded, nil
		})
}

func reasonSuffix(r string) string {
	if r == "" {
		return ""
	}
	return ": " + r
}

func clipText(s string, n int) string { return model.Clip(s, n) }
