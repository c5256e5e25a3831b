package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Structured answers: every answer agentrun reads as data (a learning proposal and its grade, a
// workflow's typed question, the router's choice, a rubric grader's verdict) is asked for in one
// way. The model is offered one tool whose input schema is the answer's schema and is forced to
// call it (Anthropic tool_choice {"type": "tool"}, OpenAI tool_choice {"type": "function"}); the
// call's input is validated against the schema; an answer that is not a call of the tool, or
// whose input does not validate, gets one corrective retry that tells the model what was wrong;
// a second wrong answer is a StructuredError. Each call is made by the caller's Caller, so every
// attempt is a journal step of its own, billed and replayed like any model call.

// Schema is a structured answer's shape: the tool the model is forced to call and its input's
// JSON Schema (an object schema: the vendors take only objects as tool input).
type Schema struct {
	Tool        string
	Description string
	JSON        json.RawMessage
	compiled    *jsonschema.Schema
}

// NewSchema compiles schema for the forced tool named tool. References outside the schema are
// refused: nothing is ever fetched.
func NewSchema(tool, description string, schema json.RawMessage) (*Schema, error) {
	s, err := CompileSchema(schema)
	if err != nil {
		return nil, fmt.Errorf("structured answer %s: %w", tool, err)
	}
	return &Schema{Tool: tool, Description: description, JSON: schema, compiled: s}, nil
}

// MustSchema is NewSchema for the schemas written in code.
func MustSchema(tool, description string, schema json.RawMessage) *Schema {
	s, err := NewSchema(tool, description, schema)
	if err != nil {
		panic(err)
	}
	return s
}

// schemaURL names a schema inside its own compiler; nothing is fetched from it.
const schemaURL = "mem://agentrun/structured.json"

type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("$ref %q: a structured answer's schema may refer only to itself", url)
}

// CompileSchema compiles a JSON Schema (draft 2020-12 unless $schema names another).
func CompileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("schema is not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{})
	// Draft 7, the draft workflow documents' schemas are written in (tuple items, definitions);
	// the server's own answer schemas read the same in either.
	c.DefaultDraft(jsonschema.Draft7)
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	return c.Compile(schemaURL)
}

// Validate checks a JSON value against the schema; the error names each problem and where
// ("$.items[0].kind: value must be one of ...").
func (s *Schema) Validate(value json.RawMessage) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(value))
	if err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	if err := s.compiled.Validate(inst); err != nil {
		return errors.New(SchemaProblems(err))
	}
	return nil
}

// SchemaProblems flattens a validation error to its leaf causes, "PATH: what" each, in a
// JSONPath-like form ($.items[0].n).
func SchemaProblems(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, instancePath(e.InstanceLocation)+": "+e.ErrorKind.LocalizedString(printer))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return strings.Join(out, "; ")
}

var printer = message.NewPrinter(language.English)

func instancePath(loc []string) string {
	var b strings.Builder
	b.WriteString("$")
	for _, p := range loc {
		if _, err := strconv.Atoi(p); err == nil {
			b.WriteString("[" + p + "]")
		} else {
			b.WriteString("." + p)
		}
	}
	return b.String()
}

// Caller makes one model call of a structured answer: attempt 0 is the first, 1 the corrective
// retry. Callers journal and bill each (a step of its own per attempt).
type Caller func(ctx context.Context, attempt int, req *Request) (*Response, error)

// StructuredError is a structured answer the model got wrong twice: Problem is what was wrong
// with the second answer.
type StructuredError struct {
	Tool    string
	Problem string
}

func (e *StructuredError) Error() string {
	return fmt.Sprintf("the model's answer is not the %s JSON asked for, after a corrective retry: %s", e.Tool, e.Problem)
}

// StructuredRequest is req asking for s: the forced tool added to the tools req offers (a
// conversation that used other tools keeps them declared, as the vendors require).
func StructuredRequest(req *Request, s *Schema) *Request {
	out := *req
	out.Tools = append(slices.Clip(slices.Clone(req.Tools)), ToolDef{Name: s.Tool, Description: s.Description, InputSchema: s.JSON})
	out.ToolChoice = s.Tool
	return &out
}

// Structured asks for an answer matching s through call: the request with the forced tool, and
// once more, with what was wrong, when the answer is not a valid call of it. It returns the
// validated JSON, a *StructuredError after two wrong answers, or call's error.
func Structured(ctx context.Context, call Caller, req *Request, s *Schema) (json.RawMessage, error) {
	sreq := StructuredRequest(req, s)
	resp, err := call(ctx, 0, sreq)
	if err != nil {
		return nil, err
	}
	value, problem := s.Answer(resp)
	if problem == "" {
		return value, nil
	}
	resp, err = call(ctx, 1, s.Retry(sreq, resp, problem))
	if err != nil {
		return nil, err
	}
	value, problem = s.Answer(resp)
	if problem != "" {
		return nil, &StructuredError{Tool: s.Tool, Problem: problem}
	}
	return value, nil
}

// Answer is the validated input of the forced tool's call in resp, or what is wrong with resp.
// A vendor that ignores tool_choice and answers with the JSON as text (some OpenAI-compatible
// servers) is read too: the schema, not the form, decides.
func (s *Schema) Answer(resp *Response) (json.RawMessage, string) {
	var text strings.Builder
	for _, b := range resp.Content {
		switch b.Type {
		case BlockToolUse:
			if b.Name != s.Tool {
				continue
			}
			in := b.Input
			if len(bytes.TrimSpace(in)) == 0 {
				in = json.RawMessage("{}")
			}
			if err := s.Validate(in); err != nil {
				return nil, fmt.Sprintf("the input of %s does not match its schema: %v", s.Tool, err)
			}
			return in, ""
		case BlockText:
			text.WriteString(b.Text)
		}
	}
	t := stripFence(text.String())
	if t == "" {
		return nil, fmt.Sprintf("the answer is not a call of the tool %s", s.Tool)
	}
	if !json.Valid([]byte(t)) {
		return nil, fmt.Sprintf("the answer is not a call of the tool %s but text: %q", s.Tool, Clip(t, 200))
	}
	if err := s.Validate(json.RawMessage(t)); err != nil {
		return nil, fmt.Sprintf("the answer is not a call of the tool %s, and its JSON does not match the schema: %v", s.Tool, err)
	}
	return json.RawMessage(t), ""
}

// Text reads an answer given as JSON text (by a client that cannot force a tool call, such as a
// harness CLI): the validated JSON, or what is wrong with it.
func (s *Schema) Text(text string) (json.RawMessage, string) {
	t := stripFence(text)
	switch {
	case t == "":
		return nil, "the answer is empty"
	case !json.Valid([]byte(t)):
		return nil, fmt.Sprintf("the answer is not JSON: %q", Clip(t, 200))
	}
	if err := s.Validate(json.RawMessage(t)); err != nil {
		return nil, fmt.Sprintf("the answer's JSON does not match the schema: %v", err)
	}
	return json.RawMessage(t), ""
}

// Retry is the corrective retry of sreq (a StructuredRequest for s) after its answer resp, whose
// problem is what Answer said: the conversation with that answer and a message saying what was
// wrong. Callers that journal each attempt on their own (the router) build it so.
func (s *Schema) Retry(sreq *Request, resp *Response, problem string) *Request {
	retry := *sreq
	retry.Messages = append(slices.Clip(slices.Clone(sreq.Messages)), Message{Role: "assistant", Content: answerBlocks(resp)}, s.correction(resp, problem))
	return &retry
}

// answerBlocks is resp's content as the assistant message of the retry's conversation (never
// empty: the vendors refuse an empty message).
func answerBlocks(resp *Response) []Block {
	var out []Block
	for _, b := range resp.Content {
		if b.Type == BlockText && b.Text == "" {
			continue
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		out = []Block{{Type: BlockText, Text: "(no answer)"}}
	}
	return out
}

// correction is the user message of the retry: a tool result for each call the answer made (the
// vendors require one after every call), the forced tool's saying what was wrong, then the
// request to call the tool again.
func (s *Schema) correction(resp *Response, problem string) Message {
	var blocks []Block
	for _, b := range resp.Content {
		if b.Type != BlockToolUse {
			continue
		}
		r := Block{Type: BlockToolResult, ToolUseID: b.ID, IsError: true, Content: "not run: only " + s.Tool + " answers here"}
		if b.Name == s.Tool {
			r.Content = "refused: " + problem
		}
		blocks = append(blocks, r)
	}
	blocks = append(blocks, Block{Type: BlockText, Text: fmt.Sprintf("Your answer was not what was asked for: %s. Answer again by calling the tool %s once, with input that matches its schema.", problem, s.Tool)})
	return Message{Role: "user", Content: blocks}
}

// stripFence is s without surrounding space and a Markdown code fence around it.
func stripFence(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "```") {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
		s = strings.TrimSuffix(strings.TrimSpace(s), "```")
	}
	return strings.TrimSpace(s)
}
