package model_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/model/fake"
)

// verdictSchema is a test's structured answer: a verdict, and a note the scripted model fills
// with what it was last told ({{last_user}}), so a test reads the correction the retry carried.
var verdictSchema = model.MustSchema("verdict", "Give the verdict.", json.RawMessage(`{"type": "object", "additionalProperties": false,
	"required": ["pass", "reward"], "properties": {"pass": {"type": "boolean"}, "reward": {"type": "number", "minimum": 0, "maximum": 1}, "note": {"type": "string"}}}`))

const structuredScript = `
entries:
  - name: right
    match: "grade right"
    turns:
      - tool_calls: [{name: verdict, input: {pass: true, reward: 0.75}}]
  - name: text-first
    match: "grade after text"
    turns:
      - text: "Done: it passes."
      - tool_calls: [{name: verdict, input: {pass: true, reward: 1, note: "{{last_user}}"}}]
  - name: bad-input-first
    match: "grade after bad input"
    turns:
      - tool_calls: [{name: verdict, input: {pass: "yes", reward: 1}}]
      - tool_calls: [{name: verdict, input: {pass: false, reward: 0, note: "{{last_user}}"}}]
  - name: wrong-twice
    match: "grade wrong twice"
    turns:
      - text: "Done: it passes."
      - tool_calls: [{name: verdict, input: {pass: true, reward: 7}}]
`

// Every structured answer is a forced call of the schema's tool on both wires, validated, with one
// corrective retry that names what was wrong, then a clear failure.
func TestStructured(t *testing.T) {
	t.Parallel()
	for _, pc := range providerCases[:2] {
		t.Run(pc.name, func(t *testing.T) {
			t.Parallel()
			srv, url := startFake(t, structuredScript)
			p := pc.new(url, "test-key")
			calls := 0
			call := func(ctx context.Context, attempt int, req *model.Request) (*model.Response, error) {
				if attempt != calls {
					t.Errorf("attempt %d at call %d", attempt, calls)
				}
				calls++
				return p.Complete(ctx, req)
			}
			ask := func(prompt string, stream bool) (map[string]any, error) {
				calls = 0
				req := &model.Request{Model: "claude-haiku-4-5", MaxTokens: 256, Stream: stream, Messages: []model.Message{{Role: "user", Content: []model.Block{{Type: model.BlockText, Text: prompt}}}}}
				raw, err := model.Structured(context.Background(), call, req, verdictSchema)
				if err != nil {
					return nil, err
				}
				var v map[string]any
				if err := json.Unmarshal(raw, &v); err != nil {
					t.Fatalf("%s: the answer is not JSON: %s", prompt, raw)
				}
				return v, nil
			}

			v, err := ask("grade right", false)
			if err != nil || v["pass"] != true || v["reward"] != 0.75 || calls != 1 {
				t.Errorf("a forced call answered in kind: %v, %v after %d calls; want pass, 0.75 after one call", v, err, calls)
			}
			// The request forced the tool, in the wire's own form.
			wantChoice := map[string]string{fake.FormatAnthropic: `{"type":"tool","name":"verdict"}`, fake.FormatOpenAI: `{"type":"function","function":{"name":"verdict"}}`}[pc.format]
			for _, c := range srv.Calls() {
				if c.Format != pc.format || c.ForcedTool != "verdict" || string(c.ToolChoice) != wantChoice {
					t.Errorf("call %s turn %d: format %s, tool_choice %s (forced %q); want %s", c.Entry, c.Turn, c.Format, c.ToolChoice, c.ForcedTool, wantChoice)
				}
			}

			// Text first: the retry says the answer was no call of the tool, and the second answer is used.
			v, err = ask("grade after text", true)
			note, _ := v["note"].(string)
			if err != nil || v["pass"] != true || calls != 2 || !strings.Contains(note, `not a call of the tool verdict but text: "Done: it passes."`) {
				t.Errorf("after a text answer: %v, %v after %d calls; want the retry's answer, its correction naming the text", v, err, calls)
			}
			// Input against the schema: the retry names the schema's problem.
			v, err = ask("grade after bad input", false)
			note, _ = v["note"].(string)
			if err != nil || v["pass"] != false || calls != 2 || !strings.Contains(note, "$.pass: got string, want boolean") {
				t.Errorf("after input that does not match: %v, %v after %d calls; want the retry's answer, its correction naming $.pass", v, err, calls)
			}
			if n := srv.CountTurn("bad-input-first", 1); n != 1 {
				t.Errorf("the retry of bad-input-first was answered %d times at turn 1", n)
			}

			// Twice wrong: a clear failure naming the schema problem of the second answer.
			_, err = ask("grade wrong twice", false)
			var se *model.StructuredError
			if !errors.As(err, &se) || calls != 2 || se.Tool != "verdict" || !strings.Contains(err.Error(), "$.reward: maximum: got 7, want 1") {
				t.Errorf("twice wrong: %v after %d calls; want a StructuredError naming $.reward", err, calls)
			}
		})
	}
}

// An answer given as text (a harness's) is read as JSON, alone or fenced, and checked against
// the schema; what is wrong is named.
func TestStructuredText(t *testing.T) {
	t.Parallel()
	if v, problem := verdictSchema.Text("```json\n{\"pass\": true, \"reward\": 1}\n```"); problem != "" || string(v) != `{"pass": true, "reward": 1}` {
		t.Errorf("fenced JSON: %s, %q", v, problem)
	}
	for text, want := range map[string]string{
		"":                             "the answer is empty",
		"Done: it passes.":             `the answer is not JSON: "Done: it passes."`,
		`{"pass": true}`:               "the answer's JSON does not match the schema: $: missing property 'reward'",
		`{"pass": 1, "reward": 1}`:     "$.pass: got number, want boolean",
		`{"pass": true, "reward": -1}`: "$.reward: minimum: got -1, want 0",
	} {
		if _, problem := verdictSchema.Text(text); !strings.Contains(problem, want) {
			t.Errorf("Text(%q) = %q; want %q", text, problem, want)
		}
	}
}
