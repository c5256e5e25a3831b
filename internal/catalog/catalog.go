// Package catalog is the one description of every tool an agent can be offered: its name, what
// the model is told about it, its JSON input schema, which computers bring it, whether a call is
// safe to repeat, and its typed input, which Decode fills strictly (unknown keys, keys given
// twice and keys in another case are refused). Validation (internal/api), the agent loop, the
// policy, the server and the console ask it. It is data and pure functions only (no I/O) and
// imports nothing of ours, so it sits below internal/api, which imports it; the tools themselves run in internal/tools and internal/computer
// (docs/architecture.md, "Tool calls" and "Where to add things").
package catalog

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Kinds of computer, as computer.Kind spells them.
const (
	Sandbox = "sandbox"
	Desktop = "desktop"
	Browser = "browser"
)

// AskPersonName is the tool the engine turns into a question to the person.
const AskPersonName = "ask_person"

// DevCountName is the test-support tool internal/tools offers only with the dev flag (tools.EnableDevTools).
const DevCountName = "dev_count"

// Field declares one key of a tool's input. Its Go type is the typed input's field of that JSON
// name (string, bool, int or int64, or a pointer to one when absence matters).
type Field struct {
	Name     string
	Desc     string
	Required bool
	Min, Max *int64
	Enum     []string
}

func req(name, desc string) Field { return Field{Name: name, Desc: desc, Required: true} }
func opt(name, desc string) Field { return Field{Name: name, Desc: desc} }

func (f Field) min(n int64) Field          { f.Min = &n; return f }
func (f Field) max(n int64) Field          { f.Max = &n; return f }
func (f Field) enum(v ...string) Field     { f.Enum = v; return f }
func (f Field) between(lo, hi int64) Field { return f.min(lo).max(hi) }

// Entry is one tool.
type Entry struct {
	Name        string
	Description string
	// Schema is the JSON Schema of the input object, made from Fields and the typed input.
	Schema json.RawMessage
	Fields []Field
	// Computer is the kind of computer that runs the tool; "" for those the server runs on the
	// run folder (the file tools) or turns into a question (ask_person).
	Computer string
	// ComesWith are the kinds of computer that bring the tool, whether spec.tools lists it or not.
	ComesWith []string
	// ReadOnly: a call changes nothing, so it is safe to repeat after a crash.
	ReadOnly bool
	// Repeatable: a call changes files (it saves a screenshot) but is still safe to repeat.
	Repeatable bool
	// Dev marks a test-support tool that exists only while dev tools are on.
	Dev bool
	// MCP marks a dynamic entry, a tool an MCP server brings (see MCPEntry).
	MCP bool
	// MatchPath: approval patterns match the input's path as a path ("*" within a folder).
	MatchPath bool
	// MatchKey names the input key approval patterns match (web_fetch's url); "" for the first
	// of matchKeys the input has.
	MatchKey string

	input reflect.Type
	index map[string][]int
	types map[string]string
}

func (e *Entry) field(name string) (Field, bool) {
	for _, f := range e.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

func (e *Entry) fieldNames() string {
	n := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		n[i] = f.Name
	}
	return strings.Join(n, ", ")
}

// Brings reports whether a computer of kind brings the tool.
func (e *Entry) Brings(kind string) bool { return contains(e.ComesWith, kind) }

// NotBuilt names tools the documents describe that this server does not have yet, with why;
// validation refuses them with that reason instead of "unknown tool".
var NotBuilt = map[string]string{}

// WebFetchName is the server-side fetcher; SkillName reads the agent's skills (offered to every
// agent that names skills, whether spec.tools lists it or not).
const (
	WebFetchName = "web_fetch"
	SkillName    = "skill"
	// NoteName opens a learned note (offered to every agent with spec.learning).
	NoteName = "note"
)

// The typed inputs, one per tool.
type (
	Read struct {
		Path   string `json:"path"`
		Offset *int64 `json:"offset"`
		Limit  *int64 `json:"limit"`
	}
	Write struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	Edit struct {
		Path       string `json:"path"`
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
	}
	Ls struct {
		Path *string `json:"path"`
	}
	Grep struct {
		Pattern string  `json:"pattern"`
		Path    *string `json:"path"`
		Glob    *string `json:"glob"`
	}
	AskPerson struct {
		Question string `json:"question"`
		Takeover bool   `json:"takeover"`
	}
	DevCount struct {
		Label   string `json:"label"`
		SleepMS int64  `json:"sleep_ms"`
	}
	Bash struct {
		Command    string `json:"command"`
		TimeoutS   *int64 `json:"timeout_s"`
		Background bool   `json:"background"`
		Workdir    string `json:"workdir"`
	}
	BashOutput struct {
		ID     string `json:"id"`
		Offset int64  `json:"offset"`
	}
	BashKill struct {
		ID string `json:"id"`
	}
	BashList    struct{}
	BrowserOpen struct {
		URL string `json:"url"`
	}
	BrowserText  struct{}
	BrowserClick struct {
		Selector string `json:"selector"`
		Text     string `json:"text"`
	}
	BrowserType struct {
		Selector string `json:"selector"`
		Text     string `json:"text"`
		Submit   bool   `json:"submit"`
	}
	BrowserScreenshot struct {
		Path string `json:"path"`
	}
	DesktopScreenshot struct {
		Path string `json:"path"`
	}
	DesktopClick struct {
		X      int    `json:"x"`
		Y      int    `json:"y"`
		Button string `json:"button"`
		Double bool   `json:"double"`
	}
	DesktopMove struct {
		X int `json:"x"`
		Y int `json:"y"`
	}
	DesktopDrag struct {
		X   int `json:"x"`
		Y   int `json:"y"`
		ToX int `json:"to_x"`
		ToY int `json:"to_y"`
	}
	DesktopScroll struct {
		X         int    `json:"x"`
		Y         int    `json:"y"`
		Direction string `json:"direction"`
		Clicks    *int   `json:"clicks"`
	}
	DesktopType struct {
		Text string `json:"text"`
	}
	DesktopKey struct {
		Keys string `json:"keys"`
	}
	WebFetch struct {
		URL      string  `json:"url"`
		Method   *string `json:"method"`
		MaxBytes *int64  `json:"maxBytes"`
	}
	Skill struct {
		Name string  `json:"name"`
		File *string `json:"file"`
	}
	Note struct {
		Name string `json:"name"`
	}
)

var (
	folder      = []string{Sandbox, Desktop} // computers whose file system holds the run folder
	withBrowser = []string{Browser}
	withDesktop = []string{Desktop}
	xField      = req("x", "Pixels from the screen's left edge.").min(0)
	yField      = req("y", "Pixels from the screen's top edge.").min(0)
	shotPath    = opt("path", "Where to save it, relative to the run folder, ending in .png.")
	processID   = req("id", "The process id bash returned, e.g. \"p1\".")
)

// entries is the catalog, in the order a computer's tools are offered.
var entries = []*Entry{
	build(&Entry{Name: "read", ComesWith: folder, ReadOnly: true, MatchPath: true,
		Description: "Read a text file in the run folder. Paths are relative to the run folder (\"/workspace/...\" also works); " +
			"nothing outside it can be read. The result shows each line prefixed with its line number and a tab, like `cat -n`; " +
			"the numbers and tab are not part of the file, so leave them out when you quote text to the edit tool. " +
			"Output stops at 256 KiB with a note saying which offset to continue from; use offset and limit to read a long file in parts. " +
			"Binary files are refused. To see what files exist, use ls; to find text across files, use grep.",
		Fields: []Field{
			req("path", "File to read, relative to the run folder (e.g. \"notes/todo.md\")."),
			opt("offset", "Line number to start at, 1-based. Default 1. Use it to continue a long file.").min(1),
			opt("limit", "Maximum number of lines to return. Default: all, up to 256 KiB of output.").min(1),
		}}, Read{}),
	build(&Entry{Name: "write", ComesWith: folder, MatchPath: true,
		Description: "Create a file in the run folder, or replace an existing file's whole content. " +
			"Paths are relative to the run folder (\"/workspace/...\" also works); nothing outside it can be written. " +
			"Missing parent folders are created, and the file is replaced atomically: it holds either the old or the new content, never a mix. " +
			"Content is limited to 10 MiB. To change part of an existing file, prefer edit, which does not require repeating the rest of the file.",
		Fields: []Field{
			req("path", "File to write, relative to the run folder (e.g. \"report.md\" or \"src/main.go\"). Missing parent folders are created."),
			req("content", "The complete new content of the file."),
		}}, Write{}),
	build(&Entry{Name: "edit", ComesWith: folder, MatchPath: true,
		Description: "Edit a text file in the run folder by exact string replacement: old_string is replaced by new_string. " +
			"old_string must match the file exactly (whitespace, indentation and line breaks included) and, unless replace_all is true, occur exactly once; " +
			"otherwise nothing is changed and the error says whether it was not found or how many times it occurs. " +
			"Read the file first so you quote it exactly, and leave out the line-number prefixes read adds. " +
			"The file is rewritten atomically. To create a file or replace all of it, use write.",
		Fields: []Field{
			req("path", "File to edit, relative to the run folder."),
			req("old_string", "The exact text to replace, character for character, including whitespace and indentation (without read's line-number prefixes). "+
				"It must occur exactly once unless replace_all is true; include enough surrounding lines to make it unique."),
			req("new_string", "The text to put in its place (may be empty to delete old_string)."),
			opt("replace_all", "Replace every occurrence of old_string instead of requiring exactly one. Default false."),
		}}, Edit{}),
	build(&Entry{Name: "ls", ComesWith: folder, ReadOnly: true, MatchPath: true,
		Description: "List a folder in the run folder (default: the run folder itself), one entry per line, sorted by name. " +
			"Folders end with \"/\", symbolic links show as \"name -> target\", and hidden entries (starting with \".\") are included. " +
			"It lists one level; call it again on a subfolder to go deeper, or use grep to search file contents. " +
			"Given a file, it shows just that entry.",
		Fields: []Field{
			opt("path", "Folder to list, relative to the run folder. Default \".\", the run folder itself."),
		}}, Ls{}),
	build(&Entry{Name: "grep", ComesWith: folder, ReadOnly: true, MatchPath: true,
		Description: "Search file contents in the run folder with a regular expression (Go RE2 syntax; use \"(?i)\" for case-insensitive). " +
			"Searches a folder recursively (default: the whole run folder) or a single file, and prints each matching line as \"path:line:text\", " +
			"with paths relative to the run folder and lines numbered from 1. glob limits the search to file names matching it (e.g. \"*.go\"). " +
			"Binary files, symbolic links and .git folders are skipped; at most 500 matches are returned, with a note when there are more, " +
			"and long lines are shortened. Then use read with offset to see the context of a match.",
		Fields: []Field{
			req("pattern", "Regular expression in Go (RE2) syntax, matched against each line, e.g. \"func \\\\w+\\\\(\" or \"(?i)todo\". No lookarounds or backreferences."),
			opt("path", "Folder (searched recursively) or single file to search, relative to the run folder. Default \".\"."),
			opt("glob", "Only search files whose name matches this glob, e.g. \"*.md\" or \"*_test.go\". Matched against the file name only, not the folder."),
		}}, Grep{}),

	build(&Entry{Name: "bash", Computer: Sandbox, ComesWith: folder,
		Description: "Run a command with bash -lc in your sandbox, a Linux machine whose /workspace (the working folder) is your run folder. " +
			"The rest of its file system is a fresh, read-only base system with a writable /tmp; " +
			"the network is reachable only if your computer allows it. " +
			"By default the command runs in the foreground and you get its exit code, stdout and stderr (each cut at 64 KiB) when it ends; " +
			"after timeout_s seconds (default 120, at most 600) it is killed with everything it started. " +
			"With background: true it keeps running after the call (servers, watchers, long builds) and you get an id: " +
			"read its output with bash_output, stop it with bash_kill, list them with bash_list. " +
			"Processes started in the foreground do not outlive their command; start long-lived ones in the background.",
		Fields: []Field{
			req("command", "The command line, run with bash -lc in /workspace (or workdir)."),
			opt("timeout_s", "Seconds before a foreground command is killed (default 120).").between(1, 600),
			opt("background", "Run in the background and return its id at once."),
			opt("workdir", "Working folder, relative to /workspace or absolute (default /workspace)."),
		}}, Bash{}),
	build(&Entry{Name: "bash_output", Computer: Sandbox, ComesWith: folder, ReadOnly: true,
		Description: "Read the output (stdout and stderr together, as written) of a background process started with bash, " +
			"from byte offset on (default 0), at most 256 KiB per call; the result gives the offset to read from next " +
			"and whether the process still runs or its exit code. Only the last 4 MiB of a process's output are kept.",
		Fields: []Field{
			processID,
			opt("offset", "Byte offset to read from (the next offset of the previous call).").min(0),
		}}, BashOutput{}),
	build(&Entry{Name: "bash_kill", Computer: Sandbox, ComesWith: folder,
		Description: "Stop a background process started with bash, and everything it started (SIGTERM, then SIGKILL after 3 s).",
		Fields:      []Field{processID}}, BashKill{}),
	build(&Entry{Name: "bash_list", Computer: Sandbox, ComesWith: folder, ReadOnly: true,
		Description: "List the background processes started with bash: id, command, whether it runs, exit code, output size."}, BashList{}),

	build(&Entry{Name: "browser_open", Computer: Browser, ComesWith: withBrowser,
		Description: "Open an http:// or https:// URL in your browser and wait for it to load. " +
			"Returns the page: its URL, title, visible text (cut at 100 KiB) and links.",
		Fields: []Field{req("url", "The URL to open.")}}, BrowserOpen{}),
	build(&Entry{Name: "browser_text", Computer: Browser, ComesWith: withBrowser, ReadOnly: true,
		Description: "Read the page the browser shows now: URL, title, visible text and links."}, BrowserText{}),
	build(&Entry{Name: "browser_click", Computer: Browser, ComesWith: withBrowser,
		Description: "Click an element of the page: the one a CSS selector matches (selector), or the link or button whose text is (or contains) text. " +
			"Give one of the two. Returns the page after the click; a file the click downloads is saved in downloads/ in your run folder and named in the result.",
		Fields: []Field{
			opt("selector", "CSS selector of the element, e.g. \"#submit\" or \"a.next\"."),
			opt("text", "Text of the link or button, e.g. \"Sign in\"."),
		}}, BrowserClick{}),
	build(&Entry{Name: "browser_type", Computer: Browser, ComesWith: withBrowser,
		Description: "Type text into a field of the page (replacing what it holds), as key presses; with submit: true, then submit the field's form. " +
			"Returns the page afterwards.",
		Fields: []Field{
			req("selector", "CSS selector of the field, e.g. \"input[name=q]\"."),
			req("text", "The text to type."),
			opt("submit", "Submit the field's form after typing."),
		}}, BrowserType{}),
	build(&Entry{Name: "browser_screenshot", Computer: Browser, ComesWith: withBrowser, Repeatable: true,
		Description: "Save a PNG screenshot of the browser's viewport in your run folder (default screenshots/N.png) and return its path.",
		Fields:      []Field{shotPath}}, BrowserScreenshot{}),

	build(&Entry{Name: "desktop_screenshot", Computer: Desktop, ComesWith: withDesktop, Repeatable: true,
		Description: "See your desktop: take a screenshot of the whole screen, which you get as an image with this result, " +
			"saved as a PNG in your run folder (default screenshots/N.png). Coordinates for the other desktop tools are pixels " +
			"of this image from its top-left corner. Take one before acting and after anything that changes the screen.",
		Fields: []Field{shotPath}}, DesktopScreenshot{}),
	build(&Entry{Name: "desktop_click", Computer: Desktop, ComesWith: withDesktop,
		Description: "Move the mouse to (x, y) on the screen and click a button there (left unless you say otherwise; double: true for a double click).",
		Fields: []Field{xField, yField,
			opt("button", "The mouse button (default left).").enum("left", "middle", "right"),
			opt("double", "Double-click."),
		}}, DesktopClick{}),
	build(&Entry{Name: "desktop_move", Computer: Desktop, ComesWith: withDesktop, Repeatable: true,
		Description: "Move the mouse to (x, y) without clicking (to hover over something).",
		Fields:      []Field{xField, yField}}, DesktopMove{}),
	build(&Entry{Name: "desktop_drag", Computer: Desktop, ComesWith: withDesktop,
		Description: "Press the left mouse button at (x, y), move to (to_x, to_y) and release it there.",
		Fields: []Field{xField, yField,
			req("to_x", "Pixels from the screen's left edge, where to release the button.").min(0),
			req("to_y", "Pixels from the screen's top edge, where to release the button.").min(0),
		}}, DesktopDrag{}),
	build(&Entry{Name: "desktop_scroll", Computer: Desktop, ComesWith: withDesktop,
		Description: "Turn the mouse wheel with the pointer at (x, y): clicks notches (default 3) in direction up, down, left or right.",
		Fields: []Field{xField, yField,
			req("direction", "Which way to turn the wheel.").enum("up", "down", "left", "right"),
			opt("clicks", "Notches to turn (default 3).").between(1, 50),
		}}, DesktopScroll{}),
	build(&Entry{Name: "desktop_type", Computer: Desktop, ComesWith: withDesktop,
		Description: "Type text with the keyboard into whatever has the focus on the screen (click a field first).",
		Fields:      []Field{req("text", "The text to type.")}}, DesktopType{}),
	build(&Entry{Name: "desktop_key", Computer: Desktop, ComesWith: withDesktop,
		Description: "Press a key or a key combination, named as X names them: \"Return\", \"Tab\", \"Escape\", \"BackSpace\", \"ctrl+s\", \"alt+F4\", \"shift+Tab\". " +
			"Several separated by spaces are pressed one after another (\"ctrl+a Delete\").",
		Fields: []Field{req("keys", "The key or combination, e.g. \"ctrl+s\".")}}, DesktopKey{}),

	build(&Entry{Name: WebFetchName, ReadOnly: true, MatchKey: "url",
		Description: "Fetch an http:// or https:// URL from the server (GET, or HEAD for the status and headers only) and read it: " +
			"HTML comes back as markdown with its links kept, text and JSON as they are, other content types are described, not shown. " +
			"At most 5 redirects are followed; the body is cut at maxBytes (default 1 MiB) and the result says when it was. " +
			"Only public addresses are reached (not loopback, private networks or cloud metadata), and only when your computer has the network.",
		Fields: []Field{
			req("url", "The http:// or https:// URL to fetch, e.g. \"https://go.dev/doc/\"."),
			opt("method", "GET (default) or HEAD.").enum("GET", "HEAD"),
			opt("maxBytes", "Read at most this many bytes of the body (default 1048576, at most 10485760).").between(1, 10<<20),
		}}, WebFetch{}),
	build(&Entry{Name: SkillName, ReadOnly: true, MatchKey: "name",
		Description: "Read one of your skills (listed in your instructions with what each is for): without file, its SKILL.md, " +
			"which says how to do the task and names the skill's other files; with file, that file of the skill. " +
			"Read a skill before a task it fits, and follow it.",
		Fields: []Field{
			req("name", "The skill's name, as your instructions list it."),
			opt("file", "A file of the skill, relative to its folder (e.g. \"reference.md\"); default SKILL.md."),
		}}, Skill{}),
	build(&Entry{Name: NoteName, ReadOnly: true, MatchKey: "name",
		Description: "Open one of the notes you learned in earlier runs (your instructions list each one's name, file and what it is about): " +
			"it returns the note's whole text. Open a note when it bears on the task.",
		Fields: []Field{
			req("name", "The note's name or file, as your instructions list it."),
		}}, Note{}),
	build(&Entry{Name: AskPersonName,
		Description: "Ask the person you are working for a question and wait for their answer. " +
			"Use it when you need a decision, a preference or information that only they have and cannot find in the run folder; " +
			"do not use it for things you can work out yourself. The run pauses until they answer; their answer comes back as the result. " +
			"Ask one clear question at a time.",
		Fields: []Field{
			req("question", "The question, complete and self-contained: say what you need to know, why, and the options if there are any."),
			opt("takeover", "Ask the person to take over your computer (a browser login, a captcha) and tell you when they are done."),
		}}, AskPerson{}),
	build(&Entry{Name: DevCountName, Dev: true,
		Description: "Test tool: record that this call happened by appending the label as one line to the server's count file, " +
			"then wait sleep_ms milliseconds and return \"counted <label>\". It has a real side effect, so it is never repeated after a crash.",
		Fields: []Field{
			req("label", "Text of the line to append (one line, no newline)."),
			opt("sleep_ms", "Milliseconds to wait after appending, before returning. Default 0.").between(0, 3_600_000),
		}}, DevCount{}),
}

// build ties an entry to its typed input and makes its schema. A field without a Go field of
// its JSON name (or the reverse) is a mistake in this file; TestCatalogConsistent finds it.
func build(e *Entry, input any) *Entry {
	e.input = reflect.TypeOf(input)
	e.index, e.types = map[string][]int{}, map[string]string{}
	for i := 0; i < e.input.NumField(); i++ {
		sf := e.input.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		e.index[name] = sf.Index
		e.types[name] = jsonType(sf.Type)
	}
	type prop struct {
		Type        string   `json:"type"`
		Description string   `json:"description,omitempty"`
		Enum        []string `json:"enum,omitempty"`
		Minimum     *int64   `json:"minimum,omitempty"`
		Maximum     *int64   `json:"maximum,omitempty"`
	}
	type object struct {
		Type                 string          `json:"type"`
		Properties           map[string]prop `json:"properties"`
		Required             []string        `json:"required"`
		AdditionalProperties bool            `json:"additionalProperties"`
	}
	o := object{Type: "object", Properties: map[string]prop{}, Required: []string{}}
	for _, f := range e.Fields {
		o.Properties[f.Name] = prop{Type: e.types[f.Name], Description: f.Desc, Enum: f.Enum, Minimum: f.Min, Maximum: f.Max}
		if f.Required {
			o.Required = append(o.Required, f.Name)
		}
	}
	// Marshalling these types cannot fail.
	e.Schema, _ = json.Marshal(o)
	return e
}

func jsonType(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int64:
		return "integer"
	}
	return "unsupported " + t.String()
}

var byName = func() map[string]*Entry {
	m := make(map[string]*Entry, len(entries))
	for _, e := range entries {
		m[e.Name] = e
	}
	return m
}()

func lookup(name string) (*Entry, bool) {
	e, ok := byName[name]
	return e, ok
}

// Lookup returns the tool named name (dev tools included: whether they are on is the server's).
func Lookup(name string) (Entry, bool) {
	e, ok := byName[name]
	if !ok {
		return Entry{}, false
	}
	return *e, true
}

// All returns every tool, in catalog order.
func All() []Entry {
	out := make([]Entry, len(entries))
	for i, e := range entries {
		out[i] = *e
	}
	return out
}

// CheckListed says why an agent may not list the tool name in spec.tools ("" when it may): the
// catalog does not have it, or it is not built yet. Dev tools are the server's to allow.
func CheckListed(name string) string {
	if why, ok := NotBuilt[name]; ok {
		return why
	}
	if _, _, ok := SplitMCPName(name); ok {
		return fmt.Sprintf("tool %q is an MCP tool: tick it in spec.mcpServers[].tools instead", name)
	}
	if e, ok := byName[name]; !ok || e.Dev {
		return fmt.Sprintf("unknown tool %q", name)
	}
	return ""
}

// ComputerTools names the tools that come with a computer of kind, in catalog order: the file
// tools for a computer whose file system holds the run folder (a sandbox, a desktop), then the
// kind's own (a desktop's sandbox tools before its screen's).
func ComputerTools(kind string) []string {
	var out []string
	for _, e := range entries {
		if e.Brings(kind) {
			out = append(out, e.Name)
		}
	}
	return out
}

// Offered names the tools a run of an agent is offered, in the order the model is told about
// them: those spec.tools lists (a computer tool its computer brings only in its place below),
// then those that come with its computer of kind and the list left out.
func Offered(kind string, listed []string) []string { return OfferedWith(kind, listed, false) }

// OfferedWith is Offered for an agent that names skills (hasSkills): the skill tool comes last.
func OfferedWith(kind string, listed []string, hasSkills bool) []string {
	out := offered(kind, listed)
	if hasSkills && !contains(out, SkillName) {
		out = append(out, SkillName)
	}
	return out
}

func offered(kind string, listed []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range listed {
		if e, ok := byName[n]; ok && e.Computer != "" && e.Brings(kind) {
			continue // a computer's own tools come with it, below
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, n := range ComputerTools(kind) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
