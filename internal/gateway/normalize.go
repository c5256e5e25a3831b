package gateway

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
)

// varying are request fields a harness changes from one start to the next (session and user ids,
// cache keys): left out of the hash a replay is compared with.
var varying = []string{"metadata", "prompt_cache_key", "client_metadata", "user", "safety_identifier"}

// systemDate is a date in a system prompt (Claude Code's "Today's date is 2026-12-01.", OpenCode's
// "Today's date: Tue Dec 01 2026").
var systemDate = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}\b|\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{2} \d{4}\b`)

// wallTime is the timing line Codex puts before each tool result it gives the model ("Wall time:
// 0.0124 seconds"): a replayed result takes another time to answer.
var wallTime = regexp.MustCompile(`Wall time: [0-9.]+ seconds`)

// Normalize is a model call's request body as the replay check compares it: without the varying
// fields, without Claude Code's per-session billing header text in the system prompt, with the
// system prompt's dates and the run folder's path and the harness homes' (which differ on another
// runner's data folder: Claude Code names a skill's folder under its home) as placeholders. body
// is not changed.
func Normalize(body map[string]json.RawMessage, folder string, homes ...string) []byte {
	cp := make(map[string]json.RawMessage, len(body))
	for k, v := range body {
		cp[k] = v
	}
	for _, k := range varying {
		delete(cp, k)
	}
	var sys []map[string]any
	if json.Unmarshal(cp["system"], &sys) == nil {
		kept := sys[:0]
		for _, b := range sys {
			t, _ := b["text"].(string)
			if strings.HasPrefix(t, "x-anthropic-billing-header") {
				continue
			}
			if t != "" {
				b["text"] = systemDate.ReplaceAllString(t, "<date>")
			}
			kept = append(kept, b)
		}
		cp["system"], _ = json.Marshal(kept)
	} else if t, ok := unquote(cp["system"]); ok {
		cp["system"], _ = json.Marshal(systemDate.ReplaceAllString(t, "<date>"))
	}
	// Responses input items carry ids the client makes up at each start (Codex: msg_<uuid> on its
	// own messages), which are not content.
	var input []map[string]json.RawMessage
	if json.Unmarshal(cp["input"], &input) == nil && len(input) > 0 {
		for _, it := range input {
			delete(it, "id")
			if o, ok := it["output"]; ok {
				it["output"] = wallTime.ReplaceAll(o, []byte("Wall time: <t> seconds"))
			}
		}
		cp["input"], _ = json.Marshal(input)
	}
	out, _ := json.Marshal(cp)
	for _, h := range homes {
		if h != "" {
			out = bytes.ReplaceAll(out, []byte(h), []byte("<harness home>"))
		}
	}
	if folder != "" {
		out = bytes.ReplaceAll(out, []byte(folder), []byte("<run folder>"))
	}
	return out
}

// unquote is raw as a JSON string, if it is one.
func unquote(raw json.RawMessage) (string, bool) {
	var s string
	return s, len(raw) > 0 && json.Unmarshal(raw, &s) == nil
}
