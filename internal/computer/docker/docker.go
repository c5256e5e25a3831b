// Package docker is the "docker" provider: each computer is a container
// made through the Docker Engine API (the official Go client, with the API
// version negotiated, so engines from API 1.41 on work), around the run
// folder. It makes sandboxes, and desktops (kind desktop): the same
// container running an X server, see desktop.go.
//
// The sandbox image is built on first use from a Dockerfile the server ships
// (see Dockerfile) over a base image: Provider.BaseImage, else
// $AGENTRUN_DOCKER_BASE, else debian:bookworm-slim. It is tagged
// agentrun-sandbox:<hash of Dockerfile and base>, built once per engine and
// kept; Available says whether it is built yet, and the build reports its
// progress (Provider.Progress, else the start and end to the log). The
// desktop image is built likewise on the first desktop, from the sandbox
// image (see Dockerfile.desktop: Xvfb, xdotool, xwd and a few X programs and
// a font, installed with apt-get when missing), and tagged
// agentrun-desktop:<hash of Dockerfile.desktop and the sandbox image's tag>.
// Ready and Prepare cover the sandbox image, ReadyKind and PrepareKind
// (computer.KindPreparer) the images of either kind.
//
// Inside the container: the run folder read-write at /workspace (the working
// folder), the image read-only, fresh tmpfs /tmp and home. Its own PID, IPC,
// UTS and mount namespaces, and network namespace: "none" unless the network
// is allowed, then Docker's bridge (NAT to what the host reaches; the host's
// own loopback is not reachable). No capabilities, no new privileges, the
// server's uid and gid (files in the run folder stay the server's). Memory
// (without swap) and process count are bounded by the container's cgroup,
// CPU time per process by RLIMIT_CPU. A desktop's container is the same, its
// X server (Xvfb) among its processes, listening only on its socket in the
// container's /tmp.
//
// As in the local provider, the commands are started by a helper inside (see
// package sandboxhelper): the server's own executable, bind-mounted
// read-only, run by docker-init as the container's command (in a desktop,
// after the script that starts Xvfb) and talking over the container's
// attached stdin and stdout. The container is started with StdinOnce and
// AutoRemove, so when the server process dies its attach connection closes,
// the helper reads the end of its input and exits, and the container and
// every process in it go with it.
//
// The engine must run on the same machine as the server (it bind-mounts the
// run folder and the executable by host path), and the executable must run
// in the image (a static binary, or one built against a glibc no newer than
// the image's).
package docker

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/docker/docker/client"

	"agentrun.dev/agentrun/internal/computer"
)

// Provider is the docker provider. The zero value is ready to use.
type Provider struct {
	// Host is the engine's address; default DOCKER_HOST, else the default
	// socket (unix:///var/run/docker.sock).
	Host string
	// BaseImage is the image the sandbox image is built from; default
	// $AGENTRUN_DOCKER_BASE, else debian:bookworm-slim. It needs bash and
	// python3 (and procps, ca-certificates), or apt-get and a network to
	// install them.
	BaseImage string
	// Progress, when set, receives the messages of an image build this
	// provider starts, line by line.
	Progress func(string)

	// dockerfileExtra is appended to the Dockerfile, desktopDockerfileExtra
	// to Dockerfile.desktop (tests: images of their own).
	dockerfileExtra, desktopDockerfileExtra string

	mu  sync.Mutex
	cli *client.Client
}

// New returns the docker provider.
func New() *Provider { return &Provider{} }

func (p *Provider) Name() string { return "docker" }

// Kinds: sandbox, and desktop (a sandbox with an X display, on an image of its own built on
// first use from the sandbox image).
func (p *Provider) Kinds() []computer.Kind {
	return []computer.Kind{computer.KindSandbox, computer.KindDesktop}
}

// SharesHostNetwork reports false: a sandbox with the network allowed is on
// Docker's bridge, with a network namespace of its own (see computertest).
func (p *Provider) SharesHostNetwork() bool { return false }

var logf = func(format string, args ...any) { slog.Default().Info(fmt.Sprintf(format, args...)) }

// client returns the provider's engine client, made on first use.
func (p *Provider) client() (*client.Client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cli != nil {
		return p.cli, nil
	}
	opts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if p.Host != "" {
		opts = append(opts, client.WithHost(p.Host))
	}
	cli, err := client.NewClientWithOpts(opts...)
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	p.cli = cli
	return cli, nil
}

// Available pings the engine and looks for the image (or its base). It
// neither pulls nor builds: an engine that answers, with the image built or
// its base present, is available, and Reason says which.
func (p *Provider) Available(ctx context.Context) computer.Availability {
	cli, err := p.client()
	if err != nil {
		return computer.Availability{Reason: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx); err != nil {
		return computer.Availability{Reason: fmt.Sprintf("no Docker engine reachable at %s: %v", cli.DaemonHost(), err)}
	}
	st, err := p.imageState(ctx, cli)
	if err != nil {
		return computer.Availability{Reason: fmt.Sprintf("Docker engine at %s: %v", cli.DaemonHost(), err)}
	}
	switch {
	case st.built:
		return computer.Availability{Available: true, Reason: fmt.Sprintf("image %s built (from %s)", st.tag, st.base)}
	case st.building != "":
		return computer.Availability{Available: true, Reason: fmt.Sprintf("image %s being built from %s: %s", st.tag, st.base, cut(st.building, 160))}
	case st.failed != nil:
		return computer.Availability{Reason: fmt.Sprintf("%v (said here for %v after the failure; Prepare or Create build again)", st.failed, failedFor)}
	case st.baseMissing:
		return computer.Availability{Reason: fmt.Sprintf("base image %s is missing in the Docker engine at %s and image %s is not built: "+
			"docker pull %s, or set AGENTRUN_DOCKER_BASE to an image the engine has (with bash and python3, or apt-get to install them)",
			st.base, cli.DaemonHost(), st.tag, st.base)}
	}
	return computer.Availability{Available: true, Reason: fmt.Sprintf("image %s not built yet: built on first use from base %s", st.tag, st.base)}
}

// KindAvailable says whether the provider makes computers of kind here (computer.KindChecker):
// either when it is Available, the desktop image being built on the first desktop like the
// sandbox image on the first sandbox; Reason says whether the desktop image is built yet. A
// desktop image whose build failed a little while ago makes desktops unavailable, as a failed
// sandbox image makes the provider.
func (p *Provider) KindAvailable(ctx context.Context, kind computer.Kind) computer.Availability {
	switch kind {
	case computer.KindSandbox:
		return p.Available(ctx)
	case computer.KindDesktop:
	default:
		return computer.Availability{Reason: fmt.Sprintf("the docker provider makes sandbox and desktop computers, not %s", kind)}
	}
	a := p.Available(ctx)
	if !a.Available {
		return a
	}
	cli, err := p.client()
	if err != nil {
		return computer.Availability{Reason: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	st, err := stateOf(ctx, cli, p.desktopImage())
	switch {
	case err != nil:
		return computer.Availability{Reason: fmt.Sprintf("Docker engine at %s: %v", cli.DaemonHost(), err)}
	case st.built:
		return computer.Availability{Available: true, Reason: fmt.Sprintf("desktop image %s built (from %s)", st.tag, st.base)}
	case st.building != "":
		return computer.Availability{Available: true, Reason: fmt.Sprintf("desktop image %s being built from %s: %s", st.tag, st.base, cut(st.building, 160))}
	case st.failed != nil:
		return computer.Availability{Reason: fmt.Sprintf("%v (said here for %v after the failure; PrepareKind or Create build again)", st.failed, failedFor)}
	}
	return computer.Availability{Available: true, Reason: fmt.Sprintf("desktop image %s not built yet: built on the first desktop from the sandbox image %s (%s)",
		st.tag, st.base, a.Reason)}
}

// Create builds the images of spec.Kind if needed (see PrepareKind), then starts a container
// around spec.Folder and waits for its helper (and, for a desktop, its X server) to answer.
func (p *Provider) Create(ctx context.Context, spec computer.Spec) (computer.Computer, error) {
	kind := spec.Kind
	if kind == "" {
		kind = computer.KindSandbox
	}
	if kind != computer.KindSandbox && kind != computer.KindDesktop {
		return nil, fmt.Errorf("docker provider makes sandbox and desktop computers, not %s", spec.Kind)
	}
	cli, err := p.client()
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	_, err = cli.Ping(pctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("no Docker engine reachable at %s: %w", cli.DaemonHost(), err)
	}
	tag, err := p.ensureImages(ctx, cli, kind)
	if err != nil {
		return nil, err
	}
	removeStale(ctx, cli)
	if kind == computer.KindDesktop {
		return startDesktop(ctx, cli, tag, p.desktopImage().base+", from "+p.base(), spec)
	}
	s, err := start(ctx, cli, tag, p.base(), spec, nil)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// cut shortens s to at most n bytes (on a rune boundary), marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
