package fake

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

const respScript = `
entries:
  - name: text
    match: "say hi"
    turns:
      - text: "Hello from the scripted model, in several deltas."
        usage: {input_tokens: 10, output_tokens: 20, cache_creation_input_tokens: 30, cache_read_input_tokens: 40, reasoning_tokens: 2}
  - name: call
    match: "run it"
    turns:
      - text: "Running it."
        tool_calls:
          - name: exec_command
            input: {cmd: "echo a long enough command to need several deltas"}
      - text: "ran: {{last_tool_result}} / user: {{last_user}} / turn {{turn}}"
  - name: mcp
    match: "ask me"
    turns:
      - tool_calls:
          - name: ask_person
            input: {question: "Which region?"}
      - text: "you said {{last_tool_result}}; images: {{last_tool_images}}"
  - name: long
    match: "write a lot"
    turns:
      - text: "a long answer"
        usage: {output_tokens: 500}
  - name: any
    match: "*"
    turns:
      - text: "first user was: {{last_user}}"
`

// respEvents posts a streaming Responses request and returns the events' types and decoded data,
// failing on a non-200 answer, an event line naming another type than its data, or a sequence number
// out of order.
func respEvents(t *testing.T, url, body string) ([]string, []map[string]any) {
	t.Helper()
	status, out := post(t, url+"/v1/responses", body, oaiKey)
	if status != 200 {
		t.Fatalf("status %d: %s", status, out)
	}
	names, datas := sse(t, out)
	var evs []map[string]any
	for i, d := range datas {
		var ev map[string]any
		if err := json.Unmarshal([]byte(d), &ev); err != nil {
			t.Fatalf("event %d: %v: %s", i, err, d)
		}
		if ev["type"] != names[i] {
			t.Fatalf("event %d: event line %q, data type %v", i, names[i], ev["type"])
		}
		if n, ok := ev["sequence_number"].(float64); !ok || int(n) != i {
			t.Fatalf("event %d (%s): sequence_number %v", i, names[i], ev["sequence_number"])
		}
		evs = append(evs, ev)
	}
	return names, evs
}

// requiredFields are the fields the official SDK (openai-go, responses.Response*Event) marks
// required, per event type.
var requiredFields = map[string][]string{
	"response.created":                       {"response", "sequence_number", "type"},
	"response.in_progress":                   {"response", "sequence_number", "type"},
	"response.completed":                     {"response", "sequence_number", "type"},
	"response.incomplete":                    {"response", "sequence_number", "type"},
	"response.output_item.added":             {"item", "output_index", "sequence_number", "type"},
	"response.output_item.done":              {"item", "output_index", "sequence_number", "type"},
	"response.content_part.added":            {"content_index", "item_id", "output_index", "part", "sequence_number", "type"},
	"response.content_part.done":             {"content_index", "item_id", "output_index", "part", "sequence_number", "type"},
	"response.output_text.delta":             {"content_index", "delta", "item_id", "logprobs", "output_index", "sequence_number", "type"},
	"response.output_text.done":              {"content_index", "item_id", "logprobs", "output_index", "sequence_number", "text", "type"},
	"response.function_call_arguments.delta": {"delta", "item_id", "output_index", "sequence_number", "type"},
	"response.function_call_arguments.done":  {"arguments", "item_id", "name", "output_index", "sequence_number", "type"},
}

// responseRequired are the response object's required fields (responses.Response).
var responseRequired = []string{"id", "created_at", "error", "incomplete_details", "instructions", "metadata", "model",
	"object", "output", "parallel_tool_calls", "temperature", "tool_choice", "tools", "top_p"}

func checkShapes(t *testing.T, evs []map[string]any) {
	t.Helper()
	for i, ev := range evs {
		typ := ev["type"].(string)
		want, ok := requiredFields[typ]
		if !ok {
			t.Errorf("event %d: unexpected type %s", i, typ)
			continue
		}
		for _, f := range want {
			if _, ok := ev[f]; !ok {
				t.Errorf("event %d (%s): no %s", i, typ, f)
			}
		}
		if r, ok := ev["response"].(map[string]any); ok {
			for _, f := range responseRequired {
				if _, ok := r[f]; !ok {
					t.Errorf("event %d (%s): response has no %s", i, typ, f)
				}
			}
		}
	}
}

// collapse names the event sequence with runs of deltas folded, so its shape reads plainly.
func collapse(names []string) string {
	s := strings.Join(names, ",")
	s = regexp.MustCompile(`(response\.output_text\.delta,?)+`).ReplaceAllString(s, "text.delta*,")
	s = regexp.MustCompile(`(response\.function_call_arguments\.delta,?)+`).ReplaceAllString(s, "args.delta*,")
	return strings.ReplaceAll(s, "response.", "")
}

func TestResponsesStreamSequence(t *testing.T) {
	t.Parallel()
	_, url := start(t, respScript)
	const textSeq = "output_item.added,content_part.added,text.delta*,output_text.done,content_part.done,output_item.done,"
	const callSeq = "output_item.added,args.delta*,function_call_arguments.done,output_item.done,"
	nsTools := `"tools":[{"type":"function","name":"exec_command","parameters":{}},
		{"type":"namespace","name":"mcp__agentrun","description":"d","tools":[{"type":"function","name":"ask_person","parameters":{}}]}]`
	cases := []struct {
		name, body, seq string
		text            string         // the message's text, "" for none
		call            map[string]any // the function_call item's fields, nil for none
	}{
		{name: "text", body: `{"model":"gpt-x","stream":true,"input":"say hi"}`,
			seq:  "created,in_progress," + textSeq + "completed",
			text: "Hello from the scripted model, in several deltas."},
		{name: "text and call", body: `{"model":"gpt-x","stream":true,` + nsTools + `,"input":[{"role":"user","content":"run it"}]}`,
			seq:  "created,in_progress," + textSeq + callSeq + "completed",
			text: "Running it.",
			call: map[string]any{"type": "function_call", "name": "exec_command", "call_id": "call_call_0_0", "id": "fc_call_0_0",
				"arguments": `{"cmd":"echo a long enough command to need several deltas"}`, "namespace": nil}},
		{name: "call in a namespace", body: `{"model":"gpt-x","stream":true,` + nsTools + `,"input":[{"role":"user","content":"ask me"}]}`,
			seq:  "created,in_progress," + callSeq + "completed",
			call: map[string]any{"type": "function_call", "name": "ask_person", "namespace": "mcp__agentrun", "arguments": `{"question":"Which region?"}`}},
		{name: "call of a tool the request lacks", body: `{"model":"gpt-x","stream":true,"input":[{"role":"user","content":"ask me"}]}`,
			seq:  "created,in_progress," + callSeq + "completed",
			call: map[string]any{"name": "ask_person", "namespace": nil}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			names, evs := respEvents(t, url, tc.body)
			if got := collapse(names); got != tc.seq {
				t.Fatalf("events:\n%s\nwant\n%s", got, tc.seq)
			}
			checkShapes(t, evs)
			var text, args strings.Builder
			deltas := 0
			for _, ev := range evs {
				switch ev["type"] {
				case "response.output_text.delta":
					text.WriteString(ev["delta"].(string))
					deltas++
				case "response.function_call_arguments.delta":
					args.WriteString(ev["delta"].(string))
				case "response.output_text.done":
					if ev["text"] != tc.text {
						t.Errorf("output_text.done text %q, want %q", ev["text"], tc.text)
					}
				case "response.function_call_arguments.done":
					if ev["arguments"] != args.String() || ev["name"] != tc.call["name"] {
						t.Errorf("arguments.done %v %q, want the deltas %q and name %v", ev["name"], ev["arguments"], args.String(), tc.call["name"])
					}
				case "response.output_item.added":
					item := ev["item"].(map[string]any)
					if item["status"] != "in_progress" {
						t.Errorf("added item status %v", item["status"])
					}
					if item["type"] == "function_call" && item["arguments"] != "" {
						t.Errorf("added function_call carries arguments %v", item["arguments"])
					}
					if c, ok := item["content"].([]any); item["type"] == "message" && (!ok || len(c) != 0) {
						t.Errorf("added message content %v, want []", item["content"])
					}
				}
			}
			if text.String() != tc.text || (len(tc.text) > 16 && deltas < 2) {
				t.Errorf("text deltas %q (%d), want %q in several", text.String(), deltas, tc.text)
			}
			final := evs[len(evs)-1]["response"].(map[string]any)
			if final["status"] != "completed" || final["usage"] == nil {
				t.Fatalf("final response %v", final)
			}
			if first := evs[0]["response"].(map[string]any); first["status"] != "in_progress" || first["usage"] != nil || len(first["output"].([]any)) != 0 {
				t.Errorf("created response %v", first)
			}
			var call map[string]any
			for _, o := range final["output"].([]any) {
				if o := o.(map[string]any); o["type"] == "function_call" {
					call = o
				}
			}
			if (call == nil) != (tc.call == nil) {
				t.Fatalf("function_call item %v, want %v", call, tc.call)
			}
			for k, v := range tc.call {
				if call[k] != v {
					t.Errorf("function_call %s = %v, want %v", k, call[k], v)
				}
			}
		})
	}
}

func TestResponsesUsageAndNonStreaming(t *testing.T) {
	t.Parallel()
	_, url := start(t, respScript)
	status, body := post(t, url+"/v1/responses", `{"model":"gpt-x","instructions":"be brief","input":"say hi"}`, oaiKey)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	var r struct {
		ID           string `json:"id"`
		Object       string `json:"object"`
		Status       string `json:"status"`
		Model        string `json:"model"`
		Instructions string `json:"instructions"`
		Output       []struct {
			Type    string `json:"type"`
			Role    string `json:"role"`
			Content []struct {
				Type, Text string
			} `json:"content"`
		} `json:"output"`
		Usage respUsage `json:"usage"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	if r.Object != "response" || r.Status != "completed" || r.Model != "gpt-x" || r.Instructions != "be brief" || r.ID != "resp_fake_text_0" {
		t.Errorf("response %+v", r)
	}
	if len(r.Output) != 1 || r.Output[0].Type != "message" || r.Output[0].Role != "assistant" ||
		r.Output[0].Content[0].Type != "output_text" || r.Output[0].Content[0].Text != "Hello from the scripted model, in several deltas." {
		t.Errorf("output %+v", r.Output)
	}
	// Scripted: 10 uncached, 30 written, 40 read; input_tokens counts them all, as the vendor does.
	u := r.Usage
	if u.InputTokens != 80 || u.InputTokensDetails.CachedTokens != 40 || u.InputTokensDetails.CacheWriteTokens != 30 ||
		u.OutputTokens != 20 || u.OutputTokensDetails.ReasoningTokens != 2 || u.TotalTokens != 100 {
		t.Errorf("usage %+v", u)
	}
	// The stream's last event carries the same response.
	_, evs := respEvents(t, url, `{"model":"gpt-x","instructions":"be brief","stream":true,"input":"say hi"}`)
	streamed, _ := json.Marshal(evs[len(evs)-1]["response"])
	var whole map[string]any
	_ = json.Unmarshal([]byte(body), &whole)
	sync, _ := json.Marshal(whole)
	if string(streamed) != string(sync) {
		t.Errorf("streamed final response\n%s\ndiffers from the JSON one\n%s", streamed, sync)
	}
}

func TestResponsesMaxOutputTokens(t *testing.T) {
	t.Parallel()
	_, url := start(t, respScript)
	names, evs := respEvents(t, url, `{"model":"gpt-x","stream":true,"max_output_tokens":100,"input":"write a lot"}`)
	if names[len(names)-1] != "response.incomplete" {
		t.Fatalf("last event %s, want response.incomplete", names[len(names)-1])
	}
	checkShapes(t, evs)
	final := evs[len(evs)-1]["response"].(map[string]any)
	usage := final["usage"].(map[string]any)
	if final["status"] != "incomplete" || final["incomplete_details"].(map[string]any)["reason"] != "max_output_tokens" ||
		usage["output_tokens"] != 100.0 || final["max_output_tokens"] != 100.0 {
		t.Errorf("final response %v", final)
	}
	// Under the limit it completes, and echoes the limit.
	names, evs = respEvents(t, url, `{"model":"gpt-x","stream":true,"max_output_tokens":1000,"input":"write a lot"}`)
	if final := evs[len(evs)-1]["response"].(map[string]any); names[len(names)-1] != "response.completed" || final["max_output_tokens"] != 1000.0 {
		t.Errorf("last event %s, response %v", names[len(names)-1], final)
	}
}

// The conversation is read from input items as Codex and pi send them: developer and system messages
// aside, the user messages before the first assistant item as the first user message, one turn per
// run of assistant items, tool results from function_call_output (a string or parts).
func TestResponsesConversation(t *testing.T) {
	t.Parallel()
	srv, url := start(t, respScript)
	png := pngB64(t, 4, 3)
	codexFirst := `{"type":"message","role":"developer","content":[{"type":"input_text","text":"You are Codex."}]},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context><cwd>/w</cwd></environment_context>"}]},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"run it"}]}`
	cases := []struct{ name, input, want string }{
		{"codex turn 1", codexFirst + `,
			{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Running it."}]},
			{"type":"function_call","call_id":"c1","name":"exec_command","arguments":"{}"},
			{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"Output:"},{"type":"input_text","text":"hello"}]}`,
			"ran: Output:\nhello / user: run it / turn 1"},
		{"output as a string", `{"role":"system","content":"sys"},{"role":"user","content":"run it"},
			{"type":"function_call","call_id":"c1","name":"exec_command","arguments":"{}"},
			{"type":"function_call_output","call_id":"c1","output":"plain"}`,
			"ran: plain / user: run it / turn 1"},
		{"tool images in the output and after it", `{"role":"user","content":"ask me"},
			{"type":"reasoning","summary":[]},
			{"type":"function_call","call_id":"c1","name":"ask_person","arguments":"{}"},
			{"type":"function_call","call_id":"c2","name":"ask_person","arguments":"{}"},
			{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"one"},{"type":"input_image","image_url":"data:image/png;base64,` + png + `"}]},
			{"type":"function_call_output","call_id":"c2","output":"two"},
			{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,` + png + `"}]}`,
			"you said two; images: 2 images: image/png 4x3, image/png 4x3"},
		{"first user is the whole first turn", `{"role":"user","content":"hello there"},{"role":"user","content":"and more"}`,
			"first user was: and more"},
	}
	for _, tc := range cases {
		status, body := post(t, url+"/v1/responses", `{"model":"gpt-x","input":[`+tc.input+`]}`, oaiKey)
		if status != 200 {
			t.Errorf("%s: status %d: %s", tc.name, status, body)
			continue
		}
		var r struct {
			Output []struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"output"`
		}
		if err := json.Unmarshal([]byte(body), &r); err != nil || len(r.Output) == 0 || len(r.Output[0].Content) == 0 {
			t.Errorf("%s: %v: %s", tc.name, err, body)
			continue
		}
		if got := r.Output[0].Content[0].Text; got != tc.want {
			t.Errorf("%s: text %q, want %q", tc.name, got, tc.want)
		}
	}
	calls := srv.Calls()
	if len(calls) != len(cases) {
		t.Fatalf("%d calls", len(calls))
	}
	if c := calls[0]; c.Format != FormatResponses || c.Entry != "call" || c.Turn != 1 || !c.Completed ||
		c.FirstUser != "<environment_context><cwd>/w</cwd></environment_context>\nrun it" {
		t.Errorf("call %+v", c)
	}
}

func TestResponsesErrors(t *testing.T) {
	t.Parallel()
	_, url := start(t, respScript)
	user := `{"role":"user","content":"say hi"}`
	cases := []struct {
		name, body string
		headers    map[string]string
		status     int
		typ, want  string
	}{
		{"no key", `{"model":"m","input":"say hi"}`, nil, 401, "invalid_request_error", "no API key"},
		{"not json", `{"model":`, oaiKey, 400, "invalid_request_error", "not a Responses request"},
		{"no model", `{"input":"say hi"}`, oaiKey, 400, "invalid_request_error", "model: field required"},
		{"no input", `{"model":"m"}`, oaiKey, 400, "invalid_request_error", "input: field required"},
		{"empty input", `{"model":"m","input":[]}`, oaiKey, 400, "invalid_request_error", "input: at least one item"},
		{"bad role", `{"model":"m","input":[` + user + `,{"role":"robot","content":"x"}]}`, oaiKey, 400, "invalid_request_error", `input[1].role: invalid value "robot"`},
		{"no type", `{"model":"m","input":[{"content":"x"}]}`, oaiKey, 400, "invalid_request_error", "input[0].type: field required"},
		{"bad content", `{"model":"m","input":[{"role":"user","content":5}]}`, oaiKey, 400, "invalid_request_error", "input[0].content: want a string or a list of parts"},
		{"call without call_id", `{"model":"m","input":[` + user + `,{"type":"function_call","name":"x","arguments":"{}"}]}`, oaiKey, 400, "invalid_request_error", "input[1].call_id: field required"},
		{"output of no call", `{"model":"m","input":[` + user + `,{"type":"function_call_output","call_id":"nope","output":"x"}]}`, oaiKey, 400, "invalid_request_error", `input[1]: no tool call found for function call output with call_id "nope"`},
		{"small max_output_tokens", `{"model":"m","max_output_tokens":3,"input":"say hi"}`, oaiKey, 400, "invalid_request_error", "max_output_tokens: integer below minimum value"},
		{"previous response", `{"model":"m","previous_response_id":"resp_1","input":"say hi"}`, oaiKey, 400, "invalid_request_error", "previous_response_id"},
		{"namespace without name", `{"model":"m","tools":[{"type":"namespace","tools":[]}],"input":"say hi"}`, oaiKey, 400, "invalid_request_error", "tools[0].name: field required"},
		{"image by file id", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"file_1"}]}]}`, oaiKey, 400, "invalid_request_error", "input[0].content[0].file_id"},
		{"bad image", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}]}`, oaiKey, 400, "invalid_request_error", "input[0].content[0].image_url: could not process image"},
		{"unscripted turn", `{"model":"m","input":[` + user + `,{"role":"assistant","content":"a"},{"role":"user","content":"b"}]}`, oaiKey, 500, "server_error", `no script for entry "text" turn 1`},
	}
	for _, tc := range cases {
		// Streaming requests get their errors as JSON too, before any event, as from the vendor.
		body := strings.Replace(tc.body, `{`, `{"stream":true,`, 1)
		status, out := post(t, url+"/v1/responses", body, tc.headers)
		var e struct {
			Error struct {
				Message, Type string
				Param         any
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(out), &e); err != nil {
			t.Errorf("%s: body %q: %v", tc.name, out, err)
			continue
		}
		if status != tc.status || e.Error.Type != tc.typ || !strings.Contains(e.Error.Message, tc.want) {
			t.Errorf("%s: %d %s %q, want %d %s containing %q", tc.name, status, e.Error.Type, e.Error.Message, tc.status, tc.typ, tc.want)
		}
	}
}

// The reply is a pure function of the request: the same request gets the same bytes.
func TestResponsesDeterministic(t *testing.T) {
	t.Parallel()
	_, url := start(t, respScript)
	body := `{"model":"gpt-x","stream":true,"input":"run it","tools":[{"type":"function","name":"exec_command"}]}`
	_, a := post(t, url+"/v1/responses", body, oaiKey)
	_, b := post(t, url+"/responses", body, oaiKey)
	if a != b || !strings.Contains(a, "response.completed") {
		t.Errorf("two answers to one request differ:\n%s\n%s", a, b)
	}
}
