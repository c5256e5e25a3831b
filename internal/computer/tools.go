package computer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
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

func schema(props string, required ...string) json.RawMessage {
	req, _ := json.Marshal(append([]string{}, required...))
	s := fmt.Sprintf(`{"type":"object","properties":{%s},"required":%s,"additionalProperties":false}`, props, req)
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		panic("computer: bad tool schema: " + err.Error())
	}
	return buf.Bytes()
}

var toolDefs = []ToolDef{
	{Kind: KindSandbox, Name: "bash",
		Description: "Run a command with bash -lc in your sandbox, a Linux machine whose /workspace (the working folder) is your run folder. " +
			"The rest of its file system is a fresh, read-only base system with a writable /tmp; " +
			"the network is reachable only if your computer allows it. " +
			"By default the command runs in the foreground and you get its exit code, stdout and stderr (each cut at 64 KiB) when it ends; " +
			"after timeout_s seconds (default 120, at most 600) it is killed with everything it started. " +
			"With background: true it keeps running after the call (servers, watchers, long builds) and you get an id: " +
			"read its output with bash_output, stop it with bash_kill, list them with bash_list. " +
			"Processes started in the foreground do not outlive their command; start long-lived ones in the background.",
		Schema: schema(`
			"command": {"type": "string", "description": "The command line, run with bash -lc in /workspace (or workdir)."},
			"timeout_s": {"type": "integer", "minimum": 1, "maximum": 600, "description": "Seconds before a foreground command is killed (default 120)."},
			"background": {"type": "boolean", "description": "Run in the background and return its id at once."},
			"workdir": {"type": "string", "description": "Working folder, relative to /workspace or absolute (default /workspace)."}`,
			"command")},
	{Kind: KindSandbox, Name: "bash_output", ReadOnly: true,
		Description: "Read the output (stdout and stderr together, as written) of a background process started with bash, " +
			"from byte offset on (default 0), at most 256 KiB per call; the result gives the offset to read from next " +
			"and whether the process still runs or its exit code. Only the last 4 MiB of a process's output are kept.",
		Schema: schema(`
			"id": {"type": "string", "description": "The process id bash returned, e.g. \"p1\"."},
			"offset": {"type": "integer", "minimum": 0, "description": "Byte offset to read from (the next offset of the previous call)."}`,
			"id")},
	{Kind: KindSandbox, Name: "bash_kill",
		Description: "Stop a background process started with bash, and everything it started (SIGTERM, then SIGKILL after 3 s).",
		Schema:      schema(`"id": {"type": "string", "description": "The process id bash returned, e.g. \"p1\"."}`, "id")},
	{Kind: KindSandbox, Name: "bash_list", ReadOnly: true,
		Description: "List the background processes started with bash: id, command, whether it runs, exit code, output size.",
		Schema:      schema(``)},

	{Kind: KindBrowser, Name: "browser_open",
		Description: "Open an http:// or https:// URL in your browser and wait for it to load. " +
			"Returns the page: its URL, title, visible text (cut at 100 KiB) and links.",
		Schema: schema(`"url": {"type": "string", "description": "The URL to open."}`, "url")},
	{Kind: KindBrowser, Name: "browser_text", ReadOnly: true,
		Description: "Read the page the browser shows now: URL, title, visible text and links.",
		Schema:      schema(``)},
	{Kind: KindBrowser, Name: "browser_click",
		Description: "Click an element of the page: the one a CSS selector matches (selector), or the link or button whose text is (or contains) text. " +
			"Give one of the two. Returns the page after the click; a file the click downloads is saved in downloads/ in your run folder and named in the result.",
		Schema: schema(`
			"selector": {"type": "string", "description": "CSS selector of the element, e.g. \"#submit\" or \"a.next\"."},
			"text": {"type": "string", "description": "Text of the link or button, e.g. \"Sign in\"."}`)},
	{Kind: KindBrowser, Name: "browser_type",
		Description: "Type text into a field of the page (replacing what it holds), as key presses; with submit: true, then submit the field's form. " +
			"Returns the page afterwards.",
		Schema: schema(`
			"selector": {"type": "string", "description": "CSS selector of the field, e.g. \"input[name=q]\"."},
			"text": {"type": "string", "description": "The text to type."},
			"submit": {"type": "boolean", "description": "Submit the field's form after typing."}`,
			"selector", "text")},
	{Kind: KindBrowser, Name: "browser_screenshot", Repeatable: true,
		Description: "Save a PNG screenshot of the browser's viewport in your run folder (default screenshots/N.png) and return its path.",
		Schema:      schema(`"path": {"type": "string", "description": "Where to save it, relative to the run folder, ending in .png."}`)},

	{Kind: KindDesktop, Name: "desktop_screenshot", Repeatable: true,
		Description: "See your desktop: take a screenshot of the whole screen, which you get as an image with this result, " +
			"saved as a PNG in your run folder (default screenshots/N.png). Coordinates for the other desktop tools are pixels " +
			"of this image from its top-left corner. Take one before acting and after anything that changes the screen.",
		Schema: schema(`"path": {"type": "string", "description": "Where to save it, relative to the run folder, ending in .png."}`)},
	{Kind: KindDesktop, Name: "desktop_click",
		Description: "Move the mouse to (x, y) on the screen and click a button there (left unless you say otherwise; double: true for a double click).",
		Schema: schema(`
			"x": {"type": "integer", "minimum": 0, "description": "Pixels from the screen's left edge."},
			"y": {"type": "integer", "minimum": 0, "description": "Pixels from the screen's top edge."},
			"button": {"type": "string", "enum": ["left", "middle", "right"], "description": "The mouse button (default left)."},
			"double": {"type": "boolean", "description": "Double-click."}`,
			"x", "y")},
	{Kind: KindDesktop, Name: "desktop_move", Repeatable: true,
		Description: "Move the mouse to (x, y) without clicking (to hover over something).",
		Schema: schema(`
			"x": {"type": "integer", "minimum": 0, "description": "Pixels from the screen's left edge."},
			"y": {"type": "integer", "minimum": 0, "description": "Pixels from the screen's top edge."}`,
			"x", "y")},
	{Kind: KindDesktop, Name: "desktop_drag",
		Description: "Press the left mouse button at (x, y), move to (to_x, to_y) and release it there.",
		Schema: schema(`
			"x": {"type": "integer", "minimum": 0}, "y": {"type": "integer", "minimum": 0},
			"to_x": {"type": "integer", "minimum": 0}, "to_y": {"type": "integer", "minimum": 0}`,
			"x", "y", "to_x", "to_y")},
	{Kind: KindDesktop, Name: "desktop_scroll",
		Description: "Turn the mouse wheel with the pointer at (x, y): clicks notches (default 3) in direction up, down, left or right.",
		Schema: schema(`
			"x": {"type": "integer", "minimum": 0}, "y": {"type": "integer", "minimum": 0},
			"direction": {"type": "string", "enum": ["up", "down", "left", "right"]},
			"clicks": {"type": "integer", "minimum": 1, "maximum": 50, "description": "Notches to turn (default 3)."}`,
			"x", "y", "direction")},
	{Kind: KindDesktop, Name: "desktop_type",
		Description: "Type text with the keyboard into whatever has the focus on the screen (click a field first).",
		Schema:      schema(`"text": {"type": "string", "description": "The text to type."}`, "text")},
	{Kind: KindDesktop, Name: "desktop_key",
		Description: "Press a key or a key combination, named as X names them: \"Return\", \"Tab\", \"Escape\", \"BackSpace\", \"ctrl+s\", \"alt+F4\", \"shift+Tab\". " +
			"Several separated by spaces are pressed one after another (\"ctrl+a Delete\").",
		Schema: schema(`"keys": {"type": "string", "description": "The key or combination, e.g. \"ctrl+s\"."}`, "keys")},
}

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

// decode reads a tool's input into v, refusing unknown fields; the message,
// when not empty, is for the model.
func decode(input json.RawMessage, v any) string {
	in := bytes.TrimSpace(input)
	if len(in) == 0 || string(in) == "null" {
		in = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Sprintf("field %q must be %s, got a JSON %s", te.Field, te.Type.Kind(), te.Value)
		}
		return "invalid input: " + err.Error()
	}
	return ""
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

// RunTool is Run with the images a result shows the model (a desktop's screenshots).
func RunTool(ctx context.Context, c Computer, name string, input json.RawMessage) (Result, error) {
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
		r.Content, err = run(ctx, c, def, input)
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

func run(ctx context.Context, c Computer, def ToolDef, input json.RawMessage) (string, error) {
	switch def.Kind {
	case KindSandbox:
		s, ok := c.(Sandbox)
		if !ok {
			return "", fmt.Errorf("tool %s needs a sandbox; the run's computer is a %s", def.Name, c.Kind())
		}
		return runSandbox(ctx, s, def.Name, input)
	case KindBrowser:
		b, ok := c.(Browser)
		if !ok {
			return "", fmt.Errorf("tool %s needs a browser; the run's computer is a %s", def.Name, c.Kind())
		}
		return runBrowser(ctx, b, def.Name, input)
	}
	return "", fmt.Errorf("no tools for kind %s", def.Kind)
}

func runSandbox(ctx context.Context, s Sandbox, name string, input json.RawMessage) (string, error) {
	switch name {
	case "bash":
		var in struct {
			Command    *string `json:"command"`
			TimeoutS   *int64  `json:"timeout_s"`
			Background bool    `json:"background"`
			Workdir    string  `json:"workdir"`
		}
		if msg := decode(input, &in); msg != "" {
			return "", Agentf("%s", msg)
		}
		if in.Command == nil || strings.TrimSpace(*in.Command) == "" {
			return "", Agentf("missing required field \"command\" (string)")
		}
		timeout := int64(defaultTimeoutS)
		if in.TimeoutS != nil {
			if *in.TimeoutS < 1 || *in.TimeoutS > maxTimeoutS {
				return "", Agentf("timeout_s must be between 1 and %d, got %d", maxTimeoutS, *in.TimeoutS)
			}
			timeout = *in.TimeoutS
		}
		opts := ExecOptions{Workdir: in.Workdir, Timeout: time.Duration(timeout) * time.Second, MaxOutput: maxToolOutput}
		if in.Background {
			p, err := s.Start(ctx, *in.Command, opts)
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("started background process %s (pid %d in the sandbox). "+
				"Read its output with bash_output {\"id\": %q}; stop it with bash_kill {\"id\": %q}.", p.ID, p.PID, p.ID, p.ID), nil
		}
		r, err := s.Exec(ctx, *in.Command, opts)
		if err != nil {
			return "", err
		}
		out := formatExec(r, timeout)
		if r.TimedOut {
			return "", &AgentError{Msg: out}
		}
		return out, nil
	case "bash_output":
		var in struct {
			ID     string `json:"id"`
			Offset int64  `json:"offset"`
		}
		if msg := decode(input, &in); msg != "" {
			return "", Agentf("%s", msg)
		}
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
	case "bash_kill":
		var in struct {
			ID string `json:"id"`
		}
		if msg := decode(input, &in); msg != "" {
			return "", Agentf("%s", msg)
		}
		if in.ID == "" {
			return "", Agentf("missing required field \"id\" (string)")
		}
		p, err := s.Stop(ctx, in.ID)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("process %s stopped: %s", p.ID, state(p)), nil
	case "bash_list":
		var in struct{}
		if msg := decode(input, &in); msg != "" {
			return "", Agentf("%s", msg)
		}
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
	return "", fmt.Errorf("unknown sandbox tool %s", name)
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

func runBrowser(ctx context.Context, br Browser, name string, input json.RawMessage) (string, error) {
	var p Page
	var err error
	switch name {
	case "browser_open":
		var in struct {
			URL string `json:"url"`
		}
		if msg := decode(input, &in); msg != "" {
			return "", Agentf("%s", msg)
		}
		if in.URL == "" {
			return "", Agentf("missing required field \"url\" (string)")
		}
		p, err = br.Open(ctx, in.URL)
	case "browser_text":
		var in struct{}
		if msg := decode(input, &in); msg != "" {
			return "", Agentf("%s", msg)
		}
		p, err = br.Current(ctx)
	case "browser_click":
		var in Target
		var raw struct {
			Selector string `json:"selector"`
			Text     string `json:"text"`
		}
		if msg := decode(input, &raw); msg != "" {
			return "", Agentf("%s", msg)
		}
		in = Target(raw)
		p, err = br.Click(ctx, in)
	case "browser_type":
		var in struct {
			Selector *string `json:"selector"`
			Text     *string `json:"text"`
			Submit   bool    `json:"submit"`
		}
		if msg := decode(input, &in); msg != "" {
			return "", Agentf("%s", msg)
		}
		if in.Selector == nil || in.Text == nil {
			return "", Agentf("browser_type needs \"selector\" and \"text\" (strings)")
		}
		p, err = br.Type(ctx, *in.Selector, *in.Text, in.Submit)
	case "browser_screenshot":
		var in struct {
			Path string `json:"path"`
		}
		if msg := decode(input, &in); msg != "" {
			return "", Agentf("%s", msg)
		}
		path, err := br.Screenshot(ctx, in.Path)
		if err != nil {
			return "", err
		}
		return "screenshot saved in the run folder at " + path, nil
	default:
		return "", fmt.Errorf("unknown browser tool %s", name)
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
