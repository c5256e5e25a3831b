package translate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// canon re-encodes JSON so two documents compare by value.
func canon(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// The Responses requests Codex sends, as Messages requests.
func TestRequest(t *testing.T) {
	nsTools := `"tools":[{"type":"function","name":"exec","description":"run","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}},
		{"type":"namespace","name":"mcp__agentrun__","description":"our tools","tools":[{"type":"function","name":"ask_person","description":"ask","parameters":{"type":"object"}}]},
		{"type":"web_search"}]`
	cases := []struct {
		name, body, want string
		dropped          []string
	}{
		{name: "text with developer and system messages hoisted",
			body: `{"model":"claude-sonnet-4-5","max_output_tokens":1024,"stream":true,"store":false,"prompt_cache_key":"k","instructions":"Be brief.",
				"input":[{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are Codex."}]},
				{"type":"message","id":"m1","role":"user","content":[{"type":"input_text","text":"<environment_context/>"}]},
				{"role":"user","content":"Ask me which region"}]}`,
			want: `{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,
				"system":[{"type":"text","text":"Be brief."},{"type":"text","text":"You are Codex.","cache_control":{"type":"ephemeral"}}],
				"messages":[{"role":"user","content":[{"type":"text","text":"<environment_context/>"},{"type":"text","text":"Ask me which region","cache_control":{"type":"ephemeral"}}]}]}`},
		{name: "function and namespace tools, hosted tool dropped, a call and its output",
			body: `{"model":"m","max_output_tokens":2000,"tool_choice":"auto","parallel_tool_calls":false,` + nsTools + `,
				"input":[{"role":"user","content":"go"},
				{"type":"message","role":"assistant","content":[{"type":"output_text","text":"I'll ask."}]},
				{"type":"function_call","id":"fc_x","call_id":"toolu_1","name":"ask_person","namespace":"mcp__agentrun__","arguments":"{\"question\":\"Which?\"}"},
				{"type":"function_call_output","call_id":"toolu_1","output":"Europe"},
				{"type":"function_call","call_id":"toolu_2","name":"exec","arguments":""},
				{"type":"function_call_output","call_id":"toolu_2","output":[{"type":"input_text","text":"ok"},{"type":"input_image","image_url":"data:image/png;base64,iVBO"}]}]}`,
			want: `{"model":"m","max_tokens":2000,
				"tools":[{"name":"exec","description":"run","input_schema":{"type":"object","properties":{"cmd":{"type":"string"}}}},
					{"name":"mcp__agentrun__ask_person","description":"ask","input_schema":{"type":"object"}}],
				"tool_choice":{"type":"auto","disable_parallel_tool_use":true},
				"messages":[{"role":"user","content":[{"type":"text","text":"go"}]},
					{"role":"assistant","content":[{"type":"text","text":"I'll ask."},{"type":"tool_use","id":"toolu_1","name":"mcp__agentrun__ask_person","input":{"question":"Which?"}}]},
					{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"Europe"}]}]},
					{"role":"assistant","content":[{"type":"tool_use","id":"toolu_2","name":"exec","input":{}}]},
					{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"ok"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}],"cache_control":{"type":"ephemeral"}}]}]}`,
			dropped: []string{"web_search"}},
		{name: "required tool choice is any; a named one is that tool",
			body: `{"model":"m","max_output_tokens":100,"tool_choice":{"type":"function","name":"ask_person","namespace":"mcp__agentrun__"},` + nsTools + `,"input":"hi"}`,
			want: `{"model":"m","max_tokens":100,
				"tools":[{"name":"exec","description":"run","input_schema":{"type":"object","properties":{"cmd":{"type":"string"}}}},{"name":"mcp__agentrun__ask_person","description":"ask","input_schema":{"type":"object"}}],
				"tool_choice":{"type":"tool","name":"mcp__agentrun__ask_person"},
				"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}`,
			dropped: []string{"web_search"}},
		{name: "reasoning effort is a thinking budget (at most half the limit); temperature goes with it",
			body: `{"model":"m","max_output_tokens":8000,"temperature":0.2,"reasoning":{"effort":"high","summary":"auto"},"include":["reasoning.encrypted_content"],
				"input":[{"role":"user","content":"think"},
				{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"hmm"}],"encrypted_content":"` + thinkingContent(antBlock{Type: "thinking", Thinking: str("hmm"), Signature: str("sig")}) + `"},
				{"type":"reasoning","id":"rs_2","summary":[],"encrypted_content":"gAAAA-openai"},
				{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]},
				{"role":"user","content":"again"}]}`,
			want: `{"model":"m","max_tokens":8000,"thinking":{"type":"enabled","budget_tokens":4000},
				"messages":[{"role":"user","content":[{"type":"text","text":"think"}]},
					{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"text","text":"done"}]},
					{"role":"user","content":[{"type":"text","text":"again","cache_control":{"type":"ephemeral"}}]}]}`},
		{name: "low effort under a small limit: no thinking",
			body: `{"model":"m","max_output_tokens":1500,"temperature":0.5,"reasoning":{"effort":"low"},"input":"x"}`,
			want: `{"model":"m","max_tokens":1500,"temperature":0.5,"messages":[{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}]}]}`},
		{name: "custom tool as a one-string function, its call and output",
			body: `{"model":"m","max_output_tokens":500,"tools":[{"type":"custom","name":"apply_patch","description":"patch","format":{"type":"grammar"}}],
				"input":[{"role":"user","content":"patch it"},{"type":"custom_tool_call","call_id":"toolu_9","name":"apply_patch","input":"*** Begin"},
				{"type":"custom_tool_call_output","call_id":"toolu_9","output":"applied"}]}`,
			want: `{"model":"m","max_tokens":500,
				"tools":[{"name":"apply_patch","description":"patch","input_schema":{"type":"object","properties":{"input":{"type":"string","description":"the tool's input, as its description says"}},"required":["input"]}}],
				"messages":[{"role":"user","content":[{"type":"text","text":"patch it"}]},
					{"role":"assistant","content":[{"type":"tool_use","id":"toolu_9","name":"apply_patch","input":{"input":"*** Begin"}}]},
					{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_9","content":[{"type":"text","text":"applied"}],"cache_control":{"type":"ephemeral"}}]}]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, err := Request([]byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := canon(t, string(tr.Body)), canon(t, c.want); got != want {
				t.Errorf("Messages request:\n got %s\nwant %s", got, want)
			}
			wellFormed(t, tr.Body)
			if !reflect.DeepEqual(tr.Dropped, c.dropped) {
				t.Errorf("dropped %v, want %v", tr.Dropped, c.dropped)
			}
			// A pure function: the same request translates to the same bytes.
			again, _ := Request([]byte(c.body))
			if !bytes.Equal(again.Body, tr.Body) {
				t.Errorf("a second translation differs")
			}
		})
	}
}

// What cannot be translated is refused naming the field.
func TestRequestRefusals(t *testing.T) {
	cases := []struct{ body, want string }{
		{`[1]`, "not a Responses request"},
		{`{"model":"m","max_output_tokens":10,"previous_response_id":"resp_1","input":"x"}`, "previous_response_id"},
		{`{"model":"m","input":"x"}`, "max_output_tokens: required"},
		{`{"model":"m","max_output_tokens":10}`, "input: field required"},
		{`{"model":"m","max_output_tokens":10,"input":[{"role":"robot","content":"x"}]}`, `input[0].role: "robot"`},
		{`{"model":"m","max_output_tokens":10,"input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, "input[0].call_id: field required"},
		{`{"model":"m","max_output_tokens":10,"input":[{"type":"function_call","call_id":"c","name":"f","arguments":"[1]"}]}`, "input[0].arguments: not a JSON object"},
		{`{"model":"m","max_output_tokens":10,"input":[{"role":"user","content":[{"type":"input_file","file_id":"f"}]}]}`, `input[0].content[0].type: "input_file"`},
		{`{"model":"m","max_output_tokens":10,"input":[{"role":"user","content":[{"type":"input_image","file_id":"f"}]}]}`, "input[0].content[0].file_id"},
		{`{"model":"m","max_output_tokens":10,"tools":[{"type":"function"}],"input":"x"}`, "tools[0].name: field required"},
		{`{"model":"m","max_output_tokens":10,"tools":[{"type":"function","name":"a"}],"tool_choice":{"type":"function","name":"b"},"input":"x"}`, `tool_choice.name: no tool "b"`},
		{`{"model":"m","max_output_tokens":10,"input":[{"role":"developer","content":"only instructions"}]}`, "input: no message"},
		{`{"model":"m","max_output_tokens":10,"reasoning":"high","input":"x"}`, "reasoning: want an object"},
	}
	for _, c := range cases {
		_, err := Request([]byte(c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to name %q", c.body, err, c.want)
		}
	}
}

// sse writes Anthropic events as the vendor streams them.
func sse(events ...string) []byte {
	var b bytes.Buffer
	for _, e := range events {
		var v struct{ Type string }
		json.Unmarshal([]byte(e), &v)
		b.WriteString("event: " + v.Type + "\ndata: " + e + "\n\n")
	}
	return b.Bytes()
}

type respEvent struct {
	Type     string          `json:"type"`
	Seq      int             `json:"sequence_number"`
	Delta    string          `json:"delta"`
	Item     json.RawMessage `json:"item"`
	Response json.RawMessage `json:"response"`
	Args     string          `json:"arguments"`
	Name     string          `json:"name"`
	Output   *int            `json:"output_index"`
	ItemID   string          `json:"item_id"`
}

func readEvents(t *testing.T, body []byte) []respEvent {
	t.Helper()
	var out []respEvent
	sc := bufio.NewScanner(bytes.NewReader(body))
	name := ""
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			name = n
			continue
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			var ev respEvent
			if err := json.Unmarshal([]byte(d), &ev); err != nil {
				t.Fatalf("event data not JSON: %v: %s", err, d)
			}
			if ev.Type != name {
				t.Errorf("event: %s line with data of type %s", name, ev.Type)
			}
			out = append(out, ev)
		}
	}
	return out
}

func types(evs []respEvent) string {
	var s []string
	for _, e := range evs {
		s = append(s, strings.TrimPrefix(e.Type, "response."))
	}
	return strings.Join(s, ",")
}

const streamReq = `{"model":"claude-sonnet-4-5","max_output_tokens":4096,"stream":true,"tool_choice":"auto",
	"tools":[{"type":"namespace","name":"mcp__agentrun__","tools":[{"type":"function","name":"ask_person","parameters":{"type":"object"}}]},
		{"type":"custom","name":"apply_patch"}],
	"input":"Ask me which region"}`

// Anthropic streams made into the Responses events Codex reads (the shapes of the scripted
// server's Responses stream, which the real Codex CLI was checked against).
func TestStream(t *testing.T) {
	start := `{"type":"message_start","message":{"id":"msg_01AB","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":100,"cache_creation_input_tokens":20,"cache_read_input_tokens":30,"output_tokens":1}}}`
	cases := []struct {
		name   string
		vendor []byte
		want   string // event types, without "response."
		check  func(t *testing.T, evs []respEvent, final map[string]any)
	}{
		{name: "text then a namespaced call",
			vendor: sse(start,
				`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
				`{"type":"ping"}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"I'll "}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ask."}}`,
				`{"type":"content_block_stop","index":0}`,
				`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"mcp__agentrun__ask_person","input":{}}}`,
				`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}`,
				`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"question\":"}}`,
				`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"Which?\"}"}}`,
				`{"type":"content_block_stop","index":1}`,
				`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":42}}`,
				`{"type":"message_stop"}`),
			want: "created,in_progress,output_item.added,content_part.added,output_text.delta,output_text.delta,output_text.done,content_part.done,output_item.done," +
				"output_item.added,function_call_arguments.delta,function_call_arguments.delta,function_call_arguments.done,output_item.done,completed",
			check: func(t *testing.T, evs []respEvent, final map[string]any) {
				var call map[string]any
				json.Unmarshal(evs[13].Item, &call)
				want := map[string]any{"id": "fc_toolu_1", "type": "function_call", "status": "completed", "call_id": "toolu_1",
					"name": "ask_person", "namespace": "mcp__agentrun__", "arguments": `{"question":"Which?"}`}
				if !reflect.DeepEqual(call, want) {
					t.Errorf("function_call item = %v, want %v", call, want)
				}
				if evs[12].Args != `{"question":"Which?"}` || evs[12].Name != "ask_person" {
					t.Errorf("arguments.done = %+v", evs[12])
				}
				var msg map[string]any
				json.Unmarshal(evs[8].Item, &msg)
				if msg["id"] != "msg_01AB_0" || msg["role"] != "assistant" || msg["content"].([]any)[0].(map[string]any)["text"] != "I'll ask." {
					t.Errorf("message item = %v", msg)
				}
				if final["id"] != "resp_01AB" || final["status"] != "completed" || len(final["output"].([]any)) != 2 {
					t.Errorf("final response = %v", final)
				}
				// input_tokens counts the cached and cache-written parts, as OpenAI's does.
				u := final["usage"].(map[string]any)
				if u["input_tokens"] != 150.0 || u["output_tokens"] != 42.0 || u["total_tokens"] != 192.0 ||
					u["input_tokens_details"].(map[string]any)["cached_tokens"] != 30.0 {
					t.Errorf("usage = %v", u)
				}
			}},
		{name: "thinking is a reasoning item whose encrypted_content goes back as the thinking block",
			vendor: sse(start,
				`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me see."}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}`,
				`{"type":"content_block_stop","index":0}`,
				`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
				`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi"}}`,
				`{"type":"content_block_stop","index":1}`,
				`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}`,
				`{"type":"message_stop"}`),
			want: "created,in_progress,output_item.added,reasoning_summary_part.added,reasoning_summary_text.delta,reasoning_summary_text.done,reasoning_summary_part.done,output_item.done," +
				"output_item.added,content_part.added,output_text.delta,output_text.done,content_part.done,output_item.done,completed",
			check: func(t *testing.T, evs []respEvent, final map[string]any) {
				var rs respItem
				json.Unmarshal(evs[7].Item, &rs)
				b, ok := thinkingBlock(rs.EncryptedContent)
				if !ok || *b.Thinking != "Let me see." || *b.Signature != "EqQB" {
					t.Errorf("reasoning item %s does not carry the thinking block", evs[7].Item)
				}
				// Sent back by the harness, it is that thinking block again.
				item, _ := json.Marshal(map[string]any{"type": "reasoning", "id": "rs_01AB_0", "encrypted_content": rs.EncryptedContent, "summary": []any{}})
				tr, err := Request([]byte(`{"model":"m","max_output_tokens":4096,"input":[{"role":"user","content":"hi"},` + string(item) + `,{"role":"user","content":"more"}]}`))
				if err != nil || !strings.Contains(string(tr.Body), `{"type":"thinking","thinking":"Let me see.","signature":"EqQB"}`) {
					t.Errorf("the reasoning item went back as %s (%v)", tr.Body, err)
				}
			}},
		{name: "max_tokens is incomplete",
			vendor: sse(start,
				`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"cut"}}`,
				`{"type":"content_block_stop","index":0}`,
				`{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":4096}}`,
				`{"type":"message_stop"}`),
			want: "created,in_progress,output_item.added,content_part.added,output_text.delta,output_text.done,content_part.done,output_item.done,incomplete",
			check: func(t *testing.T, evs []respEvent, final map[string]any) {
				if final["status"] != "incomplete" || final["incomplete_details"].(map[string]any)["reason"] != "max_output_tokens" {
					t.Errorf("final = %v", final)
				}
			}},
		{name: "a custom tool's call",
			vendor: sse(start,
				`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_7","name":"apply_patch","input":{}}}`,
				`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"input\":\"*** Begin\"}"}}`,
				`{"type":"content_block_stop","index":0}`,
				`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":5}}`,
				`{"type":"message_stop"}`),
			want: "created,in_progress,output_item.added,custom_tool_call_input.done,output_item.done,completed",
			check: func(t *testing.T, evs []respEvent, final map[string]any) {
				var it map[string]any
				json.Unmarshal(evs[4].Item, &it)
				if it["type"] != "custom_tool_call" || it["input"] != "*** Begin" || it["call_id"] != "toolu_7" || it["name"] != "apply_patch" {
					t.Errorf("custom call item = %v", it)
				}
			}},
		{name: "a stream error is response.failed",
			vendor: sse(start, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
			want:   "created,in_progress,failed",
			check: func(t *testing.T, evs []respEvent, final map[string]any) {
				if e := final["error"].(map[string]any); e["code"] != "overloaded_error" || e["message"] != "Overloaded" {
					t.Errorf("error = %v", e)
				}
			}},
		{name: "a stream cut short is response.failed",
			vendor: sse(start, `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
			want:   "created,in_progress,output_item.added,content_part.added,failed"},
	}
	tr, err := Request([]byte(streamReq))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body, ctype, err := tr.Response(c.vendor)
			if err != nil || ctype != "text/event-stream" {
				t.Fatalf("%q %v", ctype, err)
			}
			evs := readEvents(t, body)
			if got := types(evs); got != c.want {
				t.Errorf("events:\n got %s\nwant %s", got, c.want)
			}
			for i, e := range evs {
				if e.Seq != i {
					t.Errorf("event %d (%s) has sequence_number %d", i, e.Type, e.Seq)
				}
			}
			// Deterministic: a replay translates the recorded bytes into the same bytes.
			again, _, _ := tr.Response(c.vendor)
			if !bytes.Equal(again, body) {
				t.Errorf("a second translation of the same answer differs")
			}
			var final map[string]any
			json.Unmarshal(evs[len(evs)-1].Response, &final)
			if final["model"] != "claude-sonnet-4-5" || final["object"] != "response" {
				t.Errorf("final response = %v", final)
			}
			if c.check != nil {
				c.check(t, evs, final)
			}
		})
	}
}

// A non-streamed answer is one response object.
func TestNonStreamed(t *testing.T) {
	tr, err := Request([]byte(strings.Replace(streamReq, `"stream":true`, `"stream":false`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(tr.Body), `"stream"`) {
		t.Errorf("the Messages request streams: %s", tr.Body)
	}
	body, ctype, err := tr.Response([]byte(`{"id":"msg_9","type":"message","role":"assistant","model":"claude-x","stop_reason":"tool_use",
		"content":[{"type":"text","text":"Asking."},{"type":"tool_use","id":"toolu_2","name":"mcp__agentrun__ask_person","input":{"question":"Q?"}}],
		"usage":{"input_tokens":10,"output_tokens":3}}`))
	if err != nil || ctype != "application/json" {
		t.Fatalf("%q %v", ctype, err)
	}
	var o struct {
		ID, Status string
		Output     []map[string]any
		Usage      map[string]any
	}
	if err := json.Unmarshal(body, &o); err != nil {
		t.Fatal(err)
	}
	if o.ID != "resp_9" || o.Status != "completed" || len(o.Output) != 2 || o.Output[0]["type"] != "message" ||
		o.Output[1]["arguments"] != `{"question":"Q?"}` || o.Output[1]["namespace"] != "mcp__agentrun__" || o.Usage["total_tokens"] != 13.0 {
		t.Errorf("response = %s", body)
	}
	if _, _, err := tr.Response([]byte(`not json`)); err == nil {
		t.Errorf("a body that is no message translated")
	}
}

// wellFormed checks a Messages request against the rules Anthropic's API enforces on its shape (the
// scripted model server checks fewer): the first message is the user's and roles alternate, no
// text block is empty, every tool_use is answered by a tool_result at the start of the next user
// message, every tool_use names a listed tool with a valid name, and at most 4 cache breakpoints.
func wellFormed(t *testing.T, body []byte) {
	t.Helper()
	var r antRequest
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	tools := map[string]bool{}
	for _, tl := range r.Tools {
		if !toolName.MatchString(tl.Name) {
			t.Errorf("tool name %q is not one Anthropic takes", tl.Name)
		}
		tools[tl.Name] = true
	}
	breakpoints := 0
	count := func(b antBlock) {
		if b.CacheControl != nil {
			breakpoints++
		}
		if b.Type == "text" && (b.Text == nil || *b.Text == "") {
			t.Errorf("an empty text block")
		}
	}
	for _, b := range r.System {
		count(b)
	}
	if len(r.Messages) == 0 || r.Messages[0].Role != "user" {
		t.Fatalf("the first message is not the user's: %s", body)
	}
	for i, m := range r.Messages {
		if i > 0 && m.Role == r.Messages[i-1].Role {
			t.Errorf("messages %d and %d are both %s", i-1, i, m.Role)
		}
		if len(m.Content) == 0 {
			t.Errorf("message %d has no content", i)
		}
		var uses []string
		for _, b := range m.Content {
			count(b)
			if b.Type == "tool_use" {
				uses = append(uses, b.ID)
				if !tools[b.Name] {
					t.Errorf("message %d calls %q, which tools does not list", i, b.Name)
				}
			}
		}
		if len(uses) == 0 {
			continue
		}
		if i+1 >= len(r.Messages) {
			t.Errorf("message %d's tool calls have no results", i)
			continue
		}
		next := r.Messages[i+1].Content
		for k, id := range uses {
			if k >= len(next) || next[k].Type != "tool_result" || next[k].ToolUseID != id {
				t.Errorf("message %d's tool_use %s is not answered by tool_result %d of the next message", i, id, k)
			}
		}
	}
	if breakpoints > 4 {
		t.Errorf("%d cache breakpoints, Anthropic takes at most 4", breakpoints)
	}
}

// Every request of the table, and a request the real Codex CLI sent (TestCodexAnthropicQuickstart,
// its third call: developer messages, the prompt, two calls of our MCP tools in Codex's namespace
// and their outputs), translate to well-formed Messages requests.
func TestRequestsWellFormed(t *testing.T) {
	codex, err := os.ReadFile("testdata/codex-request.json")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Request(codex)
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, tr.Body)
	var r antRequest
	json.Unmarshal(tr.Body, &r)
	if len(r.Messages) != 5 || len(r.System) != 3 || !strings.HasPrefix(r.Messages[1].Content[1].Name, "mcp__agentrun__") {
		t.Errorf("codex's request as %d messages, %d system blocks: %s", len(r.Messages), len(r.System), tr.Body)
	}
	for _, body := range []string{
		`{"model":"m","max_output_tokens":100,"input":[{"role":"user","content":"a"},{"role":"user","content":[{"type":"input_text","text":""}]},{"role":"assistant","content":"b"},{"role":"assistant","content":"c"},{"role":"user","content":"d"}]}`,
		`{"model":"m","max_output_tokens":100,"tools":[{"type":"function","name":"f"}],"input":[{"role":"user","content":"a"},
			{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call","call_id":"c2","name":"f","arguments":"{}"},
			{"type":"function_call_output","call_id":"c1","output":"x"},{"type":"function_call_output","call_id":"c2","output":""},{"role":"user","content":"go on"}]}`,
	} {
		tr, err := Request([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		wellFormed(t, tr.Body)
	}
}
