package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/gateway"
	"agentrun.dev/agentrun/internal/gateway/translate"
	"agentrun.dev/agentrun/internal/harness"
	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/store"
)

// A message with ifBusy interrupt or rollback stops a harness's turn at its model call: the call
// in flight is cancelled at the gateway (recorded Interrupted), or, when a tool call was in
// flight, the harness's next model call is not sent. The stop is the journal step t{n}/stop at
// that call. Then the harness is stopped through its own protocol where its driver has a control
// channel (harness.Interrupter: Claude Code, Codex, pi), the gateway holding the call until the
// harness gives it up; otherwise (OpenCode) the call is answered with a short assistant text
// saying the turn was interrupted, in the harness's wire format, and the harness ends its turn as
// after any answer. A harness started again after a crash makes the same calls, and at the stop
// step it is stopped again the same way, so its history is the same (docs/harnesses.md, "A
// message to a busy harness").
//
// Interrupt: the message is the harness's next turn. Rollback: the stop also restores the run
// folder as the turn found it and names the turn it discards (TurnStop.Turn); then the drive
// ends (errRedrive) and the runner drives the run again at once, as after a restart: the
// harness is started afresh and replays the journal, skipping the discarded turn (its calls are
// counted, not replayed), so its history is the turns before it, and the message is its next.

// interruptWait bounds how long a stop waits for the harness it interrupted to give up its
// model call before answering the call with the stop's text instead.
const interruptWait = 15 * time.Second

// errHarnessInterrupted answers a model call the harness itself gave up on an interrupt.
var errHarnessInterrupted = errors.New("the harness interrupted its turn")

// interruptHarness stops the harness's turn through its own protocol (harness.Interrupter) and
// waits, with h.mu let go, for the harness to give up its model call in flight (rctx ends): it
// then ends its turn as after an interrupt, its history saying so in its own way. A replay
// interrupts it at the same call, so its history after a restart is the same. false: the
// harness cannot be interrupted so, or did not give up the call in time; the stop's text
// answers the call then (the turn ends as after any answer).
func (h *hostRun) interruptHarness(ctx, rctx context.Context) bool {
	in, ok := h.proc.(harness.Interrupter)
	if !ok || rctx == nil {
		return false
	}
	if err := in.Interrupt(); err != nil {
		h.d.log.Warn("interrupt the harness through its protocol; answering its call with the stop's text", "harness", h.name, "err", err)
		return false
	}
	h.mu.Unlock()
	defer h.mu.Lock()
	t := time.NewTimer(interruptWait)
	defer t.Stop()
	select {
	case <-rctx.Done():
		return true
	case <-ctx.Done():
		return true
	case <-t.C:
		h.d.log.Warn("the harness did not give up its model call after its interrupt; answering it with the stop's text", "harness", h.name)
		return false
	}
}

// errRedrive ends a drive whose harness must start again from the journal (a rollback): the
// runner gives the run back and claims it again at once.
var errRedrive = fmt.Errorf("a rollback discarded the harness's turn; the harness starts again from the journal (%w)", store.ErrDriveAgain)

// stopNum matches a stop step's key, t{n}/stop.
var stopNum = regexp.MustCompile(`^t(\d+)/stop$`)

// rolledBack is a recorded rollback of a harness turn: the stop and its model call's number.
type rolledBack struct {
	ts   *api.TurnStop
	stop int
}

// rolledBackTurns are the harness turns recorded rollbacks discarded, by the step their prompt
// came from ("input", "m2"). Read once per drive: a rollback this drive records ends it.
func (d *drive) rolledBackTurns() map[string]rolledBack {
	out := map[string]rolledBack{}
	for _, k := range d.j.Keys() {
		m := stopNum.FindStringSubmatch(k)
		if m == nil {
			continue
		}
		st, ok := d.j.Lookup(k)
		if !ok || st.State != api.StepCompleted || st.Kind != api.StepKindStop {
			continue
		}
		var ts api.TurnStop
		if json.Unmarshal(st.Result, &ts) != nil || ts.Mode != api.IfBusyRollback || ts.Turn == "" {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		out[ts.Turn] = rolledBack{&ts, n}
	}
	return out
}

// skipTurn passes over a turn a rollback discarded, on a harness started again: its model calls
// (t{first}/model up to its stop's, t{stop}/model) are counted as they were when made, and not
// replayed to the harness, whose history so goes on without the turn. Called with h.mu held,
// after beginTurn.
func (h *hostRun) skipTurn(ts *api.TurnStop, stop int) error {
	d := h.d
	for n := h.n; n <= stop; n++ {
		key := fmt.Sprintf("t%d/model", n)
		st, ok := d.j.Lookup(key)
		switch {
		case !ok:
		case st.State == api.StepCompleted:
			var mr modelResult
			if err := json.Unmarshal(st.Result, &mr); err != nil {
				return fmt.Errorf("decode %s result: %w", key, err)
			}
			if st.CopiedFrom != "" {
				mr.VendorMicros = new(int64) // a fork's copied call cost this run nothing
			}
			d.accountTurn(h.cur.index, &d.turnCost, mr, st.CostMicros)
		case st.State == api.StepInterrupted && n == stop:
			d.accountTurn(h.cur.index, &d.turnCost, stoppedResult(ts), nil)
		}
	}
	d.steer.handled = max(d.steer.handled, ts.Seq)
	d.steer.seen(ts.Seq)
	h.n = stop + 1
	h.stopped = ts
	return nil
}

// beginRollbackTurn readies the harness turn whose prompt came from turn for a rollback: the
// run folder's files the turn changes are kept as they were before (notePre). Called with h.mu.
func (h *hostRun) beginRollbackTurn(turn string) {
	h.turn = turn
	h.d.turnPre = map[string]*store.File{}
}

// rollbackStop fills fresh rollback stop ts of the harness's current turn: the turn's steps are
// discarded and the run folder restored as the turn found it; returns the files restored.
func (h *hostRun) rollbackStop(ts *api.TurnStop, spec *journal.Spec) (int, error) {
	d := h.d
	from := h.turn
	if from == "input" {
		from = ""
	}
	ts.Turn = h.turn
	ts.RolledBack = d.turnSteps(from)
	restored, err := d.restoreTurnFolder(d.turnPreImages(from))
	if err != nil {
		return 0, err
	}
	spec.Files = d.folderChanges
	return restored, nil
}

// stopText is what a harness's stopped model call answers.
func stopText(ts *api.TurnStop) string {
	return fmt.Sprintf("(interrupted: a new message (%d) arrived before this answer; it follows)", ts.Seq)
}

// stopCall answers call key, stopped by ts, recording the stop when fresh: the harness is
// interrupted through its own protocol when it can be (interruptHarness), else it gets the
// stop's reply. rctx is the harness's request's.
func (h *hostRun) stopCall(ctx, rctx context.Context, key string, ts *api.TurnStop, fresh bool, body map[string]json.RawMessage, out []byte) (gateway.Reply, error) {
	d := h.d
	if fresh {
		ts.InputTokens, ts.OutputTokens = d.steer.takeStreamed()
		data := map[string]any{"seq": ts.Seq, "at": ts.At}
		spec := journal.Spec{Key: stopKey(h.n), Kind: api.StepKindStop, Title: fmt.Sprintf("turn interrupted at %s by message %d", ts.At, ts.Seq),
			Args: map[string]any{"at": ts.At, "seq": ts.Seq}}
		if ts.Mode == api.IfBusyRollback {
			restored, err := h.rollbackStop(ts, &spec)
			if err != nil {
				return gateway.Reply{}, h.fail(err)
			}
			spec.Title = fmt.Sprintf("turn rolled back at %s by message %d", ts.At, ts.Seq)
			data["rolledBack"], data["restoredFiles"], data["turn"] = ts.RolledBack, restored, ts.Turn
			d.j.Emit(api.Event{Type: api.EventTurnRolledBack, StepKey: ts.At, Data: mustRaw(data),
				Message: fmt.Sprintf("message %d rolled %s's turn back at %s: %d steps discarded, %d files of the run folder restored; %s starts again from the journal without the turn", ts.Seq, h.name, ts.At, len(ts.RolledBack), restored, h.name)})
		} else {
			d.j.Emit(api.Event{Type: api.EventRunInterrupted, StepKey: ts.At, Data: mustRaw(data),
				Message: fmt.Sprintf("message %d interrupted %s's turn at %s; it starts the next turn", ts.Seq, h.name, ts.At)})
		}
		if _, err := d.j.Record(ctx, spec, ts); err != nil {
			return gateway.Reply{}, h.fail(err)
		}
	}
	if st, ok := d.j.Lookup(key); ok && st.State == api.StepInterrupted {
		d.accountTurn(h.cur.index, &d.turnCost, stoppedResult(ts), nil) // cost unknown, never $0
	}
	if ts.Mode == api.IfBusyRollback {
		h.redrive = true
	}
	d.steer.handled = max(d.steer.handled, ts.Seq)
	d.steer.seen(ts.Seq)
	h.stopped = ts
	h.n++
	if h.interruptHarness(ctx, rctx) {
		return gateway.Reply{}, errHarnessInterrupted
	}
	model := h.cur.model
	var stream bool
	json.Unmarshal(body["stream"], &stream)
	msg := anthropicText("msg_agentrun_stop_"+fmt.Sprint(ts.Seq), model, stopText(ts), stream)
	switch h.wire {
	case gateway.WireAnthropic:
		ctype := "application/json"
		if stream {
			ctype = "text/event-stream"
		}
		return gateway.Reply{Status: 200, ContentType: ctype, Body: msg}, nil
	case gateway.WireResponses:
		// The translation of an Anthropic answer is the Responses answer Codex reads, whichever
		// vendor the run's calls go to.
		tr, err := translate.Request(out)
		if err != nil {
			return gateway.Reply{}, h.fail(fmt.Errorf("stop %s: %w", key, err))
		}
		msg = anthropicText("msg_agentrun_stop_"+fmt.Sprint(ts.Seq), model, stopText(ts), tr.Stream)
		b, ctype, err := tr.Response(msg)
		if err != nil {
			return gateway.Reply{}, h.fail(fmt.Errorf("stop %s: %w", key, err))
		}
		return gateway.Reply{Status: 200, ContentType: ctype, Body: b}, nil
	case gateway.WireChat:
		if stream {
			return gateway.Reply{Status: 200, ContentType: "text/event-stream", Body: chatText(model, stopText(ts), true)}, nil
		}
		return gateway.Reply{Status: 200, ContentType: "application/json", Body: chatText(model, stopText(ts), false)}, nil
	}
	return gateway.Reply{}, h.fail(&failure{api.ReasonInternalError, fmt.Sprintf("a message cannot interrupt %s on the %s wire", h.name, h.wire)})
}

// chatText is a Chat Completions answer of one text message, as a stream (with the usage chunk a
// client asking stream_options.include_usage reads) or a completion.
func chatText(model, text string, stream bool) []byte {
	usage := map[string]any{"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
	if !stream {
		b, _ := json.Marshal(map[string]any{"id": "chatcmpl-agentrun-stop", "object": "chat.completion", "created": 0, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}},
			"usage":   usage})
		return b
	}
	var out []byte
	chunk := func(v map[string]any) {
		v["id"], v["object"], v["created"], v["model"] = "chatcmpl-agentrun-stop", "chat.completion.chunk", 0, model
		b, _ := json.Marshal(v)
		out = append(out, "data: "+string(b)+"\n\n"...)
	}
	chunk(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": text}, "finish_reason": nil}}})
	chunk(map[string]any{"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}})
	chunk(map[string]any{"choices": []any{}, "usage": usage})
	return append(out, "data: [DONE]\n\n"...)
}

// anthropicText is a Messages API answer of one text block, as a stream or a message.
func anthropicText(id, model, text string, stream bool) []byte {
	if !stream {
		b, _ := json.Marshal(map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
			"content": []any{map[string]any{"type": "text", "text": text}}, "stop_reason": "end_turn", "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": 0, "output_tokens": 0}})
		return b
	}
	var out []byte
	ev := func(typ string, v map[string]any) {
		v["type"] = typ
		b, _ := json.Marshal(v)
		out = append(out, "event: "+typ+"\ndata: "+string(b)+"\n\n"...)
	}
	ev("message_start", map[string]any{"message": map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 0, "output_tokens": 0}}})
	ev("content_block_start", map[string]any{"index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
	ev("content_block_delta", map[string]any{"index": 0, "delta": map[string]any{"type": "text_delta", "text": text}})
	ev("content_block_stop", map[string]any{"index": 0})
	ev("message_delta", map[string]any{"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 0}})
	ev("message_stop", map[string]any{})
	return out
}

// steerForward is forward under a context a steering message cancels (journal.ErrStopped); the
// usage the cut stream of wire had reported is kept for the stop step.
func (d *drive) steerForward(ctx context.Context, wire gateway.Wire, fwd func(context.Context) (int, string, []byte, error)) (int, string, []byte, error) {
	cctx, release := d.steer.steerable(ctx)
	defer release()
	status, ctype, data, err := fwd(cctx)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(cctx), errSteered) {
		u := gateway.Summarize(wire, data).Usage
		d.steer.streamed(u.InputTokens, u.OutputTokens)
		return 0, "", nil, fmt.Errorf("%w (ifBusy: the harness's model call was cancelled)", journal.ErrStopped)
	}
	return status, ctype, data, err
}
