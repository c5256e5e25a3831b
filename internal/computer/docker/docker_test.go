package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/computer/computertest"
)

// These tests need a Docker engine with the base image (set
// AGENTRUN_DOCKER_BASE to a local image where debian:bookworm-slim cannot be
// pulled); without them they skip with the provider's reason.

// available returns the default provider, skipping the test with its
// reason where it cannot run, and builds its image first (so that no
// check's Create waits for it).
func available(t testing.TB) *Provider {
	t.Helper()
	p := New()
	a := p.Available(context.Background())
	if !a.Available {
		t.Skip(a.Reason)
	}
	p.Progress = func(m string) { t.Log(m) }
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	if err := p.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	p.Progress = nil
	return p
}

func TestUnavailableWithReason(t *testing.T) {
	p := &Provider{Host: "unix:///nonexistent/docker.sock"}
	a := p.Available(context.Background())
	if a.Available || !strings.Contains(a.Reason, "no Docker engine reachable at unix:///nonexistent/docker.sock") {
		t.Fatalf("availability %+v", a)
	}
	if _, err := p.Create(context.Background(), computer.Spec{Kind: computer.KindSandbox, Folder: t.TempDir()}); err == nil {
		t.Fatal("Create worked without an engine")
	}
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/other.sock")
	if a := New().Available(context.Background()); a.Available || !strings.Contains(a.Reason, "no Docker engine reachable at unix:///nonexistent/other.sock") {
		t.Fatalf("availability with DOCKER_HOST unreachable: %+v", a)
	}
}

// TestMissingBase: with neither the image nor its base in the engine the
// provider is not available, and says how to get the base. It does not try
// to pull it.
func TestMissingBase(t *testing.T) {
	p := &Provider{BaseImage: "agentrun-test/no-such-base:" + randomSuffix()}
	cli, err := p.client()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx); err != nil {
		t.Skipf("no Docker engine: %v", err)
	}
	start := time.Now()
	a := p.Available(t.Context())
	if a.Available || !strings.Contains(a.Reason, "base image "+p.BaseImage+" is missing") ||
		!strings.Contains(a.Reason, "docker pull "+p.BaseImage) || !strings.Contains(a.Reason, "AGENTRUN_DOCKER_BASE") {
		t.Fatalf("availability %+v", a)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Available took %v", d)
	}
	t.Log(a.Reason)
}

func TestConformance(t *testing.T) {
	computertest.RunSandbox(t, available(t))
}

// TestTools runs the sandbox tools through computer.Run on a real sandbox,
// as the agent loop will.
func TestTools(t *testing.T) {
	p := available(t)
	c, err := p.Create(t.Context(), computer.Spec{Run: "tools", Folder: t.TempDir(), Kind: computer.KindSandbox})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	t.Logf("info:\n%s", strings.Join(c.Info(), "\n"))
	call := computertest.SandboxTools(t, c)
	// Files the sandbox writes belong to the server's user.
	if out, isErr := call("bash", `{"command":"echo x > owned.txt; id -u; id -g"}`); isErr || strings.Join(strings.Fields(out), " ") != fmt.Sprintf("exit code 0 %d %d", os.Getuid(), os.Getgid()) {
		t.Fatalf("ids in the sandbox: %q %v", out, isErr)
	}
}

// TestNetworkAllowed checks the half of IsolationNetwork the suite skips
// for docker: a sandbox with the network allowed reaches the host through
// the bridge's gateway, one without does not.
func TestNetworkAllowed(t *testing.T) {
	p := available(t)
	cli, _ := p.client()
	br, err := cli.NetworkInspect(t.Context(), "bridge", network.InspectOptions{})
	if err != nil || len(br.IPAM.Config) == 0 || br.IPAM.Config[0].Gateway == "" {
		t.Skipf("no gateway on Docker's bridge network (%v)", err)
	}
	gw := br.IPAM.Config[0].Gateway
	ln, err := net.Listen("tcp", net.JoinHostPort(gw, "0"))
	if err != nil {
		t.Skipf("cannot listen on the bridge's gateway %s: %v", gw, err)
	}
	defer computertest.Pong(ln)()
	dial := fmt.Sprintf(`python3 -c 'import socket; s = socket.create_connection((%q, %d), timeout=5); print(s.recv(10).decode(), end="")'`,
		gw, ln.Addr().(*net.TCPAddr).Port)
	for _, allowed := range []bool{true, false} {
		c, err := p.Create(t.Context(), computer.Spec{Run: "net", Folder: t.TempDir(), Network: allowed})
		if err != nil {
			t.Fatal(err)
		}
		r, err := c.(computer.Sandbox).Exec(t.Context(), dial, computer.ExecOptions{Timeout: 30 * time.Second})
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		if reached := r.ExitCode == 0 && r.Stdout == "pong\n"; reached != allowed {
			t.Errorf("network allowed %v: reached the host at %s: %v (exit %d %q %q)", allowed, gw, reached, r.ExitCode, r.Stdout, r.Stderr)
		}
	}
}

// TestContainerDiesUnderComputer: when the container goes (killed from
// outside), calls fail with computer.ErrClosed and Close still works.
func TestContainerDiesUnderComputer(t *testing.T) {
	p := available(t)
	c, err := p.Create(t.Context(), computer.Spec{Run: "killed", Folder: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	s := c.(*Sandbox)
	cli, _ := p.client()
	if err := cli.ContainerKill(t.Context(), s.ContainerID(), "KILL"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the helper's output did not end with its container")
	}
	if _, err := s.Exec(t.Context(), "true", computer.ExecOptions{}); !errors.Is(err, computer.ErrClosed) {
		t.Fatalf("exec in a killed container: %v, want computer.ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestImageBuiltOnFirstUse builds an image of its own (the Dockerfile with
// a label added) through a first Create, reporting progress, and removes it.
func TestImageBuiltOnFirstUse(t *testing.T) {
	available(t) // the default image's engine and base are there
	var mu sync.Mutex
	var msgs []string
	p := &Provider{dockerfileExtra: "\nLABEL agentrun.test=" + randomSuffix() + "\n", Progress: func(m string) {
		mu.Lock()
		msgs = append(msgs, m)
		mu.Unlock()
	}}
	_, tag := p.recipe(p.base())
	cli, _ := p.client()
	t.Cleanup(func() {
		if _, err := cli.ImageRemove(context.Background(), tag, image.RemoveOptions{Force: true, PruneChildren: true}); err != nil {
			t.Errorf("remove test image: %v", err)
		}
	})
	if a := p.Available(t.Context()); !a.Available || !strings.Contains(a.Reason, "image "+tag+" not built yet: built on first use from base "+p.base()) {
		t.Fatalf("before the first use: %+v", a)
	}
	start := time.Now()
	c, err := p.Create(t.Context(), computer.Spec{Run: "first", Folder: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first Create (image build included) took %v", time.Since(start))
	r, err := c.(computer.Sandbox).Exec(t.Context(), "echo ok", computer.ExecOptions{})
	c.Close()
	if err != nil || r.Stdout != "ok\n" {
		t.Fatalf("exec: %q %v", r.Stdout, err)
	}
	mu.Lock()
	all := strings.Join(msgs, "\n")
	mu.Unlock()
	if !strings.Contains(all, "building from "+p.base()) || !strings.Contains(all, tag+": ready (built in") || !strings.Contains(all, "Step ") {
		t.Fatalf("progress messages:\n%s", all)
	}
	t.Logf("progress:\n%s", all)
	if a := p.Available(t.Context()); !a.Available || a.Reason != "image "+tag+" built (from "+p.base()+")" {
		t.Fatalf("after the first use: %+v", a)
	}
}

// TestBuildFailure: a build that fails says why, in Create's error and in
// Available (which then keeps the registry off this provider).
func TestBuildFailure(t *testing.T) {
	available(t)
	p := &Provider{dockerfileExtra: "\nRUN echo failing on purpose; false\n"}
	_, err := p.Create(t.Context(), computer.Spec{Run: "nobuild", Folder: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "failing on purpose") || !strings.Contains(err.Error(), "non-zero code") {
		t.Fatalf("Create with a failing build: %v", err)
	}
	a := p.Available(t.Context())
	if a.Available || !strings.Contains(a.Reason, "build docker sandbox image") || !strings.Contains(a.Reason, "failing on purpose") {
		t.Fatalf("availability after a failed build: %+v", a)
	}
	t.Log(a.Reason)
}

// TestServerProcess is the "server" of TestSandboxDiesWithServer.
func TestServerProcess(t *testing.T) { computertest.ServerProcess(t, New()) }

// TestSandboxDiesWithServer kills a server process holding a sandbox and checks that its
// container and processes go with it (StdinOnce and AutoRemove: nothing else cleans up after a
// crashed server), and that a new sandbox around the same run folder finds the folder as it was.
func TestSandboxDiesWithServer(t *testing.T) {
	p := available(t)
	cli, _ := p.client()
	computertest.SandboxDiesWithServer(t, p, 7000000, func(run, marker string) []string {
		list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true,
			Filters: filters.NewArgs(filters.Arg("label", labelRun+"="+run))})
		if err != nil {
			return []string{"list containers: " + err.Error()}
		}
		var out []string
		for _, c := range list {
			out = append(out, "container "+shortID(c.ID)+" "+c.State)
		}
		return append(out, computertest.Sleepers(marker)...)
	}, 15*time.Second)
}

// BenchmarkCreate measures making a docker sandbox (the image built) and
// running one command in it, then closing it.
func BenchmarkCreate(b *testing.B) {
	p := available(b)
	var create, closing time.Duration
	n := 0
	for b.Loop() {
		start := time.Now()
		c, err := p.Create(context.Background(), computer.Spec{Run: "bench", Folder: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		create += time.Since(start)
		if _, err := c.(computer.Sandbox).Exec(context.Background(), "true", computer.ExecOptions{}); err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
		closing += time.Since(start)
		n++
	}
	b.ReportMetric(float64(create.Milliseconds())/float64(n), "create-ms")
	b.ReportMetric(float64(closing.Milliseconds())/float64(n), "close-ms")
}

// desktopAvailable is available for desktops: it builds the desktop image first, saying how
// long that took when it had to.
func desktopAvailable(t testing.TB) *Provider {
	t.Helper()
	p := available(t)
	if a := p.KindAvailable(context.Background(), computer.KindDesktop); !a.Available {
		t.Fatalf("desktops unavailable where sandboxes are: %s", a.Reason)
	}
	if ready, what := p.ReadyKind(context.Background(), computer.KindDesktop); !ready {
		t.Logf("preparing desktops: %s", what)
		p.Progress = func(m string) { t.Log(m) }
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		defer cancel()
		start := time.Now()
		if err := p.PrepareKind(ctx, computer.KindDesktop); err != nil {
			t.Fatal(err)
		}
		t.Logf("desktop image built in %v", time.Since(start).Round(100*time.Millisecond))
		p.Progress = nil
	}
	return p
}

// TestDesktopConformance runs the desktop checks (the sandbox's among them) on docker desktops.
func TestDesktopConformance(t *testing.T) {
	computertest.RunDesktop(t, desktopAvailable(t))
}

// TestDesktopImageBuiltOnFirstUse builds a desktop image of its own (Dockerfile.desktop with a
// label added, so the engine's cache makes it quick) and checks what KindAvailable and
// ReadyKind say before and after, and that the sandbox kind does not wait on it.
func TestDesktopImageBuiltOnFirstUse(t *testing.T) {
	desktopAvailable(t)
	p := &Provider{desktopDockerfileExtra: "\nLABEL agentrun.test=" + randomSuffix() + "\n"}
	img, sb := p.desktopImage(), p.sandboxImage()
	if img.base != sb.tag || !strings.HasPrefix(img.tag, desktopRepo+":") {
		t.Fatalf("desktop image %+v, sandbox image %s", img, sb.tag)
	}
	cli, _ := p.client()
	t.Cleanup(func() {
		if _, err := cli.ImageRemove(context.Background(), img.tag, image.RemoveOptions{Force: true, PruneChildren: true}); err != nil {
			t.Errorf("remove test image: %v", err)
		}
	})
	a := p.KindAvailable(t.Context(), computer.KindDesktop)
	if !a.Available || !strings.Contains(a.Reason, "desktop image "+img.tag+" not built yet: built on the first desktop from the sandbox image "+sb.tag) {
		t.Fatalf("desktops before the first: %+v", a)
	}
	if ready, what := p.ReadyKind(t.Context(), computer.KindDesktop); ready || what != "image "+img.tag+" to be built from "+sb.tag+" (first use; a minute or more: it installs the X programs)" {
		t.Fatalf("ReadyKind(desktop) before the first: %v %q", ready, what)
	}
	if ready, what := p.ReadyKind(t.Context(), computer.KindSandbox); !ready || what != "image "+sb.tag+" built" {
		t.Fatalf("ReadyKind(sandbox): %v %q", ready, what)
	}
	if err := p.PrepareKind(t.Context(), computer.KindDesktop); err != nil {
		t.Fatal(err)
	}
	if ready, what := p.ReadyKind(t.Context(), computer.KindDesktop); !ready || what != "image "+img.tag+" built" {
		t.Fatalf("ReadyKind(desktop) after: %v %q", ready, what)
	}
	if a := p.KindAvailable(t.Context(), computer.KindDesktop); !a.Available || a.Reason != "desktop image "+img.tag+" built (from "+sb.tag+")" {
		t.Fatalf("desktops after the first: %+v", a)
	}
	if a := p.KindAvailable(t.Context(), computer.KindBrowser); a.Available {
		t.Fatalf("browser: %+v", a)
	}
	// A sandbox still runs on the sandbox image.
	c, err := p.Create(t.Context(), computer.Spec{Run: "plain", Folder: t.TempDir(), Kind: computer.KindSandbox})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(computer.Desktop); ok || !strings.Contains(strings.Join(c.Info(), "\n"), "image: "+sb.tag) {
		t.Fatalf("a sandbox is a %T: %q", c, c.Info())
	}
}

// TestDesktopBuildFailure: a desktop image whose build fails says why, in Create's error and in
// KindAvailable, and leaves sandboxes available.
func TestDesktopBuildFailure(t *testing.T) {
	desktopAvailable(t)
	p := &Provider{desktopDockerfileExtra: "\nRUN echo failing on purpose; false\n"}
	_, err := p.Create(t.Context(), computer.Spec{Run: "nobuild", Folder: t.TempDir(), Kind: computer.KindDesktop})
	if err == nil || !strings.Contains(err.Error(), "build docker desktop image") || !strings.Contains(err.Error(), "failing on purpose") {
		t.Fatalf("Create with a failing build: %v", err)
	}
	if a := p.KindAvailable(t.Context(), computer.KindDesktop); a.Available || !strings.Contains(a.Reason, "failing on purpose") {
		t.Fatalf("desktops after a failed build: %+v", a)
	}
	if a := p.KindAvailable(t.Context(), computer.KindSandbox); !a.Available {
		t.Fatalf("sandboxes after a failed desktop build: %+v", a)
	}
}

// TestDesktopImageWithoutShell: a desktop whose image cannot run its first command (here
// /bin/sh, which starts Xvfb and then the helper) fails to start with an error naming that
// program and the image, not the server's executable (which was never reached), and leaves no
// container.
func TestDesktopImageWithoutShell(t *testing.T) {
	desktopAvailable(t)
	p := &Provider{desktopDockerfileExtra: "\nRUN rm /bin/sh\n"}
	img := p.desktopImage()
	cli, _ := p.client()
	t.Cleanup(func() {
		// Its own tag; the parents it shares with the usual desktop image have other children,
		// so only what this image added goes.
		if _, err := cli.ImageRemove(context.Background(), img.tag, image.RemoveOptions{Force: true, PruneChildren: true}); err != nil {
			t.Errorf("remove test image: %v", err)
		}
	})
	if err := p.PrepareKind(t.Context(), computer.KindDesktop); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logged []string
	prev := logf
	logf = func(format string, args ...any) {
		mu.Lock()
		logged = append(logged, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	defer func() { logf = prev }()
	_, err := p.Create(t.Context(), computer.Spec{Run: "noshell", Folder: t.TempDir(), Kind: computer.KindDesktop})
	if err == nil {
		t.Fatal("a desktop started on an image without /bin/sh")
	}
	// A program missing at start is tried once more with a new container (the engine once
	// started one before its root was there), and said so; not more than once.
	mu.Lock()
	tries := 0
	for _, l := range logged {
		if strings.Contains(l, "could not run /bin/sh at start; trying once more") {
			tries++
		}
	}
	mu.Unlock()
	if tries != 1 {
		t.Errorf("retries logged %d, want 1: %q", tries, logged)
	}
	msg := err.Error()
	if !strings.Contains(msg, "exec /bin/sh failed: No such file or directory) (the image's /bin/sh could not be run: image "+img.tag+" must have it") ||
		strings.Contains(msg, "C library") {
		t.Fatalf("Create on an image without /bin/sh: %v", err)
	}
	t.Log(msg)
	list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", labelRun+"=noshell"))})
	if err != nil || len(list) != 0 {
		t.Fatalf("containers left: %v %v", list, err)
	}
}

// TestDesktopContainer checks a desktop's container is a sandbox's (no network unless allowed,
// read-only image, no capabilities, limits, removed at close), that its X server listens on its
// socket in /tmp only (not on TCP, not on the abstract socket), and measures creating desktops
// and taking screenshots.
func TestDesktopContainer(t *testing.T) {
	p := desktopAvailable(t)
	cli, _ := p.client()
	var creates []time.Duration
	for i, allowed := range []bool{false, true, false, false, false} {
		start := time.Now()
		c, err := p.Create(t.Context(), computer.Spec{Run: "xdesk", Folder: t.TempDir(), Kind: computer.KindDesktop, Network: allowed})
		if err != nil {
			t.Fatal(err)
		}
		creates = append(creates, time.Since(start))
		d := c.(*Desktop)
		if i == 0 {
			t.Logf("info:\n%s", strings.Join(d.Info(), "\n"))
		}
		ci, err := cli.ContainerInspect(t.Context(), d.ContainerID())
		if err != nil {
			t.Fatal(err)
		}
		hc := ci.HostConfig
		if want := map[bool]string{true: "bridge", false: "none"}[allowed]; string(hc.NetworkMode) != want || !hc.ReadonlyRootfs || !hc.AutoRemove ||
			len(hc.CapDrop) != 1 || hc.CapDrop[0] != "ALL" || hc.Memory != computer.DefaultLimits.MemoryBytes || hc.PidsLimit == nil ||
			*hc.PidsLimit != computer.DefaultLimits.Processes || ci.Config.Labels[labelComputer] != "desktop" ||
			!strings.HasPrefix(ci.Config.Image, desktopRepo+":") {
			t.Errorf("network %v: container %+v, config %+v", allowed, hc, ci.Config)
		}
		r, err := d.Exec(t.Context(), `cat /proc/net/unix; echo ===; cat /proc/net/tcp /proc/net/tcp6 2>/dev/null; echo ===; echo "$DISPLAY"`, computer.ExecOptions{})
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(r.Stdout, "===\n")
		if len(parts) != 3 || !strings.Contains(parts[0], "/tmp/.X11-unix/X99") || strings.Contains(parts[0], "@/tmp/.X11-unix") ||
			strings.Contains(strings.ToUpper(parts[1]), ":17A3 ") || strings.TrimSpace(parts[2]) != ":99" {
			t.Errorf("network %v: X listens on more than its socket in /tmp, or DISPLAY is not :99:\n%s", allowed, r.Stdout)
		}
		if i == 0 {
			var shots []time.Duration
			for range 5 {
				start := time.Now()
				if _, err := d.Shot(t.Context()); err != nil {
					t.Fatal(err)
				}
				shots = append(shots, time.Since(start))
			}
			t.Logf("screenshots (PNG of 1280×800): %v", shots)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := cli.ContainerInspect(t.Context(), d.ContainerID()); !client.IsErrNotFound(err) {
			t.Errorf("the desktop's container is left after Close: %v", err)
		}
	}
	sorted := append([]time.Duration(nil), creates...)
	slices.Sort(sorted)
	t.Logf("desktop creates %v: p50 %v", creates, sorted[len(sorted)/2])
}
