// Package model owns the model gateway's providers: the neutral request and response types that the
// rest of agentrun speaks (blocks of text, tool calls and tool results, usage counts), and the clients
// that translate them to and from the vendors' real wire formats (Anthropic Messages and OpenAI Chat
// Completions, the latter also covering OpenRouter and OpenAI-compatible local servers). See
// docs/architecture.md, "Model calls and money".
package model

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Block is one piece of a message. Type is "text", "tool_use" or "tool_result".
type Block struct {
	Type      string          `json:"type"`                // "text", "tool_use", "tool_result"
	Text      string          `json:"text,omitempty"`      // text
	ID        string          `json:"id,omitempty"`        // tool_use id
	Name      string          `json:"name,omitempty"`      // tool_use name
	Input     json.RawMessage `json:"input,omitempty"`     // tool_use input (a JSON object)
	ToolUseID string          `json:"toolUseId,omitempty"` // tool_result: which call
	Content   string          `json:"content,omitempty"`   // tool_result text
	IsError   bool            `json:"isError,omitempty"`   // tool_result: the call failed
	// Images are pictures a tool result shows the model, after the text Content (tool_result only).
	// Anthropic carries them inside the tool_result; OpenAI-format vendors, whose tool messages take
	// text only, get them in a user message right after the turn's tool messages.
	Images []Image `json:"images,omitempty"`
}

// Image is a picture a tool result shows the model (a screenshot).
type Image struct {
	MediaType string `json:"mediaType"` // "image/png" or "image/jpeg"
	Data      []byte `json:"data"`
}

// mediaType is the image's media type, sniffed from the data when MediaType is empty.
func (im Image) mediaType() string {
	if im.MediaType != "" {
		return im.MediaType
	}
	return http.DetectContentType(im.Data)
}

// Block types.
const (
	BlockText       = "text"
	BlockToolUse    = "tool_use"
	BlockToolResult = "tool_result"
)

// Neutral stop reasons (Anthropic's names; OpenAI's finish reasons are mapped onto them).
const (
	StopEndTurn   = "end_turn"
	StopToolUse   = "tool_use"
	StopMaxTokens = "max_tokens"
)

// Message is one turn of the conversation. Role is "user" or "assistant"; tool results travel in user
// messages, as in the Anthropic format.
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// ToolDef describes a tool the model may call. InputSchema is a JSON Schema object.
type ToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// Request is one model call.
type Request struct {
	Model     string    `json:"model"`
	System    string    `json:"system,omitempty"`
	Messages  []Message `json:"messages"`
	Tools     []ToolDef `json:"tools,omitempty"`
	MaxTokens int       `json:"maxTokens,omitempty"`
	Stream    bool      `json:"stream,omitempty"`
	// ToolChoice, when set, names the tool of Tools the model must call (Anthropic tool_choice
	// {"type": "tool"}, OpenAI {"type": "function"}): how a structured answer is asked for
	// (Structured).
	ToolChoice string `json:"toolChoice,omitempty"`
	// Encoded, when it encodes Tools (EncodeTools(Tools)), gives their encodings so that a
	// drive's calls do not encode the same definitions again (MarshalRequest, the providers'
	// bodies); otherwise it is ignored. Not part of the request's JSON.
	Encoded *Tools `json:"-"`
}

// Usage counts tokens the way Anthropic bills them: InputTokens are the uncached input tokens, and the
// cache fields are separate from it. CacheCreation1hInputTokens is the part of CacheCreationInputTokens
// written with the one-hour lifetime. ReasoningTokens is the part of OutputTokens spent on reasoning
// (reported by OpenAI-style vendors only).
type Usage struct {
	InputTokens                int64 `json:"inputTokens"`
	OutputTokens               int64 `json:"outputTokens"`
	CacheCreationInputTokens   int64 `json:"cacheCreationInputTokens,omitempty"`
	CacheCreation1hInputTokens int64 `json:"cacheCreation1hInputTokens,omitempty"`
	CacheReadInputTokens       int64 `json:"cacheReadInputTokens,omitempty"`
	ReasoningTokens            int64 `json:"reasoningTokens,omitempty"`
}

// Response is the whole answer of one call, assembled from the stream when the request streamed.
type Response struct {
	ID         string  `json:"id"`
	Model      string  `json:"model"`
	Content    []Block `json:"content"`
	StopReason string  `json:"stopReason"`
	Usage      Usage   `json:"usage"`
}

// Provider is a client for one vendor's API.
type Provider interface {
	Name() string // "anthropic", "openai", "openrouter"
	Complete(ctx context.Context, req *Request) (*Response, error)
}

// APIError is a failed call: the vendor's error (Status > 0) or a connection failure (Status 0).
// Retryable says whether the same call may succeed later (429, 5xx, 529 overloaded, connection errors,
// streams cut short).
type APIError struct {
	Provider  string `json:"provider"`
	Status    int    `json:"status,omitempty"`
	Type      string `json:"type,omitempty"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
	// Err is the underlying transport error, if any.
	Err error `json:"-"`
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	b.WriteString(": ")
	if e.Status > 0 {
		fmt.Fprintf(&b, "HTTP %d ", e.Status)
	}
	if e.Type != "" {
		b.WriteString(e.Type)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

func (e *APIError) Unwrap() error { return e.Err }

// retryableStatus reports whether an HTTP status means "try again later".
func retryableStatus(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusRequestTimeout || status >= 500
}

// maxErrorBody bounds how much of an error body is read: enough for any vendor's message.
const maxErrorBody = 64 << 10

// drain reads what little is left of a body whose answer is complete (a stream's closing bytes after
// [DONE] or message_stop), so the connection goes back to the pool instead of being dropped. Only
// called on success: after a failure the rest of the body may never come.
func drain(body io.Reader) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 4<<10))
}

// truncate shortens s for an error message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
