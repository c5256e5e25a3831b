package fake

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// reply is a turn rendered for one request, before it is put in either wire format.
type reply struct {
	slug    string // the entry's name made safe for ids
	turn    int
	model   string
	text    string
	calls   []renderedCall
	usage   Usage // every count filled
	stop    string
	latency time.Duration
	// streamDelay is the pause before each streamed event after the first.
	streamDelay time.Duration
}

type renderedCall struct {
	name  string
	input json.RawMessage
}

// created is the fixed "created" time of OpenAI replies: a real clock would break the rule that a reply
// is a pure function of its request.
const created = 1735689600 // 2025-01-01T00:00:00Z

// plan finds the entry and turn for a conversation and renders the reply. It returns the entry index
// (-1 if none matched) and, when there is no scripted answer, an error saying exactly what is missing.
func plan(sc *Script, c *conversation) (*reply, int, error) {
	idx := -1
	for i := range sc.Entries {
		if sc.Entries[i].matches(c.firstUser) {
			idx = i
			break
		}
	}
	if idx < 0 {
		return nil, -1, fmt.Errorf("fake model server: no script entry matches the first user message %q (%d entries tried)",
			clip(c.firstUser, 200), len(sc.Entries))
	}
	e := &sc.Entries[idx]
	name := entryName(e.Name, idx)
	if c.assistants >= len(e.Turns) {
		return nil, idx, fmt.Errorf("fake model server: no script for entry %q turn %d: the entry has %d turns (turn = assistant messages in the request)",
			name, c.assistants, len(e.Turns))
	}
	t := &e.Turns[c.assistants]
	r := &reply{slug: slug(e.Name, idx), turn: c.assistants, model: c.model}
	sub := strings.NewReplacer(
		"{{last_user}}", c.lastUser,
		"{{last_tool_result}}", c.lastToolResult,
		"{{last_tool_images}}", describeImages(c.lastToolImages),
		"{{turn}}", strconv.Itoa(c.assistants),
	).Replace
	r.text = sub(t.Text)
	outChars := len([]rune(r.text))
	for k, tc := range t.ToolCalls {
		in, err := substituteJSON(tc.Input, sub)
		if err != nil {
			return nil, idx, fmt.Errorf("fake model server: entry %q turn %d tool_calls[%d]: %v", name, c.assistants, k, err)
		}
		n := c.toolName(tc.Name)
		r.calls = append(r.calls, renderedCall{name: n, input: in})
		outChars += len([]rune(n)) + len([]rune(string(in)))
	}
	r.stop = "end_turn"
	if len(r.calls) > 0 {
		r.stop = "tool_use"
	}
	if t.Usage != nil {
		r.usage = *t.Usage
	}
	if r.usage.InputTokens == 0 {
		r.usage.InputTokens = max(int64(c.chars/4), 1)
	}
	if r.usage.OutputTokens == 0 {
		r.usage.OutputTokens = max(int64(outChars/4), 1)
	}
	r.streamDelay = time.Duration(t.StreamDelay)
	r.latency = time.Duration(t.Latency)
	if r.latency == 0 {
		r.latency = time.Duration(sc.DefaultLatency)
	}
	if j := int64(sc.LatencyJitter); j > 0 && r.latency > 0 {
		r.latency = max(0, r.latency+time.Duration(rand.Int64N(2*j+1)-j))
	}
	return r, idx, nil
}

// substituteJSON applies sub to every string value of a JSON object. Keys come out sorted, which keeps
// the result a function of the script alone.
func substituteJSON(raw json.RawMessage, sub func(string) string) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return json.RawMessage("{}"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return sub(x)
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		}
		return v
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // file contents with <, > and & stay readable
	if err := enc.Encode(walk(v)); err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// slug makes an entry name safe for tool-call ids (letters, digits, _ and -).
func slug(name string, idx int) string {
	if name == "" {
		return fmt.Sprintf("e%d", idx)
	}
	b := []byte(name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "..."
}

// chunks splits s into pieces of at most n runes, so streamed deltas never split a character.
func chunks(s string, n int) []string {
	r := []rune(s)
	var out []string
	for len(r) > n {
		out = append(out, string(r[:n]))
		r = r[n:]
	}
	if len(r) > 0 {
		out = append(out, string(r))
	}
	return out
}

func (r *reply) toolID(prefix string, i int) string {
	return fmt.Sprintf("%s_%s_%d_%d", prefix, r.slug, r.turn, i)
}

// Anthropic format.

func (r *reply) antUsage() antUsage {
	u := antUsage{
		InputTokens:              r.usage.InputTokens,
		CacheCreationInputTokens: r.usage.CacheCreationInputTokens,
		CacheReadInputTokens:     r.usage.CacheReadInputTokens,
		OutputTokens:             r.usage.OutputTokens,
	}
	u.CacheCreation.Ephemeral1h = r.usage.CacheCreation1hInputTokens
	u.CacheCreation.Ephemeral5m = r.usage.CacheCreationInputTokens - r.usage.CacheCreation1hInputTokens
	return u
}

func anthropicMessage(r *reply) *antMessage {
	m := &antMessage{ID: fmt.Sprintf("msg_fake_%s_%d", r.slug, r.turn), Type: "message", Role: "assistant",
		Model: r.model, StopReason: &r.stop, Usage: r.antUsage(), Content: []antOutBlock{}}
	if r.text != "" {
		m.Content = append(m.Content, antOutBlock{Type: "text", Text: &r.text})
	}
	for i, c := range r.calls {
		m.Content = append(m.Content, antOutBlock{Type: "tool_use", ID: r.toolID("toolu", i), Name: c.name, Input: c.input})
	}
	return m
}

// sseWriter writes server-sent events, flushing each one so the client sees a real stream.
type sseWriter struct {
	ctx context.Context
	w   http.ResponseWriter
	rc  *http.ResponseController
	// delay is the pause before each event after the first (Turn.StreamDelay).
	delay   time.Duration
	written bool
}

func newSSEWriter(ctx context.Context, w http.ResponseWriter, delay time.Duration) *sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sseWriter{ctx: ctx, w: w, rc: http.NewResponseController(w), delay: delay}
}

// event writes one event; event "" writes a data-only event (OpenAI's style).
func (s *sseWriter) event(event string, v any) error {
	if s.written && s.delay > 0 {
		t := time.NewTimer(s.delay)
		select {
		case <-s.ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
	s.written = true
	if err := s.ctx.Err(); err != nil {
		return fmt.Errorf("client gone: %w", err)
	}
	var data []byte
	if b, ok := v.(string); ok {
		data = []byte(b)
	} else {
		var err error
		if data, err = json.Marshal(v); err != nil {
			return fmt.Errorf("encode event: %w", err)
		}
	}
	var buf bytes.Buffer
	if event != "" {
		fmt.Fprintf(&buf, "event: %s\n", event)
	}
	fmt.Fprintf(&buf, "data: %s\n\n", data)
	if _, err := s.w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write event: %w", err)
	}
	if err := s.rc.Flush(); err != nil {
		return fmt.Errorf("flush event: %w", err)
	}
	return nil
}

// writeAnthropicStream writes the Messages event sequence: message_start, per block
// content_block_start / content_block_delta... / content_block_stop (a ping after the first start),
// message_delta with the stop reason and output tokens, message_stop.
//
// last is called just before the final event is written.
func writeAnthropicStream(ctx context.Context, w http.ResponseWriter, r *reply, last func()) error {
	type obj = map[string]any
	type event struct {
		name string
		v    obj
	}
	msg := anthropicMessage(r)
	start := *msg
	start.Content, start.StopReason = []antOutBlock{}, nil
	start.Usage.OutputTokens = min(1, start.Usage.OutputTokens) // the real API reports a token or so here
	evs := []event{{"message_start", obj{"type": "message_start", "message": start}}}
	for i, b := range msg.Content {
		head := b
		var deltas []obj
		switch b.Type {
		case "text":
			empty := ""
			head.Text = &empty
			for _, p := range chunks(*b.Text, 16) {
				deltas = append(deltas, obj{"type": "text_delta", "text": p})
			}
		case "tool_use":
			head.Input = json.RawMessage("{}")
			deltas = append(deltas, obj{"type": "input_json_delta", "partial_json": ""})
			for _, p := range chunks(string(b.Input), 24) {
				deltas = append(deltas, obj{"type": "input_json_delta", "partial_json": p})
			}
		}
		evs = append(evs, event{"content_block_start", obj{"type": "content_block_start", "index": i, "content_block": head}})
		if i == 0 {
			evs = append(evs, event{"ping", obj{"type": "ping"}})
		}
		for _, d := range deltas {
			evs = append(evs, event{"content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": d}})
		}
		evs = append(evs, event{"content_block_stop", obj{"type": "content_block_stop", "index": i}})
	}
	evs = append(evs,
		event{"message_delta", obj{"type": "message_delta",
			"delta": obj{"stop_reason": r.stop, "stop_sequence": nil},
			"usage": obj{"output_tokens": r.usage.OutputTokens}}},
		event{"message_stop", obj{"type": "message_stop"}},
	)
	sw := newSSEWriter(ctx, w, r.streamDelay)
	for i, e := range evs {
		if i == len(evs)-1 {
			last()
		}
		if err := sw.event(e.name, e.v); err != nil {
			return err
		}
	}
	return nil
}

// OpenAI format.

func (r *reply) oaiUsage() *oaiUsage {
	u := &oaiUsage{
		PromptTokens:     r.usage.InputTokens + r.usage.CacheCreationInputTokens + r.usage.CacheReadInputTokens,
		CompletionTokens: r.usage.OutputTokens,
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	u.PromptTokensDetails.CachedTokens = r.usage.CacheReadInputTokens
	u.PromptTokensDetails.CacheWriteTokens = r.usage.CacheCreationInputTokens
	u.CompletionTokensDetails.ReasoningTokens = r.usage.ReasoningTokens
	return u
}

func (r *reply) finishReason() string {
	if r.stop == "tool_use" {
		return "tool_calls"
	}
	return "stop"
}

func (r *reply) oaiID() string { return fmt.Sprintf("chatcmpl-fake-%s-%d", r.slug, r.turn) }

func openAICompletion(r *reply) *oaiCompletion {
	msg := &oaiFullMessage{Role: "assistant"}
	if r.text != "" {
		msg.Content = &r.text
	}
	for i, c := range r.calls {
		var tc oaiToolCall
		tc.ID, tc.Type = r.toolID("call", i), "function"
		tc.Function.Name, tc.Function.Arguments = c.name, string(c.input)
		msg.ToolCalls = append(msg.ToolCalls, tc)
	}
	fr := r.finishReason()
	return &oaiCompletion{ID: r.oaiID(), Object: "chat.completion", Created: created, Model: r.model,
		Choices: []oaiChoice{{Index: 0, Message: msg, FinishReason: &fr}}, Usage: r.oaiUsage()}
}

// writeOpenAIStream writes chat.completion.chunk events: the role, text deltas, each tool call's head
// then its argument pieces, the finish reason, the usage chunk when asked for, and [DONE]. last is
// called just before [DONE] is written.
func writeOpenAIStream(ctx context.Context, w http.ResponseWriter, r *reply, includeUsage bool, last func()) error {
	sw := newSSEWriter(ctx, w, r.streamDelay)
	chunk := func(delta *oaiMessage, finish *string) *oaiCompletion {
		return &oaiCompletion{ID: r.oaiID(), Object: "chat.completion.chunk", Created: created, Model: r.model,
			Choices: []oaiChoice{{Index: 0, Delta: delta, FinishReason: finish}}}
	}
	str := func(s string) *string { return &s }
	out := []*oaiCompletion{chunk(&oaiMessage{Role: "assistant", Content: str("")}, nil)}
	for _, p := range chunks(r.text, 16) {
		out = append(out, chunk(&oaiMessage{Content: str(p)}, nil))
	}
	for i, c := range r.calls {
		var head oaiToolCall
		head.Index, head.ID, head.Type = &i, r.toolID("call", i), "function"
		head.Function.Name = c.name
		out = append(out, chunk(&oaiMessage{ToolCalls: []oaiToolCall{head}}, nil))
		for _, p := range chunks(string(c.input), 24) {
			var d oaiToolCall
			d.Index = &i
			d.Function.Arguments = p
			out = append(out, chunk(&oaiMessage{ToolCalls: []oaiToolCall{d}}, nil))
		}
	}
	out = append(out, chunk(&oaiMessage{}, str(r.finishReason())))
	if includeUsage {
		u := &oaiCompletion{ID: r.oaiID(), Object: "chat.completion.chunk", Created: created, Model: r.model,
			Choices: []oaiChoice{}, Usage: r.oaiUsage()}
		out = append(out, u)
	}
	for _, c := range out {
		if err := sw.event("", c); err != nil {
			return err
		}
	}
	last()
	return sw.event("", "[DONE]")
}
