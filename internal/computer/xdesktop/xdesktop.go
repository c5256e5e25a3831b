// Package xdesktop drives an X display from inside a sandbox: it is the part of a desktop
// computer (kind desktop) that is the same whatever makes the sandbox. A provider starts its
// sandbox with Script as the command before its helper, so that an X server (Xvfb) is up on a
// display of the sandbox's own before the helper first answers, and with DISPLAY set for every
// command; New then wraps that computer.Sandbox into a computer.Desktop.
//
// Everything here runs through the sandbox's own Exec, ReadFile and WriteFile, like the
// agent's commands: the pointer and keyboard are driven with xdotool, and the screen is
// captured with xwd into a gzipped XWD file in the sandbox's /tmp, read back, decoded here
// (xwd.go) and encoded as PNG (Shot) or JPEG (Frame). The sandbox needs Xvfb (package xvfb),
// xdotool, xwd (x11-apps) and gzip.
//
// Xvfb listens on its socket in the sandbox's own /tmp only: not on TCP, and not on the
// abstract socket (-nolisten local), which lives in the network namespace and so would be
// reachable from outside when the sandbox shares a network namespace with others (the local
// provider's, with the network allowed, shares the host's). There is no window manager:
// windows have no frames and take the focus from the pointer.
package xdesktop

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"agentrun.dev/agentrun/internal/computer"
)

// The screen of a desktop that Script starts.
const (
	Width  = 1280
	Height = 800
	Depth  = 24
)

// Dir holds the desktop's own files in the sandbox: Xvfb's log and readiness file, screen
// captures, text to type. It is under /tmp, which must be writable and the sandbox's own.
const Dir = "/tmp/.agentrun-desktop"

const (
	// frameQuality is the JPEG quality of a frame, as the chromium browser's.
	frameQuality = 70
	// typeDelayMS is xdotool's delay between typed characters.
	typeDelayMS = 12
	// maxScroll bounds the wheel clicks of one Scroll.
	maxScroll = 50
	// xTimeout bounds one xdotool or xwd command (TypeText adds the time to type).
	xTimeout = 30 * time.Second
)

// Script is a shell script (for sh -c, its arguments the helper's argv) that starts Xvfb on
// display with a screen of Width×Height×Depth, waits until it accepts connections (it writes
// its display number to -displayfd then) and execs the helper. Xvfb is started from a
// subshell, so its parent is the sandbox's init, which reaps it should it exit. One line: it
// is in the command line of a process the agent sees.
func Script(display int) string {
	return strings.Join([]string{
		"set -u",
		"d=" + Dir,
		`mkdir -p "$d"`,
		fmt.Sprintf(`(Xvfb :%d -screen 0 %dx%dx%d -nolisten tcp -nolisten local -noreset -dpi 96 -displayfd 5 5>"$d/ready" </dev/null >"$d/xvfb.log" 2>&1 & echo $! >"$d/xvfb.pid")`,
			display, Width, Height, Depth),
		"i=0",
		`while [ ! -s "$d/ready" ]; do if [ $i -ge 300 ] || ! kill -0 "$(cat "$d/xvfb.pid")" 2>/dev/null; then { echo "Xvfb did not start:"; tail -n 20 "$d/xvfb.log"; } >&2; exit 1; fi; sleep 0.05; i=$((i+1)); done`,
		`exec "$@"`,
	}, "; ")
}

// Desktop is a sandbox with an X display: it implements computer.Desktop over any
// computer.Sandbox whose commands reach the display (DISPLAY set for them).
type Desktop struct {
	computer.Sandbox
	display       string
	width, height int

	act    sync.Mutex // one input action at a time (the agent's, or a person's in a takeover)
	shot   sync.Mutex // one capture at a time (they share a file)
	typeID atomic.Int64
}

var _ computer.Desktop = (*Desktop)(nil)

// New makes the desktop of sandbox s, whose X server is display (":99") with a screen of
// width×height: it checks that X clients in s reach the server and that the screen is that
// size. It does not close s when it fails.
func New(ctx context.Context, s computer.Sandbox, display string, width, height int) (*Desktop, error) {
	d := &Desktop{Sandbox: s, display: display, width: width, height: height}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	w, h, err := d.geometry(cctx)
	if err == nil && (w != d.width || h != d.height) {
		err = fmt.Errorf("the X screen is %d×%d, not %d×%d", w, h, d.width, d.height)
	}
	if err != nil {
		return nil, fmt.Errorf("desktop did not start: %w", err)
	}
	return d, nil
}

func (d *Desktop) Kind() computer.Kind { return computer.KindDesktop }

// Size is the screen's size in pixels.
func (d *Desktop) Size() (int, int) { return d.width, d.height }

// Display is the X display programs in the desktop show on (":99").
func (d *Desktop) Display() string { return d.display }

// Describe is the line of a desktop's Info that says what it is.
func (d *Desktop) Describe() string {
	return fmt.Sprintf("desktop: X display %s, screen %d×%d at %d bits (Xvfb), no window manager; mouse and keys through xdotool, screenshots through xwd",
		d.display, d.width, d.height, Depth)
}

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
	const file = Dir + "/shot.xwd.gz"
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
	if err := computer.CheckTypeText(text); err != nil {
		return err
	}
	file := fmt.Sprintf("%s/type-%d.txt", Dir, d.typeID.Add(1))
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
