package computer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/catalog"
)

// ToolDef is a tool of a kind of computer, as a model is told about it.
type ToolDef struct {
	Name        string
	Description string
	// Schema is the JSON Schema of the input object.
	Schema json.RawMessage
	// ReadOnly reports whether a call changes nothing, so it is safe to
	// repeat after a crash (the journal retries those; others park the run
	// in NeedsResolution).
	ReadOnly bool
	// Repeatable reports whether a call that changes files (it saves a screenshot) is still
	// safe to repeat after a crash: the journal retries it rather than asking a person.
	Repeatable bool
	// Kind is the kind of computer the tool works on. A desktop is a sandbox with a screen:
	// it has the sandbox's tools too (see Tools).
	Kind Kind
}

// Result is what one call of a computer tool gives the model.
type Result struct {
	Content string
	// IsError marks a result that reports the agent's mistake.
	IsError bool
	// Images are pictures the result shows the model (a desktop's screenshots), as paths of
	// PNG files in the run folder.
	Images []string
	// Exec is a foreground bash command's own result (nil for every other call): Content is its
	// text for the model, this the value for a caller that reads the exit code, stdout and
	// stderr apart (a workflow's shell node), which the text cannot give back exactly.
	Exec *ExecResult `json:",omitempty"`
}

// The sandbox's file operations are the run folder's: the file tools of
// internal/tools (read, write, edit, ls, grep) work on the same folder the
// sandbox mounts at /workspace and accept /workspace/ paths, so the kinds
// add only what the folder cannot do.

const (
	maxTimeoutS     = 600
	defaultTimeoutS = 120
	maxToolOutput   = 64 << 10 // bytes of stdout and of stderr each put in a tool result
)

// toolDefs are the catalog's tools that a computer runs, in catalog order.
var toolDefs = func() []ToolDef {
	var out []ToolDef
	for _, e := range catalog.All() {
		if e.Computer != "" {
			out = append(out, ToolDef{Name: e.Name, Description: e.Description, Schema: e.Schema,
				ReadOnly: e.ReadOnly, Repeatable: e.Repeatable, Kind: Kind(e.Computer)})
		}
	}
	return out
}()

// Tools returns the tools of a kind of computer (none for kind none). A desktop has the
// sandbox's tools (programs started with bash show on its screen) and its own.
func Tools(kind Kind) []ToolDef {
	var out []ToolDef
	for _, d := range toolDefs {
		if Has(kind, d) {
			out = append(out, d)
		}
	}
	return out
}

// Has reports whether a computer of kind offers the tool d.
func Has(kind Kind, d ToolDef) bool {
	return d.Kind == kind || (kind == KindDesktop && d.Kind == KindSandbox)
}

// LookupTool returns the computer tool named name.
func LookupTool(name string) (ToolDef, bool) {
	for _, d := range toolDefs {
		if d.Name == name {
			return d, true
		}
	}
	return ToolDef{}, false
}

// Run executes one call of a computer tool on c. content is the tool result
// for the model; isError marks a result that reports the agent's mistake
// (bad input, a missing file or process, a page that does not load, a
// command that timed out). err is an infrastructure failure (the computer
// died, ctx ended): the call did not happen as asked and the caller decides
// what to do; computer.ErrClosed means the computer should be created again.
func Run(ctx context.Context, c Computer, name string, input json.RawMessage) (content string, isError bool, err error) {
	r, err := RunTool(ctx, c, name, input)
	return r.Content, r.IsError, err
}

// RunTool is Run with the images a result shows the model (a desktop's screenshots). It decodes
// input strictly (catalog.Decode); a bad input is an error result naming the key.
func RunTool(ctx context.Context, c Computer, name string, input json.RawMessage) (Result, error) {
	if _, ok := LookupTool(name); !ok {
		return Result{Content: fmt.Sprintf("unknown computer tool %q", name), IsError: true}, nil
	}
	in, err := catalog.Decode(name, input)
	var ie *catalog.InputError
	if errors.As(err, &ie) {
		return Result{Content: ie.Msg, IsError: true}, nil
	}
	if err != nil {
		return Result{}, err
	}
	return RunInput(ctx, c, in)
}

// RunInput runs a call whose input is decoded already: the agent loop decodes a call once, for
// the policy, the journal's title and the tool, so the command approved is the command run.
func RunInput(ctx context.Context, c Computer, in catalog.Input) (Result, error) {
	name, input := in.Tool, in.Value
	def, ok := LookupTool(name)
	if !ok {
		return Result{Content: fmt.Sprintf("unknown computer tool %q", name), IsError: true}, nil
	}
	if c == nil {
		return Result{}, fmt.Errorf("tool %s needs a %s computer and the run has none", name, def.Kind)
	}
	var r Result
	var err error
	if def.Kind == KindDesktop {
		d, ok := c.(Desktop)
		if !ok {
			return Result{}, fmt.Errorf("tool %s needs a desktop; the run's computer is a %s", def.Name, c.Kind())
		}
		r, err = runDesktop(ctx, d, def.Name, input)
	} else {
		r, err = run(ctx, c, def, input)
	}
	var ae *AgentError
	if errors.As(err, &ae) {
		return Result{Content: ae.Msg, IsError: true}, nil
	}
	if err != nil {
		return Result{}, err
	}
	return r, nil
}

func run(ctx context.Context, c Computer, def ToolDef, input any) (Result, error) {
	var text string
	var err error
	switch def.Kind {
	case KindSandbox:
		s, ok := c.(Sandbox)
		if !ok {
			return Result{}, fmt.Errorf("tool %s needs a sandbox; the run's computer is a %s", def.Name, c.Kind())
		}
		if in, ok := input.(*catalog.Bash); ok && !in.Background {
			return runBash(ctx, s, in)
		}
		text, err = runSandbox(ctx, s, def.Name, input)
	case KindBrowser:
		b, ok := c.(Browser)
		if !ok {
			return Result{}, fmt.Errorf("tool %s needs a browser; the run's computer is a %s", def.Name, c.Kind())
		}
		text, err = runBrowser(ctx, b, def.Name, input)
	default:
		err = fmt.Errorf("no tools for kind %s", def.Kind)
	}
	return Result{Content: text}, err
}

// runBash runs a foreground command: its text for the model (formatExec), and its result as a
// value. A command that timed out is the agent's mistake (IsError), its output kept.
func runBash(ctx context.Context, s Sandbox, in *catalog.Bash) (Result, error) {
	opts, timeout, err := bashOptions(in)
	if err != nil {
		return Result{}, err
	}
	r, err := s.Exec(ctx, in.Command, opts)
	if err != nil {
		return Result{}, err
	}
	return Result{Content: formatExec(r, timeout), IsError: r.TimedOut, Exec: &r}, nil
}

// bashOptions checks a bash call's command and timeout and returns its options.
func bashOptions(in *catalog.Bash) (ExecOptions, int64, error) {
	if strings.TrimSpace(in.Command) == "" {
		return ExecOptions{}, 0, Agentf("field \"command\" is empty: give the command line to run")
	}
	timeout := int64(defaultTimeoutS)
	if in.TimeoutS != nil {
		if *in.TimeoutS < 1 || *in.TimeoutS > maxTimeoutS {
			return ExecOptions{}, 0, Agentf("timeout_s must be between 1 and %d, got %d", maxTimeoutS, *in.TimeoutS)
		}
		timeout = *in.TimeoutS
	}
	return ExecOptions{Workdir: in.Workdir, Timeout: time.Duration(timeout) * time.Second, MaxOutput: maxToolOutput}, timeout, nil
}

func runSandbox(ctx context.Context, s Sandbox, name string, input any) (string, error) {
	switch in := input.(type) {
	case *catalog.Bash:
		// A background command (a foreground one is runBash's).
		opts, _, err := bashOptions(in)
		if err != nil {
			return "", err
		}
		p, err := s.Start(ctx, in.Command, opts)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("started background process %s (pid %d in the sandbox). "+
			"Read its output with bash_output {\"id\": %q}; stop it with bash_kill {\"id\": %q}.", p.ID, p.PID, p.ID, p.ID), nil
	case *catalog.BashOutput:
		if in.ID == "" {
			return "", Agentf("missing required field \"id\" (string)")
		}
		if in.Offset < 0 {
			return "", Agentf("offset must be at least 0")
		}
		o, err := s.Output(ctx, in.ID, in.Offset)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		fmt.Fprintf(&b, "process %s: %s\n", o.Process.ID, state(o.Process))
		if o.Dropped > 0 {
			fmt.Fprintf(&b, "(%d bytes before offset %d are no longer kept)\n", o.Dropped, o.Offset)
		}
		if o.Data == "" {
			fmt.Fprintf(&b, "no output since offset %d\n", o.Offset)
		} else {
			fmt.Fprintf(&b, "output, bytes %d to %d:\n%s", o.Offset, o.Next, o.Data)
			if !strings.HasSuffix(o.Data, "\n") {
				b.WriteString("\n")
			}
		}
		fmt.Fprintf(&b, "next offset: %d (of %d written)", o.Next, o.Process.OutputBytes)
		return b.String(), nil
	case *catalog.BashKill:
		if in.ID == "" {
			return "", Agentf("missing required field \"id\" (string)")
		}
		p, err := s.Stop(ctx, in.ID)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("process %s stopped: %s", p.ID, state(p)), nil
	case *catalog.BashList:
		ps, err := s.Processes(ctx)
		if err != nil {
			return "", err
		}
		if len(ps) == 0 {
			return "no background processes", nil
		}
		sort.Slice(ps, func(i, j int) bool { return ps[i].Started.Before(ps[j].Started) })
		var b strings.Builder
		for _, p := range ps {
			fmt.Fprintf(&b, "%s\t%s\t%d bytes of output\t%s\n", p.ID, state(p), p.OutputBytes, p.Command)
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("sandbox tool %s: input is a %T", name, input)
}

func state(p ProcessInfo) string {
	switch {
	case p.Running:
		return "running"
	case p.ExitCode < 0:
		return "killed by a signal"
	}
	return fmt.Sprintf("exited with code %d", p.ExitCode)
}

func formatExec(r ExecResult, timeoutS int64) string {
	var b strings.Builder
	if r.TimedOut {
		fmt.Fprintf(&b, "timed out after %d s: the command and everything it started were killed. "+
			"Use a longer timeout_s, or background: true for long-running commands.\n", timeoutS)
	} else if r.ExitCode < 0 {
		b.WriteString("killed by a signal\n")
	} else {
		fmt.Fprintf(&b, "exit code %d\n", r.ExitCode)
	}
	if r.Stdout != "" {
		b.WriteString(r.Stdout)
		if !strings.HasSuffix(r.Stdout, "\n") {
			b.WriteString("\n")
		}
	}
	if r.Stderr != "" {
		b.WriteString("--- stderr ---\n")
		b.WriteString(r.Stderr)
		if !strings.HasSuffix(r.Stderr, "\n") {
			b.WriteString("\n")
		}
	}
	if r.Truncated {
		fmt.Fprintf(&b, "[output cut at %d KiB per stream; redirect it to a file to keep all of it]\n", maxToolOutput>>10)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func runBrowser(ctx context.Context, br Browser, name string, input any) (string, error) {
	var p Page
	var err error
	switch in := input.(type) {
	case *catalog.BrowserOpen:
		if in.URL == "" {
			return "", Agentf("missing required field \"url\" (string)")
		}
		p, err = br.Open(ctx, in.URL)
	case *catalog.BrowserText:
		p, err = br.Current(ctx)
	case *catalog.BrowserClick:
		p, err = br.Click(ctx, Target{Selector: in.Selector, Text: in.Text})
	case *catalog.BrowserType:
		p, err = br.Type(ctx, in.Selector, in.Text, in.Submit)
	case *catalog.BrowserScreenshot:
		path, err := br.Screenshot(ctx, in.Path)
		if err != nil {
			return "", err
		}
		return "screenshot saved in the run folder at " + path, nil
	default:
		return "", fmt.Errorf("browser tool %s: input is a %T", name, input)
	}
	if err != nil {
		return "", err
	}
	return formatPage(p), nil
}

func formatPage(p Page) string {
	var b strings.Builder
	fmt.Fprintf(&b, "URL: %s\nTitle: %s\n", p.URL, p.Title)
	for _, d := range p.Downloads {
		fmt.Fprintf(&b, "Downloaded: %s (in the run folder)\n", d)
	}
	b.WriteString("\n")
	b.WriteString(strings.TrimSpace(p.Text))
	b.WriteString("\n")
	if len(p.Links) > 0 {
		b.WriteString("\nLinks:\n")
		for _, l := range p.Links {
			text := l.Text
			if text == "" {
				text = "(no text)"
			}
			fmt.Fprintf(&b, "- %s -> %s\n", text, l.URL)
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}
