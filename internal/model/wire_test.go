package model

import (
	"encoding/json"
	"testing"
)

// Tiny stand-ins for image data: the encoders do not look inside, except to sniff a missing media type.
var (
	pngMagic = []byte("\x89PNG\r\n\x1a\n")
	jpgMagic = []byte("\xff\xd8\xff\xe0")
)

// toolTurn is a conversation with one assistant message calling tools and the user message of their
// results (and, when text is set, a user text after them).
func toolTurn(text string, results ...Block) *Request {
	calls := []Block{{Type: BlockToolUse, ID: "call_a", Name: "screenshot"}, {Type: BlockToolUse, ID: "call_b", Name: "click", Input: json.RawMessage(`{"x":1}`)}}
	user := Message{Role: "user", Content: results}
	if text != "" {
		user.Content = append(user.Content, Block{Type: BlockText, Text: text})
	}
	return &Request{Model: "m", MaxTokens: 10, Messages: []Message{
		{Role: "user", Content: []Block{{Type: BlockText, Text: "look"}}},
		{Role: "assistant", Content: calls},
		user,
	}}
}

// wireMessages encodes req for a vendor and returns its "messages", exactly as sent.
func wireMessages(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var w struct{ Messages json.RawMessage }
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	return string(w.Messages)
}

func TestAnthropicToolResultEncoding(t *testing.T) {
	t.Parallel()
	const head = `[{"role":"user","content":[{"type":"text","text":"look"}]},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"call_a","name":"screenshot","input":{}},{"type":"tool_use","id":"call_b","name":"click","input":{"x":1}}]},`
	cases := []struct {
		name string
		req  *Request
		want string // the last message, exactly
	}{
		// Without images the encoding is what it always was: content a string, absent when empty.
		{"text", toolTurn("", Block{Type: BlockToolResult, ToolUseID: "call_a", Content: "ok <&>"}),
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_a","content":"ok \u003c\u0026\u003e"}]}`},
		{"empty and error", toolTurn("", Block{Type: BlockToolResult, ToolUseID: "call_a"}, Block{Type: BlockToolResult, ToolUseID: "call_b", Content: "boom", IsError: true}),
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_a"},{"type":"tool_result","tool_use_id":"call_b","content":"boom","is_error":true}]}`},
		{"text and image", toolTurn("", Block{Type: BlockToolResult, ToolUseID: "call_a", Content: "screen 1280x800",
			Images: []Image{{MediaType: "image/png", Data: pngMagic}}}),
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_a","content":[` +
				`{"type":"text","text":"screen 1280x800"},` +
				`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}]}`},
		// No empty text block (the API refuses them); a missing media type is sniffed from the data.
		{"images only, with error", toolTurn("what now?", Block{Type: BlockToolResult, ToolUseID: "call_a", IsError: true,
			Images: []Image{{MediaType: "image/jpeg", Data: jpgMagic}, {Data: pngMagic}}},
			Block{Type: BlockToolResult, ToolUseID: "call_b", Content: "clicked"}),
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_a","content":[` +
				`{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/4A=="}},` +
				`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}],"is_error":true},` +
				`{"type":"tool_result","tool_use_id":"call_b","content":"clicked"},{"type":"text","text":"what now?"}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := wireMessages(t, (&anthropic{}).wireRequest(tc.req))
			if want := head + tc.want + "]"; got != want {
				t.Errorf("messages =\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func TestOpenAIToolResultEncoding(t *testing.T) {
	t.Parallel()
	const head = `[{"role":"user","content":"look"},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_a","type":"function","function":{"name":"screenshot","arguments":"{}"}},` +
		`{"id":"call_b","type":"function","function":{"name":"click","arguments":"{\"x\":1}"}}]},`
	cases := []struct {
		name string
		req  *Request
		want string // the messages after the assistant's, exactly
	}{
		// Without images: tool messages only, as always.
		{"text", toolTurn("", Block{Type: BlockToolResult, ToolUseID: "call_a", Content: "ok"}, Block{Type: BlockToolResult, ToolUseID: "call_b", IsError: true, Content: "boom"}),
			`{"role":"tool","content":"ok","tool_call_id":"call_a"},{"role":"tool","content":"boom","tool_call_id":"call_b"}`},
		{"text after results", toolTurn("and?", Block{Type: BlockToolResult, ToolUseID: "call_a", Content: ""}),
			`{"role":"tool","content":"","tool_call_id":"call_a"},{"role":"user","content":"and?"}`},
		// With images: the tool messages are unchanged, then one user message of each call's images
		// after a line naming it, then the user's own text.
		{"images", toolTurn("what now?",
			Block{Type: BlockToolResult, ToolUseID: "call_a", Content: "screen", Images: []Image{{MediaType: "image/png", Data: pngMagic}}},
			Block{Type: BlockToolResult, ToolUseID: "call_b", Content: "clicked", Images: []Image{{MediaType: "image/jpeg", Data: jpgMagic}, {Data: pngMagic}}}),
			`{"role":"tool","content":"screen","tool_call_id":"call_a"},{"role":"tool","content":"clicked","tool_call_id":"call_b"},` +
				`{"role":"user","content":[{"type":"text","text":"Images returned by tool call call_a:"},` +
				`{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},` +
				`{"type":"text","text":"Images returned by tool call call_b:"},` +
				`{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4A=="}},` +
				`{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]},` +
				`{"role":"user","content":"what now?"}`},
		{"images from one call of two", toolTurn("",
			Block{Type: BlockToolResult, ToolUseID: "call_a", Content: "no change"},
			Block{Type: BlockToolResult, ToolUseID: "call_b", Images: []Image{{MediaType: "image/png", Data: pngMagic}}}),
			`{"role":"tool","content":"no change","tool_call_id":"call_a"},{"role":"tool","content":"","tool_call_id":"call_b"},` +
				`{"role":"user","content":[{"type":"text","text":"Images returned by tool call call_b:"},` +
				`{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := wireMessages(t, (&openAI{name: "openai"}).wireRequest(tc.req))
			if want := head + tc.want + "]"; got != want {
				t.Errorf("messages =\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// Block.Images travels in the neutral JSON (stored conversations) as base64, and back.
func TestBlockImagesJSON(t *testing.T) {
	t.Parallel()
	b := Block{Type: BlockToolResult, ToolUseID: "t", Content: "c", Images: []Image{{MediaType: "image/png", Data: pngMagic}}}
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"tool_result","toolUseId":"t","content":"c","images":[{"mediaType":"image/png","data":"iVBORw0KGgo="}]}`; string(raw) != want {
		t.Errorf("json = %s, want %s", raw, want)
	}
	var back Block
	if err := json.Unmarshal(raw, &back); err != nil || string(back.Images[0].Data) != string(pngMagic) {
		t.Errorf("round trip = %+v, %v", back, err)
	}
	if raw, _ := json.Marshal(Block{Type: BlockToolResult, ToolUseID: "t"}); string(raw) != `{"type":"tool_result","toolUseId":"t"}` {
		t.Errorf("no images: %s", raw)
	}
}
