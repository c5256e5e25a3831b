package computertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/computer"
)

// desktopChecks are the sandbox's checks (a desktop is a sandbox), run on desktops, and the
// desktop's own. The input checks watch a program's X events with xev (package x11-utils) and
// paint the screen with xsetroot (x11-xserver-utils), run in the desktop; without them they
// are skipped.
var desktopChecks = append(append([]Check(nil), sandboxChecks...),
	Check{"DesktopScreen", checkDesktopScreen},
	Check{"DesktopShotPixels", checkDesktopPixels},
	Check{"DesktopInput", checkDesktopInput},
	Check{"DesktopMistakes", checkDesktopMistakes},
	Check{"DesktopXServerGone", checkDesktopXGone},
	Check{"DesktopCleanup", checkDesktopCleanup},
)

func desktop(e *Env, run string) (computer.Desktop, string, error) {
	c, dir, err := e.New(run, nil)
	if err != nil {
		return nil, "", err
	}
	d, ok := c.(computer.Desktop)
	if !ok {
		return nil, "", fmt.Errorf("provider %s made a %T for kind desktop, which is not a computer.Desktop", e.Provider.Name(), c)
	}
	if c.Kind() != computer.KindDesktop {
		return nil, "", fmt.Errorf("a desktop says its kind is %s", c.Kind())
	}
	return d, dir, nil
}

// needProgram skips the check when program is not in the desktop.
func needProgram(e *Env, d computer.Desktop, program, pkg string) error {
	r, err := exec(e, d, "command -v "+program, 30*time.Second)
	if err != nil {
		return err
	}
	if r.ExitCode != 0 {
		return Skip{Reason: fmt.Sprintf("%s is not installed in the desktop (Debian package %s)", program, pkg)}
	}
	return nil
}

func checkDesktopScreen(e *Env) error {
	d, _, err := desktop(e, "screen")
	if err != nil {
		return err
	}
	w, h := d.Size()
	if w < 640 || h < 480 {
		return fmt.Errorf("the screen is %d×%d, smaller than 640×480", w, h)
	}
	shot, err := d.Shot(e.Ctx)
	if err != nil {
		return fmt.Errorf("shot: %w", err)
	}
	if !bytes.HasPrefix(shot, pngMagic) {
		return fmt.Errorf("a shot is not a PNG (%d bytes)", len(shot))
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(shot))
	if err != nil {
		return fmt.Errorf("a shot does not decode: %v", err)
	}
	if cfg.Width != w || cfg.Height != h {
		return fmt.Errorf("a shot is %d×%d, the screen %d×%d", cfg.Width, cfg.Height, w, h)
	}
	frame, fw, fh, err := d.Frame(e.Ctx)
	if err != nil {
		return fmt.Errorf("frame: %w", err)
	}
	jc, err := jpeg.DecodeConfig(bytes.NewReader(frame))
	if err != nil {
		return fmt.Errorf("a frame is not a JPEG: %v", err)
	}
	if jc.Width != fw || jc.Height != fh || fw != w || fh != h {
		return fmt.Errorf("a frame is %d×%d and says %d×%d; the screen is %d×%d", jc.Width, jc.Height, fw, fh, w, h)
	}
	// Programs the agent starts find the display.
	out, err := want(e, d, `echo "$DISPLAY"`)
	if err != nil {
		return err
	}
	if strings.TrimSpace(out) == "" {
		return errors.New("DISPLAY is not set for the desktop's commands")
	}
	info := strings.Join(d.Info(), "\n")
	if !strings.Contains(info, "desktop") || !strings.Contains(info, fmt.Sprintf("%d×%d", w, h)) {
		return fmt.Errorf("Info does not say it is a desktop of %d×%d:\n%s", w, h, info)
	}
	return nil
}

func checkDesktopPixels(e *Env) error {
	d, _, err := desktop(e, "pixels")
	if err != nil {
		return err
	}
	if err := needProgram(e, d, "xsetroot", "x11-xserver-utils"); err != nil {
		return err
	}
	if _, err := want(e, d, `xsetroot -solid '#ff0000'`); err != nil {
		return err
	}
	shot, err := d.Shot(e.Ctx)
	if err != nil {
		return err
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		return err
	}
	b := img.Bounds()
	for _, p := range []image.Point{{0, 0}, {b.Dx() - 1, 0}, {0, b.Dy() - 1}, {b.Dx() - 1, b.Dy() - 1}, {b.Dx() / 2, b.Dy() / 2}, {17, 311}} {
		r, g, bl, _ := img.At(p.X, p.Y).RGBA()
		if r>>8 != 0xff || g>>8 != 0 || bl>>8 != 0 {
			return fmt.Errorf("after xsetroot -solid '#ff0000' the shot's pixel at %v is #%02x%02x%02x", p, r>>8, g>>8, bl>>8)
		}
	}
	frame, _, _, err := d.Frame(e.Ctx)
	if err != nil {
		return err
	}
	fimg, err := jpeg.Decode(bytes.NewReader(frame))
	if err != nil {
		return err
	}
	if r, g, bl, _ := fimg.At(b.Dx()/2, b.Dy()/2).RGBA(); r>>8 < 0xe0 || g>>8 > 0x20 || bl>>8 > 0x20 {
		return fmt.Errorf("after xsetroot -solid '#ff0000' the frame's middle is #%02x%02x%02x", r>>8, g>>8, bl>>8)
	}
	return nil
}

// xevent is one event xev printed.
type xevent struct {
	Type           string // ButtonPress, KeyPress, MotionNotify...
	X, Y           int    // in the window
	RootX, RootY   int
	Button         int
	Keysym         string // "a", "Return", "Control_L"
	State          int
	HasCoordinates bool
}

var (
	xevCoords = regexp.MustCompile(`\((-?\d+),(-?\d+)\), root:\((-?\d+),(-?\d+)\)`)
	xevButton = regexp.MustCompile(`button (\d+)`)
	xevKeysym = regexp.MustCompile(`\(keysym 0x[0-9a-f]+, ([^)]+)\)`)
	xevState  = regexp.MustCompile(`state 0x([0-9a-f]+)`)
)

// parseXev parses xev's output: blocks separated by blank lines, each starting with the event's name.
func parseXev(out string) []xevent {
	var evs []xevent
	for _, block := range strings.Split(out, "\n\n") {
		block = strings.TrimSpace(block)
		name, _, ok := strings.Cut(block, " event,")
		if !ok || strings.ContainsAny(name, " \n") {
			continue
		}
		ev := xevent{Type: name}
		if m := xevCoords.FindStringSubmatch(block); m != nil {
			ev.X, _ = strconv.Atoi(m[1])
			ev.Y, _ = strconv.Atoi(m[2])
			ev.RootX, _ = strconv.Atoi(m[3])
			ev.RootY, _ = strconv.Atoi(m[4])
			ev.HasCoordinates = true
		}
		if m := xevButton.FindStringSubmatch(block); m != nil {
			ev.Button, _ = strconv.Atoi(m[1])
		}
		if m := xevKeysym.FindStringSubmatch(block); m != nil {
			ev.Keysym = m[1]
		}
		if m := xevState.FindStringSubmatch(block); m != nil {
			s, _ := strconv.ParseInt(m[1], 16, 64)
			ev.State = int(s)
		}
		evs = append(evs, ev)
	}
	return evs
}

// xevWatch is a running xev and what it printed so far.
type xevWatch struct {
	e    *Env
	d    computer.Desktop
	id   string
	out  strings.Builder
	next int64
	seen int // events already matched
}

// read reads what xev printed since the last read.
func (x *xevWatch) read() error {
	for {
		o, err := x.d.Output(x.e.Ctx, x.id, x.next)
		if err != nil {
			return err
		}
		x.out.WriteString(o.Data)
		x.next = o.Next
		if o.Next >= o.Process.OutputBytes {
			if !o.Process.Running {
				return fmt.Errorf("xev exited %d:\n%s", o.Process.ExitCode, x.out.String())
			}
			return nil
		}
	}
}

// await waits until the events after those matched so far include, in order, ones matching
// each of match, and moves past the last.
func (x *xevWatch) await(what string, match ...func(xevent) bool) ([]xevent, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := x.read(); err != nil {
			return nil, err
		}
		// Whole lines only (xev's output is line-buffered): an event's last line may still be
		// on its way, and then the event matches nothing yet.
		text := x.out.String()
		text = text[:strings.LastIndex(text, "\n")+1]
		evs := parseXev(text)
		var got []xevent
		j := 0
		for i := x.seen; i < len(evs) && j < len(match); i++ {
			if match[j](evs[i]) {
				got = append(got, evs[i])
				j++
				if j == len(match) {
					x.seen = i + 1
					return got, nil
				}
			}
		}
		if time.Now().After(deadline) {
			var rest []string
			for _, ev := range evs[min(x.seen, len(evs)):] {
				rest = append(rest, fmt.Sprintf("%+v", ev))
			}
			return nil, fmt.Errorf("%s: no matching X events in 10 s; the window got:\n%s", what, strings.Join(rest, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func button(typ string, b, rx, ry int) func(xevent) bool {
	return func(ev xevent) bool {
		return ev.Type == typ && ev.Button == b && (rx < 0 || ev.RootX == rx && ev.RootY == ry)
	}
}

func keyPress(keysym string) func(xevent) bool {
	return func(ev xevent) bool { return ev.Type == "KeyPress" && ev.Keysym == keysym }
}

func checkDesktopInput(e *Env) error {
	d, dir, err := desktop(e, "input")
	if err != nil {
		return err
	}
	if err := needProgram(e, d, "xev", "x11-utils"); err != nil {
		return err
	}
	// A window of 400×300 at (100, 100). With no window manager it is where it asks to be; with
	// one, it may be moved, so positions in the window are checked against the first click.
	p, err := d.Start(e.Ctx, "exec stdbuf -oL xev -geometry 400x300+100+100 -name conformance", computer.ExecOptions{})
	if err != nil {
		return err
	}
	x := &xevWatch{e: e, d: d, id: p.ID}
	if _, err := x.await("the window shows", func(ev xevent) bool { return ev.Type == "Expose" }); err != nil {
		return err
	}

	// A left click.
	if err := d.Mouse(e.Ctx, 150, 170, "left", 1); err != nil {
		return fmt.Errorf("left click: %w", err)
	}
	evs, err := x.await("a left click at (150, 170)", button("ButtonPress", 1, 150, 170), button("ButtonRelease", 1, 150, 170))
	if err != nil {
		return err
	}
	// The window's inside starts at (100, 100) plus its border (none to a few pixels).
	ox, oy := 150-evs[0].X, 170-evs[0].Y
	if ox != oy || ox < 100 || ox > 110 {
		return fmt.Errorf("a click at (150, 170) of the screen came to the window at (%d, %d); want about (50, 70) in a window at (100, 100)", evs[0].X, evs[0].Y)
	}
	if err := d.Mouse(e.Ctx, 200, 220, "right", 1); err != nil {
		return fmt.Errorf("right click: %w", err)
	}
	if evs, err = x.await("a right click at (200, 220)", button("ButtonPress", 3, 200, 220)); err != nil {
		return err
	}
	if evs[0].X != 200-ox || evs[0].Y != 220-oy {
		return fmt.Errorf("a right click at (200, 220) came to the window at (%d, %d), want (%d, %d)", evs[0].X, evs[0].Y, 200-ox, 220-oy)
	}
	if err := d.Mouse(e.Ctx, 210, 230, "left", 2); err != nil {
		return fmt.Errorf("double click: %w", err)
	}
	if _, err := x.await("a double click", button("ButtonPress", 1, 210, 230), button("ButtonRelease", 1, 210, 230),
		button("ButtonPress", 1, 210, 230), button("ButtonRelease", 1, 210, 230)); err != nil {
		return err
	}
	if err := d.ClickAt(e.Ctx, 160, 180); err != nil {
		return fmt.Errorf("ClickAt: %w", err)
	}
	if _, err := x.await("ClickAt(160, 180)", button("ButtonPress", 1, 160, 180)); err != nil {
		return err
	}
	// Just a move: motion, no button.
	if err := d.Mouse(e.Ctx, 300, 250, "", 0); err != nil {
		return fmt.Errorf("move: %w", err)
	}
	if _, err := x.await("a move to (300, 250)", func(ev xevent) bool {
		return ev.Type == "MotionNotify" && ev.RootX == 300 && ev.RootY == 250
	}); err != nil {
		return err
	}

	// Typing, with characters a shell would take for its own: they are typed, not run.
	text := `hi $(touch pwned);'"`
	if err := d.TypeText(e.Ctx, text); err != nil {
		return fmt.Errorf("type: %w", err)
	}
	var keys []func(xevent) bool
	for _, k := range []string{"h", "i", "space", "dollar", "parenleft", "t", "o", "u", "c", "h", "space", "p", "w", "n", "e", "d", "parenright", "semicolon", "apostrophe", "quotedbl"} {
		keys = append(keys, keyPress(k))
	}
	if _, err := x.await(fmt.Sprintf("typing %q", text), keys...); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		return fmt.Errorf("typing %q ran a command", text)
	}
	if r, _ := exec(e, d, "ls /workspace/pwned /tmp/pwned pwned 2>/dev/null", 30*time.Second); strings.TrimSpace(r.Stdout) != "" {
		return fmt.Errorf("typing %q ran a command: %s", text, r.Stdout)
	}

	// A combination, then keys one after another.
	if err := d.Keys(e.Ctx, "ctrl+a"); err != nil {
		return fmt.Errorf("keys ctrl+a: %w", err)
	}
	if _, err := x.await("ctrl+a", keyPress("Control_L"), func(ev xevent) bool {
		return ev.Type == "KeyPress" && ev.Keysym == "a" && ev.State&4 != 0
	}); err != nil {
		return err
	}
	if err := d.Keys(e.Ctx, "Return shift+Tab F5"); err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	if _, err := x.await("Return shift+Tab F5", keyPress("Return"), keyPress("Shift_L"), func(ev xevent) bool {
		return ev.Type == "KeyPress" && (ev.Keysym == "Tab" || ev.Keysym == "ISO_Left_Tab") && ev.State&1 != 0
	}, keyPress("F5")); err != nil {
		return err
	}
	// The Screen's keys, by their DOM names.
	for _, k := range [][2]string{{"Enter", "Return"}, {"ArrowLeft", "Left"}, {"Backspace", "BackSpace"}, {"PageDown", "Next"}, {"PageUp", "Prior"}} {
		if err := d.Key(e.Ctx, k[0]); err != nil {
			return fmt.Errorf("key %s: %w", k[0], err)
		}
		if _, err := x.await("Screen key "+k[0], keyPress(k[1])); err != nil {
			return err
		}
	}

	// The wheel: X buttons 4 (up), 5 (down), 6 (left), 7 (right).
	if err := d.Scroll(e.Ctx, 250, 260, "down", 2); err != nil {
		return fmt.Errorf("scroll: %w", err)
	}
	if _, err := x.await("scrolling down twice", button("ButtonPress", 5, 250, 260), button("ButtonPress", 5, 250, 260)); err != nil {
		return err
	}
	if err := d.Scroll(e.Ctx, 250, 260, "left", 1); err != nil {
		return fmt.Errorf("scroll: %w", err)
	}
	if _, err := x.await("scrolling left", button("ButtonPress", 6, 250, 260)); err != nil {
		return err
	}

	// A drag: pressed at the start, moved with the button down, released at the end.
	if err := d.Drag(e.Ctx, 120, 130, 380, 350); err != nil {
		return fmt.Errorf("drag: %w", err)
	}
	if _, err := x.await("a drag from (120, 130) to (380, 350)", button("ButtonPress", 1, 120, 130),
		func(ev xevent) bool { return ev.Type == "MotionNotify" && ev.State&0x100 != 0 },
		button("ButtonRelease", 1, 380, 350)); err != nil {
		return err
	}
	return nil
}

func checkDesktopMistakes(e *Env) error {
	d, _, err := desktop(e, "mistakes")
	if err != nil {
		return err
	}
	w, h := d.Size()
	agentErr := func(what string, err error, mention ...string) error {
		if !computer.IsAgentError(err) {
			return fmt.Errorf("%s: %v, want an agent error", what, err)
		}
		for _, m := range mention {
			if !strings.Contains(err.Error(), m) {
				return fmt.Errorf("%s: %q does not mention %q", what, err.Error(), m)
			}
		}
		return nil
	}
	ctx := e.Ctx
	for _, c := range []struct {
		what    string
		err     error
		mention []string
	}{
		{"a click left of the screen", d.Mouse(ctx, -1, 10, "left", 1), []string{"-1", strconv.Itoa(w - 1)}},
		{"a click right of the screen", d.Mouse(ctx, w, 10, "left", 1), []string{strconv.Itoa(w), strconv.Itoa(w - 1)}},
		{"a click below the screen", d.Mouse(ctx, 10, h, "", 0), []string{strconv.Itoa(h), strconv.Itoa(h - 1)}},
		{"ClickAt off the screen", d.ClickAt(ctx, w+5, 0), []string{strconv.Itoa(w + 5)}},
		{"an unknown button", d.Mouse(ctx, 10, 10, "side", 1), []string{`"side"`, "left", "middle", "right"}},
		{"three clicks", d.Mouse(ctx, 10, 10, "left", 3), []string{"3", "1", "2"}},
		{"no clicks of a button", d.Mouse(ctx, 10, 10, "left", 0), []string{"0"}},
		{"a drag from off the screen", d.Drag(ctx, -5, 10, 20, 20), []string{"-5"}},
		{"a drag to off the screen", d.Drag(ctx, 5, 10, 20, h+1), []string{strconv.Itoa(h + 1)}},
		{"a scroll off the screen", d.Scroll(ctx, 10, -2, "down", 1), []string{"-2"}},
		{"an unknown direction", d.Scroll(ctx, 10, 10, "sideways", 1), []string{`"sideways"`, "up", "down"}},
		{"no scroll clicks", d.Scroll(ctx, 10, 10, "up", 0), []string{"0"}},
		{"too many scroll clicks", d.Scroll(ctx, 10, 10, "up", 100000), []string{"100000"}},
		{"an unknown key", d.Keys(ctx, "NoSuchKeyAtAll"), []string{"NoSuchKeyAtAll"}},
		{"an unknown key in a combination", d.Keys(ctx, "ctrl+NoSuchKeyAtAll"), []string{"NoSuchKeyAtAll"}},
		{"no key", d.Keys(ctx, "  "), nil},
		{"a key name with a shell in it", d.Keys(ctx, "a;touch /tmp/x"), []string{"a;touch"}},
		{"a Screen key not offered", d.Key(ctx, "F13"), []string{`"F13"`, "Enter"}},
		{"no text", d.TypeText(ctx, ""), nil},
	} {
		if err := agentErr(c.what, c.err, c.mention...); err != nil {
			return err
		}
	}
	// The desktop still works.
	if err := d.Mouse(ctx, w-1, h-1, "left", 1); err != nil {
		return fmt.Errorf("a click at the screen's last pixel: %w", err)
	}
	if err := d.Keys(ctx, "Escape"); err != nil {
		return err
	}
	return nil
}

// xServers are the names of X servers a desktop may run.
var xServers = []string{"Xvfb", "Xvnc", "Xorg", "Xtigervnc", "Xvnc-core"}

func checkDesktopXGone(e *Env) error {
	d, _, err := desktop(e, "xgone")
	if err != nil {
		return err
	}
	kill := `n=0; for p in /proc/[0-9]*; do c=$(cat $p/comm 2>/dev/null); case " ` + strings.Join(xServers, " ") + ` " in *" $c "*) kill -9 ${p#/proc/} && n=$((n+1));; esac; done; echo $n`
	out, err := want(e, d, kill)
	if err != nil {
		return err
	}
	if strings.TrimSpace(out) == "0" {
		return Skip{Reason: "no X server process (" + strings.Join(xServers, ", ") + ") is visible in the desktop"}
	}
	ctx, cancel := context.WithTimeout(e.Ctx, 60*time.Second)
	defer cancel()
	if _, err := d.Shot(ctx); !errors.Is(err, computer.ErrClosed) {
		return fmt.Errorf("a shot with the X server killed: %v, want computer.ErrClosed", err)
	}
	if err := d.Mouse(ctx, 10, 10, "left", 1); !errors.Is(err, computer.ErrClosed) {
		return fmt.Errorf("a click with the X server killed: %v, want computer.ErrClosed", err)
	}
	return nil
}

// pidNamespace is implemented by local providers whose computer's processes are one PID
// namespace of the host.
type pidNamespace interface{ PIDNamespace() string }

// hostXServers lists the host PIDs of X servers in PID namespace ns.
func hostXServers(ns string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, ent := range entries {
		if _, err := strconv.Atoi(ent.Name()); err != nil {
			continue
		}
		link, err := os.Readlink(filepath.Join("/proc", ent.Name(), "ns", "pid"))
		if err != nil || link != ns {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "comm"))
		stat, _ := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			continue
		}
		for _, x := range xServers {
			if err == nil && strings.TrimSpace(string(comm)) == x {
				out = append(out, ent.Name())
			}
		}
	}
	return out
}

func checkDesktopCleanup(e *Env) error {
	d, _, err := desktop(e, "xcleanup")
	if err != nil {
		return err
	}
	ns := ""
	if p, ok := d.(pidNamespace); ok {
		ns = p.PIDNamespace()
		if len(hostXServers(ns)) == 0 {
			return fmt.Errorf("no X server (%s) of the desktop visible on the host before Close; the check would prove nothing",
				strings.Join(xServers, ", "))
		}
	}
	if err := d.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	if ns != "" {
		if left := hostXServers(ns); len(left) > 0 {
			return fmt.Errorf("the desktop's X server survives Close: host PIDs %v", left)
		}
	}
	ctx, cancel := context.WithTimeout(e.Ctx, 10*time.Second)
	defer cancel()
	if _, err := d.Shot(ctx); !errors.Is(err, computer.ErrClosed) {
		return fmt.Errorf("a shot after Close: %v, want computer.ErrClosed", err)
	}
	if err := d.Close(); err != nil {
		return fmt.Errorf("second close: %w", err)
	}
	return nil
}
