package fake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Script says what the server answers. Entries are tried in order against the conversation's first
// user message; the number of assistant messages in the request picks the turn.
type Script struct {
	// DefaultLatency delays every answer whose turn sets no latency.
	DefaultLatency Duration `json:"default_latency,omitempty"`
	// LatencyJitter varies every answer's latency (its turn's or the default) by up to this much
	// either way, uniformly, as a vendor's time to first byte varies from call to call; the mean
	// stays the latency, and no latency goes below zero. Runs started together with one fixed
	// latency answer together on every turn; with jitter they drift apart, as real runs do.
	LatencyJitter Duration `json:"latency_jitter,omitempty"`
	Entries       []Entry  `json:"entries"`
}

// Entry is one scripted conversation.
type Entry struct {
	// Name identifies the entry in Calls, CountTurn, tool-call ids and logs; "#<index>" when empty.
	Name string `json:"name,omitempty"`
	// Match is a substring of the first user message; empty or "*" matches every conversation.
	Match string `json:"match,omitempty"`
	Turns []Turn `json:"turns"`
}

// Turn is one answer: text, tool calls, or both. The text, and every string in a tool call's input,
// go through these template substitutions:
//
//	{{last_user}}         the text of the last user message that has text (tool results are not user text)
//	{{last_tool_result}}  the text of the last tool result in the request
//	{{last_tool_images}}  the images of the last batch of tool results (the last user message that has
//	                      tool results; in the OpenAI format the last run of tool messages): "no images",
//	                      "1 image: image/png 1280x800", "2 images: image/png 1280x800, image/jpeg 640x480"
//	{{turn}}              the turn: the number of assistant messages in the request
type Turn struct {
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Usage replaces the estimated counts; a zero input or output count keeps its estimate.
	Usage   *Usage   `json:"usage,omitempty"`
	Latency Duration `json:"latency,omitempty"`
	// StreamDelay, on a streamed answer, pauses this long before each event after the first, so
	// the text arrives piece by piece over time (a slow model, as a person watching sees it).
	StreamDelay Duration `json:"stream_delay,omitempty"`
}

// ToolCall is one tool_use block. Every string in Input goes through the template substitutions (see
// Turn).
type ToolCall struct {
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input,omitempty"`
}

// Usage is the token counts of a turn, in Anthropic's terms (input excludes cache reads and writes).
// In the OpenAI format, prompt_tokens is the sum of the three input counts, cached_tokens the cache
// reads, cache_write_tokens (OpenRouter's field) the cache writes; reasoning_tokens is part of the
// output tokens and reported only there.
type Usage struct {
	InputTokens                int64 `json:"input_tokens,omitempty"`
	OutputTokens               int64 `json:"output_tokens,omitempty"`
	CacheCreationInputTokens   int64 `json:"cache_creation_input_tokens,omitempty"`
	CacheCreation1hInputTokens int64 `json:"cache_creation_1h_input_tokens,omitempty"`
	CacheReadInputTokens       int64 `json:"cache_read_input_tokens,omitempty"`
	ReasoningTokens            int64 `json:"reasoning_tokens,omitempty"`
}

// Duration is a time.Duration written as a Go duration string ("50ms", "1.5s").
type Duration time.Duration

// UnmarshalJSON accepts a duration string; bare numbers are refused because their unit is ambiguous.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string like \"50ms\", got %s", b)
	}
	if s == "" {
		*d = 0
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// LoadScript reads a YAML or JSON script file.
func LoadScript(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load script: %w", err)
	}
	s, err := ParseScript(data)
	if err != nil {
		return nil, fmt.Errorf("script %s: %w", path, err)
	}
	return s, nil
}

// ParseScript decodes a YAML or JSON script (JSON is YAML) and checks it. Unknown fields are errors,
// so a misspelt key is not silently ignored; errors name the entry and turn.
func ParseScript(data []byte) (*Script, error) {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("parse script: %w", err)
	}
	// Decoded level by level so that an error can say where it is.
	var top struct {
		DefaultLatency Duration          `json:"default_latency"`
		LatencyJitter  Duration          `json:"latency_jitter"`
		Entries        []json.RawMessage `json:"entries"`
	}
	if err := strictDecode(j, &top); err != nil {
		return nil, fmt.Errorf("parse script: %w", err)
	}
	s := &Script{DefaultLatency: top.DefaultLatency, LatencyJitter: top.LatencyJitter}
	for i, rawEntry := range top.Entries {
		var re struct {
			Name  string            `json:"name"`
			Match string            `json:"match"`
			Turns []json.RawMessage `json:"turns"`
		}
		if err := strictDecode(rawEntry, &re); err != nil {
			return nil, fmt.Errorf("entries[%d]: %w", i, err)
		}
		e := Entry{Name: re.Name, Match: re.Match}
		for k, rawTurn := range re.Turns {
			var t Turn
			if err := strictDecode(rawTurn, &t); err != nil {
				return nil, fmt.Errorf("entries[%d] (%s) turns[%d]: %w", i, entryName(re.Name, i), k, err)
			}
			e.Turns = append(e.Turns, t)
		}
		s.Entries = append(s.Entries, e)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

func strictDecode(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 || string(bytes.TrimSpace(data)) == "null" {
		return fmt.Errorf("empty")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// Validate checks a script built in Go or parsed from a file.
func (s *Script) Validate() error {
	if len(s.Entries) == 0 {
		return fmt.Errorf("script has no entries")
	}
	if s.DefaultLatency < 0 {
		return fmt.Errorf("default_latency: negative")
	}
	if s.LatencyJitter < 0 {
		return fmt.Errorf("latency_jitter: negative")
	}
	for i, e := range s.Entries {
		where := fmt.Sprintf("entries[%d] (%s)", i, entryName(e.Name, i))
		if len(e.Turns) == 0 {
			return fmt.Errorf("%s: turns: at least one turn is needed", where)
		}
		for k, t := range e.Turns {
			tw := fmt.Sprintf("%s turns[%d]", where, k)
			if t.Text == "" && len(t.ToolCalls) == 0 {
				return fmt.Errorf("%s: needs text or tool_calls", tw)
			}
			if t.Latency < 0 || t.StreamDelay < 0 {
				return fmt.Errorf("%s: latency: negative", tw)
			}
			if u := t.Usage; u != nil && (u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheCreationInputTokens < 0 ||
				u.CacheCreation1hInputTokens < 0 || u.CacheReadInputTokens < 0 || u.ReasoningTokens < 0) {
				return fmt.Errorf("%s: usage: negative count", tw)
			}
			if u := t.Usage; u != nil && u.CacheCreation1hInputTokens > u.CacheCreationInputTokens {
				return fmt.Errorf("%s: usage: cache_creation_1h_input_tokens is part of cache_creation_input_tokens and cannot exceed it", tw)
			}
			for c, tc := range t.ToolCalls {
				cw := fmt.Sprintf("%s tool_calls[%d]", tw, c)
				if strings.TrimSpace(tc.Name) == "" {
					return fmt.Errorf("%s: name: empty", cw)
				}
				if len(bytes.TrimSpace(tc.Input)) > 0 && string(bytes.TrimSpace(tc.Input)) != "null" {
					var obj map[string]any
					if err := json.Unmarshal(tc.Input, &obj); err != nil {
						return fmt.Errorf("%s: input: must be a JSON object: %v", cw, err)
					}
				}
			}
		}
	}
	return nil
}

// entryName is how an entry is named in calls and errors.
func entryName(name string, i int) string {
	if name != "" {
		return name
	}
	return fmt.Sprintf("#%d", i)
}

// RouterPrefix starts the first user message of agentrun's routing call ("Route this request: "
// followed by the user's request). A routing call matches only entries whose match starts with it
// (match "Route this request" for every routing call, "Route this request: Summarize" for one
// task), so scripts written for agent conversations, catch-alls included, never answer a routing
// call by accident: unscripted, it fails and agentrun falls back to its default family.
const RouterPrefix = "Route this request"

// matches reports whether the entry's match selects a conversation with this first user message.
func (e *Entry) matches(firstUser string) bool {
	if strings.HasPrefix(firstUser, RouterPrefix) {
		return strings.HasPrefix(e.Match, RouterPrefix) && strings.Contains(firstUser, e.Match)
	}
	return e.Match == "" || e.Match == "*" || strings.Contains(firstUser, e.Match)
}
