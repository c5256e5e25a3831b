package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
)

// Result is what goes back to the model as the tool_result of a call.
type Result struct {
	Content string
	IsError bool
	// Images are pictures the result shows the model (a desktop's screenshots), as paths of
	// files in the run folder.
	Images []string `json:",omitempty"`
}

// Env is where a tool runs.
type Env struct {
	// Root is the absolute path of the run folder on the host.
	Root string
}

// Tool is a built-in tool executed in a run folder.
type Tool interface {
	Name() string
	Description() string
	// Schema is the JSON Schema of the input object.
	Schema() json.RawMessage
	// ReadOnly reports whether a call is safe to repeat after a crash.
	ReadOnly() bool
	// Run executes one call. It returns an error only for infrastructure
	// failures (context cancelled, host I/O errors); anything the agent did
	// wrong is a Result with IsError set and a message naming the problem.
	Run(ctx context.Context, env Env, input json.RawMessage) (Result, error)
}

// Definition is what a model is told about a tool.
type Definition struct {
	Name        string
	Description string
	Schema      json.RawMessage
}

// Environment variables that enable and configure the dev_count test tool.
const (
	EnvDevTools     = "AGENTRUN_DEV_TOOLS"
	EnvDevCountFile = "AGENTRUN_DEV_COUNT_FILE"
)

// AskPersonName is the name of the tool the engine turns into a question.
const AskPersonName = "ask_person"

var askPersonSpec = inputSpec{fields: []field{
	{name: "question", typ: typeString, required: true,
		desc: "The question, complete and self-contained: say what you need to know, why, and the options if there are any."},
	{name: "takeover", typ: typeBoolean,
		desc: "Ask the person to take over your computer (a browser login, a captcha) and tell you when they are done."},
}}

// AskPerson is the definition of ask_person. It is not executed by this
// package: the engine turns a call into a question to the person and the
// answer becomes the tool result.
var AskPerson = Definition{
	Name: AskPersonName,
	Description: "Ask the person you are working for a question and wait for their answer. " +
		"Use it when you need a decision, a preference or information that only they have and cannot find in the run folder; " +
		"do not use it for things you can work out yourself. The run pauses until they answer; their answer comes back as the result. " +
		"Ask one clear question at a time.",
	Schema: askPersonSpec.schema(),
}

var builtins = map[string]Tool{
	"read":  readTool{},
	"write": writeTool{},
	"edit":  editTool{},
	"ls":    lsTool{},
	"grep":  grepTool{},
}

func devToolsEnabled() bool { return os.Getenv(EnvDevTools) == "1" }

// Lookup returns the built-in tool with the given name. dev_count is found
// only while AGENTRUN_DEV_TOOLS=1. ask_person is not a Tool (see AskPerson).
func Lookup(name string) (Tool, bool) {
	if name == devCountName {
		if devToolsEnabled() {
			return devCountTool{}, true
		}
		return nil, false
	}
	t, ok := builtins[name]
	return t, ok
}

// Names returns the names of the tools Lookup finds, sorted.
func Names() []string {
	names := make([]string, 0, len(builtins)+1)
	for n := range builtins {
		names = append(names, n)
	}
	if devToolsEnabled() {
		names = append(names, devCountName)
	}
	sort.Strings(names)
	return names
}

// Definitions returns the definitions of the named tools, in order.
// ask_person is included; an unknown or repeated name is an error naming it.
func Definitions(names []string) ([]Definition, error) {
	defs := make([]Definition, 0, len(names))
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if seen[n] {
			return nil, fmt.Errorf("tool %q is named twice", n)
		}
		seen[n] = true
		if n == AskPersonName {
			defs = append(defs, AskPerson)
			continue
		}
		t, ok := Lookup(n)
		if !ok {
			return nil, fmt.Errorf("unknown tool %q", n)
		}
		defs = append(defs, Definition{Name: t.Name(), Description: t.Description(), Schema: t.Schema()})
	}
	return defs, nil
}

// fail is the result of a call the agent got wrong.
func fail(format string, args ...any) (Result, error) {
	return Result{IsError: true, Content: fmt.Sprintf(format, args...)}, nil
}

func ok(format string, args ...any) (Result, error) {
	return Result{Content: fmt.Sprintf(format, args...)}, nil
}
