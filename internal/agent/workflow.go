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

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/workflow"
)

// workflowLoop runs the agent revision's workflow instead of the open loop. The engine
// (internal/workflow) decides what happens; wfHost performs each effect as a journal step under
// the node's execution path, so a drive after a crash, a park or a takeover runs the document
// again from the start and every completed effect is answered from the journal.
func (d *drive) workflowLoop(ctx context.Context, defs []model.ToolDef) error {
	// Children named by string run at the revisions pinned when this revision was saved.
	w, errs := workflow.Validate(d.spec.Workflow, workflow.Options{Runnable: true, Resolve: store.PinnedWorkflows(ctx, d.e.Store, d.spec.WorkflowChildren)})
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
	h := &wfHost{d: d, defs: defs}
	res, err := h.run(ctx, w, in)
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
	mu   sync.Mutex
}

// run runs w with the journal gated on the host's lock.
func (h *wfHost) run(ctx context.Context, w *workflow.Workflow, in map[string]any) (*workflow.Result, error) {
	return h.runAs(ctx, w, h, in)
}

// runAs is run with the engine calling host, which performs each effect through h (a learned
// workflow's keyedHost, which puts the step keys under its tool call's).
func (h *wfHost) runAs(ctx context.Context, w *workflow.Workflow, host workflow.Host, in map[string]any) (*workflow.Result, error) {
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
	return parseExec(r), nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// parseExec reads the bash tool's answer (computer.formatExec) back into code, stdout, stderr.
func parseExec(r workflow.ToolResult) workflow.ShellResult {
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
	schema := json.RawMessage(`{"type": "object", "additionalProperties": false, "required": ["answer", "confidence"], "properties": {"answer": ` +
		string(q.Schema) + `, "confidence": {"type": "number", "minimum": 0, "maximum": 1, "description": "how sure you are of the answer, 0 to 1"}}}`)
	prompt := fmt.Sprintf("%s\n\nThe state:\n```json\n%s\n```\n\nAnswer as JSON {\"answer\": ..., \"confidence\": 0..1} where answer matches:\n%s", q.Instructions, state, q.Schema)
	req := &model.Request{Model: modelID, System: "You answer one typed question of a workflow (" + q.Kind + " node " + q.Node + ") from the state you are given. Answer only with the JSON asked for.",
		Messages: []model.Message{userText(prompt)}, MaxTokens: max(questionMaxTokens, q.MaxTokens), OutputSchema: schema}
	resp, err := h.modelCall(ctx, key, "question ("+q.Kind+", "+modelID+"): "+q.Node, req)
	if err != nil {
		return workflow.Answer{}, err
	}
	text := textOf(resp.Content)
	var ans struct {
		Answer     json.RawMessage `json:"answer"`
		Confidence *float64        `json:"confidence"`
	}
	if err := json.Unmarshal([]byte(stripJSONFence(text)), &ans); err != nil || len(ans.Answer) == 0 {
		return workflow.Answer{}, &failure{api.ReasonWorkflowFailed, fmt.Sprintf("workflow step %s: the model's answer is not the JSON asked for: %s", key, api.FirstLine(text, 200))}
	}
	if ans.Confidence == nil || *ans.Confidence < 0 || *ans.Confidence > 1 {
		return workflow.Answer{}, &failure{api.ReasonWorkflowFailed, fmt.Sprintf("workflow step %s: the model's answer has no confidence between 0 and 1", key)}
	}
	return workflow.Answer{Value: ans.Answer, Confidence: *ans.Confidence}, nil
}

// textOf is the text blocks of a model answer, joined.
func textOf(content []model.Block) string {
	var text strings.Builder
	for _, b := range content {
		if b.Type == model.BlockText {
			text.WriteString(b.Text)
		}
	}
	return text.String()
}

func stripJSONFence(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "```") {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
		s = strings.TrimSuffix(strings.TrimSpace(s), "```")
	}
	return strings.TrimSpace(s)
}

// modelCall is one model call as journal step key, guarded by the cap and credits, with its
// usage and cost accounted on a turn of its own (chosenBy "workflow").
func (h *wfHost) modelCall(ctx context.Context, key, title string, req *model.Request) (*model.Response, error) {
	d := h.d
	reqJSON, _ := json.Marshal(req)
	if err := d.guard(ctx, key, req, reqJSON, req.Model); err != nil {
		return nil, err
	}
	turnCost := cost.Total{}
	idx := d.newTurn(req.Model, "workflow").index
	mr, err := d.modelStep(ctx, key, title, d.acc.provider, req, reqJSON, len(req.Messages), func(mr modelResult, c *int64) {
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
func (h *wfHost) Agent(ctx context.Context, key string, t workflow.Task) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.d
	defs := h.defs
	if len(t.Tools) > 0 {
		defs = nil
		for _, def := range h.defs {
			if slices.Contains(t.Tools, def.Name) {
				defs = append(defs, def)
			}
		}
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
		req := &model.Request{Model: modelID, System: d.system(), Messages: lastImages(conv, maxImages), Tools: defs, MaxTokens: maxTokens, Stream: true}
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
