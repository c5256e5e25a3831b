package gateway

import (
	"encoding/json"
	"testing"
)

// Codex's Responses requests, started again: its own messages get new ids and each tool result
// another "Wall time" line, which the replay check ignores; a tool result with other text, or a
// call with other arguments, is still a divergence.
func TestHarnessReplayNormalizeResponses(t *testing.T) {
	body := func(s string) map[string]json.RawMessage {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	req := func(msgID, wall, output, args string) map[string]json.RawMessage {
		return body(`{"model":"gpt-4.1","prompt_cache_key":"` + msgID + `","input":[
			{"type":"message","id":"msg_` + msgID + `","role":"user","content":[{"type":"input_text","text":"Ask me which region"}]},
			{"type":"function_call","id":"fc_1","call_id":"call_1","name":"ask_person","namespace":"mcp__agentrun__","arguments":` + args + `},
			{"type":"function_call_output","call_id":"call_1","output":"Wall time: ` + wall + ` seconds\nOutput:\n` + output + `"}]}`)
	}
	first := Normalize(req("01a2-aaaa", "0.0124", "Europe", `"{\"question\":\"Which?\"}"`), "")
	if again := Normalize(req("01a2-bbbb", "0.0031", "Europe", `"{\"question\":\"Which?\"}"`), ""); string(first) != string(again) {
		t.Errorf("a restart's message ids and wall times make a divergence:\n%s\n%s", first, again)
	}
	if other := Normalize(req("01a2-bbbb", "0.0031", "Asia", `"{\"question\":\"Which?\"}"`), ""); string(first) == string(other) {
		t.Errorf("another tool result is not a divergence")
	}
	if other := Normalize(req("01a2-bbbb", "0.0031", "Europe", `"{\"question\":\"Where?\"}"`), ""); string(first) == string(other) {
		t.Errorf("other call arguments are not a divergence")
	}
}
