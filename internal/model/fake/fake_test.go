package fake

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

const script = `
default_latency: 30ms
entries:
  - name: tools
    match: "use tools"
    turns:
      - text: "Let me look."
        tool_calls:
          - name: ls
            input: {path: "."}
          - name: read
            input: {path: "a very long file name that spans several chunks.md"}
        usage: {input_tokens: 10, output_tokens: 20, cache_creation_input_tokens: 30, cache_creation_1h_input_tokens: 5, cache_read_input_tokens: 40, reasoning_tokens: 2}
      - tool_calls:
          - name: done
  - match: "*"
    turns:
      - text: "fallback"
        latency: 1ms
`

func mustParse(t *testing.T, s string) *Script {
	t.Helper()
	sc, err := ParseScript([]byte(s))
	if err != nil {
		t.Fatalf("ParseScript: %v", err)
	}
	return sc
}

func start(t *testing.T, s string) (*Server, string) {
	t.Helper()
	srv, url, err := Start(mustParse(t, s))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv, url
}

// post sends a raw request and returns the status and body.
func post(t *testing.T, url, body string, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

var antKey = map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"}
var oaiKey = map[string]string{"Authorization": "Bearer k"}

func TestParseScriptErrors(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, src, want string }{
		{"empty", ``, "empty"},
		{"no entries", `entries: []`, "no entries"},
		{"bad yaml", "entries: [\n", "parse script"},
		{"unknown top field", `entrys: []`, `unknown field "entrys"`},
		{"unknown entry field", "entries:\n- nam: x\n  turns: [{text: a}]", `entries[0]: json: unknown field "nam"`},
		{"unknown turn field", "entries:\n- name: x\n  turns: [{text: a}, {tool_call: []}]", `entries[0] (x) turns[1]: json: unknown field "tool_call"`},
		{"no turns", "entries:\n- name: a\n  turns: [{text: a}]\n- name: b", "entries[1] (b): turns: at least one turn"},
		{"empty turn", "entries:\n- turns: [{latency: 5ms}]", "entries[0] (#0) turns[0]: needs text or tool_calls"},
		{"tool without name", "entries:\n- turns: [{tool_calls: [{input: {a: 1}}]}]", "turns[0] tool_calls[0]: name: empty"},
		{"input not object", "entries:\n- turns: [{tool_calls: [{name: x, input: [1]}]}]", "tool_calls[0]: input: must be a JSON object"},
		{"numeric latency", "entries:\n- turns: [{text: a, latency: 50}]", "duration string"},
		{"bad latency", "entries:\n- turns: [{text: a, latency: soon}]", "invalid duration"},
		{"1h over total", "entries:\n- turns: [{text: a, usage: {cache_creation_input_tokens: 1, cache_creation_1h_input_tokens: 2}}]", "cannot exceed"},
	}
	for _, tc := range cases {
		_, err := ParseScript([]byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}

func TestParseScriptJSONAndLoad(t *testing.T) {
	t.Parallel()
	sc := mustParse(t, `{"default_latency":"1s","entries":[{"name":"a","match":"x","turns":[{"text":"hi","latency":"2ms"}]}]}`)
	if time.Duration(sc.DefaultLatency) != time.Second || time.Duration(sc.Entries[0].Turns[0].Latency) != 2*time.Millisecond {
		t.Errorf("latencies = %v, %v", sc.DefaultLatency, sc.Entries[0].Turns[0].Latency)
	}
	path := t.TempDir() + "/s.yaml"
	if err := writeFile(path, script); err != nil {
		t.Fatal(err)
	}
	if sc, err := LoadScript(path); err != nil || len(sc.Entries) != 2 {
		t.Fatalf("LoadScript = %v, %v", sc, err)
	}
	if _, err := LoadScript(path + ".missing"); err == nil || !strings.Contains(err.Error(), "load script") {
		t.Errorf("missing file: %v", err)
	}
}

// sse reads a whole SSE body into (event, data) pairs.
func sse(t *testing.T, body string) (names []string, datas []string) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(body))
	name := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			names, datas = append(names, name), append(datas, strings.TrimPrefix(line, "data: "))
			name = ""
		}
	}
	return names, datas
}

func TestAnthropicStreamSequence(t *testing.T) {
	t.Parallel()
	_, url := start(t, script)
	status, body := post(t, url+"/v1/messages",
		`{"model":"claude-x","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"please use tools"}]}`, antKey)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	names, datas := sse(t, body)
	seq := strings.Join(names, ",")
	// Collapse the deltas so the shape reads plainly.
	seq = regexp.MustCompile(`(content_block_delta,?)+`).ReplaceAllString(seq, "delta*,")
	want := "message_start,content_block_start,ping,delta*,content_block_stop," +
		"content_block_start,delta*,content_block_stop,content_block_start,delta*,content_block_stop,message_delta,message_stop"
	if seq != want {
		t.Fatalf("events:\n%s\nwant\n%s", seq, want)
	}
	var start struct {
		Message struct {
			ID    string
			Usage map[string]any
		}
	}
	if err := json.Unmarshal([]byte(datas[0]), &start); err != nil {
		t.Fatal(err)
	}
	u := start.Message.Usage
	if u["input_tokens"] != 10.0 || u["cache_creation_input_tokens"] != 30.0 || u["cache_read_input_tokens"] != 40.0 ||
		u["cache_creation"].(map[string]any)["ephemeral_1h_input_tokens"] != 5.0 ||
		u["cache_creation"].(map[string]any)["ephemeral_5m_input_tokens"] != 25.0 {
		t.Errorf("message_start usage = %v", u)
	}
	if start.Message.ID != "msg_fake_tools_0" {
		t.Errorf("id = %q", start.Message.ID)
	}
	// The tool input arrives in pieces that join to the whole object.
	var input strings.Builder
	for i, n := range names {
		if n == "content_block_delta" && strings.Contains(datas[i], `"index":2`) {
			var d struct {
				Delta struct {
					PartialJSON string `json:"partial_json"`
				}
			}
			_ = json.Unmarshal([]byte(datas[i]), &d)
			input.WriteString(d.Delta.PartialJSON)
		}
	}
	if input.String() != `{"path":"a very long file name that spans several chunks.md"}` {
		t.Errorf("assembled input = %s", input.String())
	}
	if last := datas[len(datas)-2]; !strings.Contains(last, `"stop_reason":"tool_use"`) || !strings.Contains(last, `"output_tokens":20`) {
		t.Errorf("message_delta = %s", last)
	}
}

func TestOpenAIStream(t *testing.T) {
	t.Parallel()
	_, url := start(t, script)
	for _, includeUsage := range []bool{false, true} {
		req := `{"model":"gpt-x","stream":true,"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"use tools"}]}]`
		if includeUsage {
			req += `,"stream_options":{"include_usage":true}`
		}
		status, body := post(t, url+"/chat/completions", req+"}", oaiKey)
		if status != 200 {
			t.Fatalf("status %d: %s", status, body)
		}
		_, datas := sse(t, body)
		if datas[len(datas)-1] != "[DONE]" {
			t.Errorf("last data = %q", datas[len(datas)-1])
		}
		usage := datas[len(datas)-2]
		if got := strings.Contains(usage, `"usage"`); got != includeUsage {
			t.Errorf("include_usage=%t but usage chunk present=%t: %s", includeUsage, got, usage)
		}
		if includeUsage && (!strings.Contains(usage, `"choices":[]`) || !strings.Contains(usage, `"prompt_tokens":80`) ||
			!strings.Contains(usage, `"cached_tokens":40`) || !strings.Contains(usage, `"reasoning_tokens":2`)) {
			t.Errorf("usage chunk = %s", usage)
		}
		if !strings.Contains(body, `"finish_reason":"tool_calls"`) || !strings.Contains(body, `"id":"call_tools_0_1"`) {
			t.Errorf("body lacks the finish reason or the second call's id:\n%s", body)
		}
	}
}

func TestOpenAINonStreamToolOnly(t *testing.T) {
	t.Parallel()
	_, url := start(t, script)
	status, body := post(t, url+"/v1/chat/completions", `{"model":"m","messages":[
		{"role":"user","content":"use tools"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"ls","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"a","content":"x.md"}]}`, oaiKey)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	var r struct {
		Choices []struct {
			Message      map[string]json.RawMessage
			FinishReason string `json:"finish_reason"`
		}
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	m := r.Choices[0].Message
	if string(m["content"]) != "null" || r.Choices[0].FinishReason != "tool_calls" ||
		!strings.Contains(string(m["tool_calls"]), `"arguments":"{}"`) {
		t.Errorf("message = %s", body)
	}
}

func TestRequestChecks(t *testing.T) {
	t.Parallel()
	_, url := start(t, script)
	cases := []struct {
		name, path, body string
		headers          map[string]string
		status           int
		want             string
	}{
		{"anthropic no key", "/v1/messages", `{}`, nil, 401, `"type":"authentication_error"`},
		{"openai no key", "/v1/chat/completions", `{}`, map[string]string{"Authorization": "Bearer "}, 401, `"code":"invalid_api_key"`},
		{"anthropic bearer ok", "/v1/messages", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"x"}]}`,
			map[string]string{"Authorization": "Bearer t"}, 200, `"fallback"`},
		{"no max_tokens", "/v1/messages", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, antKey, 400, "max_tokens"},
		{"no messages", "/chat/completions", `{"model":"m","messages":[]}`, oaiKey, 400, "messages"},
		{"not json", "/chat/completions", `{`, oaiKey, 400, "invalid_request_error"},
		{"wrong path", "/v1/v1/messages", `{}`, antKey, 404, "no route for POST /v1/v1/messages"},
		// count_tokens: a quarter of the conversation's 42 characters; no max_tokens needed.
		{"count_tokens", "/v1/messages/count_tokens", `{"model":"m","messages":[{"role":"user","content":"count these forty-four characters, please!"}]}`,
			antKey, 200, `{"input_tokens":10}`},
		{"count_tokens no key", "/v1/messages/count_tokens", `{}`, nil, 401, `"type":"authentication_error"`},
		{"count_tokens bad messages", "/v1/messages/count_tokens", `{"model":"m","messages":"x"}`, antKey, 400, "invalid_request_error"},
		// A mid-conversation system message, as Claude Code sends to a model it does not know (its
		// environment block after the prompt): read as input, not a user or assistant turn.
		{"mid-conversation system", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"use tools"},
			{"role":"system","content":[{"type":"text","text":"# Environment"}]}]}`, antKey, 200, `"text":"Let me look."`},
		{"unknown role", "/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"tool","content":"x"}]}`, antKey, 400,
			`messages.0.role: must be user, assistant or system, not \"tool\"`},
	}
	for _, tc := range cases {
		status, body := post(t, url+tc.path, tc.body, tc.headers)
		if status != tc.status || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s, want %d and %q", tc.name, status, body, tc.status, tc.want)
		}
	}
}

func TestUnscriptedAndOrder(t *testing.T) {
	t.Parallel()
	srv, url := start(t, "entries:\n- name: only\n  match: hello\n  turns: [{text: hi}]\n- name: any\n  match: '*'\n  turns: [{text: '{{turn}}'}]")
	// Entries are tried in order: "hello" goes to "only" even though "*" also matches.
	_, body := post(t, url+"/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hello"}]}`, antKey)
	if !strings.Contains(body, `"text":"hi"`) {
		t.Errorf("body = %s", body)
	}
	status, body := post(t, url+"/v1/messages", `{"model":"m","max_tokens":5,"messages":[
		{"role":"user","content":"hello"},{"role":"assistant","content":"hi"},{"role":"user","content":"more"}]}`, antKey)
	if status != 500 || !strings.Contains(body, `"type":"api_error"`) || !strings.Contains(body, `no script for entry \"only\" turn 1`) {
		t.Errorf("beyond turns: %d %s", status, body)
	}
	srv.SetScript(mustParse(t, "entries:\n- match: nope\n  turns: [{text: x}]"))
	status, body = post(t, url+"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hello"}]}`, oaiKey)
	if status != 500 || !strings.Contains(body, `no script entry matches the first user message \"hello\"`) || !strings.Contains(body, `"code":"no_script"`) {
		t.Errorf("no entry: %d %s", status, body)
	}
	calls := srv.Calls()
	if len(calls) != 3 || calls[0].Entry != "only" || calls[1].Turn != 1 || calls[1].Status != 500 || calls[2].EntryIndex != -1 {
		t.Errorf("calls = %+v", calls)
	}
}

func TestAdminEndpoints(t *testing.T) {
	t.Parallel()
	srv, url := start(t, script)
	post(t, url+"/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, antKey)
	resp, err := http.Get(url + "/_fake/calls")
	if err != nil {
		t.Fatal(err)
	}
	var calls []Call
	err = json.NewDecoder(resp.Body).Decode(&calls)
	resp.Body.Close()
	if err != nil || len(calls) != 1 || calls[0].Entry != "#1" || !calls[0].Completed || calls[0].Format != FormatAnthropic {
		t.Fatalf("calls = %+v, %v", calls, err)
	}
	if status, _ := post(t, url+"/_fake/reset", "", nil); status != http.StatusNoContent || len(srv.Calls()) != 0 {
		t.Errorf("reset: status %d, calls %d", status, len(srv.Calls()))
	}
	req, _ := http.NewRequest(http.MethodPut, url+"/_fake/script", strings.NewReader("entries:\n- turns: [{text: replaced}]"))
	resp, err = http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("put script: %v %v", resp, err)
	}
	resp.Body.Close()
	if _, body := post(t, url+"/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, antKey); !strings.Contains(body, "replaced") {
		t.Errorf("after PUT /_fake/script: %s", body)
	}
}

func TestLatency(t *testing.T) {
	t.Parallel()
	_, url := start(t, script)
	began := time.Now()
	post(t, url+"/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"use tools"}]}`, antKey)
	if d := time.Since(began); d < 30*time.Millisecond {
		t.Errorf("default latency not applied: %s", d)
	}
}

// syncBuffer is a log writer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestListenAndServe(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logw syncBuffer
	done := make(chan error, 1)
	go func() { done <- ListenAndServe(ctx, "127.0.0.1:0", mustParse(t, script), &logw) }()
	addr := regexp.MustCompile(`listening on (http://\S+)`)
	var url string
	for deadline := time.Now().Add(5 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if m := addr.FindStringSubmatch(logw.String()); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		t.Fatalf("no listening line in log: %q", logw.String())
	}
	post(t, url+"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"use tools"}]}`, oaiKey)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ListenAndServe: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ListenAndServe did not stop with its context")
	}
	if log := logw.String(); !strings.Contains(log, "openai sync entry=tools turn=0 status=200 completed=true") {
		t.Errorf("log = %q", log)
	}
}

func writeFile(path, data string) error { return os.WriteFile(path, []byte(data), 0o600) }

// A scripted call goes out under the name the request offers the tool by: its own, or a harness's
// prefixed one (Claude Code's mcp__agentrun__NAME, OpenCode's agentrun_NAME) when only that is
// offered, so one script drives the built-in loop and every harness.
func TestToolNameUnderHarnessPrefix(t *testing.T) {
	t.Parallel()
	_, url := start(t, "entries:\n- match: '*'\n  turns: [{tool_calls: [{name: write, input: {path: a.md}}]}]")
	cases := []struct{ tools, want string }{
		{``, `"name":"write"`},
		{`,"tools":[{"name":"write"},{"name":"mcp__agentrun__write"}]`, `"name":"write"`},
		{`,"tools":[{"name":"mcp__agentrun__write"},{"name":"mcp__agentrun__read"}]`, `"name":"mcp__agentrun__write"`},
		{`,"tools":[{"name":"agentrun_write"}]`, `"name":"agentrun_write"`},
		{`,"tools":[{"name":"agentrun_write"},{"name":"mcp__agentrun__write"}]`, `"name":"write"`}, // two: the script's name
		{`,"tools":[{"name":"other__write"}]`, `"name":"write"`},
	}
	for _, c := range cases {
		_, body := post(t, url+"/v1/messages", `{"model":"m","max_tokens":50,"messages":[{"role":"user","content":"go"}]`+c.tools+`}`, antKey)
		if !strings.Contains(body, c.want) {
			t.Errorf("tools %s: %s, want %s", c.tools, body, c.want)
		}
	}
}

// A script's latency_jitter spreads its answers' latencies around the latency, within the jitter
// either way, and leaves answers without a latency alone.
func TestLatencyJitter(t *testing.T) {
	t.Parallel()
	sc, err := ParseScript([]byte("latency_jitter: 40ms\ndefault_latency: 50ms\nentries:\n- turns: [{text: a}]"))
	if err != nil {
		t.Fatal(err)
	}
	if sc.LatencyJitter != Duration(40*time.Millisecond) {
		t.Fatalf("latency_jitter parsed as %s", time.Duration(sc.LatencyJitter))
	}
	seen := map[time.Duration]bool{}
	lo, hi := time.Hour, time.Duration(0)
	for range 200 {
		r, _, err := plan(sc, &conversation{firstUser: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		seen[r.latency] = true
		lo, hi = min(lo, r.latency), max(hi, r.latency)
	}
	if lo < 10*time.Millisecond || hi > 90*time.Millisecond {
		t.Errorf("latencies ranged %s..%s, want within 50ms ± 40ms", lo, hi)
	}
	if len(seen) < 50 || hi-lo < 40*time.Millisecond {
		t.Errorf("200 answers had %d distinct latencies spanning %s: not spread", len(seen), hi-lo)
	}
	// A script with no latency keeps answering at once.
	still, err := ParseScript([]byte("latency_jitter: 40ms\nentries:\n- turns: [{text: a}]"))
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _ := plan(still, &conversation{firstUser: "hi"}); r.latency != 0 {
		t.Errorf("an answer with no latency was delayed %s by the jitter", r.latency)
	}
	if _, err := ParseScript([]byte("latency_jitter: -1ms\nentries:\n- turns: [{text: a}]")); err == nil || !strings.Contains(err.Error(), "latency_jitter: negative") {
		t.Errorf("negative jitter: err = %v", err)
	}
}
