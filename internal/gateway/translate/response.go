package translate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// The Responses answer, in the shapes the scripted model server writes (internal/model/fake,
// checked with the real Codex CLI): a response object, or its SSE events, each with its
// sequence_number: response.created, response.in_progress, per output item output_item.added,
// then for a message content_part.added, output_text.delta..., output_text.done,
// content_part.done, for a function call function_call_arguments.delta..., .done, for reasoning
// reasoning_summary_part.added, reasoning_summary_text.delta..., .done, reasoning_summary_part.done,
// then output_item.done; last response.completed with the usage (response.incomplete when the
// vendor stopped at max_tokens, response.failed on a stream error).
//
// Ids come from the Anthropic message's: resp_X for the response of message msg_X, msg_X_N and
// rs_X_N for its message and reasoning items, fc_ID for a function call whose call_id is the
// tool_use's id (the harness sends it back as the tool_result's tool_use_id). created_at is 0:
// Anthropic's answer has no time, and a replay must give the same bytes.

type respUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

type outPart struct {
	Type        string `json:"type"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
	Text        string `json:"text"`
}

type summaryPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type outItem struct {
	ID      string     `json:"id"`
	Type    string     `json:"type"`
	Status  string     `json:"status,omitempty"`
	Content *[]outPart `json:"content,omitempty"` // message
	Role    string     `json:"role,omitempty"`
	// function_call, custom_tool_call
	Arguments *string `json:"arguments,omitempty"`
	Input     *string `json:"input,omitempty"`
	CallID    string  `json:"call_id,omitempty"`
	Name      string  `json:"name,omitempty"`
	Namespace string  `json:"namespace,omitempty"`
	// reasoning
	Summary          *[]summaryPart `json:"summary,omitempty"`
	EncryptedContent string         `json:"encrypted_content,omitempty"`
}

type respObject struct {
	ID                 string          `json:"id"`
	Object             string          `json:"object"`
	CreatedAt          int64           `json:"created_at"`
	Status             string          `json:"status"`
	Background         bool            `json:"background"`
	Error              any             `json:"error"`
	IncompleteDetails  any             `json:"incomplete_details"`
	Instructions       json.RawMessage `json:"instructions"`
	MaxOutputTokens    *int64          `json:"max_output_tokens"`
	Model              string          `json:"model"`
	Output             []outItem       `json:"output"`
	ParallelToolCalls  bool            `json:"parallel_tool_calls"`
	PreviousResponseID any             `json:"previous_response_id"`
	Reasoning          json.RawMessage `json:"reasoning"`
	Store              bool            `json:"store"`
	Text               json.RawMessage `json:"text"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	Tools              json.RawMessage `json:"tools"`
	Truncation         string          `json:"truncation"`
	Usage              *respUsage      `json:"usage"`
	Metadata           map[string]any  `json:"metadata"`
}

func orDefault(raw json.RawMessage, def string) json.RawMessage {
	if isNull(raw) {
		return json.RawMessage(def)
	}
	return raw
}

func (t *Translation) object(id, model, status string) *respObject {
	return &respObject{ID: id, Object: "response", Status: status, Instructions: orDefault(t.echo.Instructions, "null"),
		MaxOutputTokens: t.echo.MaxOutputTokens, Model: model, Output: []outItem{}, ParallelToolCalls: t.echo.Parallel,
		Reasoning: orDefault(t.echo.Reasoning, "null"), Text: orDefault(t.echo.Text, `{"format":{"type":"text"}}`),
		ToolChoice: orDefault(t.echo.ToolChoice, `"auto"`), Tools: orDefault(t.echo.Tools, "[]"), Truncation: "disabled",
		Metadata: map[string]any{}}
}

// Anthropic answer shapes.
type antUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

type usageSum struct{ in, out, cacheWrite, cacheRead int64 }

func (s *usageSum) apply(u *antUsage) {
	if u == nil {
		return
	}
	for _, f := range []struct {
		p *int64
		d *int64
	}{{u.InputTokens, &s.in}, {u.OutputTokens, &s.out}, {u.CacheCreationInputTokens, &s.cacheWrite}, {u.CacheReadInputTokens, &s.cacheRead}} {
		if f.p != nil {
			*f.d = *f.p
		}
	}
}

func (s usageSum) responses() *respUsage {
	u := &respUsage{InputTokens: s.in + s.cacheWrite + s.cacheRead, OutputTokens: s.out}
	u.InputTokensDetails.CachedTokens = s.cacheRead
	u.TotalTokens = u.InputTokens + u.OutputTokens
	return u
}

type antContent struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
}

type antMessageOut struct {
	ID         string       `json:"id"`
	Model      string       `json:"model"`
	StopReason string       `json:"stop_reason"`
	Content    []antContent `json:"content"`
	Usage      *antUsage    `json:"usage"`
}

type antEvent struct {
	Type         string         `json:"type"`
	Message      *antMessageOut `json:"message"`
	Index        int            `json:"index"`
	ContentBlock *antContent    `json:"content_block"`
	Delta        struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *antUsage `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// Response translates the vendor's answer to the request t was made from: an Anthropic SSE stream
// (when t.Stream) or message object, into the Responses answer's bytes and content type.
func (t *Translation) Response(vendor []byte) ([]byte, string, error) {
	if !t.Stream {
		var m antMessageOut
		if err := json.Unmarshal(vendor, &m); err != nil || m.ID == "" {
			return nil, "", fmt.Errorf("translate: the vendor's answer is not a Messages object: %.200q", vendor)
		}
		b := t.newBuilder()
		b.start(&m)
		for i := range m.Content {
			c := m.Content[i]
			b.blockStart(i, &c)
			b.blockStop(i)
		}
		b.stop = m.StopReason
		b.usage.apply(m.Usage)
		obj := b.final()
		out, err := json.Marshal(obj)
		if err != nil {
			return nil, "", fmt.Errorf("translate: encode the response: %w", err)
		}
		return append(out, '\n'), "application/json", nil
	}
	b := t.newBuilder()
	sc := bufio.NewScanner(bytes.NewReader(vendor))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	ended := false
	for sc.Scan() && !ended {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimSpace(data)
		if len(data) == 0 || data[0] != '{' {
			continue
		}
		var ev antEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return nil, "", fmt.Errorf("translate: an event of the vendor's stream is not JSON: %v", err)
		}
		switch ev.Type {
		case "message_start":
			if ev.Message == nil {
				return nil, "", fmt.Errorf("translate: message_start without a message")
			}
			b.start(ev.Message)
		case "content_block_start":
			if ev.ContentBlock != nil {
				b.blockStart(ev.Index, ev.ContentBlock)
			}
		case "content_block_delta":
			b.delta(ev.Index, &ev)
		case "content_block_stop":
			b.blockStop(ev.Index)
		case "message_delta":
			if ev.Delta.StopReason != "" {
				b.stop = ev.Delta.StopReason
			}
			b.usage.apply(ev.Usage)
		case "message_stop":
			b.emit("", map[string]any{"response": b.final()})
			ended = true
		case "error":
			msg, code := "the vendor's stream failed", "server_error"
			if ev.Error != nil {
				msg, code = ev.Error.Message, ev.Error.Type
			}
			b.fail(code, msg)
			ended = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, "", fmt.Errorf("translate: read the vendor's stream: %w", err)
	}
	if !ended {
		b.fail("server_error", "the vendor's stream ended before message_stop")
	}
	return b.buf.Bytes(), "text/event-stream", nil
}

// builder makes the Responses events of one answer as the Anthropic events come.
type builder struct {
	t       *Translation
	buf     bytes.Buffer
	seq     int
	started bool
	suffix  string
	id      string
	model   string
	usage   usageSum
	stop    string
	items   []outItem
	open    map[int]*openBlock // by Anthropic content index
}

type openBlock struct {
	item int // index in items (the output_index)
	kind string
	acc  strings.Builder
	sig  string
}

func (t *Translation) newBuilder() *builder {
	return &builder{t: t, open: map[int]*openBlock{}}
}

// emit writes one event; typ "" is the final event, whose type follows from the response status.
func (b *builder) emit(typ string, fields map[string]any) {
	if typ == "" {
		switch fields["response"].(*respObject).Status {
		case "incomplete":
			typ = "response.incomplete"
		case "failed":
			typ = "response.failed"
		default:
			typ = "response.completed"
		}
	}
	fields["type"] = typ
	fields["sequence_number"] = b.seq
	b.seq++
	data, _ := json.Marshal(fields)
	fmt.Fprintf(&b.buf, "event: %s\ndata: %s\n\n", typ, data)
}

func (b *builder) start(m *antMessageOut) {
	if b.started {
		return
	}
	b.started = true
	b.suffix = strings.TrimPrefix(m.ID, "msg_")
	b.id, b.model = "resp_"+b.suffix, m.Model
	b.usage.apply(m.Usage)
	b.emit("response.created", map[string]any{"response": b.t.object(b.id, b.model, "in_progress")})
	b.emit("response.in_progress", map[string]any{"response": b.t.object(b.id, b.model, "in_progress")})
}

func (b *builder) blockStart(idx int, c *antContent) {
	n := len(b.items)
	ob := &openBlock{item: n, kind: c.Type}
	var item outItem
	switch c.Type {
	case "text":
		item = outItem{ID: fmt.Sprintf("msg_%s_%d", b.suffix, n), Type: "message", Status: "in_progress", Role: "assistant", Content: &[]outPart{}}
		ob.acc.WriteString(c.Text)
	case "tool_use":
		ref, ok := b.t.tools[c.Name]
		if !ok {
			ref = toolRef{Name: c.Name}
		}
		item = outItem{ID: "fc_" + c.ID, Type: "function_call", Status: "in_progress", CallID: c.ID, Name: ref.Name, Namespace: ref.Namespace}
		if ref.Custom {
			item.Type, item.ID, item.Input = "custom_tool_call", "ctc_"+c.ID, str("")
		} else {
			item.Arguments = str("")
		}
		if in := bytes.TrimSpace(c.Input); len(in) > 0 && string(in) != "{}" {
			ob.acc.Write(in) // a non-streamed answer's input
		}
	case "thinking", "redacted_thinking":
		item = outItem{ID: fmt.Sprintf("rs_%s_%d", b.suffix, n), Type: "reasoning", Summary: &[]summaryPart{}}
		ob.acc.WriteString(c.Thinking)
		ob.sig = c.Signature
		if c.Type == "redacted_thinking" {
			ob.sig = c.Data
		}
	default:
		return // a block Responses has no item for (none is asked for: no server tools are offered)
	}
	b.items = append(b.items, item)
	b.open[idx] = ob
	if !b.t.Stream {
		return
	}
	b.emit("response.output_item.added", map[string]any{"output_index": n, "item": item})
	switch c.Type {
	case "text":
		b.emit("response.content_part.added", map[string]any{"item_id": item.ID, "output_index": n, "content_index": 0,
			"part": outPart{Type: "output_text", Annotations: []any{}, Logprobs: []any{}, Text: ""}})
	case "thinking":
		b.emit("response.reasoning_summary_part.added", map[string]any{"item_id": item.ID, "output_index": n, "summary_index": 0,
			"part": summaryPart{Type: "summary_text", Text: ""}})
	}
}

func (b *builder) delta(idx int, ev *antEvent) {
	ob := b.open[idx]
	if ob == nil {
		return
	}
	item := b.items[ob.item]
	switch ev.Delta.Type {
	case "text_delta":
		ob.acc.WriteString(ev.Delta.Text)
		b.emit("response.output_text.delta", map[string]any{"item_id": item.ID, "output_index": ob.item, "content_index": 0,
			"delta": ev.Delta.Text, "logprobs": []any{}})
	case "input_json_delta":
		if ev.Delta.PartialJSON == "" {
			return
		}
		ob.acc.WriteString(ev.Delta.PartialJSON)
		if item.Type == "function_call" {
			b.emit("response.function_call_arguments.delta", map[string]any{"item_id": item.ID, "output_index": ob.item, "delta": ev.Delta.PartialJSON})
		}
	case "thinking_delta":
		ob.acc.WriteString(ev.Delta.Thinking)
		b.emit("response.reasoning_summary_text.delta", map[string]any{"item_id": item.ID, "output_index": ob.item, "summary_index": 0,
			"delta": ev.Delta.Thinking})
	case "signature_delta":
		ob.sig += ev.Delta.Signature
	}
}

func (b *builder) blockStop(idx int) {
	ob := b.open[idx]
	if ob == nil {
		return
	}
	delete(b.open, idx)
	n := ob.item
	item := &b.items[n]
	text := ob.acc.String()
	stream := b.t.Stream
	switch ob.kind {
	case "text":
		part := outPart{Type: "output_text", Annotations: []any{}, Logprobs: []any{}, Text: text}
		item.Content = &[]outPart{part}
		if stream {
			b.emit("response.output_text.done", map[string]any{"item_id": item.ID, "output_index": n, "content_index": 0, "text": text, "logprobs": []any{}})
			b.emit("response.content_part.done", map[string]any{"item_id": item.ID, "output_index": n, "content_index": 0, "part": part})
		}
	case "tool_use":
		if strings.TrimSpace(text) == "" {
			text = "{}"
		}
		if item.Type == "custom_tool_call" {
			var in struct {
				Input string `json:"input"`
			}
			json.Unmarshal([]byte(text), &in)
			item.Input = &in.Input
			if stream {
				b.emit("response.custom_tool_call_input.done", map[string]any{"item_id": item.ID, "output_index": n, "input": in.Input})
			}
		} else {
			item.Arguments = &text
			if stream {
				b.emit("response.function_call_arguments.done", map[string]any{"item_id": item.ID, "output_index": n, "name": item.Name, "arguments": text})
			}
		}
	case "thinking", "redacted_thinking":
		blk := antBlock{Type: ob.kind}
		if ob.kind == "thinking" {
			blk.Thinking, blk.Signature = str(text), str(ob.sig)
			item.Summary = &[]summaryPart{{Type: "summary_text", Text: text}}
		} else {
			blk.Data = ob.sig
		}
		item.EncryptedContent = thinkingContent(blk)
		if stream && ob.kind == "thinking" {
			b.emit("response.reasoning_summary_text.done", map[string]any{"item_id": item.ID, "output_index": n, "summary_index": 0, "text": text})
			b.emit("response.reasoning_summary_part.done", map[string]any{"item_id": item.ID, "output_index": n, "summary_index": 0,
				"part": summaryPart{Type: "summary_text", Text: text}})
		}
	}
	if item.Type != "reasoning" {
		item.Status = "completed"
	}
	if stream {
		b.emit("response.output_item.done", map[string]any{"output_index": n, "item": *item})
	}
}

// final is the finished response object: every item, the usage, completed or incomplete.
func (b *builder) final() *respObject {
	o := b.t.object(b.id, b.model, "completed")
	o.Output = append([]outItem{}, b.items...)
	o.Usage = b.usage.responses()
	if b.stop == "max_tokens" {
		o.Status = "incomplete"
		o.IncompleteDetails = map[string]string{"reason": "max_output_tokens"}
		for i := range o.Output {
			if o.Output[i].Status == "completed" {
				o.Output[i].Status = "incomplete"
			}
		}
	}
	return o
}

// fail ends the stream with response.failed (the vendor's stream broke off or sent an error).
func (b *builder) fail(code, msg string) {
	if !b.started {
		b.start(&antMessageOut{ID: "msg_failed"})
	}
	o := b.t.object(b.id, b.model, "failed")
	o.Output = append([]outItem{}, b.items...)
	o.Error = map[string]string{"code": code, "message": msg}
	o.Usage = b.usage.responses()
	b.emit("", map[string]any{"response": o})
}
