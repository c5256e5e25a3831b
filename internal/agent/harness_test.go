package agent

import (
	"encoding/json"
	"testing"
)

// The replay check ignores what a harness changes from one start to the next (its session ids in
// metadata, cache keys, Claude Code's per-session billing header, the date and run folder path in
// its system prompt) and nothing else: a changed message is a divergence.
func TestHarnessReplayNormalize(t *testing.T) {
	body := func(s string) map[string]json.RawMessage {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	first := body(`{"model":"m","metadata":{"user_id":"{\"session_id\":\"a\"}"},"prompt_cache_key":"k1",
		"system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.328; cch=aaaa;"},{"type":"text","text":"You are Claude Code. Primary working directory: /data-a/runs/r1. Today's date is 2026-12-01."}],
		"messages":[{"role":"user","content":"hi"}]}`)
	restarted := body(`{"model":"m","metadata":{"user_id":"{\"session_id\":\"b\"}"},"prompt_cache_key":"k2",
		"system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.328; cch=bbbb;"},{"type":"text","text":"You are Claude Code. Primary working directory: /data-b/runs/r1. Today's date is 2026-12-02."}],
		"messages":[{"role":"user","content":"hi"}]}`)
	changed := body(`{"model":"m","metadata":{"user_id":"{\"session_id\":\"b\"}"},
		"system":[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.1.328; cch=bbbb;"},{"type":"text","text":"You are Claude Code. Primary working directory: /data-b/runs/r1. Today's date is 2026-12-02."}],
		"messages":[{"role":"user","content":"hello"}]}`)
	// A takeover by a runner with another data folder, a day later.
	if a, b := normalize(first, "/data-a/runs/r1"), normalize(restarted, "/data-b/runs/r1"); string(a) != string(b) {
		t.Errorf("a restart's varying fields make a divergence:\n%s\n%s", a, b)
	}
	if a, c := normalize(first, "/data-a/runs/r1"), normalize(changed, "/data-b/runs/r1"); string(a) == string(c) {
		t.Errorf("a changed message is not a divergence")
	}
	if _, ok := first["metadata"]; !ok {
		t.Errorf("normalize changed the body it was given")
	}
}

// A harness's call gets the turn's model and at most the agent's maxTokens, in each wire's field;
// a smaller limit it asked for stays.
func TestHarnessLimitCall(t *testing.T) {
	cases := []struct {
		wire, body, field string
		asked, want       int
	}{
		{"anthropic", `{"model":"claude-opus-5-5","max_tokens":64000}`, "max_tokens", 64000, 4096},
		{"anthropic", `{"model":"x","max_tokens":100}`, "max_tokens", 100, 100},
		{"anthropic", `{"model":"x"}`, "max_tokens", 0, 4096},
		{"openai-responses", `{"model":"gpt","max_output_tokens":128000}`, "max_output_tokens", 128000, 4096},
		{"openai-chat", `{"model":"gpt","max_tokens":9000}`, "max_tokens", 9000, 4096},
		{"openai-chat", `{"model":"gpt"}`, "max_completion_tokens", 0, 4096},
	}
	for _, c := range cases {
		var body map[string]json.RawMessage
		json.Unmarshal([]byte(c.body), &body)
		asked := limitCall(c.wire, body, "claude-sonnet-4-5", 4096)
		var got int
		json.Unmarshal(body[c.field], &got)
		if asked != c.asked || got != c.want || string(body["model"]) != `"claude-sonnet-4-5"` {
			t.Errorf("%s %s: asked %d, %s=%d, model %s; want asked %d, %d", c.wire, c.body, asked, c.field, got, body["model"], c.asked, c.want)
		}
	}
}
