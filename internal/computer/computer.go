// Package computer is what an agent acts through besides its run folder: a
// sandbox with a shell, a desktop (a sandbox with a screen), or a browser. A Provider makes a Computer of one kind
// for one run, around that run's folder on the host; the agent loop creates
// it as a journaled step, offers the model the tools of its kind (Tools), runs
// each tool call through it (Run), and after a restart creates it again around
// the same folder: a computer holds no state that matters beyond the folder,
// so recreating it is how a run gets it back.
//
// Providers here: "local" (sandbox and desktop, Linux namespaces through
// bubblewrap), "chromium" (browser, a local headless Chromium over the DevTools
// protocol) and "docker" (sandbox and desktop, a container through the Docker
// Engine API); a desktop's screen is driven the same way in both, by package
// xdesktop (Xvfb, xdotool, xwd inside the sandbox). A registry
// (Default) lists them with whether each works on this machine and, when not,
// why, for `server capabilities`. Every provider of a kind passes the
// conformance suite in computertest.
//
// A sandbox or desktop that can run long-lived processes with their stdio streamed (an MCP server
// over stdio, a harness) implements Spawner; Spec.Mounts shows host paths such a process needs
// (its install, the gateway's socket) inside the computer. The local and docker providers' do.
//
// A browser whose provider can also show and drive its screen for a person
// implements Screen: the console shows its frames (JPEG, one image pixel per
// CSS pixel of the viewport) and, while the run waits on a takeover (the agent
// called ask_person with takeover), sends the person's clicks, typing and keys
// to it. The chromium provider does, over the DevTools protocol.
//
// Errors follow one rule throughout: a mistake of the agent (a missing file, an
// unknown process id, a selector matching nothing, a page that does not load)
// is an *AgentError, which Run turns into an error result the model reads;
// anything else (the sandbox died, Chromium crashed, the context ended) is an
// infrastructure failure returned as an error.
//
// Where a computer call sits in a tool call, and how to add a provider: docs/architecture.md,
// "Tool calls" and "Where to add things".
package computer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind is what sort of computer an agent gets; it decides the agent's tools.
type Kind string

// The kinds of computer. phone has no provider here yet.
const (
	KindNone    Kind = "none"
	KindSandbox Kind = "sandbox"
	KindBrowser Kind = "browser"
	KindDesktop Kind = "desktop"
	KindPhone   Kind = "phone"
)

// Kinds are every kind of computer an agent may ask for, the one list validation names.
var Kinds = []Kind{KindNone, KindSandbox, KindBrowser, KindDesktop, KindPhone}

// Known reports whether k is one of Kinds.
func (k Kind) Known() bool { return slices.Contains(Kinds, k) }

// Limits bound what a computer's processes may use. Zero fields take the
// defaults in DefaultLimits. Providers say which limits they enforce and how
// in Computer.Info.
type Limits struct {
	// MemoryBytes bounds memory: the address space of each process, and the
	// computer's total where a memory cgroup is available.
	MemoryBytes int64
	// CPUSeconds bounds the CPU time of each process.
	CPUSeconds int64
	// Processes bounds how many processes (and threads) the computer runs at once.
	Processes int64
}

// DefaultLimits are the limits of a computer whose Spec leaves them zero.
//
// Processes counts threads too (a JVM or a browser runs hundreds), and
// CPUSeconds binds each process, not the computer: a build that runs one
// compiler for more than ten minutes of CPU needs more.
var DefaultLimits = Limits{MemoryBytes: 2 << 30, CPUSeconds: 600, Processes: 512}

// WithDefaults fills the zero fields of l from DefaultLimits.
func (l Limits) WithDefaults() Limits {
	if l.MemoryBytes <= 0 {
		l.MemoryBytes = DefaultLimits.MemoryBytes
	}
	if l.CPUSeconds <= 0 {
		l.CPUSeconds = DefaultLimits.CPUSeconds
	}
	if l.Processes <= 0 {
		l.Processes = DefaultLimits.Processes
	}
	return l
}

// Spec is what a provider needs to make a computer for a run.
type Spec struct {
	// Run is the run's name; it labels the computer (cgroup and process
	// names) and must be a DNS label.
	Run string
	// Folder is the absolute host path of the run folder. A sandbox mounts it
	// at /workspace; a browser saves screenshots and downloads in it.
	Folder string
	Kind   Kind
	// Network lets the computer reach the network. Off by default.
	Network bool
	Limits  Limits
	// Mounts are host files and folders the computer shows besides the run folder (a sandbox
	// provider that cannot mount them fails Create): a harness's install, its home, the gateway's
	// socket, an MCP server's package. Providers without a file system (a browser) ignore them.
	Mounts []Mount
}

// Mount is a host file or folder shown inside a computer at Target (an absolute path there),
// read-only unless Writable.
type Mount struct {
	Source, Target string
	Writable       bool
}

// Availability says whether a provider can make computers on this machine.
type Availability struct {
	Available bool
	// Reason says why not, with what to do about it, e.g.
	// "bubblewrap not installed: apt-get install bubblewrap".
	Reason string
}

// Provider makes computers of the kinds it offers.
type Provider interface {
	// Name is the provider's name in an agent's computer.provider.
	Name() string
	// Kinds lists the kinds of computer the provider makes.
	Kinds() []Kind
	// Available checks, quickly and without starting a computer, whether
	// the provider works here.
	Available(ctx context.Context) Availability
	// Create makes a computer for spec.Run around spec.Folder. The computer
	// lives until Close, not until ctx ends: ctx bounds only the creation.
	Create(ctx context.Context, spec Spec) (Computer, error)
}

// Preparer is a provider with a slow one-time setup before its first computer (the docker
// provider builds its image on first use). Create prepares by itself; the agent loop asks Ready
// first so that the run's timeline says what it waits on while Prepare runs.
type Preparer interface {
	// Ready reports whether Prepare has nothing left to do and, when it has, what it is doing
	// or will do ("building image agentrun-sandbox:1a2b from debian:bookworm-slim: step 2/4").
	Ready(ctx context.Context) (bool, string)
	// Prepare does the setup, or waits for the one already under way.
	Prepare(ctx context.Context) error
}

// KindPreparer is a Preparer whose setup depends on the kind of computer (the docker provider's
// desktops run on an image built from its sandbox image). The agent loop uses it instead of
// Preparer when a provider has it, so that the timeline names what the run's kind waits on.
type KindPreparer interface {
	// ReadyKind is Ready for computers of kind.
	ReadyKind(ctx context.Context, kind Kind) (bool, string)
	// PrepareKind is Prepare for computers of kind.
	PrepareKind(ctx context.Context, kind Kind) error
}

// Computer is one run's computer. Assert Sandbox or Browser for what it does.
type Computer interface {
	Kind() Kind
	// Info describes the computer for people: provider, isolation and
	// limits enforced, as short "key: value" lines.
	Info() []string
	// Close stops everything the computer runs and releases it; when it
	// returns without error no process of the computer is left. It is safe
	// to call more than once.
	Close() error
}

// ExecOptions are the options of one command in a sandbox.
type ExecOptions struct {
	// Timeout bounds a foreground command (default 120 s). Background
	// processes have none.
	Timeout time.Duration
	// Workdir is the working folder: relative to /workspace, or absolute
	// inside the sandbox. Default /workspace.
	Workdir string
	// Env adds environment variables ("NAME=value") to the sandbox's own.
	Env []string
	// MaxOutput bounds the bytes kept of stdout and of stderr each
	// (default 1 MiB); the rest is dropped and Truncated set.
	MaxOutput int
}

// ExecResult is how a foreground command ended.
type ExecResult struct {
	ExitCode int // -1 when killed by a signal (timeout included)
	Stdout   string
	Stderr   string
	// TimedOut says the command ran past its timeout and was killed with
	// its whole process group.
	TimedOut bool
	// Truncated says output beyond MaxOutput was dropped.
	Truncated bool
	Duration  time.Duration
}

// ProcessInfo describes a background process.
type ProcessInfo struct {
	ID       string
	Command  string
	PID      int // inside the sandbox
	Running  bool
	ExitCode int // valid once !Running; -1 when killed by a signal
	Started  time.Time
	// OutputBytes is how much output (stdout and stderr together) it has
	// written so far.
	OutputBytes int64
}

// Output is a stretch of a background process's output (stdout and stderr
// interleaved as written).
type Output struct {
	Data string
	// Offset is where Data starts; Next is the offset to read from next.
	Offset, Next int64
	// Dropped counts bytes between the offset asked for and Offset that are
	// no longer kept (only the last MiBs of output are).
	Dropped int64
	Process ProcessInfo
}

// Sandbox is a computer with a shell (kind sandbox). Paths are inside the
// sandbox: relative ones are relative to /workspace, the run folder.
type Sandbox interface {
	Computer
	// Exec runs cmd with bash -lc in the foreground and waits for it (at most
	// opts.Timeout). A non-zero exit is a result, not an error.
	Exec(ctx context.Context, cmd string, opts ExecOptions) (ExecResult, error)
	// Start runs cmd in the background; it keeps running between calls
	// until Stop or Close.
	Start(ctx context.Context, cmd string, opts ExecOptions) (ProcessInfo, error)
	// Processes lists the background processes started, running or not.
	Processes(ctx context.Context) ([]ProcessInfo, error)
	// Output returns a background process's output from offset on.
	Output(ctx context.Context, id string, offset int64) (Output, error)
	// Stop ends a background process and its process group (SIGTERM, then
	// SIGKILL after a grace period).
	Stop(ctx context.Context, id string) (ProcessInfo, error)
	ReadFile(ctx context.Context, path string) ([]byte, error)
	WriteFile(ctx context.Context, path string, data []byte) error
}

// CheckMounts is the check every provider makes of Spec.Mounts before it mounts them: a source
// that exists on the host, an absolute target that is not the root, the run folder or inside it,
// nor the sandbox's own helper folder.
func CheckMounts(ms []Mount) error {
	for i, m := range ms {
		if !filepath.IsAbs(m.Source) || !filepath.IsAbs(m.Target) {
			return fmt.Errorf("mount %d (%s at %s): source and target must be absolute paths", i, m.Source, m.Target)
		}
		if _, err := os.Stat(m.Source); err != nil {
			return fmt.Errorf("mount %d: %w", i, err)
		}
		t := filepath.Clean(m.Target)
		if t == "/" || t == "/workspace" || strings.HasPrefix(t, "/workspace/") || t == "/.agentrun" || strings.HasPrefix(t, "/.agentrun/helper") || t == "/proc" || strings.HasPrefix(t, "/proc/") {
			return fmt.Errorf("mount %d: %s cannot be mounted over in a computer", i, m.Target)
		}
	}
	return nil
}

// SpawnOptions are the options of a process started with Spawner.Spawn.
type SpawnOptions struct {
	// Workdir is the working folder: relative to /workspace, or absolute inside the computer.
	// Default /workspace.
	Workdir string
	// Env adds environment variables ("NAME=value") to the computer's own (PATH, HOME, LANG,
	// TERM, TMPDIR); nothing of the host's environment is there.
	Env []string
}

// Spawner is a sandbox that runs long-lived interactive processes, their stdin, stdout and
// stderr streamed (an MCP server over stdio, a harness speaking its protocol): started inside
// the computer under its limits and namespaces, each in its own process group, killed by its
// Close and with the computer. The local and docker providers' sandboxes are Spawners.
type Spawner interface {
	// Spawn starts argv (argv[0] looked up on the computer's PATH when it has no slash) and
	// returns once it runs. The process lives until its Close or the computer's, not until ctx
	// ends: ctx bounds only the start. A command that is not in the computer is an *AgentError.
	Spawn(ctx context.Context, argv []string, opts SpawnOptions) (StdioProcess, error)
	// ForwardUnix listens on 127.0.0.1:port inside the computer (0, or a port in use: any free
	// one) and connects each connection made to it to the unix socket at socket (a path inside
	// the computer, a Mount of a host socket). It returns the address listened on; asked again
	// for the same socket, it returns the same address. The listener lives as long as the
	// computer: this is how a process inside a computer without network reaches one service of
	// the host's and nothing else.
	ForwardUnix(ctx context.Context, port int, socket string) (addr string, err error)
}

// StdioProcess is a process started by a Spawner.
type StdioProcess interface {
	// Stdin is the process's standard input; closing it closes the process's.
	Stdin() io.WriteCloser
	// Stdout and Stderr read what the process writes, to io.EOF once it has closed them (or
	// was killed). A reader that stops reading holds the process up once a window of output is
	// unread; it does not lose output.
	Stdout() io.Reader
	Stderr() io.Reader
	// PID is the process's id inside the computer.
	PID() int
	// Done is closed when the process has exited and its output has been read by the computer
	// (not necessarily by the caller); ExitCode is valid from then on: -1 when a signal killed it.
	Done() <-chan struct{}
	ExitCode() int
	// ExitStatus says how it ended, for people ("exit status 3", "killed by signal: killed"),
	// once Done.
	ExitStatus() string
	// Close kills the process and its process group at once and waits (bounded) for it to end.
	// It is safe to call more than once.
	Close() error
}

// Link is a link on a page.
type Link struct {
	Text string
	URL  string
}

// Page is what a browser shows after an action.
type Page struct {
	URL   string
	Title string
	// Text is the page's visible text (innerText of the body), cut to a
	// bound the provider states.
	Text  string
	Links []Link
	// Downloads lists files that finished downloading during the action, as
	// paths relative to the run folder.
	Downloads []string
}

// Target says what to click: an element matched by a CSS selector, or the
// first link or button whose text contains Text.
type Target struct {
	Selector string
	Text     string
}

// Browser is a computer with a web browser (kind browser).
type Browser interface {
	Computer
	// Open loads an http(s) URL and returns the page once loaded.
	Open(ctx context.Context, url string) (Page, error)
	// Current returns the page shown now.
	Current(ctx context.Context) (Page, error)
	// Click clicks target and returns the page after it (a navigation it
	// started included, and any download it started once finished).
	Click(ctx context.Context, target Target) (Page, error)
	// Type types text into the field selector matches, replacing its
	// value; with submit it then submits the field's form.
	Type(ctx context.Context, selector, text string, submit bool) (Page, error)
	// Screenshot saves a PNG of the viewport at path (relative to the run
	// folder; default screenshots/N.png) and returns that relative path.
	Screenshot(ctx context.Context, path string) (string, error)
}

// Screen is a computer whose screen a person can watch and drive (a browser
// handed to a person by a takeover). Coordinates are CSS pixels of the
// viewport, from its top-left corner; a Frame is the viewport as a JPEG of
// width×height pixels, so a point of the image is the point of the viewport
// with the same coordinates. A caller's mistake (a point outside the viewport,
// a key not offered) is an *AgentError.
type Screen interface {
	// Frame captures the viewport now.
	Frame(ctx context.Context) (jpeg []byte, width, height int, err error)
	// ClickAt clicks the left mouse button at (x, y): pressed, then released.
	ClickAt(ctx context.Context, x, y int) error
	// TypeText inserts text where the focus is, as typing would.
	TypeText(ctx context.Context, text string) error
	// Key presses and releases one key named as in ScreenKeys.
	Key(ctx context.Context, key string) error
}

// Desktop is a Linux sandbox with a screen (kind desktop): an X display the agent sees in
// screenshots and drives with the mouse and keyboard. Programs started with the sandbox's Exec
// and Start show on that display (DISPLAY is set for them). Coordinates are pixels of the
// screen from its top-left corner. As a Screen it can be watched and taken over by a person in
// the console, like a browser.
type Desktop interface {
	Sandbox
	Screen
	// Size is the screen's size in pixels.
	Size() (width, height int)
	// Shot captures the whole screen as a PNG.
	Shot(ctx context.Context) (png []byte, err error)
	// Mouse moves the pointer to (x, y) and, when button is not "", clicks it count times
	// (1 or 2). Buttons: "left", "middle", "right". A point off the screen, an unknown button
	// or a count other than 1 or 2 is an *AgentError.
	Mouse(ctx context.Context, x, y int, button string, count int) error
	// Drag presses the left button at (x1, y1), moves to (x2, y2) and releases it there.
	Drag(ctx context.Context, x1, y1, x2, y2 int) error
	// Scroll turns the wheel clicks times in direction ("up", "down", "left", "right") with
	// the pointer at (x, y).
	Scroll(ctx context.Context, x, y int, direction string, clicks int) error
	// Keys presses a key or key combination, named as xdotool names them ("Return",
	// "ctrl+s", "alt+F4", "shift+Tab"); several separated by spaces are pressed one after
	// another. An unknown key name is an *AgentError.
	Keys(ctx context.Context, combo string) error
}

// MaxTypeText bounds the text one Screen.TypeText types (a person's or an agent's).
const MaxTypeText = 10 << 10

// CheckTypeText is the check every Screen.TypeText makes first: some text, at most MaxTypeText
// bytes, valid UTF-8; a failure is the caller's mistake (an *AgentError).
func CheckTypeText(text string) error {
	switch {
	case text == "":
		return Agentf("no text to type")
	case len(text) > MaxTypeText:
		return Agentf("the text is %d bytes; at most %d are typed at once", len(text), MaxTypeText)
	case !utf8.ValidString(text):
		return Agentf("the text is not valid UTF-8")
	}
	return nil
}

// ScreenKeys are the keys Screen.Key presses, by their DOM key names.
var ScreenKeys = []string{"Enter", "Tab", "Backspace", "Delete", "Escape",
	"ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End", "PageUp", "PageDown"}

// AgentError is a mistake of the agent: the tool result says Msg and the run
// goes on.
type AgentError struct{ Msg string }

func (e *AgentError) Error() string { return e.Msg }

// Agentf makes an *AgentError.
func Agentf(format string, args ...any) error {
	return &AgentError{Msg: fmt.Sprintf(format, args...)}
}

// IsAgentError reports whether err is (or wraps) an *AgentError.
func IsAgentError(err error) bool {
	var ae *AgentError
	return errors.As(err, &ae)
}

// ErrClosed is returned by a computer used after Close, or whose processes
// died under it (its sandbox helper killed, Chromium gone): the caller
// should create it again.
var ErrClosed = errors.New("computer is closed")

// ErrNotStarted comes with ErrClosed when the call provably never reached the computer (it was
// closed or dead before the call was sent): nothing of it ran, so it may be made again on a new
// computer. ErrClosed without it means the call may have started (a command may have run part way)
// and must not be repeated silently.
var ErrNotStarted = errors.New("the call never reached the computer")

// NotStarted wraps ErrClosed and ErrNotStarted with what happened.
func NotStarted(what string) error { return fmt.Errorf("%w (%w): %s", ErrClosed, ErrNotStarted, what) }
