package docker

import (
	"context"
	"fmt"

	"github.com/docker/docker/client"

	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/computer/xdesktop"
)

// A desktop (kind desktop) is a docker sandbox, its container made exactly as a sandbox's (the
// same mounts, network, capabilities, limits and removal), from the desktop image, whose
// command is xdesktop.Script: it starts Xvfb, waits until it accepts connections and then
// execs the helper, so the server is up before the helper first answers. docker-init reaps
// Xvfb, which is among the container's processes (its cgroup, its pids and memory limits).
// DISPLAY is set in the container's environment, so the programs the agent starts show on it;
// package xdesktop drives and captures the screen through the sandbox's Exec and files.
//
// Xvfb listens on its socket in the container's own /tmp only: not on TCP and not on the
// abstract socket. The container has a network namespace of its own whether or not the
// network is allowed, so the display number is always the same.

// desktopDisplay is the X display of a docker desktop.
const desktopDisplay = 99

// Desktop is a running docker desktop: a Sandbox with an X display, driven by package
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

// ContainerID returns the desktop's container.
func (d *Desktop) ContainerID() string { return d.sandbox.ContainerID() }

// startDesktop starts a desktop's container from image tag (itself from base) and checks its
// screen.
func startDesktop(ctx context.Context, cli *client.Client, tag, base string, spec computer.Spec) (computer.Computer, error) {
	display := fmt.Sprintf(":%d", desktopDisplay)
	s, err := start(ctx, cli, tag, base, spec, &xLaunch{script: xdesktop.Script(desktopDisplay), display: display})
	if err != nil {
		return nil, err
	}
	// The helper answered, so Xvfb said it was ready; New checks that X clients reach it and
	// that the screen is the size asked for.
	xd, err := xdesktop.New(ctx, s, display, xdesktop.Width, xdesktop.Height)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.info = append(append([]string{s.info[0], xd.Describe()}, s.info[1:]...),
		"Xvfb runs in the container (its cgroup: memory and process limits; no rlimits), listening only on its socket in the container's /tmp")
	return &Desktop{Desktop: xd, sandbox: s}, nil
}
