package model

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
)

// Default base URLs of the OpenAI-format vendors.
const (
	DefaultOpenAIBaseURL     = "https://api.openai.com/v1"
	DefaultOpenRouterBaseURL = "https://openrouter.ai/api/v1"
)

type openAI struct {
	name string
	base string
	key  string
	hc   *http.Client
}

// NewOpenAI returns a client for the OpenAI Chat Completions API. name is "openai" (default base
// DefaultOpenAIBaseURL) or "openrouter" (default base DefaultOpenRouterBaseURL); any other name is
// an OpenAI-compatible server (vLLM, Ollama, llama.cpp) and needs baseURL. baseURL includes the version
// path (".../v1"); requests go to {baseURL}/chat/completions. A nil hc means http.DefaultClient.
func NewOpenAI(name, baseURL, apiKey string, hc *http.Client) Provider {
	if name == "" {
		name = "openai"
	}
	if baseURL == "" {
		baseURL = DefaultOpenAIBaseURL
		if name == "openrouter" {
			baseURL = DefaultOpenRouterBaseURL
		}
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	return &openAI{name: name, base: strings.TrimRight(baseURL, "/"), key: apiKey, hc: hc}
}

func (o *openAI) Name() string { return o.name }

// Wire types of Chat Completions.
type oaiRequest struct {
	Model         string        `json:"model"`
	Messages      []oaiMessage  `json:"messages"`
	Tools         []oaiTool     `json:"tools,omitempty"`
	MaxTokens     int           `json:"max_tokens,omitempty"`
	Stream        bool          `json:"stream,omitempty"`
	StreamOptions *oaiStreamOpt `json:"stream_options,omitempty"`
	// ToolChoice forces a call of one function (a structured answer).
	ToolChoice *oaiToolChoice `json:"tool_choice,omitempty"`
}

type oaiToolChoice struct {
	Type     string `json:"type"` // "function"
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

type oaiStreamOpt struct {
	IncludeUsage bool `json:"include_usage"`
}

type oaiMessage struct {
	Role string `json:"role"`
	// Content is a *string (nil: null, for an assistant message that only calls tools) or, for the
	// user message that carries tool results' images, []oaiPart.
	Content    any           `json:"content"`
	ToolCalls  []oaiToolCall `json:"tool_calls,omitempty"`
	ToolCallID string        `json:"tool_call_id,omitempty"`
}

// oaiPart is one part of a user message's content: text or an image (here always a data URL).
type oaiPart struct {
	Type     string       `json:"type"` // "text" | "image_url"
	Text     string       `json:"text,omitempty"`
	ImageURL *oaiImageURL `json:"image_url,omitempty"`
}

type oaiImageURL struct {
	URL string `json:"url"`
}

// toolImagesHeader introduces, in the user message after a turn's tool messages, the images one tool
// call returned.
const toolImagesHeader = "Images returned by tool call %s:"

type oaiToolCall struct {
	Index    *int   `json:"index,omitempty"` // streaming deltas only
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaiTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type oaiUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
		// OpenRouter reports prompt-cache writes (for vendors that bill them) here.
		CacheWriteTokens int64 `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// neutral maps OpenAI usage, where prompt_tokens includes cached tokens, onto Usage, where InputTokens
// excludes them.
func (u *oaiUsage) neutral() Usage {
	out := Usage{OutputTokens: u.CompletionTokens}
	in := u.PromptTokens
	if d := u.PromptTokensDetails; d != nil {
		out.CacheReadInputTokens = d.CachedTokens
		out.CacheCreationInputTokens = d.CacheWriteTokens
		in -= d.CachedTokens + d.CacheWriteTokens
	}
	out.InputTokens = max(in, 0)
	if d := u.CompletionTokensDetails; d != nil {
		out.ReasoningTokens = d.ReasoningTokens
	}
	return out
}

type oaiResponse struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content   *string       `json:"content"`
			ToolCalls []oaiToolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *oaiUsage `json:"usage"`
}

// oaiError is OpenAI's error body; OpenRouter sends code as a number, hence RawMessage.
type oaiError struct {
	Error *struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	} `json:"error"`
}

func (e *oaiError) apiError(provider string, status int) *APIError {
	out := &APIError{Provider: provider, Status: status, Message: e.Error.Message, Type: e.Error.Type,
		Retryable: retryableStatus(status)}
	if out.Type == "" && len(e.Error.Code) > 0 && string(e.Error.Code) != "null" {
		out.Type = strings.Trim(string(e.Error.Code), `"`)
	}
	return out
}

func (o *openAI) Complete(ctx context.Context, req *Request) (*Response, error) {
	encode := func() ([][]byte, error) {
		b, err := json.Marshal(o.wireRequest(req))
		return [][]byte{b}, err
	}
	body, err := encode()
	if err != nil {
		return nil, fmt.Errorf("%s: encode request: %w", o.name, err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, o.base+"/chat/completions", http.NoBody)
	if err != nil {
		return nil, fmt.Errorf("%s: build request: %w", o.name, err)
	}
	bodyOf(hreq, body, encode)
	hreq.Header.Set("Content-Type", "application/json")
	if o.key != "" {
		hreq.Header.Set("Authorization", "Bearer "+o.key)
	}
	if req.Stream {
		hreq.Header.Set("Accept", "text/event-stream")
	}
	resp, err := o.hc.Do(hreq)
	if err != nil {
		return nil, transportError(ctx, o.name, "send request", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, o.httpError(resp)
	}
	if req.Stream {
		out, err := o.readStream(ctx, resp.Body)
		if err == nil {
			drain(resp.Body)
		}
		return out, err
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, transportError(ctx, o.name, "read response", err)
	}
	var or oaiResponse
	if err := json.Unmarshal(raw, &or); err != nil {
		return nil, &APIError{Provider: o.name, Status: resp.StatusCode, Type: "invalid_response",
			Message: fmt.Sprintf("decode response: %v", err)}
	}
	if len(or.Choices) == 0 {
		// Some compatible servers answer 200 with an error body.
		var oe oaiError
		if json.Unmarshal(raw, &oe) == nil && oe.Error != nil {
			return nil, oe.apiError(o.name, resp.StatusCode)
		}
		return nil, &APIError{Provider: o.name, Status: resp.StatusCode, Type: "invalid_response",
			Message: "response has no choices"}
	}
	ch := or.Choices[0]
	text := ""
	if ch.Message.Content != nil {
		text = *ch.Message.Content
	}
	out := &Response{ID: or.ID, Model: or.Model}
	out.Content = assembleOpenAI(text, ch.Message.ToolCalls)
	out.StopReason = stopFromFinish(ch.FinishReason, len(ch.Message.ToolCalls) > 0)
	if or.Usage != nil {
		out.Usage = or.Usage.neutral()
	}
	return out, nil
}

func (o *openAI) wireRequest(req *Request) *oaiRequest {
	w := &oaiRequest{Model: req.Model, MaxTokens: req.MaxTokens, Stream: req.Stream}
	if req.ToolChoice != "" {
		w.ToolChoice = &oaiToolChoice{Type: "function"}
		w.ToolChoice.Function.Name = req.ToolChoice
	}
	if req.Stream {
		w.StreamOptions = &oaiStreamOpt{IncludeUsage: true}
	}
	str := func(s string) *string { return &s }
	if req.System != "" {
		w.Messages = append(w.Messages, oaiMessage{Role: "system", Content: str(req.System)})
	}
	for _, m := range req.Messages {
		var texts []string
		var calls []oaiToolCall
		var images []oaiPart // tool results' images, for a user message after the tool messages
		for _, b := range m.Content {
			switch b.Type {
			case BlockText:
				texts = append(texts, b.Text)
			case BlockToolUse:
				var tc oaiToolCall
				tc.ID, tc.Type = b.ID, "function"
				tc.Function.Name = b.Name
				tc.Function.Arguments = string(b.Input)
				if len(bytes.TrimSpace(b.Input)) == 0 {
					tc.Function.Arguments = "{}"
				}
				calls = append(calls, tc)
			case BlockToolResult:
				// Tool results are messages of their own, and must directly follow the assistant message
				// that called, so they go before any text of the same user turn. OpenAI has no error flag;
				// the content says what went wrong.
				w.Messages = append(w.Messages, oaiMessage{Role: "tool", ToolCallID: b.ToolUseID, Content: str(b.Content)})
				images = appendToolImages(images, b)
			}
		}
		if len(images) > 0 {
			// Tool messages carry text only, so the pictures follow them in a user message of their own,
			// each call's images after a line naming the call.
			w.Messages = append(w.Messages, oaiMessage{Role: "user", Content: images})
		}
		switch {
		case m.Role == "assistant":
			am := oaiMessage{Role: "assistant", ToolCalls: calls}
			if len(texts) > 0 || len(calls) == 0 {
				am.Content = str(strings.Join(texts, "\n"))
			}
			w.Messages = append(w.Messages, am)
		case len(texts) > 0:
			w.Messages = append(w.Messages, oaiMessage{Role: m.Role, Content: str(strings.Join(texts, "\n"))})
		}
	}
	for _, t := range req.Tools {
		var ot oaiTool
		ot.Type = "function"
		ot.Function.Name, ot.Function.Description = t.Name, t.Description
		ot.Function.Parameters = t.InputSchema
		if len(ot.Function.Parameters) == 0 {
			ot.Function.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		w.Tools = append(w.Tools, ot)
	}
	return w
}

// appendToolImages appends a tool result's images, after a text part naming its call, as parts of
// a user message; a result without images adds nothing.
func appendToolImages(parts []oaiPart, b Block) []oaiPart {
	if len(b.Images) == 0 {
		return parts
	}
	parts = append(parts, oaiPart{Type: "text", Text: fmt.Sprintf(toolImagesHeader, b.ToolUseID)})
	for _, im := range b.Images {
		url := "data:" + im.mediaType() + ";base64," + base64.StdEncoding.EncodeToString(im.Data)
		parts = append(parts, oaiPart{Type: "image_url", ImageURL: &oaiImageURL{URL: url}})
	}
	return parts
}

// assembleOpenAI builds neutral blocks from a message's text and tool calls.
func assembleOpenAI(text string, calls []oaiToolCall) []Block {
	var out []Block
	if text != "" {
		out = append(out, Block{Type: BlockText, Text: text})
	}
	for _, c := range calls {
		out = append(out, Block{Type: BlockToolUse, ID: c.ID, Name: c.Function.Name, Input: argumentsJSON(c.Function.Arguments)})
	}
	return out
}

// argumentsJSON turns a tool call's arguments string into the Input of a block. A model may emit
// arguments that are not JSON; they are kept as a JSON string so nothing is lost and the tool's
// validation reports the problem to the model.
func argumentsJSON(args string) json.RawMessage {
	args = strings.TrimSpace(args)
	if args == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(args)) {
		var buf bytes.Buffer
		if json.Compact(&buf, []byte(args)) == nil {
			return buf.Bytes()
		}
	}
	b, _ := json.Marshal(args)
	return b
}

// stopFromFinish maps an OpenAI finish_reason onto the neutral stop reasons. Some compatible servers
// say "stop" even when the message calls tools; the calls decide.
func stopFromFinish(reason string, hasCalls bool) string {
	switch reason {
	case "tool_calls", "function_call":
		return StopToolUse
	case "length":
		return StopMaxTokens
	case "content_filter":
		return "refusal"
	case "stop", "":
		if hasCalls {
			return StopToolUse
		}
		return StopEndTurn
	}
	return reason
}

func (o *openAI) httpError(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var oe oaiError
	if json.Unmarshal(raw, &oe) == nil && oe.Error != nil && oe.Error.Message != "" {
		return oe.apiError(o.name, resp.StatusCode)
	}
	msg := truncate(strings.TrimSpace(string(raw)), 500)
	if msg == "" {
		msg = resp.Status
	}
	return &APIError{Provider: o.name, Status: resp.StatusCode, Message: msg, Retryable: retryableStatus(resp.StatusCode)}
}

type oaiChunk struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			Content   *string       `json:"content"`
			ToolCalls []oaiToolCall `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *oaiUsage `json:"usage"`
	Error *struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	} `json:"error"`
}

// readStream assembles a Response from Chat Completions chunks: text deltas appended, tool calls
// accumulated by index, usage from the chunk that carries it (the last one, with include_usage).
func (o *openAI) readStream(ctx context.Context, body io.Reader) (*Response, error) {
	out := &Response{}
	var text strings.Builder
	calls := map[int]*oaiToolCall{}
	finish := ""
	finished := false
	last := -1
	sr := newSSEReader(body)
	defer sr.release()
	for {
		ev, err := sr.Next()
		if errors.Is(err, io.EOF) && finished {
			break // the server closed without [DONE] after finishing: the answer is whole
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, transportError(ctx, o.name, "stream ended before [DONE]", err)
		}
		data := strings.TrimSpace(ev.Data)
		if data == "[DONE]" {
			break
		}
		if data == "" {
			continue
		}
		var ch oaiChunk
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return nil, &APIError{Provider: o.name, Type: "invalid_stream", Message: fmt.Sprintf("bad chunk: %v", err)}
		}
		if ch.Error != nil {
			oe := oaiError{Error: ch.Error}
			e := oe.apiError(o.name, 0)
			e.Retryable = true // a stream cut by the vendor mid-way; the same call may well succeed
			return nil, e
		}
		if out.ID == "" {
			out.ID = ch.ID
		}
		if out.Model == "" {
			out.Model = ch.Model
		}
		if ch.Usage != nil {
			out.Usage = ch.Usage.neutral()
		}
		for _, c := range ch.Choices {
			if c.Delta.Content != nil {
				text.WriteString(*c.Delta.Content)
				textTo(ctx, *c.Delta.Content)
			}
			for _, tc := range c.Delta.ToolCalls {
				i := last
				switch {
				case tc.Index != nil:
					i = *tc.Index
				case tc.ID != "" && (last < 0 || calls[last].ID != tc.ID):
					i = last + 1 // servers that omit index: a new id starts a new call
				case last < 0:
					i = 0
				}
				cur := calls[i]
				if cur == nil {
					cur = &oaiToolCall{}
					calls[i] = cur
				}
				last = max(last, i)
				if tc.ID != "" {
					cur.ID = tc.ID
				}
				if cur.Function.Name == "" {
					cur.Function.Name = tc.Function.Name
				}
				cur.Function.Arguments += tc.Function.Arguments
			}
			if c.FinishReason != nil && *c.FinishReason != "" {
				finish, finished = *c.FinishReason, true
			}
		}
	}
	idx := make([]int, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	list := make([]oaiToolCall, 0, len(idx))
	for _, i := range idx {
		list = append(list, *calls[i])
	}
	out.Content = assembleOpenAI(text.String(), list)
	out.StopReason = stopFromFinish(finish, len(list) > 0)
	return out, nil
}
