package local

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"agentrun.dev/agentrun/internal/computer"
)

// A desktop (kind desktop) is a local sandbox, made exactly as one of kind sandbox, whose
// bwrap also runs an X server: Xvfb, started by a small shell script that then becomes the
// sandbox's helper, so the server is up before the helper first answers and Create returns.
// DISPLAY is set in the sandbox's environment, so the programs the agent starts with Exec and
// Start show on it. The desktop drives it with xdotool and captures it with xwd, each run in
// the sandbox like the agent's own commands; the screen comes back as an XWD file (gzipped) read from
// the sandbox's /tmp and decoded here (xwd.go), then encoded as PNG (Shot) or JPEG (Frame).
//
// Xvfb listens on its socket in the sandbox's own /tmp only: not on TCP, and not on the
// abstract socket (-nolisten local), which lives in the network namespace and so would be
// reachable from the host when the sandbox shares the host's network. There is no window
// manager: windows have no frames and take the focus from the pointer.

// The screen of a desktop.
const (
	screenWidth  = 1280
	screenHeight = 800
	screenDepth  = 24
)

// desktopPrograms are the programs a desktop runs from the host's /usr, by the Debian package
// each comes in.
var desktopPrograms = []struct{ name, pkg string }{
	{"Xvfb", "xvfb"}, {"xdotool", "xdotool"}, {"xwd", "x11-apps"}, {"gzip", "gzip"},
}

// desktopDir holds the desktop's own files in the sandbox: Xvfb's log and readiness file,
// screen captures, text to type.
const desktopDir = "/tmp/.agentrun-desktop"

const (
	// frameQuality is the JPEG quality of a frame, as the chromium browser's.
	frameQuality = 70
	// maxTypeText bounds the text one TypeText types.
	maxTypeText = 10 << 10
	// typeDelayMS is xdotool's delay between typed characters.
	typeDelayMS = 12
	// maxScroll bounds the wheel clicks of one Scroll.
	maxScroll = 50
	// xTimeout bounds one xdotool or xwd command (TypeText adds the time to type).
	xTimeout = 30 * time.Second
)

// KindAvailable says whether the provider makes computers of kind here (computer.KindChecker):
// a sandbox when it is Available; a desktop when, besides, Xvfb, xdotool, xwd and gzip are
// installed under /usr (the sandbox sees the host's /usr).
func (p *Provider) KindAvailable(ctx context.Context, kind computer.Kind) computer.Availability {
	switch kind {
	case computer.KindSandbox:
		return p.Available(ctx)
	case computer.KindDesktop:
		var names, missing, pkgs []string
		for _, prog := range desktopPrograms {
			names = append(names, prog.name)
			if !onSandboxPath(prog.name) {
				missing = append(missing, prog.name)
				pkgs = append(pkgs, prog.pkg)
			}
		}
		if len(missing) > 0 {
			return computer.Availability{Reason: fmt.Sprintf("a desktop needs %s; not installed: %s: apt-get install %s",
				strings.Join(names, ", "), strings.Join(missing, ", "), strings.Join(pkgs, " "))}
		}
		return p.Available(ctx)
	}
	return computer.Availability{Reason: fmt.Sprintf("the local provider makes sandbox and desktop computers, not %s", kind)}
}

// onSandboxPath reports whether an executable name is in a folder of the sandbox's PATH (on
// the host, whose /usr the sandbox shares).
func onSandboxPath(name string) bool {
	for _, dir := range filepath.SplitList(sandboxPath) {
		if st, err := os.Stat(filepath.Join(dir, name)); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return true
		}
	}
	return false
}

// freeDisplay picks the display number of a new desktop: 99 or the next one not taken by an X
// server of the host's network namespace. Xvfb in the sandbox does not listen on the abstract
// socket, but X clients try it first: a sandbox sharing the host's network must not pick a
// number whose abstract socket reaches an X server outside.
func freeDisplay() int {
	taken := map[int]bool{}
	if f, err := os.Open("/proc/net/unix"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) == 0 {
				continue
			}
			if n, ok := strings.CutPrefix(fields[len(fields)-1], "@/tmp/.X11-unix/X"); ok {
				if d, err := strconv.Atoi(n); err == nil {
					taken[d] = true
				}
			}
		}
		f.Close()
	}
	d := 99
	for taken[d] {
		d++
	}
	return d
}

// desktopScript starts Xvfb on display, waits until it accepts connections (it writes its
// display number to -displayfd then) and execs the helper (its arguments). Xvfb is started
// from a subshell, so its parent is the sandbox's init (bwrap), which reaps it should it exit.
// One line: it is in the command line of the sandbox's PID 1, which the agent sees.
func desktopScript(display int) string {
	return strings.Join([]string{
		"set -u",
		"d=" + desktopDir,
		`mkdir -p "$d"`,
		fmt.Sprintf(`(Xvfb :%d -screen 0 %dx%dx%d -nolisten tcp -nolisten local -noreset -dpi 96 -displayfd 5 5>"$d/ready" </dev/null >"$d/xvfb.log" 2>&1 & echo $! >"$d/xvfb.pid")`,
			display, screenWidth, screenHeight, screenDepth),
		"i=0",
		`while [ ! -s "$d/ready" ]; do if [ $i -ge 300 ] || ! kill -0 "$(cat "$d/xvfb.pid")" 2>/dev/null; then { echo "Xvfb did not start:"; tail -n 20 "$d/xvfb.log"; } >&2; exit 1; fi; sleep 0.05; i=$((i+1)); done`,
		`exec "$@"`,
	}, "; ")
}

func (p *Provider) createDesktop(ctx context.Context, spec computer.Spec) (computer.Computer, error) {
	if a := p.KindAvailable(ctx, computer.KindDesktop); !a.Available {
		return nil, errors.New(a.Reason)
	}
	display := freeDisplay()
	script := desktopScript(display)
	l := &launch{
		args: []string{"--setenv", "DISPLAY", fmt.Sprintf(":%d", display),
			// What GUI programs read besides: fonts (fontconfig) and X's own settings.
			"--ro-bind-try", "/etc/fonts", "/etc/fonts", "--ro-bind-try", "/etc/X11", "/etc/X11"},
		wrap: func(helper []string) []string {
			return append([]string{"/bin/sh", "-c", script, "agentrun-desktop"}, helper...)
		},
	}
	s, err := p.create(ctx, spec, l)
	if err != nil {
		return nil, err
	}
	d := &Desktop{Sandbox: s, display: fmt.Sprintf(":%d", display), width: screenWidth, height: screenHeight}
	// The helper answered, so Xvfb said it was ready; check that X clients reach it and that
	// the screen is the size asked for.
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	w, h, err := d.geometry(cctx)
	if err == nil && (w != d.width || h != d.height) {
		err = fmt.Errorf("the X screen is %d×%d, not %d×%d", w, h, d.width, d.height)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("desktop did not start: %w", err)
	}
	s.info = append(append([]string{s.info[0],
		fmt.Sprintf("desktop: X display %s, screen %d×%d at %d bits (Xvfb), no window manager; mouse and keys through xdotool, screenshots through xwd",
			d.display, d.width, d.height, screenDepth)}, s.info[1:]...),
		"Xvfb runs in the sandbox (its cgroup, no rlimits), listening only on its socket in the sandbox's /tmp")
	return d, nil
}

// Desktop is a running local desktop: a Sandbox with an X display. It implements
// computer.Desktop.
type Desktop struct {
	*Sandbox
	display       string
	width, height int

	act    sync.Mutex // one input action at a time (the agent's, or a person's in a takeover)
	shot   sync.Mutex // one capture at a time (they share a file)
	typeID atomic.Int64
}

var _ computer.Desktop = (*Desktop)(nil)

func (d *Desktop) Kind() computer.Kind { return computer.KindDesktop }

// Size is the screen's size in pixels.
func (d *Desktop) Size() (int, int) { return d.width, d.height }

// Display is the X display programs in the desktop show on (":99").
func (d *Desktop) Display() string { return d.display }

// xerr is the error of an X command (xdotool, xwd) that failed: computer.ErrClosed when the X
// server is gone, so the desktop is made again.
func (d *Desktop) xerr(ctx context.Context, what string, r computer.ExecResult) error {
	msg := strings.TrimSpace(r.Stderr)
	if r.TimedOut {
		msg = "timed out; " + msg
	}
	if strings.Contains(msg, "open display") || strings.Contains(msg, "XIO") || !d.xAlive(ctx) {
		return fmt.Errorf("%w: %s: the desktop's X server (Xvfb) is gone: %s", computer.ErrClosed, what, msg)
	}
	return fmt.Errorf("%s: exit %d: %s", what, r.ExitCode, msg)
}

// xAlive reports whether an X client reaches the desktop's X server.
func (d *Desktop) xAlive(ctx context.Context) bool {
	r, err := d.Sandbox.Exec(ctx, "exec xdotool getdisplaygeometry", computer.ExecOptions{Timeout: 10 * time.Second})
	return err == nil && r.ExitCode == 0
}

// x runs an X command in the sandbox (cmd is built here from checked values, never from text as
// given).
func (d *Desktop) x(ctx context.Context, what, cmd string, timeout time.Duration) (computer.ExecResult, error) {
	r, err := d.Sandbox.Exec(ctx, cmd, computer.ExecOptions{Timeout: timeout, MaxOutput: 64 << 10})
	if err != nil {
		return r, fmt.Errorf("%s: %w", what, err)
	}
	if r.ExitCode != 0 {
		return r, d.xerr(ctx, what, r)
	}
	return r, nil
}

// geometry asks the X server for the screen's size.
func (d *Desktop) geometry(ctx context.Context) (int, int, error) {
	r, err := d.x(ctx, "read the screen's size", "exec xdotool getdisplaygeometry", xTimeout)
	if err != nil {
		return 0, 0, err
	}
	var w, h int
	if _, err := fmt.Sscan(r.Stdout, &w, &h); err != nil {
		return 0, 0, fmt.Errorf("xdotool getdisplaygeometry said %q", r.Stdout)
	}
	return w, h, nil
}

// capture reads the whole screen.
func (d *Desktop) capture(ctx context.Context) (*image.RGBA, error) {
	d.shot.Lock()
	defer d.shot.Unlock()
	// Exec's output is text (invalid UTF-8 is replaced), so the capture goes through a file,
	// compressed: a screen is mostly flat, and gzip -1 makes its 4 MB a few tens of KB, faster
	// to send than to copy.
	const file = desktopDir + "/shot.xwd.gz"
	if _, err := d.x(ctx, "capture the screen", "set -o pipefail; xwd -root -silent | gzip -1 >"+file, xTimeout); err != nil {
		return nil, err
	}
	gz, err := d.Sandbox.ReadFile(ctx, file)
	if err != nil {
		if computer.IsAgentError(err) {
			// The file is the desktop's, not the agent's: not the agent's mistake.
			return nil, fmt.Errorf("read the screen capture: %s", err)
		}
		return nil, fmt.Errorf("read the screen capture: %w", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("read the screen capture: %w", err)
	}
	// The file is in the sandbox, which could put anything there: read at most what a screen
	// of this size takes (pixels, the header and 256 colours, with room to spare).
	b, err := io.ReadAll(io.LimitReader(zr, int64(d.width)*int64(d.height)*4+1<<20))
	if err != nil {
		return nil, fmt.Errorf("read the screen capture: %w", err)
	}
	img, err := decodeXWD(b)
	if err != nil {
		return nil, fmt.Errorf("capture the screen: %w", err)
	}
	return img, nil
}

// Shot captures the whole screen as a PNG.
func (d *Desktop) Shot(ctx context.Context) ([]byte, error) {
	img, err := d.capture(ctx)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Frame captures the screen as a JPEG, for a person watching (computer.Screen).
func (d *Desktop) Frame(ctx context.Context) ([]byte, int, int, error) {
	img, err := d.capture(ctx)
	if err != nil {
		return nil, 0, 0, err
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: frameQuality}); err != nil {
		return nil, 0, 0, err
	}
	return buf.Bytes(), img.Rect.Dx(), img.Rect.Dy(), nil
}

// onScreen checks a point.
func (d *Desktop) onScreen(x, y int) error {
	if x < 0 || y < 0 || x >= d.width || y >= d.height {
		return computer.Agentf("(%d, %d) is off the screen: x must be 0..%d and y 0..%d", x, y, d.width-1, d.height-1)
	}
	return nil
}

// buttons are the mouse buttons by name, as X numbers them.
var buttons = map[string]int{"left": 1, "middle": 2, "right": 3}

// Mouse moves the pointer to (x, y) and, when button is not "", clicks it count times.
func (d *Desktop) Mouse(ctx context.Context, x, y int, button string, count int) error {
	if err := d.onScreen(x, y); err != nil {
		return err
	}
	cmd := fmt.Sprintf("exec xdotool mousemove %d %d", x, y)
	what := fmt.Sprintf("move the mouse to (%d, %d)", x, y)
	if button != "" {
		b, ok := buttons[button]
		if !ok {
			return computer.Agentf("no mouse button %q: the buttons are left, middle and right", button)
		}
		if count != 1 && count != 2 {
			return computer.Agentf("a click is 1 or 2 presses of the button (a double click), not %d", count)
		}
		// xdotool waits --delay after each click (100 ms unless told): a double click's two
		// are 50 ms apart, well inside any program's double-click time.
		cmd += fmt.Sprintf(" click --repeat %d --delay %d %d", count, map[int]int{1: 0, 2: 50}[count], b)
		what = fmt.Sprintf("click the %s button at (%d, %d)", button, x, y)
	}
	d.act.Lock()
	defer d.act.Unlock()
	_, err := d.x(ctx, what, cmd, xTimeout)
	return err
}

// ClickAt clicks the left button at (x, y) (computer.Screen).
func (d *Desktop) ClickAt(ctx context.Context, x, y int) error { return d.Mouse(ctx, x, y, "left", 1) }

// Drag presses the left button at (x1, y1), moves to (x2, y2) by way of the midpoint (a program
// may want to see motion with the button down) and releases it there.
func (d *Desktop) Drag(ctx context.Context, x1, y1, x2, y2 int) error {
	if err := d.onScreen(x1, y1); err != nil {
		return err
	}
	if err := d.onScreen(x2, y2); err != nil {
		return err
	}
	cmd := fmt.Sprintf("xdotool mousemove %d %d mousedown 1 sleep 0.05 mousemove %d %d sleep 0.05 mousemove %d %d sleep 0.05 mouseup 1"+
		` || { r=$?; xdotool mouseup 1; exit $r; }`, x1, y1, (x1+x2)/2, (y1+y2)/2, x2, y2)
	d.act.Lock()
	defer d.act.Unlock()
	_, err := d.x(ctx, fmt.Sprintf("drag from (%d, %d) to (%d, %d)", x1, y1, x2, y2), cmd, xTimeout)
	return err
}

// wheel are the wheel's directions as X's buttons.
var wheel = map[string]int{"up": 4, "down": 5, "left": 6, "right": 7}

// Scroll turns the wheel clicks times in direction with the pointer at (x, y).
func (d *Desktop) Scroll(ctx context.Context, x, y int, direction string, clicks int) error {
	if err := d.onScreen(x, y); err != nil {
		return err
	}
	b, ok := wheel[direction]
	if !ok {
		return computer.Agentf("no scroll direction %q: the directions are up, down, left and right", direction)
	}
	if clicks < 1 || clicks > maxScroll {
		return computer.Agentf("scroll clicks must be 1..%d, not %d", maxScroll, clicks)
	}
	d.act.Lock()
	defer d.act.Unlock()
	_, err := d.x(ctx, fmt.Sprintf("scroll %s at (%d, %d)", direction, x, y),
		fmt.Sprintf("exec xdotool mousemove %d %d click --repeat %d --delay 30 %d", x, y, clicks, b), xTimeout)
	return err
}

// keyNameOK reports whether a key combination is made of key names as xdotool spells them
// (letters, digits and _, joined by +): anything else is no key name, and is never put into a
// command.
func keyNameOK(combo string) bool {
	for _, k := range strings.Split(combo, "+") {
		if k == "" {
			return false
		}
		for _, r := range k {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
				return false
			}
		}
	}
	return true
}

// Keys presses a key or key combination ("Return", "ctrl+s"), or several separated by spaces,
// one after another.
func (d *Desktop) Keys(ctx context.Context, combo string) error {
	keys := strings.Fields(combo)
	if len(keys) == 0 {
		return computer.Agentf("no key to press: name one as xdotool does, e.g. Return, ctrl+s, alt+F4")
	}
	if len(keys) > 50 {
		return computer.Agentf("%d keys at once; at most 50", len(keys))
	}
	for _, k := range keys {
		if !keyNameOK(k) {
			return computer.Agentf("%q is not a key name: key names are letters, digits and _ as X names keys "+
				"(Return, Tab, BackSpace, Left, F5, a, minus, plus), joined by + for combinations (ctrl+s, ctrl+shift+Tab)", k)
		}
	}
	return d.keys(ctx, keys)
}

// keys presses keys, names checked by keyNameOK, one after another.
func (d *Desktop) keys(ctx context.Context, keys []string) error {
	d.act.Lock()
	defer d.act.Unlock()
	r, err := d.x(ctx, "press "+strings.Join(keys, " "), "exec xdotool key --delay 20 "+strings.Join(keys, " "), xTimeout)
	if err != nil {
		return err
	}
	// xdotool skips a name it does not know, says so on stderr, and exits 0.
	var unknown []string
	for _, line := range strings.Split(r.Stderr, "\n") {
		_, rest, ok := strings.Cut(line, "No such key name '")
		if !ok {
			continue
		}
		if name, _, ok := strings.Cut(rest, "'"); ok && !contains(unknown, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		return computer.Agentf("no key named %s (X key names are like Return, Escape, BackSpace, Left, Page_Down, F5, ctrl, alt, shift, super; "+
			"the others of %q were pressed)", strings.Join(quoteAll(unknown), ", "), strings.Join(keys, " "))
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func quoteAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = strconv.Quote(s)
	}
	return out
}

// screenKeys maps the keys Screen.Key presses (computer.ScreenKeys, DOM names) to X key names.
var screenKeys = map[string]string{
	"Enter": "Return", "Tab": "Tab", "Backspace": "BackSpace", "Delete": "Delete", "Escape": "Escape",
	"ArrowLeft": "Left", "ArrowRight": "Right", "ArrowUp": "Up", "ArrowDown": "Down",
	"Home": "Home", "End": "End", "PageUp": "Prior", "PageDown": "Next",
}

// Key presses and releases one of computer.ScreenKeys (computer.Screen).
func (d *Desktop) Key(ctx context.Context, key string) error {
	k, ok := screenKeys[key]
	if !ok {
		return computer.Agentf("no key %q: the keys are %s", key, strings.Join(computer.ScreenKeys, ", "))
	}
	return d.keys(ctx, []string{k})
}

// TypeText types text where the focus is, as typing it key by key would. The text reaches
// xdotool in a file, never through the shell.
func (d *Desktop) TypeText(ctx context.Context, text string) error {
	if text == "" {
		return computer.Agentf("no text to type")
	}
	if len(text) > maxTypeText {
		return computer.Agentf("the text is %d bytes; at most %d are typed at once", len(text), maxTypeText)
	}
	if !utf8.ValidString(text) {
		return computer.Agentf("the text is not valid UTF-8")
	}
	file := fmt.Sprintf("%s/type-%d.txt", desktopDir, d.typeID.Add(1))
	d.act.Lock()
	defer d.act.Unlock()
	if err := d.Sandbox.WriteFile(ctx, file, []byte(text)); err != nil {
		if computer.IsAgentError(err) {
			return fmt.Errorf("write the text to type: %s", err)
		}
		return fmt.Errorf("write the text to type: %w", err)
	}
	timeout := xTimeout + time.Duration(utf8.RuneCountInString(text)*typeDelayMS*2)*time.Millisecond
	_, err := d.x(ctx, "type", fmt.Sprintf(`xdotool type --delay %d --file %s; r=$?; rm -f %s; exit $r`, typeDelayMS, file, file), timeout)
	return err
}
