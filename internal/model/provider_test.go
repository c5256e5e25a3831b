package model_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/model/fake"
)

const testScript = `
entries:
  - name: notes
    match: "which region"
    turns:
      - text: "I'll ask."
        tool_calls:
          - name: ask_person
            input: {question: "Which region should I cover?"}
        usage: {input_tokens: 120, output_tokens: 30, cache_creation_input_tokens: 50, cache_creation_1h_input_tokens: 20, cache_read_input_tokens: 400, reasoning_tokens: 7}
      - tool_calls:
          - name: write
            input: {path: region.md, content: "# {{last_tool_result}}\nNotes about {{last_tool_result}} (turn {{turn}}).\n", tags: ["{{last_tool_result}}", 3]}
      - text: "Wrote region.md; you asked: {{last_user}}"
  - name: cached
    match: "cache me"
    turns:
      - text: "cached answer"
        usage: {input_tokens: 100, output_tokens: 40, cache_read_input_tokens: 900, reasoning_tokens: 25}
  - name: echo
    match: "echo:"
    turns:
      - text: "You said {{last_user}} at turn {{turn}}."
      - text: "You said {{last_user}} at turn {{turn}}."
  - name: slow
    match: "slow please"
    turns:
      - text: "finally"
        latency: 5s
`

// startFake starts a scripted server for one test and stops it when the test ends.
func startFake(t *testing.T, script string) (*fake.Server, string) {
	t.Helper()
	sc, err := fake.ParseScript([]byte(script))
	if err != nil {
		t.Fatalf("parse script: %v", err)
	}
	srv, url, err := fake.Start(sc)
	if err != nil {
		t.Fatalf("start fake: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv, url
}

// providerCase is one way of reaching the fake server.
type providerCase struct {
	name   string
	format string // what the server sees
	new    func(url, key string) model.Provider
}

var providerCases = []providerCase{
	{"anthropic", fake.FormatAnthropic, func(url, key string) model.Provider { return model.NewAnthropic(url, key, nil) }},
	{"openai", fake.FormatOpenAI, func(url, key string) model.Provider { return model.NewOpenAI("openai", url+"/v1", key, nil) }},
	// OpenRouter-style base without /v1 exercises the server's second route.
	{"openrouter", fake.FormatOpenAI, func(url, key string) model.Provider {
		return model.NewOpenAI("openrouter", url, key, nil)
	}},
}

// eachProvider runs f for every provider, streaming and not, in parallel subtests.
func eachProvider(t *testing.T, f func(t *testing.T, pc providerCase, stream bool)) {
	for _, pc := range providerCases {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%t", pc.name, stream), func(t *testing.T) {
				t.Parallel()
				f(t, pc, stream)
			})
		}
	}
}

func user(text string) model.Message {
	return model.Message{Role: "user", Content: []model.Block{{Type: model.BlockText, Text: text}}}
}

func toolResult(id, content string) model.Message {
	return model.Message{Role: "user", Content: []model.Block{{Type: model.BlockToolResult, ToolUseID: id, Content: content}}}
}

func complete(t *testing.T, p model.Provider, req *model.Request) *model.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := p.Complete(ctx, req)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	return resp
}

func jsonEqual(t *testing.T, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("input %s is not JSON: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %s: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("input = %s, want %s", got, want)
	}
}

func TestConversationWithTools(t *testing.T) {
	t.Parallel()
	eachProvider(t, func(t *testing.T, pc providerCase, stream bool) {
		srv, url := startFake(t, testScript)
		p := pc.new(url, "test-key")
		idPrefix := "toolu"
		if pc.format == fake.FormatOpenAI {
			idPrefix = "call"
		}
		req := &model.Request{Model: "m-1", System: "You are terse.", MaxTokens: 256, Stream: stream,
			Messages: []model.Message{user("Notes: which region?")},
			Tools: []model.ToolDef{{Name: "ask_person", Description: "Ask the person.",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"question":{"type":"string"}}}`)}}}

		// Turn 0: text and a tool call.
		r0 := complete(t, p, req)
		if r0.StopReason != model.StopToolUse || r0.Model != "m-1" || r0.ID == "" {
			t.Fatalf("turn 0: stop=%q model=%q id=%q", r0.StopReason, r0.Model, r0.ID)
		}
		if len(r0.Content) != 2 || r0.Content[0].Type != model.BlockText || r0.Content[0].Text != "I'll ask." {
			t.Fatalf("turn 0 content = %+v", r0.Content)
		}
		call := r0.Content[1]
		if call.Type != model.BlockToolUse || call.Name != "ask_person" || call.ID != idPrefix+"_notes_0_0" {
			t.Fatalf("turn 0 tool call = %+v", call)
		}
		jsonEqual(t, call.Input, `{"question":"Which region should I cover?"}`)

		// Turn 1: the tool result feeds the template.
		req.Messages = append(req.Messages, model.Message{Role: "assistant", Content: r0.Content}, toolResult(call.ID, "EU"))
		r1 := complete(t, p, req)
		if r1.StopReason != model.StopToolUse || len(r1.Content) != 1 {
			t.Fatalf("turn 1: stop=%q content=%+v", r1.StopReason, r1.Content)
		}
		w := r1.Content[0]
		if w.Name != "write" || w.ID != idPrefix+"_notes_1_0" {
			t.Fatalf("turn 1 tool call = %+v", w)
		}
		jsonEqual(t, w.Input, `{"path":"region.md","content":"# EU\nNotes about EU (turn 1).\n","tags":["EU",3]}`)
		if r1.Usage.InputTokens < 1 || r1.Usage.OutputTokens < 1 {
			t.Errorf("turn 1 default usage = %+v, want estimates >= 1", r1.Usage)
		}

		// Turn 2: final text; tool-result messages are not "the last user message".
		req.Messages = append(req.Messages, model.Message{Role: "assistant", Content: r1.Content}, toolResult(w.ID, "written"))
		r2 := complete(t, p, req)
		if r2.StopReason != model.StopEndTurn || len(r2.Content) != 1 ||
			r2.Content[0].Text != "Wrote region.md; you asked: Notes: which region?" {
			t.Fatalf("turn 2: stop=%q content=%+v", r2.StopReason, r2.Content)
		}

		calls := srv.Calls()
		if len(calls) != 3 {
			t.Fatalf("server saw %d calls, want 3", len(calls))
		}
		for i, c := range calls {
			if c.Entry != "notes" || c.Turn != i || c.Format != pc.format || c.Stream != stream || !c.Completed || c.Status != 200 {
				t.Errorf("call %d = %+v", i, c)
			}
		}
	})
}

func TestUsageMapping(t *testing.T) {
	t.Parallel()
	// What each format reports for the same scripted usage. Anthropic has no reasoning count; OpenAI's
	// prompt_tokens includes the cached tokens, which the client takes back out.
	want := map[string]map[string]model.Usage{
		"which region": {
			fake.FormatAnthropic: {InputTokens: 120, OutputTokens: 30, CacheCreationInputTokens: 50, CacheCreation1hInputTokens: 20, CacheReadInputTokens: 400},
			fake.FormatOpenAI:    {InputTokens: 120, OutputTokens: 30, CacheCreationInputTokens: 50, CacheReadInputTokens: 400, ReasoningTokens: 7},
		},
		"cache me": {
			fake.FormatAnthropic: {InputTokens: 100, OutputTokens: 40, CacheReadInputTokens: 900},
			fake.FormatOpenAI:    {InputTokens: 100, OutputTokens: 40, CacheReadInputTokens: 900, ReasoningTokens: 25},
		},
	}
	eachProvider(t, func(t *testing.T, pc providerCase, stream bool) {
		_, url := startFake(t, testScript)
		p := pc.new(url, "k")
		for prompt, byFormat := range want {
			r := complete(t, p, &model.Request{Model: "m", Stream: stream, Messages: []model.Message{user(prompt)}})
			if r.Usage != byFormat[pc.format] {
				t.Errorf("%q: usage = %+v, want %+v", prompt, r.Usage, byFormat[pc.format])
			}
		}
	})
}

func TestTemplatesAndLastUser(t *testing.T) {
	t.Parallel()
	eachProvider(t, func(t *testing.T, pc providerCase, stream bool) {
		_, url := startFake(t, testScript)
		p := pc.new(url, "k")
		req := &model.Request{Model: "m", Stream: stream, Messages: []model.Message{user("echo: one")}}
		r0 := complete(t, p, req)
		if got := r0.Content[0].Text; got != "You said echo: one at turn 0." {
			t.Errorf("turn 0 = %q", got)
		}
		req.Messages = append(req.Messages, model.Message{Role: "assistant", Content: r0.Content}, user("two <&> ünïcode"))
		r1 := complete(t, p, req)
		if got := r1.Content[0].Text; got != "You said two <&> ünïcode at turn 1." {
			t.Errorf("turn 1 = %q", got)
		}
	})
}

func TestSameRequestSameAnswer(t *testing.T) {
	t.Parallel()
	eachProvider(t, func(t *testing.T, pc providerCase, stream bool) {
		srv, url := startFake(t, testScript)
		p := pc.new(url, "k")
		req := &model.Request{Model: "m", Stream: stream, Messages: []model.Message{user("Notes: which region?")}}
		a := complete(t, p, req)
		b := complete(t, p, req)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("replayed request got a different answer:\n%+v\n%+v", a, b)
		}
		if n := srv.CountTurn("notes", 0); n != 2 {
			t.Errorf("CountTurn(notes, 0) = %d, want 2", n)
		}
		if n := srv.CountTurn("notes", 1); n != 0 {
			t.Errorf("CountTurn(notes, 1) = %d, want 0", n)
		}
	})
}

func TestUnscripted(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		messages []model.Message
		want     []string // in the error message
	}{
		{"no entry", []model.Message{user("nothing matches this")},
			[]string{"no script entry matches", "nothing matches this"}},
		{"beyond turns", []model.Message{user("cache me"), {Role: "assistant", Content: []model.Block{{Type: "text", Text: "x"}}}, user("again")},
			[]string{`entry "cached" turn 1`, "has 1 turns"}},
	}
	eachProvider(t, func(t *testing.T, pc providerCase, stream bool) {
		srv, url := startFake(t, testScript)
		p := pc.new(url, "k")
		for _, tc := range cases {
			_, err := p.Complete(context.Background(), &model.Request{Model: "m", Stream: stream, Messages: tc.messages})
			var ae *model.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("%s: err = %v, want *APIError", tc.name, err)
			}
			if ae.Status != http.StatusInternalServerError || ae.Provider != pc.name || !ae.Retryable {
				t.Errorf("%s: %+v", tc.name, ae)
			}
			for _, w := range tc.want {
				if !strings.Contains(ae.Message, w) {
					t.Errorf("%s: message %q lacks %q", tc.name, ae.Message, w)
				}
			}
		}
		if n := srv.CountTurn("cached", 1); n != 1 {
			t.Errorf("CountTurn(cached, 1) = %d, want 1 (unscripted turns are counted too)", n)
		}
	})
}

func TestNoKey(t *testing.T) {
	t.Parallel()
	eachProvider(t, func(t *testing.T, pc providerCase, stream bool) {
		srv, url := startFake(t, testScript)
		p := pc.new(url, "")
		_, err := p.Complete(context.Background(), &model.Request{Model: "m", Stream: stream, Messages: []model.Message{user("echo: hi")}})
		var ae *model.APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized || ae.Retryable || !strings.Contains(ae.Message, "no API key") {
			t.Fatalf("err = %#v, want a non-retryable 401 APIError", err)
		}
		if pc.format == fake.FormatAnthropic && ae.Type != "authentication_error" {
			t.Errorf("type = %q", ae.Type)
		}
		if c := srv.Calls(); len(c) != 1 || c[0].Status != 401 || c[0].EntryIndex != -1 {
			t.Errorf("calls = %+v", c)
		}
	})
}

func TestConnectionErrorIsRetryable(t *testing.T) {
	t.Parallel()
	srv, url := startFake(t, testScript)
	_ = srv.Close()
	for _, pc := range providerCases {
		_, err := pc.new(url, "k").Complete(context.Background(), &model.Request{Model: "m", Messages: []model.Message{user("echo: x")}})
		var ae *model.APIError
		if !errors.As(err, &ae) || ae.Status != 0 || !ae.Retryable || ae.Err == nil {
			t.Errorf("%s: err = %v, want a retryable connection APIError", pc.name, err)
		}
	}
}

func TestCancelDuringLatency(t *testing.T) {
	t.Parallel()
	eachProvider(t, func(t *testing.T, pc providerCase, stream bool) {
		srv, url := startFake(t, testScript)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		hooked := make(chan fake.Call, 1)
		srv.OnRequest(func(c fake.Call) {
			hooked <- c
			cancel() // the caller gives up while the server is still "thinking"
		})
		start := time.Now()
		_, err := pc.new(url, "k").Complete(ctx, &model.Request{Model: "m", Stream: stream, Messages: []model.Message{user("slow please")}})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		var ae *model.APIError
		if errors.As(err, &ae) {
			t.Errorf("a cancelled call is not an APIError: %v", err)
		}
		if time.Since(start) > 3*time.Second {
			t.Errorf("cancel took %s", time.Since(start))
		}
		if c := <-hooked; c.Entry != "slow" || c.Turn != 0 || c.Completed {
			t.Errorf("hook saw %+v", c)
		}
		if c := srv.Calls(); len(c) != 1 || c[0].Completed {
			t.Errorf("calls = %+v, want one not completed", c)
		}
	})
}

// A vendor that cuts a stream short: the call fails as retryable instead of returning half an answer.
func TestTruncatedStream(t *testing.T) {
	t.Parallel()
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		if strings.HasSuffix(r.URL.Path, "/v1/messages") {
			fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"x\",\"usage\":{\"input_tokens\":3}}}\n\n")
			fmt.Fprint(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
			return
		}
		fmt.Fprint(w, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hal\"},\"finish_reason\":null}]}\n\n")
	}))
	defer cut.Close()
	for _, pc := range providerCases {
		_, err := pc.new(cut.URL, "k").Complete(context.Background(), &model.Request{Model: "m", Stream: true, Messages: []model.Message{user("x")}})
		var ae *model.APIError
		if !errors.As(err, &ae) || !ae.Retryable || !strings.Contains(ae.Message, "stream ended") {
			t.Errorf("%s: err = %v, want a retryable stream error", pc.name, err)
		}
	}
}

// Vendor error bodies, including one sent inside a stream, come back as APIErrors with their details.
func TestVendorErrors(t *testing.T) {
	t.Parallel()
	vendor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/overloaded/v1/messages":
			w.WriteHeader(529)
			fmt.Fprint(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		case "/streamerr/v1/messages":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n")
		case "/badreq/chat/completions":
			w.WriteHeader(400)
			fmt.Fprint(w, `{"error":{"message":"bad model","type":"invalid_request_error","code":"model_not_found"}}`)
		case "/ratelimit/chat/completions":
			w.WriteHeader(429)
			fmt.Fprint(w, `{"error":{"code":429,"message":"Rate limit exceeded"}}`) // OpenRouter's numeric code
		}
	}))
	defer vendor.Close()
	cases := []struct {
		p         model.Provider
		stream    bool
		status    int
		typ, msg  string
		retryable bool
	}{
		{model.NewAnthropic(vendor.URL+"/overloaded", "k", nil), false, 529, "overloaded_error", "Overloaded", true},
		{model.NewAnthropic(vendor.URL+"/streamerr", "k", nil), true, 529, "overloaded_error", "Overloaded", true},
		{model.NewOpenAI("openai", vendor.URL+"/badreq", "k", nil), false, 400, "invalid_request_error", "bad model", false},
		{model.NewOpenAI("openrouter", vendor.URL+"/ratelimit", "k", nil), true, 429, "429", "Rate limit exceeded", true},
	}
	for i, tc := range cases {
		_, err := tc.p.Complete(context.Background(), &model.Request{Model: "m", Stream: tc.stream, Messages: []model.Message{user("x")}})
		var ae *model.APIError
		if !errors.As(err, &ae) {
			t.Fatalf("case %d: err = %v", i, err)
		}
		if ae.Status != tc.status || ae.Type != tc.typ || ae.Message != tc.msg || ae.Retryable != tc.retryable || ae.Provider != tc.p.Name() {
			t.Errorf("case %d: %+v", i, ae)
		}
	}
}
