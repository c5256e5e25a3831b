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

// DefaultAnthropicBaseURL is where the Anthropic Messages API lives.
const DefaultAnthropicBaseURL = "https://api.anthropic.com"

// anthropicVersion is the API version header every Messages request carries.
const anthropicVersion = "2023-06-01"

// defaultMaxTokens fills max_tokens, which the Messages API requires, when the request leaves it zero.
const defaultMaxTokens = 4096

type anthropic struct {
	base string
	key  string
	hc   *http.Client
}

// NewAnthropic returns a client for the Anthropic Messages API at baseURL (without /v1; empty means
// DefaultAnthropicBaseURL). A nil hc means http.DefaultClient.
func NewAnthropic(baseURL, apiKey string, hc *http.Client) Provider {
	if baseURL == "" {
		baseURL = DefaultAnthropicBaseURL
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	return &anthropic{base: strings.TrimRight(baseURL, "/"), key: apiKey, hc: hc}
}

func (a *anthropic) Name() string { return "anthropic" }

// Wire types of the Messages API.
type antRequest struct {
	Model     string       `json:"model"`
	MaxTokens int          `json:"max_tokens"`
	System    string       `json:"system,omitempty"`
	Messages  []antMessage `json:"messages"`
	Tools     []antTool    `json:"tools,omitempty"`
	Stream    bool         `json:"stream,omitempty"`
	// ToolChoice forces a call of one tool (a structured answer).
	ToolChoice *antToolChoice `json:"tool_choice,omitempty"`
}

type antToolChoice struct {
	Type string `json:"type"` // "tool"
	Name string `json:"name"`
}

type antMessage struct {
	Role    string     `json:"role"`
	Content []antBlock `json:"content"`
}

type antBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	// Content is a tool_result's content: nil (none), a string, or, when the result has images,
	// []antBlock of one text block and image blocks. Responses are decoded into it as they come.
	Content any             `json:"content,omitempty"`
	IsError bool            `json:"is_error,omitempty"`
	Source  *antImageSource `json:"source,omitempty"` // image
}

// antImageSource is an image block's data, always sent inline as base64.
type antImageSource struct {
	Type      string `json:"type"` // "base64"
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

type antTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type antUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
	CacheCreation            *struct {
		Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
}

// apply copies the fields present in u onto dst. Streams report usage twice (message_start, then
// cumulative counts in message_delta), so only fields actually sent overwrite.
func (u *antUsage) apply(dst *Usage) {
	if u == nil {
		return
	}
	set := func(p *int64, v *int64) {
		if v != nil {
			*p = *v
		}
	}
	set(&dst.InputTokens, u.InputTokens)
	set(&dst.OutputTokens, u.OutputTokens)
	set(&dst.CacheCreationInputTokens, u.CacheCreationInputTokens)
	set(&dst.CacheReadInputTokens, u.CacheReadInputTokens)
	if u.CacheCreation != nil {
		dst.CacheCreation1hInputTokens = u.CacheCreation.Ephemeral1h
	}
}

type antResponse struct {
	ID         string     `json:"id"`
	Type       string     `json:"type"`
	Model      string     `json:"model"`
	Content    []antBlock `json:"content"`
	StopReason string     `json:"stop_reason"`
	Usage      *antUsage  `json:"usage"`
}

type antError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func (a *anthropic) Complete(ctx context.Context, req *Request) (*Response, error) {
	encode := func() ([][]byte, error) { return anthropicBody(a.wireRequest(req), req) }
	body, err := encode()
	if err != nil {
		return nil, fmt.Errorf("anthropic: encode request: %w", err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, a.base+"/v1/messages", http.NoBody)
	if err != nil {
		return nil, fmt.Errorf("anthropic: build request: %w", err)
	}
	bodyOf(hreq, body, encode)
	hreq.Header.Set("content-type", "application/json")
	hreq.Header.Set("anthropic-version", anthropicVersion)
	if a.key != "" {
		hreq.Header.Set("x-api-key", a.key)
	}
	if req.Stream {
		hreq.Header.Set("accept", "text/event-stream")
	}
	resp, err := a.hc.Do(hreq)
	if err != nil {
		return nil, transportError(ctx, a.Name(), "send request", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, a.httpError(resp)
	}
	if req.Stream {
		out, err := a.readStream(ctx, resp.Body)
		if err == nil {
			drain(resp.Body)
		}
		return out, err
	}
	var ar antResponse
	if err := json.NewDecoder(resp.Body).Decode(&ar); err != nil {
		return nil, transportError(ctx, a.Name(), "decode response", err)
	}
	drain(resp.Body)
	out := &Response{ID: ar.ID, Model: ar.Model, StopReason: ar.StopReason}
	ar.Usage.apply(&out.Usage)
	for _, b := range ar.Content {
		if nb, ok := fromAntBlock(b); ok {
			out.Content = append(out.Content, nb)
		}
	}
	return out, nil
}

func (a *anthropic) wireRequest(req *Request) *antRequest {
	w := &antRequest{Model: req.Model, MaxTokens: req.MaxTokens, System: req.System, Stream: req.Stream,
		Messages: make([]antMessage, 0, len(req.Messages))}
	if w.MaxTokens <= 0 {
		w.MaxTokens = defaultMaxTokens
	}
	if req.ToolChoice != "" {
		w.ToolChoice = &antToolChoice{Type: "tool", Name: req.ToolChoice}
	}
	for _, m := range req.Messages {
		am := antMessage{Role: m.Role, Content: make([]antBlock, 0, len(m.Content))}
		for _, b := range m.Content {
			ab := antBlock{Type: b.Type}
			switch b.Type {
			case BlockText:
				ab.Text = b.Text
			case BlockToolUse:
				ab.ID, ab.Name, ab.Input = b.ID, b.Name, b.Input
				if len(ab.Input) == 0 {
					ab.Input = json.RawMessage("{}") // the API requires input even when empty
				}
			case BlockToolResult:
				ab.ToolUseID, ab.IsError = b.ToolUseID, b.IsError
				ab.Content = antToolResultContent(b)
			}
			am.Content = append(am.Content, ab)
		}
		w.Messages = append(w.Messages, am)
	}
	if !req.Encoded.of(req.Tools) {
		// Otherwise marshalAnthropic takes them encoded from req.Encoded.
		w.Tools = antTools(req.Tools)
	}
	return w
}

// antTools is the Messages API's form of defs (nil for none).
func antTools(defs []ToolDef) []antTool {
	var out []antTool
	for _, t := range defs {
		schema := t.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		out = append(out, antTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	return out
}

// antToolResultContent is a tool_result's content: the text as a string (absent when empty), or, when
// the result has images, a list of a text block (left out when the text is empty: the API refuses
// empty text blocks) and one image block per image.
func antToolResultContent(b Block) any {
	if len(b.Images) == 0 {
		if b.Content == "" {
			return nil
		}
		return b.Content
	}
	parts := make([]antBlock, 0, len(b.Images)+1)
	if b.Content != "" {
		parts = append(parts, antBlock{Type: BlockText, Text: b.Content})
	}
	for _, im := range b.Images {
		parts = append(parts, antBlock{Type: "image", Source: &antImageSource{Type: "base64",
			MediaType: im.mediaType(), Data: base64.StdEncoding.EncodeToString(im.Data)}})
	}
	return parts
}

// fromAntBlock maps a response block; blocks the neutral format has no place for (thinking, server
// tools) are dropped.
func fromAntBlock(b antBlock) (Block, bool) {
	switch b.Type {
	case BlockText:
		return Block{Type: BlockText, Text: b.Text}, true
	case BlockToolUse:
		in := b.Input
		if len(bytes.TrimSpace(in)) == 0 {
			in = json.RawMessage("{}")
		}
		return Block{Type: BlockToolUse, ID: b.ID, Name: b.Name, Input: in}, true
	}
	return Block{}, false
}

func (a *anthropic) httpError(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &APIError{Provider: a.Name(), Status: resp.StatusCode, Retryable: retryableStatus(resp.StatusCode)}
	var ae antError
	if json.Unmarshal(raw, &ae) == nil && ae.Error.Message != "" {
		e.Type, e.Message = ae.Error.Type, ae.Error.Message
	} else {
		e.Message = truncate(strings.TrimSpace(string(raw)), 500)
		if e.Message == "" {
			e.Message = resp.Status
		}
	}
	return e
}

// Stream event payloads.
type antStreamEvent struct {
	Type         string       `json:"type"`
	Message      *antResponse `json:"message"`
	Index        int          `json:"index"`
	ContentBlock *antBlock    `json:"content_block"`
	Delta        *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *antUsage `json:"usage"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// readStream assembles a Response from the Messages SSE stream.
func (a *anthropic) readStream(ctx context.Context, body io.Reader) (*Response, error) {
	type partial struct {
		block Block
		json  strings.Builder
		keep  bool
	}
	out := &Response{}
	blocks := map[int]*partial{}
	sr := newSSEReader(body)
	defer sr.release()
	for {
		ev, err := sr.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, transportError(ctx, a.Name(), "stream ended before message_stop", err)
		}
		var se antStreamEvent
		if err := json.Unmarshal([]byte(ev.Data), &se); err != nil {
			return nil, &APIError{Provider: a.Name(), Type: "invalid_stream",
				Message: fmt.Sprintf("bad %q event: %v", ev.Event, err)}
		}
		switch se.Type {
		case "message_start":
			if se.Message != nil {
				out.ID, out.Model = se.Message.ID, se.Message.Model
				se.Message.Usage.apply(&out.Usage)
			}
		case "content_block_start":
			p := &partial{}
			if se.ContentBlock != nil {
				p.block, p.keep = fromAntBlock(*se.ContentBlock)
				// The start event carries an empty input; the real one arrives as input_json_delta.
				p.block.Input = nil
			}
			blocks[se.Index] = p
		case "content_block_delta":
			p := blocks[se.Index]
			if p == nil || se.Delta == nil {
				continue
			}
			switch se.Delta.Type {
			case "text_delta":
				p.block.Text += se.Delta.Text
				if p.keep {
					textTo(ctx, se.Delta.Text)
				}
			case "input_json_delta":
				p.json.WriteString(se.Delta.PartialJSON)
			}
		case "content_block_stop":
			if p := blocks[se.Index]; p != nil && p.block.Type == BlockToolUse {
				p.block.Input = json.RawMessage(p.json.String())
				if len(bytes.TrimSpace(p.block.Input)) == 0 {
					p.block.Input = json.RawMessage("{}")
				}
				if !json.Valid(p.block.Input) {
					return nil, &APIError{Provider: a.Name(), Type: "invalid_stream",
						Message: fmt.Sprintf("tool_use %s: input is not valid JSON: %s", p.block.ID, truncate(p.json.String(), 200))}
				}
			}
		case "message_delta":
			if se.Delta != nil && se.Delta.StopReason != "" {
				out.StopReason = se.Delta.StopReason
			}
			se.Usage.apply(&out.Usage)
		case "message_stop":
			idx := make([]int, 0, len(blocks))
			for i, p := range blocks {
				if p.keep {
					idx = append(idx, i)
				}
			}
			sort.Ints(idx)
			for _, i := range idx {
				out.Content = append(out.Content, blocks[i].block)
			}
			return out, nil
		case "error":
			e := &APIError{Provider: a.Name(), Type: "api_error", Message: "error event without a message"}
			if se.Error != nil {
				e.Type, e.Message = se.Error.Type, se.Error.Message
			}
			switch e.Type {
			case "overloaded_error":
				e.Status = 529
			case "rate_limit_error":
				e.Status = http.StatusTooManyRequests
			case "api_error":
				e.Status = http.StatusInternalServerError
			}
			e.Retryable = retryableStatus(e.Status)
			return nil, e
		}
	}
}

// transportError turns a failure to talk to the vendor into an error: the context's own error when it
// ended (not retryable: the caller gave up), otherwise a retryable *APIError.
func transportError(ctx context.Context, provider, what string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %s: %w", provider, what, ctxErr)
	}
	return &APIError{Provider: provider, Type: "connection_error", Message: fmt.Sprintf("%s: %v", what, err),
		Retryable: true, Err: err}
}
