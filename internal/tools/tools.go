package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync/atomic"

	"agentrun.dev/agentrun/internal/catalog"
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

// Tool is a built-in tool executed in a run folder. What it is (name, description, schema,
// whether a call is safe to repeat) is its catalog entry.
type Tool interface {
	Name() string
	Description() string
	// Schema is the JSON Schema of the input object.
	Schema() json.RawMessage
	// ReadOnly reports whether a call is safe to repeat after a crash.
	ReadOnly() bool
	// Run decodes input strictly (catalog.Decode) and runs the call. It returns an error only for
	// infrastructure failures (context cancelled, host I/O errors); anything the agent did
	// wrong is a Result with IsError set and a message naming the problem.
	Run(ctx context.Context, env Env, input json.RawMessage) (Result, error)
	// RunInput runs a call whose input is decoded already: the agent loop decodes a call once,
	// for the policy, the journal's title and the tool.
	RunInput(ctx context.Context, env Env, in catalog.Input) (Result, error)
}

// Definition is what a model is told about a tool.
type Definition struct {
	Name        string
	Description string
	Schema      json.RawMessage
}

// EnvDevCountFile names the file the dev_count test tool appends to (the tool exists only with
// the dev flag: EnableDevTools).
const EnvDevCountFile = "AGENTRUN_DEV_COUNT_FILE"

// AskPersonName is the name of the tool the engine turns into a question.
const AskPersonName = catalog.AskPersonName

// AskPerson is the definition of ask_person. It is not executed by this
// package: the engine turns a call into a question to the person and the
// answer becomes the tool result.
var AskPerson = definition(catalog.AskPersonName)

func definition(name string) Definition {
	e, _ := catalog.Lookup(name)
	return Definition{Name: e.Name, Description: e.Description, Schema: e.Schema}
}

// builtin is a tool of this package: its catalog entry and how a decoded call runs.
type builtin struct {
	e   catalog.Entry
	run func(ctx context.Context, env Env, in any) (Result, error)
}

func (b builtin) Name() string            { return b.e.Name }
func (b builtin) Description() string     { return b.e.Description }
func (b builtin) Schema() json.RawMessage { return b.e.Schema }
func (b builtin) ReadOnly() bool          { return b.e.ReadOnly }

func (b builtin) Run(ctx context.Context, env Env, input json.RawMessage) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	in, err := b.e.Decode(input)
	var ie *catalog.InputError
	if errors.As(err, &ie) {
		return fail("%s", ie.Msg)
	}
	if err != nil {
		return Result{}, fmt.Errorf("%s: %w", b.e.Name, err)
	}
	return b.RunInput(ctx, env, in)
}

func (b builtin) RunInput(ctx context.Context, env Env, in catalog.Input) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if in.Tool != b.e.Name {
		return Result{}, fmt.Errorf("%s: given the input of %s", b.e.Name, in.Tool)
	}
	return b.run(ctx, env, in.Value)
}

// inFolder makes the tool named name from fn, which runs a call on the run folder opened as an
// os.Root; agentErrors become error results.
func inFolder[T any](name string, fn func(ctx context.Context, root *os.Root, in *T) (string, error)) builtin {
	e, _ := catalog.Lookup(name)
	return builtin{e: e, run: func(ctx context.Context, env Env, v any) (Result, error) {
		in, ok := v.(*T)
		if !ok {
			return Result{}, fmt.Errorf("%s: input is a %T", name, v)
		}
		root, err := openFolder(env)
		if err != nil {
			return Result{}, err
		}
		defer root.Close()
		out, err := fn(ctx, root, in)
		return finish(out, err)
	}}
}

var builtins = map[string]Tool{
	"read":  inFolder("read", readRun),
	"write": inFolder("write", writeRun),
	"edit":  inFolder("edit", editRun),
	"ls":    inFolder("ls", lsRun),
	"grep":  inFolder("grep", grepRun),
}

var devCount = builtin{e: func() catalog.Entry { e, _ := catalog.Lookup(catalog.DevCountName); return e }(), run: devCountRun}

// devTools is the binary's explicit dev flag, passed down by internal/app (EnableDevTools): the
// package never turns a test hook on from the environment by itself.
var devTools atomic.Bool

// EnableDevTools makes dev_count exist (true) or not; internal/app calls it once at start.
func EnableDevTools(on bool) { devTools.Store(on) }

func devToolsEnabled() bool { return devTools.Load() }

// Lookup returns the built-in tool with the given name. dev_count is found
// only with the dev flag (EnableDevTools). ask_person is not a Tool (see AskPerson).
func Lookup(name string) (Tool, bool) {
	if name == catalog.DevCountName {
		if devToolsEnabled() {
			return devCount, true
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
		names = append(names, catalog.DevCountName)
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
