package local

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/computer/xdesktop"
)

// A desktop (kind desktop) is a local sandbox, made exactly as one of kind sandbox, whose
// bwrap also runs an X server: Xvfb, started by xdesktop.Script, which then becomes the
// sandbox's helper, so the server is up before the helper first answers and Create returns.
// DISPLAY is set in the sandbox's environment, so the programs the agent starts with Exec and
// Start show on it. Package xdesktop drives and captures the screen through the sandbox (with
// xdotool and xwd, run in it like the agent's own commands).
//
// Xvfb listens on its socket in the sandbox's own /tmp only: not on TCP, and not on the
// abstract socket, which lives in the network namespace (every sandbox has its own now, with
// the network allowed too, so that and freeDisplay are belt and braces).

// desktopPrograms are the programs a desktop runs from the host's /usr, by the Debian package
// each comes in.
var desktopPrograms = []struct{ name, pkg string }{
	{"Xvfb", "xvfb"}, {"xdotool", "xdotool"}, {"xwd", "x11-apps"}, {"gzip", "gzip"},
}

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

func (p *Provider) createDesktop(ctx context.Context, spec computer.Spec) (computer.Computer, error) {
	if a := p.KindAvailable(ctx, computer.KindDesktop); !a.Available {
		return nil, errors.New(a.Reason)
	}
	display := freeDisplay()
	script := xdesktop.Script(display)
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
	// The helper answered, so Xvfb said it was ready; New checks that X clients reach it and
	// that the screen is the size asked for.
	xd, err := xdesktop.New(ctx, s, fmt.Sprintf(":%d", display), xdesktop.Width, xdesktop.Height)
	if err != nil {
		s.Close()
		return nil, err
	}
	// Xvfb started before the helper, outside the commands' cgroups; it allocates for the
	// sandbox's X clients (pixmaps), so it is accounted with them.
	if err := s.cg.adopt(s.pidNS, "Xvfb"); err != nil {
		s.Close()
		return nil, err
	}
	s.info = append(append([]string{s.info[0], xd.Describe()}, s.info[1:]...),
		"Xvfb runs in the sandbox (in its cgroup, no rlimits), listening only on its socket in the sandbox's /tmp")
	return &Desktop{Desktop: xd, sandbox: s}, nil
}

// Desktop is a running local desktop: a Sandbox with an X display, driven by package
// xdesktop. It implements computer.Desktop.
type Desktop struct {
	*xdesktop.Desktop
	sandbox *Sandbox
}

var _ computer.Desktop = (*Desktop)(nil)
var _ computer.Spawner = (*Desktop)(nil)

// Spawn starts a process with streamed stdio in the desktop's sandbox (computer.Spawner).
func (d *Desktop) Spawn(ctx context.Context, argv []string, opts computer.SpawnOptions) (computer.StdioProcess, error) {
	return d.sandbox.Spawn(ctx, argv, opts)
}

// ForwardUnix is computer.Spawner's, in the desktop's sandbox.
func (d *Desktop) ForwardUnix(ctx context.Context, port int, socket string) (string, error) {
	return d.sandbox.ForwardUnix(ctx, port, socket)
}

// PIDNamespace is the desktop's sandbox's PID namespace ("pid:[inode]").
func (d *Desktop) PIDNamespace() string { return d.sandbox.PIDNamespace() }
