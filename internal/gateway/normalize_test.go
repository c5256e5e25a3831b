package gateway

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
	if a, b := Normalize(first, "/data-a/runs/r1"), Normalize(restarted, "/data-b/runs/r1"); string(a) != string(b) {
		t.Errorf("a restart's varying fields make a divergence:\n%s\n%s", a, b)
	}
	if a, c := Normalize(first, "/data-a/runs/r1"), Normalize(changed, "/data-b/runs/r1"); string(a) == string(c) {
		t.Errorf("a changed message is not a divergence")
	}
	if _, ok := first["metadata"]; !ok {
		t.Errorf("normalize changed the body it was given")
	}
}
