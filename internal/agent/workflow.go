package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/telemetry"
	"agentrun.dev/agentrun/internal/workflow"
)

// workflowLoop runs the agent revision's workflow instead of the open loop. The engine
// (internal/workflow) decides what happens; wfHost performs each effect as a journal step under
// the node's execution path, so a drive after a crash, a park or a takeover runs the document
// again from the start and every completed effect is answered from the journal.
func (d *drive) workflowLoop(ctx context.Context, defs []model.ToolDef) error {
	// Children named by string run at the revisions pinned when this revision was saved.
	w, errs := d.e.wfs.validate(ctx, d.e.Store, d.spec.Workflow, d.spec.WorkflowChildren)
	if len(errs) > 0 {
		return &failure{api.ReasonWorkflowFailed, "spec.workflow: " + errs.Error()}
	}
	var in map[string]any
	if err := json.Unmarshal([]byte(d.run.Spec.Input), &in); err != nil || in == nil {
		return &failure{api.ReasonWorkflowFailed, "the input of a workflow run is a JSON object (the workflow's input), not " + api.FirstLine(d.run.Spec.Input, 80)}
	}
	d.status.Turns = d.status.Turns[:0]
	d.spent = spend{}
	d.updateCost(nil)
	h := &wfHost{d: d, defs: defs, tools: model.EncodeTools(defs)}
	ctx, span := telemetry.Tracer().Start(ctx, "invoke_workflow "+d.run.Spec.Agent, trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "invoke_workflow"), attribute.String("gen_ai.agent.name", d.run.Spec.Agent),
		attribute.String("gen_ai.conversation.id", d.run.Metadata.Name)))
	res, err := h.run(ctx, w, in)
	if err != nil && !d.parked {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	if d.parked {
		// An item parked the run (an approval, a question, the cap) while others ran: their
		// effects recorded their results first, and nothing started after.
		return errParked
	}
	if err != nil {
		var f *workflow.Failure
		if errors.As(err, &f) {
			d.status.FailedNode = f.Key
			return &failure{api.ReasonWorkflowFailed, f.Error()}
		}
		return err
	}
	if e := res.Escalation; e != nil {
		d.status.Escalation = &api.Escalation{Kind: e.Kind, Stage: e.Stage, Summary: e.Summary, Label: e.Label, StepKey: e.Path}
		d.setAnswer(e.Summary)
		return d.finish(ctx, api.PhaseSucceeded, api.ReasonEscalated, fmt.Sprintf("escalated at %q (%s, %s): %s", e.Label, e.Kind, e.Stage, api.FirstLine(e.Summary, 200)))
	}
	d.setAnswer(string(res.Output))
	return d.finishAnswer(ctx)
}

// wfHost is the workflow engine's Host on a drive. The engine calls it from several goroutines
// (map items, parallel branches); mu is the drive's lock: every host method holds it, and the
// journal (gated on it) lets it go while an effect runs, so the effects of a map run at once up
// to its maxConcurrency while the journal, the status and the drive's bookkeeping stay one
// goroutine's at a time. Each effect is its own step under its execution path, so the order in
// which they finish changes nothing on replay.
type wfHost struct {
	d    *drive
	defs []model.ToolDef
	// tools encodes defs once for every agent node's model calls (model.Tools).
	tools *model.Tools
	mu    sync.Mutex
}

// run runs w with the journal gated on the host's lock.
func (h *wfHost) run(ctx context.Context, w *workflow.Workflow, in map[string]any) (*workflow.Result, error) {
	return h.runAs(ctx, w, h, in)
}

// runAs is run with the engine calling host, which performs each effect through h (a learned
// workflow's keyedHost, which puts the step keys under its tool call's).
func (h *wfHost) runAs(ctx context.Context, w *workflow.Workflow, host workflow.Host, in map[string]any) (*workflow.Result, error) {
	// A model reply still on its way to the store (journal.Spec.Ahead; a learned workflow runs as
	// one of its tool calls) lands before the workflow's branches start their effects.
	if err := h.d.j.Settle(ctx); err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.d.j.Gate(&h.mu)
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.d.j.Gate(nil)
		h.mu.Unlock()
	}()
	return w.Run(ctx, host, in)
}

func (h *wfHost) Tool(ctx context.Context, key, tool string, args map[string]any) (workflow.ToolResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.tool(ctx, key, "", tool, args)
}

// tool runs one tool call through the built-in loop's tool step (the agent's tools, strict
// decoding, the deny set, approvals), as step key.
func (h *wfHost) tool(ctx context.Context, key, next, tool string, args any) (workflow.ToolResult, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return workflow.ToolResult{}, fmt.Errorf("encode %s arguments: %w", key, err)
	}
	h.d.turnText = "workflow step " + key
	blk, err := h.d.toolStep(ctx, key, next, model.Block{Type: model.BlockToolUse, ID: key, Name: tool, Input: raw})
	if err != nil {
		return workflow.ToolResult{}, err
	}
	return workflow.ToolResult{Content: blk.Content, IsError: blk.IsError}, nil
}

// Shell runs the command with bash in the run's computer, as the bash tool (so the approvals see
// it): env is exported first, quoted.
func (h *wfHost) Shell(ctx context.Context, key, command string, env map[string]string, deadline time.Duration) (workflow.ShellResult, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var pre strings.Builder
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(&pre, "export %s=%s\n", k, shellQuote(env[k]))
	}
	args := map[string]any{"command": pre.String() + command, "timeout_s": int64(math.Ceil(deadline.Seconds()))}
	r, err := h.tool(ctx, key, "", "bash", args)
	if err != nil {
		return workflow.ShellResult{}, err
	}
	st, _ := h.d.j.Lookup(key)
	return shellResult(st, r), nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// shellResult is a shell node's value: the command's own result as its step recorded it
// (computerResult.Exec), never read back from the text the model would see. A command that did
// not run (refused, denied, no computer) has no result: code -1, and the tool's text says why.
func shellResult(st *api.Step, r workflow.ToolResult) workflow.ShellResult {
	var rec computerResult
	if st == nil || st.State != api.StepCompleted || json.Unmarshal(st.Result, &rec) != nil {
		return workflow.ShellResult{Code: -1, Stderr: r.Content}
	}
	if rec.Exec == nil {
		return legacyParseExec(r)
	}
	x := rec.Exec
	res := workflow.ShellResult{Code: x.ExitCode, Stdout: strings.TrimSuffix(x.Stdout, "\n"), Stderr: strings.TrimSuffix(x.Stderr, "\n"), Truncated: x.Truncated}
	if x.TimedOut || x.ExitCode < 0 {
		// Killed: what ended it comes first (the first line is what a failed node quotes).
		how, _, _ := strings.Cut(r.Content, "\n")
		res.Code, res.Stderr = -1, how+"\n"+x.Stderr
	}
	return res
}

// legacyParseExec reads the bash tool's text (computer.formatExec) back into code, stdout and
// stderr, for a step recorded before the command's result was recorded with it (a run that
// crossed the upgrade): a stdout holding a line "--- stderr ---" is split there, which is why
// every step recorded since carries the result as a value. A call that did not run has no exit
// code: code -1, and the text says why.
func legacyParseExec(r workflow.ToolResult) workflow.ShellResult {
	text := r.Content
	first, rest, _ := strings.Cut(text, "\n")
	res := workflow.ShellResult{Code: -1}
	if _, err := fmt.Sscanf(first, "exit code %d", &res.Code); err != nil {
		// Timed out, killed, or not run (refused, not available): no exit code; the text says why.
		res.Stderr = text
		return res
	}
	if i := strings.LastIndex(rest, "\n[output cut at "); i >= 0 || strings.HasPrefix(rest, "[output cut at ") {
		res.Truncated = true
		if i >= 0 {
			rest = rest[:i]
		} else {
			rest = ""
		}
	}
	out, errText, found := strings.Cut(rest, "--- stderr ---\n")
	if !found {
		if o, e, ok := strings.Cut(rest, "--- stderr ---"); ok {
			out, errText = o, e
		}
	}
	res.Stdout, res.Stderr = strings.TrimSuffix(out, "\n"), errText
	return res
}

// questionMaxTokens bounds a typed question's answer.
const questionMaxTokens = 1024

// questionSchema is the forced tool's schema for a typed question: the answer, matching the
// question's schema (which may refer to the document's schemas), and the model's confidence.
func questionSchema(q workflow.Question) (*model.Schema, error) {
	return model.NewSchema("answer", "Answer the question: the answer, matching its schema, and how sure you are of it.",
		json.RawMessage(`{`+definitions(q.Definitions)+`"type": "object", "additionalProperties": false, "required": ["answer", "confidence"], "properties": {"answer": `+
			string(q.Schema)+`, "confidence": {"type": "number", "minimum": 0, "maximum": 1, "description": "how sure you are of the answer, 0 to 1"}}}`))
}

// definitions is the "definitions" member (with its comma) that a question's answer schema's
// {"$ref": "#/definitions/ID"} resolves against, at the root of the tool's schema; "" for none.
func definitions(defs map[string]json.RawMessage) string {
	if len(defs) == 0 {
		return ""
	}
	b, _ := json.Marshal(defs)
	return `"definitions": ` + string(b) + `, `
}

// Ask is one structured model call (the provider's structured output with the answer's schema),
// billed and held to the cap by the same guard as the loop's calls.
func (h *wfHost) Ask(ctx context.Context, key string, q workflow.Question) (workflow.Answer, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.d
	modelID := d.acc.model
	if !d.acc.byok {
		// The cheapest family unless the node asks for another tier.
		fam := map[string]string{"": "haiku", "fast": "haiku", "default": "sonnet", "strong": "opus"}[q.Tier]
		if id, ok := familyModel(d.e.Prices, d.acc.provider.Name(), fam); ok {
			modelID = id
		}
	}
	state, _ := json.MarshalIndent(q.State, "", "  ")
	schema, err := questionSchema(q)
	if err != nil {
		return workflow.Answer{}, &failure{api.ReasonWorkflowFailed, fmt.Sprintf("workflow step %s: %v", key, err)}
	}
	prompt := fmt.Sprintf("%s\n\nThe state:\n```json\n%s\n```\n\nAnswer by calling the tool answer with {\"answer\": ..., \"confidence\": 0..1} where answer matches:\n%s", q.Instructions, state, q.Schema)
	req := &model.Request{Model: modelID, System: "You answer one typed question of a workflow (" + q.Kind + " node " + q.Node + ") from the state you are given, by calling the tool answer.",
		Messages: []model.Message{userText(prompt)}, MaxTokens: max(questionMaxTokens, q.MaxTokens)}
	// The structured answer (model.Structured): step key, and KEY/retry for its corrective retry.
	raw, err := model.Structured(ctx, func(ctx context.Context, attempt int, r *model.Request) (*model.Response, error) {
		k, title := key, "question ("+q.Kind+", "+modelID+"): "+q.Node
		if attempt > 0 {
			k, title = key+"/retry", title+" (corrective retry)"
		}
		return h.modelCall(ctx, k, title, r)
	}, req, schema)
	var se *model.StructuredError
	if errors.As(err, &se) {
		return workflow.Answer{}, &failure{api.ReasonWorkflowFailed, fmt.Sprintf("workflow step %s: %v", key, se)}
	}
	if err != nil {
		return workflow.Answer{}, err
	}
	var ans struct {
		Answer     json.RawMessage `json:"answer"`
		Confidence float64         `json:"confidence"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return workflow.Answer{}, &failure{api.ReasonWorkflowFailed, fmt.Sprintf("workflow step %s: %v", key, err)}
	}
	return workflow.Answer{Value: ans.Answer, Confidence: ans.Confidence}, nil
}

// modelCall is one model call as journal step key, guarded by the cap and credits, with its
// usage and cost accounted on a turn of its own (chosenBy "workflow").
func (h *wfHost) modelCall(ctx context.Context, key, title string, req *model.Request) (*model.Response, error) {
	d := h.d
	hash, size := digestRequest(req)
	if err := d.guard(ctx, key, req, size, req.Model); err != nil {
		return nil, err
	}
	turnCost := cost.Total{}
	idx := d.newTurn(req.Model, "workflow").index
	mr, err := d.modelStep(ctx, key, title, d.acc.provider, req, hash, len(req.Messages), false, func(mr modelResult, c *int64) {
		d.accountTurn(idx, &turnCost, mr, c)
	})
	if err != nil {
		return nil, err
	}
	return &mr.Response, nil
}

// Agent runs the built-in loop on an agent node's sub-task: model turns and the tool calls they
// ask for (each through the loop's tool step) until the model answers without tools; an agent
// on an external harness runs it there (harnessAgent). Its steps are KEY/t{n}/model and
// KEY/t{n}/tool/{i}.
func (h *wfHost) Agent(ctx context.Context, key string, t workflow.Task) (_ string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	// The node's span starts with its first live step (a replayed node makes none).
	ctx, end := withLazyNode(ctx, "invoke_agent "+key, attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.agent.name", h.d.run.Spec.Agent), attribute.String("agentrun.workflow.node", key))
	defer func() { end(err) }()
	d := h.d
	defs, tools := h.defs, h.tools
	if len(t.Tools) > 0 {
		defs = nil
		for _, def := range h.defs {
			if slices.Contains(t.Tools, def.Name) {
				defs = append(defs, def)
			}
		}
		tools = model.EncodeTools(defs) // once for the node's turns
	}
	state, _ := json.MarshalIndent(t.State, "", "  ")
	conv := []model.Message{userText(fmt.Sprintf("%s\n\nThe workflow's state:\n```json\n%s\n```", t.Instructions, state))}
	maxTokens := d.maxTokens()
	modelID := d.acc.model
	if d.acc.routed {
		// A routed agent has no model of its own: an agent node runs on the family the router
		// falls back to (a router call per node would be a model call the document did not ask for).
		modelID, _ = familyModel(d.e.Prices, d.acc.provider.Name(), fallbackFamily(d.acc.families))
	}
	if d.onHarness() {
		return h.harnessAgent(ctx, key, t, defs, conv[0].Content[0].Text, modelID)
	}
	calls := 0
	for turn := 0; ; turn++ {
		req := &model.Request{Model: modelID, System: d.system(), Messages: lastImages(conv, maxImages), Tools: defs, MaxTokens: maxTokens, Stream: true, Encoded: tools}
		resp, err := h.modelCall(ctx, fmt.Sprintf("%s/t%d/model", key, turn), fmt.Sprintf("model call (%s, %s turn %d)", modelID, t.Node, turn+1), req)
		if err != nil {
			return "", err
		}
		conv = append(conv, model.Message{Role: "assistant", Content: resp.Content})
		var uses []model.Block
		var text strings.Builder
		for _, b := range resp.Content {
			switch b.Type {
			case model.BlockToolUse:
				uses = append(uses, b)
			case model.BlockText:
				text.WriteString(b.Text)
			}
		}
		if len(uses) == 0 {
			if t.Review == nil {
				return text.String(), nil
			}
			// verify: the answer is reviewed (a typed question, made through this host, so
			// without its lock); a rejected one is answered again in this conversation.
			h.mu.Unlock()
			ok, feedback, err := t.Review(ctx, text.String())
			h.mu.Lock()
			if err != nil || ok {
				return text.String(), err
			}
			conv = append(conv, userText(feedback))
			continue
		}
		results := make([]model.Block, 0, len(uses))
		for i, u := range uses {
			tk := fmt.Sprintf("%s/t%d/tool/%d", key, turn, i)
			if calls >= d.spec.MaxToolCalls {
				results = append(results, model.Block{Type: model.BlockToolResult, ToolUseID: u.ID, IsError: true,
					Content: fmt.Sprintf("not run: at most %d tool calls per agent node (spec.maxToolCalls)", d.spec.MaxToolCalls)})
				continue
			}
			calls++
			d.turnText = text.String()
			blk, err := d.toolStep(ctx, tk, fmt.Sprintf("%s/t%d/model", key, turn+1), u)
			if err != nil {
				return "", err
			}
			results = append(results, blk)
		}
		conv = append(conv, model.Message{Role: "user", Content: results})
	}
}
