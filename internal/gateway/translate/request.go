// Package translate turns an OpenAI Responses request into an Anthropic Messages request and the
// Anthropic answer (an SSE stream or one message object) back into what the Responses API would
// have answered: the gateway's path for a harness that speaks only Responses (Codex) on a server
// whose model access is Anthropic's.
//
// Both directions are pure functions: the Messages body is a function of the Responses body, and
// the Responses answer a function of the Responses body and the vendor's bytes. The journal
// records the vendor's bytes; a replay translates them again into the same bytes, so a harness
// started again after a crash reads exactly what it read before.
//
// What has no Anthropic counterpart is left out, not faked: hosted tools (web_search, file_search,
// image_generation, local_shell...), previous_response_id (refused: Anthropic keeps no responses),
// input items other than messages, function calls, their outputs and reasoning.
package translate

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Error is a Responses request the translation cannot express, naming the field.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

func errf(format string, a ...any) error { return &Error{Msg: fmt.Sprintf(format, a...)} }

// Translation is one Responses request made into a Messages request.
type Translation struct {
	// Body is the Messages request.
	Body []byte
	// Stream is whether the harness asked for a stream (and the Messages request streams).
	Stream bool
	// Dropped names the request's tools Anthropic cannot serve (hosted tools), left out.
	Dropped []string

	tools map[string]toolRef // Anthropic tool name -> the Responses tool it stands for
	echo  echo
}

// toolRef is a Responses tool as the harness listed it.
type toolRef struct {
	Name, Namespace string
	Custom          bool // a custom (freeform) tool: its input is the text of {"input": ...}
}

// echo is what a Responses answer repeats of its request.
type echo struct {
	Instructions    json.RawMessage
	MaxOutputTokens *int64
	Parallel        bool
	ToolChoice      json.RawMessage
	Tools           json.RawMessage
	Reasoning       json.RawMessage
	Text            json.RawMessage
}

type respRequest struct {
	Model              string          `json:"model"`
	Input              json.RawMessage `json:"input"`
	Instructions       json.RawMessage `json:"instructions"`
	Tools              json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	ParallelToolCalls  *bool           `json:"parallel_tool_calls"`
	MaxOutputTokens    *int64          `json:"max_output_tokens"`
	PreviousResponseID string          `json:"previous_response_id"`
	Stream             bool            `json:"stream"`
	Temperature        *float64        `json:"temperature"`
	TopP               *float64        `json:"top_p"`
	Reasoning          json.RawMessage `json:"reasoning"`
	Text               json.RawMessage `json:"text"`
}

type respItem struct {
	Type             string          `json:"type"`
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	CallID           string          `json:"call_id"`
	Name             string          `json:"name"`
	Namespace        string          `json:"namespace"`
	Arguments        string          `json:"arguments"`
	Input            string          `json:"input"` // custom_tool_call
	Output           json.RawMessage `json:"output"`
	EncryptedContent string          `json:"encrypted_content"`
}

type respPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Refusal  string `json:"refusal"`
	ImageURL string `json:"image_url"`
	FileID   string `json:"file_id"`
}

type respTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Tools       []respTool      `json:"tools"`
}

// Messages request shapes (only what the translation writes).
type antRequest struct {
	Model       string         `json:"model"`
	MaxTokens   int64          `json:"max_tokens"`
	System      []antBlock     `json:"system,omitempty"`
	Messages    []antMessage   `json:"messages"`
	Tools       []antTool      `json:"tools,omitempty"`
	ToolChoice  *antToolChoice `json:"tool_choice,omitempty"`
	Thinking    *antThinking   `json:"thinking,omitempty"`
	Temperature *float64       `json:"temperature,omitempty"`
	TopP        *float64       `json:"top_p,omitempty"`
	Stream      bool           `json:"stream,omitempty"`
}

type antMessage struct {
	Role    string     `json:"role"`
	Content []antBlock `json:"content"`
}

type antCache struct {
	Type string `json:"type"`
}

type antBlock struct {
	Type         string          `json:"type"`
	Text         *string         `json:"text,omitempty"`
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	Content      []antBlock      `json:"content,omitempty"`
	IsError      bool            `json:"is_error,omitempty"`
	Source       *antSource      `json:"source,omitempty"`
	Thinking     *string         `json:"thinking,omitempty"`
	Signature    *string         `json:"signature,omitempty"`
	Data         string          `json:"data,omitempty"`
	CacheControl *antCache       `json:"cache_control,omitempty"`
}

type antSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type antTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type antToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

type antThinking struct {
	Type         string `json:"type"`
	BudgetTokens int64  `json:"budget_tokens"`
}

// Thinking budgets for the Responses reasoning efforts (Anthropic's least is 1,024 tokens). A
// budget is at most half the call's output limit, so the answer keeps room; an effort whose budget
// would fall under 1,024 turns thinking off.
var effortBudget = map[string]int64{"low": 2048, "medium": 8192, "high": 16384, "xhigh": 32000}

const minThinkingBudget = 1024

// toolName is what Anthropic takes as a tool name.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

func str(s string) *string { return &s }

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// Request translates a Responses request body (its model and max_output_tokens already the
// gateway's) into a Messages request.
func Request(body []byte) (*Translation, error) {
	var r respRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, errf("the body is not a Responses request: %v", err)
	}
	if r.PreviousResponseID != "" {
		return nil, errf("previous_response_id: the gateway translates to Anthropic's Messages API, which keeps no responses: send the whole conversation in input (store: false)")
	}
	if r.MaxOutputTokens == nil || *r.MaxOutputTokens <= 0 {
		return nil, errf("max_output_tokens: required to translate to Anthropic's max_tokens")
	}
	t := &Translation{Stream: r.Stream, tools: map[string]toolRef{}}
	t.echo = echo{Instructions: r.Instructions, MaxOutputTokens: r.MaxOutputTokens, Parallel: r.ParallelToolCalls == nil || *r.ParallelToolCalls,
		ToolChoice: r.ToolChoice, Tools: r.Tools, Reasoning: r.Reasoning, Text: r.Text}
	out := antRequest{Model: r.Model, MaxTokens: *r.MaxOutputTokens, Stream: r.Stream, Messages: []antMessage{}}

	if s, ok := unquote(r.Instructions); ok && s != "" {
		out.System = append(out.System, antBlock{Type: "text", Text: str(s)})
	} else if !isNull(r.Instructions) && !ok {
		return nil, errf("instructions: want a string")
	}
	byResponses, err := t.readTools(r.Tools, &out)
	if err != nil {
		return nil, err
	}
	if err := readToolChoice(r.ToolChoice, r.ParallelToolCalls, byResponses, &out); err != nil {
		return nil, err
	}
	if err := t.readInput(r.Input, byResponses, &out); err != nil {
		return nil, err
	}
	if len(out.Messages) == 0 {
		return nil, errf("input: no message to send (Anthropic needs at least one user message)")
	}
	// Thinking, when the request asks for reasoning and the call leaves room for it; Anthropic
	// takes no forced tool choice and no temperature with it.
	var reasoning struct {
		Effort string `json:"effort"`
	}
	if !isNull(r.Reasoning) && json.Unmarshal(r.Reasoning, &reasoning) != nil {
		return nil, errf("reasoning: want an object")
	}
	if reasoning.Effort != "" {
		budget := min(effortBudget[reasoning.Effort], *r.MaxOutputTokens/2)
		forced := out.ToolChoice != nil && (out.ToolChoice.Type == "any" || out.ToolChoice.Type == "tool")
		if budget >= minThinkingBudget && !forced {
			out.Thinking = &antThinking{Type: "enabled", BudgetTokens: budget}
			r.Temperature, r.TopP = nil, nil
		}
	}
	out.Temperature, out.TopP = r.Temperature, r.TopP
	// Prompt caching: the system prompt and the conversation so far are cached (Anthropic caches
	// only up to breakpoints; Responses clients expect the vendor to cache on its own).
	if n := len(out.System); n > 0 {
		out.System[n-1].CacheControl = &antCache{Type: "ephemeral"}
	}
	last := &out.Messages[len(out.Messages)-1]
	for i := len(last.Content) - 1; i >= 0; i-- {
		if b := &last.Content[i]; b.Type != "thinking" && b.Type != "redacted_thinking" {
			b.CacheControl = &antCache{Type: "ephemeral"}
			break
		}
	}
	if t.Body, err = json.Marshal(out); err != nil {
		return nil, fmt.Errorf("encode the Messages request: %w", err)
	}
	return t, nil
}

func unquote(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// nsKey is a Responses tool's identity: its namespace and name.
type nsKey struct{ ns, name string }

// flatName is the Anthropic name of a tool in a namespace: Codex names its MCP tools' namespace
// "mcp__SERVER__", so ask_person in it is mcp__agentrun__ask_person, as Claude Code names it.
func flatName(ns, name string) string {
	if ns == "" {
		return name
	}
	if strings.HasSuffix(ns, "_") {
		return ns + name
	}
	return ns + "__" + name
}

var badNameChars = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// readTools lists the function, namespace and custom tools as Anthropic tools; hosted tools are
// dropped (named in Dropped). It returns each Responses tool's Anthropic name.
func (t *Translation) readTools(raw json.RawMessage, out *antRequest) (map[nsKey]string, error) {
	names := map[nsKey]string{}
	if isNull(raw) {
		return names, nil
	}
	var tools []respTool
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, errf("tools: want a list of tools: %v", err)
	}
	add := func(where, ns string, tl respTool, custom bool) error {
		if tl.Name == "" {
			return errf("%s.name: field required", where)
		}
		key := nsKey{ns, tl.Name}
		if _, dup := names[key]; dup {
			return errf("%s.name: tool %q is listed twice", where, flatName(ns, tl.Name))
		}
		name := flatName(ns, tl.Name)
		if !toolName.MatchString(name) {
			name = badNameChars.ReplaceAllString(name, "_")
			if len(name) > 128 {
				name = name[:128]
			}
		}
		for base, i := name, 2; ; i++ {
			if _, taken := t.tools[name]; !taken {
				break
			}
			suffix := fmt.Sprintf("_%d", i)
			name = base[:min(len(base), 128-len(suffix))] + suffix
		}
		schema := tl.Parameters
		if custom {
			schema = json.RawMessage(`{"type":"object","properties":{"input":{"type":"string","description":"the tool's input, as its description says"}},"required":["input"]}`)
		} else if isNull(schema) {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		names[key] = name
		t.tools[name] = toolRef{Name: tl.Name, Namespace: ns, Custom: custom}
		out.Tools = append(out.Tools, antTool{Name: name, Description: tl.Description, InputSchema: schema})
		return nil
	}
	for i, tl := range tools {
		where := fmt.Sprintf("tools[%d]", i)
		switch tl.Type {
		case "function":
			if err := add(where, "", tl, false); err != nil {
				return nil, err
			}
		case "custom":
			if err := add(where, "", tl, true); err != nil {
				return nil, err
			}
		case "namespace":
			if tl.Name == "" {
				return nil, errf("%s.name: field required", where)
			}
			for k, in := range tl.Tools {
				w := fmt.Sprintf("%s.tools[%d]", where, k)
				switch in.Type {
				case "function", "":
					if err := add(w, tl.Name, in, false); err != nil {
						return nil, err
					}
				case "custom":
					if err := add(w, tl.Name, in, true); err != nil {
						return nil, err
					}
				default:
					t.Dropped = append(t.Dropped, in.Type)
				}
			}
		case "":
			return nil, errf("%s.type: field required", where)
		default:
			t.Dropped = append(t.Dropped, tl.Type)
		}
	}
	return names, nil
}

func readToolChoice(raw json.RawMessage, parallel *bool, names map[nsKey]string, out *antRequest) error {
	if len(out.Tools) == 0 {
		return nil // Anthropic takes no tool_choice without tools
	}
	var tc antToolChoice
	if s, ok := unquote(raw); ok {
		switch s {
		case "auto":
			tc.Type = "auto"
		case "none":
			tc.Type = "none"
		case "required":
			tc.Type = "any"
		default:
			return errf("tool_choice: %q is not auto, none or required", s)
		}
	} else if !isNull(raw) {
		var o struct {
			Type, Name, Namespace string
		}
		if err := json.Unmarshal(raw, &o); err != nil {
			return errf("tool_choice: want a string or an object: %v", err)
		}
		if o.Type != "function" && o.Type != "custom" {
			return errf("tool_choice.type: %q cannot be translated (function or custom only)", o.Type)
		}
		name, ok := names[nsKey{o.Namespace, o.Name}]
		if !ok {
			return errf("tool_choice.name: no tool %q in tools", flatName(o.Namespace, o.Name))
		}
		tc = antToolChoice{Type: "tool", Name: name}
	} else {
		tc.Type = "auto"
	}
	if parallel != nil && !*parallel && tc.Type != "none" {
		tc.DisableParallelToolUse = true
	}
	if tc.Type == "auto" && !tc.DisableParallelToolUse {
		return nil // Anthropic's default
	}
	out.ToolChoice = &tc
	return nil
}

// readInput turns the input items into system blocks (system and developer messages) and
// messages (same-role neighbours merged, as Anthropic alternates user and assistant).
func (t *Translation) readInput(raw json.RawMessage, names map[nsKey]string, out *antRequest) error {
	if isNull(raw) {
		return errf("input: field required")
	}
	var items []respItem
	if s, ok := unquote(raw); ok {
		c, _ := json.Marshal(s)
		items = []respItem{{Type: "message", Role: "user", Content: c}}
	} else if err := json.Unmarshal(raw, &items); err != nil {
		return errf("input: want a string or a list of items: %v", err)
	}
	push := func(role string, blocks ...antBlock) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == role {
			out.Messages[n-1].Content = append(out.Messages[n-1].Content, blocks...)
			return
		}
		out.Messages = append(out.Messages, antMessage{Role: role, Content: blocks})
	}
	for i, it := range items {
		where := fmt.Sprintf("input[%d]", i)
		typ := it.Type
		if typ == "" && it.Role != "" {
			typ = "message"
		}
		switch typ {
		case "message":
			blocks, err := contentBlocks(where+".content", it.Content)
			if err != nil {
				return err
			}
			switch it.Role {
			case "system", "developer":
				for _, b := range blocks {
					if b.Type == "text" {
						out.System = append(out.System, b)
					}
				}
			case "user", "assistant":
				push(it.Role, blocks...)
			default:
				return errf("%s.role: %q is not user, assistant, system or developer", where, it.Role)
			}
		case "function_call", "custom_tool_call":
			if it.CallID == "" {
				return errf("%s.call_id: field required", where)
			}
			name, ok := names[nsKey{it.Namespace, it.Name}]
			if !ok {
				name = flatName(it.Namespace, it.Name) // a tool no longer listed: the model called it all the same
			}
			var input json.RawMessage
			if typ == "custom_tool_call" {
				input, _ = json.Marshal(map[string]string{"input": it.Input})
			} else {
				input = json.RawMessage(strings.TrimSpace(it.Arguments))
				var obj map[string]json.RawMessage
				if len(input) == 0 {
					input = json.RawMessage("{}")
				} else if json.Unmarshal(input, &obj) != nil {
					return errf("%s.arguments: not a JSON object (Anthropic's tool input must be one)", where)
				}
			}
			push("assistant", antBlock{Type: "tool_use", ID: it.CallID, Name: name, Input: input})
		case "function_call_output", "custom_tool_call_output":
			if it.CallID == "" {
				return errf("%s.call_id: field required", where)
			}
			res := antBlock{Type: "tool_result", ToolUseID: it.CallID}
			if s, ok := unquote(it.Output); ok {
				if s != "" {
					res.Content = []antBlock{{Type: "text", Text: str(s)}}
				}
			} else if !isNull(it.Output) {
				blocks, err := contentBlocks(where+".output", it.Output)
				if err != nil {
					return err
				}
				res.Content = blocks
			}
			push("user", res)
		case "reasoning":
			// The thinking block it stands for, as the answer put it in encrypted_content; without
			// one (another vendor's reasoning) it is left out, as Anthropic allows for past turns.
			if b, ok := thinkingBlock(it.EncryptedContent); ok {
				push("assistant", b)
			}
		default:
			// item_reference, compaction, hosted tool calls: nothing Anthropic can read.
		}
	}
	return nil
}

// contentBlocks reads a message's content (a string or parts) as Anthropic blocks; empty text is
// left out (Anthropic refuses empty text blocks).
func contentBlocks(where string, raw json.RawMessage) ([]antBlock, error) {
	if s, ok := unquote(raw); ok {
		if s == "" {
			return nil, nil
		}
		return []antBlock{{Type: "text", Text: str(s)}}, nil
	}
	if isNull(raw) {
		return nil, errf("%s: field required", where)
	}
	var parts []respPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, errf("%s: want a string or a list of parts: %v", where, err)
	}
	var out []antBlock
	for k, p := range parts {
		pw := fmt.Sprintf("%s[%d]", where, k)
		switch p.Type {
		case "input_text", "output_text", "text", "summary_text":
			if p.Text != "" {
				out = append(out, antBlock{Type: "text", Text: str(p.Text)})
			}
		case "refusal":
			if p.Refusal != "" {
				out = append(out, antBlock{Type: "text", Text: str(p.Refusal)})
			}
		case "input_image":
			src, err := imageSource(pw, p)
			if err != nil {
				return nil, err
			}
			out = append(out, antBlock{Type: "image", Source: src})
		case "":
			return nil, errf("%s.type: field required", pw)
		default:
			return nil, errf("%s.type: %q cannot be translated to Anthropic (input_text, output_text, refusal, input_image)", pw, p.Type)
		}
	}
	return out, nil
}

func imageSource(where string, p respPart) (*antSource, error) {
	if p.ImageURL == "" {
		if p.FileID != "" {
			return nil, errf("%s.file_id: Anthropic has no OpenAI files: send the image as a data URL in image_url", where)
		}
		return nil, errf("%s.image_url: field required", where)
	}
	if rest, ok := strings.CutPrefix(p.ImageURL, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		media, isB64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isB64 || media == "" {
			return nil, errf("%s.image_url: a data URL must be data:MEDIA;base64,DATA", where)
		}
		return &antSource{Type: "base64", MediaType: media, Data: data}, nil
	}
	return &antSource{Type: "url", URL: p.ImageURL}, nil
}

// thinkingPrefix marks an encrypted_content this package wrote: the Anthropic thinking block,
// JSON then base64, which the harness sends back as it got it.
const thinkingPrefix = "agentrun-anthropic:"

func thinkingContent(b antBlock) string {
	raw, _ := json.Marshal(b)
	return thinkingPrefix + base64.StdEncoding.EncodeToString(raw)
}

func thinkingBlock(enc string) (antBlock, bool) {
	rest, ok := strings.CutPrefix(enc, thinkingPrefix)
	if !ok {
		return antBlock{}, false
	}
	raw, err := base64.StdEncoding.DecodeString(rest)
	var b antBlock
	if err != nil || json.Unmarshal(raw, &b) != nil || (b.Type != "thinking" && b.Type != "redacted_thinking") {
		return antBlock{}, false
	}
	return antBlock{Type: b.Type, Thinking: b.Thinking, Signature: b.Signature, Data: b.Data}, true
}
