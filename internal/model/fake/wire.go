package fake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// conversation is what the server reads from a request, in either format.
type conversation struct {
	model          string
	stream         bool
	includeUsage   bool // OpenAI stream_options.include_usage
	firstUser      string
	hasFirstUser   bool
	assistants     int
	lastUser       string
	lastToolResult string
	// lastToolImages are the images of the last batch of tool results: the tool_result blocks of the
	// last user message that has any (Anthropic), or the last run of tool messages and the user message
	// of images right after it (OpenAI).
	lastToolImages []imageInfo
	chars          int        // characters of all messages, for the default input estimate
	resp           *respExtra // Responses requests only
	// tools are the names of the tools an Anthropic request offers (nil when it lists none), for
	// toolName.
	tools []string
	// toolChoice is the request's tool_choice as sent, forced the tool it forces ("" when none).
	toolChoice json.RawMessage
	forced     string
}

// forcedTool reads the tool a tool_choice forces, in any of the three formats: Anthropic
// {"type": "tool", "name"}, Chat Completions {"type": "function", "function": {"name"}},
// Responses {"type": "function", "name"}. offered are the request's tool names: like the vendors,
// the server refuses a forced tool it is not offered.
func forcedTool(raw json.RawMessage, offered []string) (string, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return "", nil // absent, or "auto" / "none" / "required"
	}
	var tc struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &tc); err != nil {
		return "", fmt.Errorf("tool_choice: %v", err)
	}
	name := tc.Name
	if tc.Type == "function" && tc.Function.Name != "" {
		name = tc.Function.Name
	}
	if tc.Type != "tool" && tc.Type != "function" {
		return "", nil
	}
	if !slices.Contains(offered, name) {
		return "", fmt.Errorf("tool_choice: the forced tool %q is not one of the request's tools %v", name, offered)
	}
	return name, nil
}

// Harnesses get the run's tools under a prefix: Claude Code (and Codex through the gateway's
// translation) as mcp__agentrun__NAME, OpenCode as agentrun_NAME.
var harnessToolPrefixes = []string{"mcp__agentrun__", "agentrun_"}

// toolName is the name a scripted call goes out with: the script's, unless the request offers no
// tool of that name but exactly one that is it under a harness's prefix, so one script (such as
// examples/model-script.yaml) drives the built-in loop and every harness alike.
func (c *conversation) toolName(name string) string {
	if c.tools == nil || slices.Contains(c.tools, name) {
		return name
	}
	hit := ""
	for _, p := range harnessToolPrefixes {
		if slices.Contains(c.tools, p+name) {
			if hit != "" {
				return name
			}
			hit = p + name
		}
	}
	if hit == "" {
		return name
	}
	return hit
}

// noteImages adds images to the input estimate (at four characters a token).
func (c *conversation) noteImages(ims []imageInfo) {
	for _, im := range ims {
		c.chars += 4 * imageTokens(im)
	}
}

// Anthropic request, read loosely: content may be a string or blocks, tool_result content a string or
// blocks, and unknown fields (thinking, cache_control, metadata) are ignored as the real API would
// accept them.
type antRequest struct {
	Model     string `json:"model"`
	MaxTokens *int   `json:"max_tokens"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Stream bool `json:"stream"`
	Tools  []struct {
		Name string `json:"name"`
	} `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

type antInBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Input   json.RawMessage `json:"input"`
	Content json.RawMessage `json:"content"`
	Source  *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"` // image
}

// antImage reads an image block; where is its path in the request.
func antImage(where string, b antInBlock) (imageInfo, error) {
	if b.Source == nil {
		return imageInfo{}, &imageError{where + ".source: field required"}
	}
	if b.Source.Type != "base64" {
		return imageInfo{}, &imageError{fmt.Sprintf("%s.source.type: the fake model server takes only base64 images (it fetches nothing), got %q", where, b.Source.Type)}
	}
	return decodeImage(where+".source", b.Source.MediaType, b.Source.Data)
}

// textOf reads a content value that is a string or a list of blocks, returning the text of the text
// blocks and the blocks themselves.
func textOf(raw json.RawMessage) (string, []antInBlock, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	// A string or a list of blocks: the first byte says which, so the content is decoded once
	// (trying it as a string first scanned a whole list of blocks only to fail).
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) > 0 && t[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s, nil, nil
		}
	}
	var blocks []antInBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", nil, fmt.Errorf("content is neither a string nor a list of blocks")
	}
	var texts []string
	for _, b := range blocks {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n"), blocks, nil
}

func parseAnthropic(body []byte) (*conversation, error) {
	var r antRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("body is not a Messages request: %v", err)
	}
	if r.Model == "" {
		return nil, fmt.Errorf("model: field required")
	}
	if r.MaxTokens == nil {
		return nil, fmt.Errorf("max_tokens: field required")
	}
	if len(r.Messages) == 0 {
		return nil, fmt.Errorf("messages: at least one message is required")
	}
	c := &conversation{model: r.Model, stream: r.Stream}
	for _, t := range r.Tools {
		c.tools = append(c.tools, t.Name)
	}
	c.toolChoice = r.ToolChoice
	forced, err := forcedTool(r.ToolChoice, c.tools)
	if err != nil {
		return nil, err
	}
	c.forced = forced
	for i, m := range r.Messages {
		text, blocks, err := textOf(m.Content)
		if err != nil {
			return nil, fmt.Errorf("messages.%d.content: %v", i, err)
		}
		c.chars += len([]rune(text))
		hasText := text != ""
		var batch []imageInfo // this message's tool results' images
		hasResults := false
		for k, b := range blocks {
			switch b.Type {
			case "tool_use":
				c.chars += len([]rune(string(b.Input)))
			case "image": // a picture in the message itself: checked and counted, not a tool's
				im, err := antImage(fmt.Sprintf("messages.%d.content.%d.image", i, k), b)
				if err != nil {
					return nil, err
				}
				c.noteImages([]imageInfo{im})
			case "tool_result":
				rt, inner, err := textOf(b.Content)
				if err != nil {
					return nil, fmt.Errorf("messages.%d.content: tool_result: %v", i, err)
				}
				c.chars += len([]rune(rt))
				c.lastToolResult = rt
				hasResults = true
				for n, ib := range inner {
					if ib.Type != "image" {
						continue
					}
					im, err := antImage(fmt.Sprintf("messages.%d.content.%d.tool_result.content.%d.image", i, k, n), ib)
					if err != nil {
						return nil, err
					}
					batch = append(batch, im)
				}
			}
		}
		if hasResults {
			c.lastToolImages = batch
			c.noteImages(batch)
		}
		switch m.Role {
		case "assistant":
			c.assistants++
		case "user":
			c.noteUser(text, hasText)
		case "system":
			// A mid-conversation system message (Claude Code sends its environment block so to a
			// model it does not know): input the model reads, neither a user's nor a turn.
		default:
			return nil, fmt.Errorf("messages.%d.role: must be user, assistant or system, not %q", i, m.Role)
		}
	}
	return c, nil
}

func (c *conversation) noteUser(text string, hasText bool) {
	if !c.hasFirstUser {
		c.firstUser, c.hasFirstUser = text, true
	}
	if hasText {
		c.lastUser = text
	}
}

// OpenAI Chat Completions request, read loosely (content may be a string or parts; "developer"
// messages are system messages).
//
// Tool messages carry text only, so a client shows the model the pictures its tools returned in a
// user message right after the tool messages (package model writes a text part "Images returned by
// tool call <id>:" before each call's images). A user message that directly follows a tool message
// and has image_url parts is read as that message: its images are the tool results' images, and it is
// not a user message of the conversation (not the first user message, not {{last_user}}, its text not
// in the input estimate). The turn counts assistant messages only, so it does not move the turn either.
type oaiRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role      string            `json:"role"`
		Content   json.RawMessage   `json:"content"`
		ToolCalls []json.RawMessage `json:"tool_calls"`
	} `json:"messages"`
	Stream        bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

func parseOpenAI(body []byte) (*conversation, error) {
	var r oaiRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("body is not a chat completions request: %v", err)
	}
	if r.Model == "" {
		return nil, fmt.Errorf("model: field required")
	}
	if len(r.Messages) == 0 {
		return nil, fmt.Errorf("messages: at least one message is required")
	}
	c := &conversation{model: r.Model, stream: r.Stream, includeUsage: r.StreamOptions != nil && r.StreamOptions.IncludeUsage, toolChoice: r.ToolChoice}
	var offered []string
	for _, t := range r.Tools {
		offered = append(offered, t.Function.Name)
	}
	forced, err := forcedTool(r.ToolChoice, offered)
	if err != nil {
		return nil, err
	}
	c.forced = forced
	prev := "" // the role of the previous message, system messages aside
	for i, m := range r.Messages {
		text, images, err := oaiContentOf(i, m.Content)
		if err != nil {
			return nil, err
		}
		role := m.Role
		if role == "system" || role == "developer" {
			continue // not part of the conversation's messages
		}
		before := prev
		prev = role
		toolImages := role == "user" && before == "tool" && len(images) > 0
		c.noteImages(images)
		switch {
		case toolImages:
			c.lastToolImages = append(c.lastToolImages, images...)
			continue // not a user message of the conversation, and its text is not counted
		case role == "assistant":
			c.assistants++
			for _, tc := range m.ToolCalls {
				var call struct {
					Function struct {
						Arguments string `json:"arguments"`
					} `json:"function"`
				}
				_ = json.Unmarshal(tc, &call)
				c.chars += len([]rune(call.Function.Arguments))
			}
		case role == "user":
			c.noteUser(text, text != "")
		case role == "tool":
			if before != "tool" {
				c.lastToolImages = nil // a new batch of tool results
			}
			c.lastToolImages = append(c.lastToolImages, images...)
			c.lastToolResult = text
		default:
			return nil, fmt.Errorf("messages[%d].role: unknown role %q", i, m.Role)
		}
		c.chars += len([]rune(text))
	}
	return c, nil
}

// oaiInPart is one part of a message's content. image_url is an object {"url": ...}; a bare string
// (an early form some clients still send) is taken too.
type oaiInPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	ImageURL json.RawMessage `json:"image_url"`
}

// oaiContentOf reads message i's content, a string or a list of parts: the text of its text parts and
// the images of its image_url parts.
func oaiContentOf(i int, raw json.RawMessage) (string, []imageInfo, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil, nil
	}
	var parts []oaiInPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, fmt.Errorf("messages[%d].content: content is neither a string nor a list of parts", i)
	}
	var texts []string
	var images []imageInfo
	for k, p := range parts {
		switch p.Type {
		case "text":
			texts = append(texts, p.Text)
		case "image_url":
			where := fmt.Sprintf("messages[%d].content[%d].image_url", i, k)
			var url struct {
				URL string `json:"url"`
			}
			if json.Unmarshal(p.ImageURL, &url) != nil {
				if err := json.Unmarshal(p.ImageURL, &url.URL); err != nil {
					return "", nil, &imageError{where + ": want an object with a url"}
				}
			}
			im, err := decodeDataURL(where, url.URL)
			if err != nil {
				return "", nil, err
			}
			images = append(images, im)
		}
	}
	return strings.Join(texts, "\n"), images, nil
}

// Anthropic response shapes.

type antUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreation            struct {
		Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
	OutputTokens int64 `json:"output_tokens"`
}

type antOutBlock struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

type antMessage struct {
	ID           string        `json:"id"`
	Type         string        `json:"type"`
	Role         string        `json:"role"`
	Model        string        `json:"model"`
	Content      []antOutBlock `json:"content"`
	StopReason   *string       `json:"stop_reason"`
	StopSequence *string       `json:"stop_sequence"`
	Usage        antUsage      `json:"usage"`
}

func antErrorBody(typ, msg string) any {
	return map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}}
}

// OpenAI response shapes.

type oaiToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaiUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

type oaiMessage struct {
	Role      string        `json:"role,omitempty"`
	Content   *string       `json:"content,omitempty"`
	ToolCalls []oaiToolCall `json:"tool_calls,omitempty"`
}

// oaiFullMessage is a non-streaming message: content is null, not absent, when there is no text.
type oaiFullMessage struct {
	Role      string        `json:"role"`
	Content   *string       `json:"content"`
	ToolCalls []oaiToolCall `json:"tool_calls,omitempty"`
}

type oaiChoice struct {
	Index        int             `json:"index"`
	Message      *oaiFullMessage `json:"message,omitempty"`
	Delta        *oaiMessage     `json:"delta,omitempty"`
	FinishReason *string         `json:"finish_reason"`
}

type oaiCompletion struct {
	ID      string      `json:"id"`
	Object  string      `json:"object"`
	Created int64       `json:"created"`
	Model   string      `json:"model"`
	Choices []oaiChoice `json:"choices"`
	Usage   *oaiUsage   `json:"usage,omitempty"`
}

func oaiErrorBody(typ, code, msg string) any {
	return map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}}
}
