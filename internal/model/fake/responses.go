package fake

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The OpenAI Responses format (POST /v1/responses), as Codex and pi's openai-responses mode speak it.
//
// A request's input is a list of items: messages (role system, developer, user or assistant; content a
// string or input_text / output_text / input_image parts), function_call items (the model's calls,
// sent back by the client) and function_call_output items (their results). The conversation is read
// as in the other formats, with these rules for items the others do not have:
//
//   - The first user message is the text of every user message before the first assistant item, joined
//     by newlines: Codex sends its <environment_context> as a user message before the prompt, and a
//     script should match the prompt whatever comes first.
//   - A turn is a run of consecutive assistant items (messages, function_call, reasoning): one reply
//     with text and two calls comes back as three items and is one turn. User messages and
//     function_call_output items end a run.
//   - A user message of input_image parts right after function_call_output items carries the tools'
//     images (as in the Chat format) and is not a user message of the conversation.
//   - Tools may be grouped in {"type":"namespace","name":N,"tools":[...]} entries (Codex lists MCP
//     tools so). A scripted call names the tool; its function_call carries the namespace the request
//     put the tool in.
//
// The reply is a response object (non-streaming) or its semantic SSE events, each with its
// sequence_number: response.created, response.in_progress, per output item output_item.added, then
// for a message content_part.added, output_text.delta..., output_text.done, content_part.done, for a
// function call function_call_arguments.delta..., function_call_arguments.done, then output_item.done;
// last response.completed with the usage (or response.incomplete when the scripted output exceeds
// max_output_tokens).

// respRequest is a Responses request, read loosely: fields the server does not use (reasoning,
// include, prompt_cache_key, client_metadata, store) are ignored, as the vendor would accept them.
type respRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       json.RawMessage `json:"instructions"`
	Tools              json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	ParallelToolCalls  *bool           `json:"parallel_tool_calls"`
	MaxOutputTokens    *int64          `json:"max_output_tokens"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Stream             bool            `json:"stream"`
}

// respItem is one input item; which fields count depends on its type.
type respItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// respPart is one content part of a message or of a function_call_output's output.
type respPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL string `json:"image_url"`
	FileID   string `json:"file_id"`
}

// respTool is one entry of tools: a function, a namespace of functions, or a hosted tool (ignored).
type respTool struct {
	Type  string     `json:"type"`
	Name  string     `json:"name"`
	Tools []respTool `json:"tools"`
}

// minOutputTokens is the least max_output_tokens the vendor takes.
const minOutputTokens = 16

// parseResponses reads a Responses request. Errors name the field as the vendor does (input[2].role).
func parseResponses(body []byte) (*conversation, error) {
	var r respRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("body is not a Responses request: %v", err)
	}
	c, err := respConversation(&r)
	if err != nil {
		return nil, err
	}
	items, err := inputItems(r.Input)
	if err != nil {
		return nil, err
	}
	w := &respWalk{c: c, calls: map[string]bool{}, inFirst: true}
	for i, it := range items {
		if err := w.item(fmt.Sprintf("input[%d]", i), it); err != nil {
			return nil, err
		}
	}
	c.firstUser, c.hasFirstUser = strings.Join(w.firstTurn, "\n"), len(w.firstTurn) > 0
	return c, nil
}

// respConversation checks the request's fields other than input and starts its conversation:
// the model, the limits, the tools offered and the one forced, the instructions' weight.
func respConversation(r *respRequest) (*conversation, error) {
	if r.Model == "" {
		return nil, fmt.Errorf("model: field required")
	}
	if r.PreviousResponseID != nil && *r.PreviousResponseID != "" {
		return nil, fmt.Errorf("previous_response_id: the fake model server keeps no responses: send the whole conversation in input")
	}
	if r.MaxOutputTokens != nil && *r.MaxOutputTokens < minOutputTokens {
		return nil, fmt.Errorf("max_output_tokens: integer below minimum value: want at least %d, got %d", minOutputTokens, *r.MaxOutputTokens)
	}
	c := &conversation{model: r.Model, stream: r.Stream, resp: &respExtra{maxOutput: r.MaxOutputTokens,
		instructions: r.Instructions, tools: r.Tools, toolChoice: r.ToolChoice, parallel: r.ParallelToolCalls}}
	var err error
	if c.resp.namespaces, err = toolNamespaces(r.Tools); err != nil {
		return nil, err
	}
	c.toolChoice = r.ToolChoice
	var offered []respTool
	_ = json.Unmarshal(r.Tools, &offered)
	var names []string
	for _, t := range offered {
		names = append(names, t.Name)
		for _, sub := range t.Tools {
			names = append(names, sub.Name)
		}
	}
	if c.forced, err = forcedTool(r.ToolChoice, names); err != nil {
		return nil, err
	}
	if s, ok := rawString(r.Instructions); ok {
		c.chars += len([]rune(s))
	}
	return c, nil
}

// respWalk reads input's items in order into its conversation.
type respWalk struct {
	c         *conversation
	calls     map[string]bool // call_ids of the function_call items so far
	firstTurn []string        // user texts before the first assistant item
	inFirst   bool            // no assistant item yet
	prev      string          // "assistant", "output" or "user": what the last conversation item was
}

// item reads one input item; where names it in errors (input[2]).
func (w *respWalk) item(where string, it respItem) error {
	c := w.c
	typ := it.Type
	if typ == "" && it.Role != "" {
		typ = "message" // the short form {"role", "content"}
	}
	switch typ {
	case "message":
		return w.message(where, it)
	case "function_call", "custom_tool_call", "local_shell_call":
		if typ == "function_call" {
			if it.CallID == "" {
				return fmt.Errorf("%s.call_id: field required", where)
			}
			if it.Name == "" {
				return fmt.Errorf("%s.name: field required", where)
			}
		}
		w.calls[it.CallID] = true
		c.chars += len([]rune(it.Name)) + len([]rune(it.Arguments))
		w.assistant()
	case "reasoning":
		w.assistant()
	case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
		return w.output(where, it)
	case "":
		return fmt.Errorf("%s.type: field required", where)
	default:
		// Items the server has no use for (web_search_call, item_reference, compaction...) are
		// accepted, as the vendor takes them, and only weigh on the input estimate.
		c.chars += len(it.Content) + len(it.Output)
	}
	return nil
}

// assistant notes an assistant item: consecutive ones are one assistant turn.
func (w *respWalk) assistant() {
	if w.prev != "assistant" {
		w.c.assistants++
	}
	w.prev, w.inFirst = "assistant", false
}

// message reads a message item by its role.
func (w *respWalk) message(where string, it respItem) error {
	c := w.c
	text, images, err := respContent(where, it.Content)
	if err != nil {
		return err
	}
	switch it.Role {
	case "system", "developer":
		c.chars += len([]rune(text)) // instructions, not part of the conversation's messages
	case "assistant":
		c.chars += len([]rune(text))
		c.noteImages(images)
		w.assistant()
	case "user":
		c.noteImages(images)
		if w.prev == "output" && len(images) > 0 {
			c.lastToolImages = append(c.lastToolImages, images...)
			return nil // the tools' pictures, not a user message of the conversation
		}
		c.chars += len([]rune(text))
		if w.inFirst && text != "" {
			w.firstTurn = append(w.firstTurn, text)
		}
		if text != "" {
			c.lastUser = text
		}
		w.prev = "user"
	case "":
		return fmt.Errorf("%s.role: field required", where)
	default:
		return fmt.Errorf("%s.role: invalid value %q: supported values are assistant, system, developer and user", where, it.Role)
	}
	return nil
}

// output reads a tool call's output item, which answers a call made earlier in input.
func (w *respWalk) output(where string, it respItem) error {
	c := w.c
	if it.CallID == "" {
		return fmt.Errorf("%s.call_id: field required", where)
	}
	if !w.calls[it.CallID] {
		return fmt.Errorf("%s: no tool call found for function call output with call_id %q", where, it.CallID)
	}
	text, images, err := respOutput(where+".output", it.Output)
	if err != nil {
		return err
	}
	if w.prev != "output" {
		c.lastToolImages = nil // a new batch of tool results
	}
	c.lastToolImages = append(c.lastToolImages, images...)
	c.noteImages(images)
	c.lastToolResult = text
	c.chars += len([]rune(text))
	w.prev = "output"
	return nil
}

// inputItems reads input: a string (one user message) or a list of items.
func inputItems(raw json.RawMessage) ([]respItem, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, fmt.Errorf("input: field required (the fake model server keeps no responses to continue from)")
	}
	if s, ok := rawString(raw); ok {
		content, _ := json.Marshal(s)
		return []respItem{{Type: "message", Role: "user", Content: content}}, nil
	}
	var items []respItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("input: want a string or a list of items: %v", err)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("input: at least one item is required")
	}
	return items, nil
}

func rawString(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// respContent reads a message's content: a string or a list of parts. Text parts are input_text and
// output_text (refusals count as text); images are input_image parts with a data URL.
func respContent(where string, raw json.RawMessage) (string, []imageInfo, error) {
	if s, ok := rawString(raw); ok {
		return s, nil, nil
	}
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, fmt.Errorf("%s.content: field required", where)
	}
	var parts []respPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, fmt.Errorf("%s.content: want a string or a list of parts", where)
	}
	return respParts(where+".content", parts)
}

// respOutput reads a function_call_output's output: a string or a list of parts.
func respOutput(where string, raw json.RawMessage) (string, []imageInfo, error) {
	if s, ok := rawString(raw); ok {
		return s, nil, nil
	}
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, fmt.Errorf("%s: field required", where)
	}
	var parts []respPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, fmt.Errorf("%s: want a string or a list of parts", where)
	}
	return respParts(where, parts)
}

func respParts(where string, parts []respPart) (string, []imageInfo, error) {
	var texts []string
	var images []imageInfo
	for k, p := range parts {
		pw := fmt.Sprintf("%s[%d]", where, k)
		switch p.Type {
		case "input_text", "output_text", "refusal":
			texts = append(texts, p.Text)
		case "input_image":
			if p.ImageURL == "" {
				if p.FileID != "" {
					return "", nil, &imageError{pw + ".file_id: the fake model server keeps no files: send the image as a data URL in image_url"}
				}
				return "", nil, &imageError{pw + ".image_url: field required"}
			}
			im, err := decodeDataURL(pw+".image_url", p.ImageURL)
			if err != nil {
				return "", nil, err
			}
			images = append(images, im)
		case "":
			return "", nil, fmt.Errorf("%s.type: field required", pw)
		}
	}
	return strings.Join(texts, "\n"), images, nil
}

// toolNamespaces maps each tool name inside a namespace entry to its namespace. A name given both at
// the top level and in a namespace is the top-level one (no namespace).
func toolNamespaces(raw json.RawMessage) (map[string]string, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var tools []respTool
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, fmt.Errorf("tools: want a list of tools: %v", err)
	}
	ns := map[string]string{}
	top := map[string]bool{}
	for i, t := range tools {
		switch t.Type {
		case "function":
			if t.Name == "" {
				return nil, fmt.Errorf("tools[%d].name: field required", i)
			}
			top[t.Name] = true
		case "namespace":
			if t.Name == "" {
				return nil, fmt.Errorf("tools[%d].name: field required", i)
			}
			for k, inner := range t.Tools {
				if inner.Name == "" {
					return nil, fmt.Errorf("tools[%d].tools[%d].name: field required", i, k)
				}
				if _, seen := ns[inner.Name]; !seen {
					ns[inner.Name] = t.Name
				}
			}
		case "":
			return nil, fmt.Errorf("tools[%d].type: field required", i)
		}
	}
	for name := range top {
		delete(ns, name)
	}
	return ns, nil
}

// respExtra is what a Responses request adds to the conversation: the fields its response echoes and
// the tools' namespaces.
type respExtra struct {
	maxOutput    *int64
	instructions json.RawMessage
	tools        json.RawMessage
	toolChoice   json.RawMessage
	parallel     *bool
	namespaces   map[string]string
}

// Response shapes.

type respUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

type respOutPart struct {
	Type        string `json:"type"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
	Text        string `json:"text"`
}

// respOutItem is an output item: a message or a function call.
type respOutItem struct {
	ID      string         `json:"id"`
	Type    string         `json:"type"`
	Status  string         `json:"status"`
	Content *[]respOutPart `json:"content,omitempty"` // messages only: [] while it streams
	Role    string         `json:"role,omitempty"`
	// function_call
	Arguments *string `json:"arguments,omitempty"`
	CallID    string  `json:"call_id,omitempty"`
	Name      string  `json:"name,omitempty"`
	Namespace string  `json:"namespace,omitempty"`
}

type respIncomplete struct {
	Reason string `json:"reason"`
}

type respObject struct {
	ID                 string          `json:"id"`
	Object             string          `json:"object"`
	CreatedAt          int64           `json:"created_at"`
	Status             string          `json:"status"`
	Background         bool            `json:"background"`
	Error              any             `json:"error"`
	IncompleteDetails  *respIncomplete `json:"incomplete_details"`
	Instructions       json.RawMessage `json:"instructions"`
	MaxOutputTokens    *int64          `json:"max_output_tokens"`
	Model              string          `json:"model"`
	Output             []respOutItem   `json:"output"`
	ParallelToolCalls  bool            `json:"parallel_tool_calls"`
	PreviousResponseID any             `json:"previous_response_id"`
	Store              bool            `json:"store"`
	Temperature        float64         `json:"temperature"`
	Text               any             `json:"text"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	Tools              json.RawMessage `json:"tools"`
	TopP               float64         `json:"top_p"`
	Truncation         string          `json:"truncation"`
	Usage              *respUsage      `json:"usage"`
	Metadata           map[string]any  `json:"metadata"`
}

func (r *reply) respUsage() *respUsage {
	u := &respUsage{
		InputTokens:  r.usage.InputTokens + r.usage.CacheCreationInputTokens + r.usage.CacheReadInputTokens,
		OutputTokens: r.usage.OutputTokens,
	}
	u.InputTokensDetails.CachedTokens = r.usage.CacheReadInputTokens
	u.InputTokensDetails.CacheWriteTokens = r.usage.CacheCreationInputTokens
	u.OutputTokensDetails.ReasoningTokens = r.usage.ReasoningTokens
	u.TotalTokens = u.InputTokens + u.OutputTokens
	return u
}

// respItems are the reply's output items, complete: a message with the text, then one function_call
// per call, with the namespace the request gave its tool.
func (r *reply) respItems(ns map[string]string, status string) []respOutItem {
	var out []respOutItem
	if r.text != "" {
		out = append(out, respOutItem{ID: fmt.Sprintf("msg_fake_%s_%d", r.slug, r.turn), Type: "message", Status: status,
			Role: "assistant", Content: &[]respOutPart{{Type: "output_text", Annotations: []any{}, Logprobs: []any{}, Text: r.text}}})
	}
	for i, c := range r.calls {
		args := string(c.input)
		out = append(out, respOutItem{ID: r.toolID("fc", i), Type: "function_call", Status: status, Arguments: &args,
			CallID: r.toolID("call", i), Name: c.name, Namespace: ns[c.name]})
	}
	return out
}

// respResponse is the response object for a request: final when done, else as it starts (no output,
// no usage, status in_progress).
func respResponse(r *reply, x *respExtra, done bool) *respObject {
	o := &respObject{ID: fmt.Sprintf("resp_fake_%s_%d", r.slug, r.turn), Object: "response", CreatedAt: created,
		Status: "in_progress", Instructions: nullIfEmpty(x.instructions), MaxOutputTokens: x.maxOutput, Model: r.model,
		Output: []respOutItem{}, ParallelToolCalls: x.parallel == nil || *x.parallel, Store: false, Temperature: 1,
		Text: map[string]any{"format": map[string]string{"type": "text"}}, ToolChoice: x.toolChoice, Tools: x.tools,
		TopP: 1, Truncation: "disabled", Metadata: map[string]any{}}
	if len(o.ToolChoice) == 0 {
		o.ToolChoice = json.RawMessage(`"auto"`)
	}
	if len(bytes.TrimSpace(o.Tools)) == 0 || string(bytes.TrimSpace(o.Tools)) == "null" {
		o.Tools = json.RawMessage(`[]`)
	}
	if !done {
		return o
	}
	o.Status = "completed"
	itemStatus := "completed"
	o.Usage = r.respUsage()
	if x.maxOutput != nil && o.Usage.OutputTokens > *x.maxOutput {
		// The scripted answer is longer than the client allows: the vendor stops at the limit.
		o.Status, itemStatus = "incomplete", "incomplete"
		o.IncompleteDetails = &respIncomplete{Reason: "max_output_tokens"}
		o.Usage.OutputTokens = *x.maxOutput
		o.Usage.OutputTokensDetails.ReasoningTokens = min(o.Usage.OutputTokensDetails.ReasoningTokens, *x.maxOutput)
		o.Usage.TotalTokens = o.Usage.InputTokens + o.Usage.OutputTokens
	}
	o.Output = r.respItems(x.namespaces, itemStatus)
	return o
}

func nullIfEmpty(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// writeResponsesStream writes the Responses event sequence (see the top of this file). Each event has
// an "event:" line naming its type, as the vendor sends it. last is called just before the final
// event is written.
func writeResponsesStream(ctx context.Context, w http.ResponseWriter, r *reply, x *respExtra, last func()) error {
	type obj = map[string]any
	final := respResponse(r, x, true)
	var evs []obj
	evs = append(evs,
		obj{"type": "response.created", "response": respResponse(r, x, false)},
		obj{"type": "response.in_progress", "response": respResponse(r, x, false)})
	for i, item := range final.Output {
		head := item
		head.Status = "in_progress"
		switch item.Type {
		case "message":
			head.Content = &[]respOutPart{}
			evs = append(evs, obj{"type": "response.output_item.added", "output_index": i, "item": head})
			part := (*item.Content)[0]
			empty := part
			empty.Text = ""
			evs = append(evs, obj{"type": "response.content_part.added", "item_id": item.ID, "output_index": i, "content_index": 0, "part": empty})
			for _, p := range chunks(part.Text, 16) {
				evs = append(evs, obj{"type": "response.output_text.delta", "item_id": item.ID, "output_index": i, "content_index": 0,
					"delta": p, "logprobs": []any{}})
			}
			evs = append(evs,
				obj{"type": "response.output_text.done", "item_id": item.ID, "output_index": i, "content_index": 0, "text": part.Text, "logprobs": []any{}},
				obj{"type": "response.content_part.done", "item_id": item.ID, "output_index": i, "content_index": 0, "part": part})
		case "function_call":
			empty := ""
			head.Arguments = &empty
			evs = append(evs, obj{"type": "response.output_item.added", "output_index": i, "item": head})
			for _, p := range chunks(*item.Arguments, 24) {
				evs = append(evs, obj{"type": "response.function_call_arguments.delta", "item_id": item.ID, "output_index": i, "delta": p})
			}
			evs = append(evs, obj{"type": "response.function_call_arguments.done", "item_id": item.ID, "output_index": i,
				"name": item.Name, "arguments": *item.Arguments})
		}
		evs = append(evs, obj{"type": "response.output_item.done", "output_index": i, "item": item})
	}
	end := "response.completed"
	if final.Status == "incomplete" {
		end = "response.incomplete"
	}
	evs = append(evs, obj{"type": end, "response": final})
	sw := newSSEWriter(ctx, w, r.streamDelay)
	for i, e := range evs {
		e["sequence_number"] = i
		if i == len(evs)-1 {
			last()
		}
		if err := sw.event(e["type"].(string), e); err != nil {
			return err
		}
	}
	return nil
}
