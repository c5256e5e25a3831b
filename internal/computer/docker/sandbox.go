package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/computer/sandboxhelper"
)

// Labels on every sandbox container.
const (
	labelComputer = "agentrun.computer" // the kind: "sandbox" or "desktop"
	labelRun      = "agentrun.run"      // the run's name
)

// sandboxPath is PATH inside the sandbox.
const sandboxPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Sandbox is a running docker sandbox: a container whose command is the
// helper, attached to by the server. It implements computer.Sandbox: the
// calls into the sandbox are those of the helper's client; Sandbox adds the
// container around it.
type Sandbox struct {
	*sandboxhelper.Client

	cli    *client.Client
	id     string
	info   []string
	stderr *sandboxhelper.TailBuffer

	// attach is the hijacked connection of the container's stdin, stdout
	// and stderr; demux (until copyDone) splits its output into the
	// helper's stdout and stderr.
	attach   types.HijackedResponse
	attached bool
	copyDone chan struct{}

	closeOnce sync.Once
	closeErr  error
}

var _ computer.Sandbox = (*Sandbox)(nil)

func (s *Sandbox) Kind() computer.Kind { return computer.KindSandbox }
func (s *Sandbox) Info() []string      { return append([]string(nil), s.info...) }

// ContainerID returns the sandbox's container.
func (s *Sandbox) ContainerID() string { return s.id }

// xLaunch is what a desktop's container adds to a sandbox's: the script that starts its X
// server, then execs the helper (its arguments), and the display it is on.
type xLaunch struct {
	script  string
	display string // ":99"
}

// start makes, attaches to and starts the container of a sandbox for spec
// from image tag (itself from base), and waits for its helper to answer. With
// x, the container's command is x.script, which starts the X server before
// the helper.
func start(ctx context.Context, cli *client.Client, tag, base string, spec computer.Spec, x *xLaunch) (*Sandbox, error) {
	folder, err := filepath.Abs(spec.Folder)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(folder); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("run folder %s is not a folder", folder)
	}
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		return nil, fmt.Errorf("find own executable for the sandbox helper: %w", err)
	}
	lim := spec.Limits.WithDefaults()
	// The container's cgroup bounds memory and the process count: no
	// RLIMIT_AS (it would also refuse programs that reserve much address
	// space without using it), and no RLIMIT_NPROC (without a user
	// namespace it would count every process of the server's user on the
	// host).
	argv := sandboxhelper.Argv(sandboxhelper.Limits{CPU: lim.CPUSeconds, MaxFile: 8 << 30})
	user := fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
	network := "none"
	if spec.Network {
		network = "bridge"
	}
	env := []string{"PATH=" + sandboxPath, "HOME=/home/agent", "LANG=C.UTF-8", "TERM=dumb", "TMPDIR=/tmp"}
	entrypoint, cmd, kind := argv[:1], argv[1:], computer.KindSandbox
	if x != nil {
		env = append(env, "DISPLAY="+x.display)
		entrypoint, cmd, kind = []string{"/bin/sh", "-c", x.script, "agentrun-desktop"}, argv, computer.KindDesktop
	}
	cfg := &container.Config{
		Hostname:     "sandbox",
		User:         user,
		AttachStdin:  true,
		AttachStdout: true,
		AttachStderr: true,
		OpenStdin:    true,
		// The engine closes the helper's stdin when the server's attach
		// connection ends: at Close, or when the server dies.
		StdinOnce:  true,
		Env:        env,
		Entrypoint: entrypoint,
		Cmd:        cmd,
		Image:      tag,
		WorkingDir: "/workspace",
		Labels:     map[string]string{labelComputer: string(kind), labelRun: spec.Run},
	}
	if err := computer.CheckMounts(spec.Mounts); err != nil {
		return nil, err
	}
	binds := []string{folder + ":/workspace:rw", self + ":" + sandboxhelper.HelperPath + ":ro"}
	for _, m := range spec.Mounts {
		binds = append(binds, m.Source+":"+m.Target+map[bool]string{true: ":rw", false: ":ro"}[m.Writable])
	}
	initProc := true
	pids := lim.Processes
	hc := &container.HostConfig{
		Binds:          binds,
		NetworkMode:    container.NetworkMode(network),
		AutoRemove:     true,
		ReadonlyRootfs: true,
		Tmpfs: map[string]string{
			"/tmp":        "rw,nosuid,nodev,exec,mode=1777",
			"/home/agent": "rw,nosuid,nodev,exec,mode=1777",
		},
		CapDrop:     []string{"ALL"},
		SecurityOpt: []string{"no-new-privileges"},
		IpcMode:     container.IpcMode("private"),
		// docker-init as PID 1 reaps the orphans of the agent's commands.
		Init: &initProc,
		// The attach stream carries the helper's protocol (file contents
		// included): keep no log of it.
		LogConfig: container.LogConfig{Type: "none"},
		Resources: container.Resources{Memory: lim.MemoryBytes, MemorySwap: lim.MemoryBytes, PidsLimit: &pids},
	}
	name := "agentrun-" + sandboxhelper.SafeName(spec.Run) + "-" + randomSuffix()
	created, err := cli.ContainerCreate(ctx, cfg, hc, nil, nil, name)
	if err != nil {
		return nil, fmt.Errorf("create container: %w", err)
	}
	s := &Sandbox{cli: cli, id: created.ID, stderr: sandboxhelper.NewTailBuffer(8 << 10)}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()
	s.attach, err = cli.ContainerAttach(ctx, s.id, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return nil, fmt.Errorf("attach to container %s: %w", shortID(s.id), err)
	}
	s.attached = true
	helperOut, demuxOut := io.Pipe()
	s.copyDone = make(chan struct{})
	go s.demux(demuxOut)
	s.Client = sandboxhelper.NewClient(attachStdin{&s.attach}, helperOut, s.stderr.String)
	if err := cli.ContainerStart(ctx, s.id, container.StartOptions{}); err != nil {
		return nil, fmt.Errorf("start container %s: %w", shortID(s.id), err)
	}
	pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if _, err := s.Ping(pctx); err != nil {
		err = fmt.Errorf("sandbox did not start: %w", err)
		if tail := strings.TrimSpace(s.stderr.String()); tail != "" && !strings.Contains(err.Error(), tail) {
			err = fmt.Errorf("%w: %s", err, tail)
		}
		if isDone(s.Done()) && !strings.Contains(err.Error(), "Xvfb did not start") {
			// The helper is this executable, run in the image.
			err = fmt.Errorf("%w (the server's executable, the sandbox's helper, could not run in image %s: it must be static "+
				"or built against a C library the image has)", err, tag)
		}
		return nil, err
	}
	s.info = []string{
		"provider: docker (Docker Engine API " + cli.ClientVersion() + ")",
		"image: " + tag + " (from " + base + ")",
		"container: " + shortID(s.id) + " " + name + " (removed at close, or when the server exits)",
		"workspace: " + folder + " at /workspace",
		"network: " + map[bool]string{true: "bridge (own network namespace, NAT to what the host reaches; not the host's loopback)",
			false: "none (own network namespace)"}[spec.Network],
		fmt.Sprintf("limits: memory %d bytes without swap and %d processes (container cgroup), CPU %d s per process (rlimit)",
			lim.MemoryBytes, lim.Processes, lim.CPUSeconds),
		"isolation: own PID, IPC, UTS and mount namespaces; read-only image; no capabilities; no new privileges; user " + user,
	}
	for _, w := range created.Warnings {
		s.info = append(s.info, "engine warning: "+w)
	}
	ok = true
	return s, nil
}

// demux splits the attach stream into the helper's stdout (to the client)
// and stderr (kept for errors) until the stream ends: the container exited
// or Close closed the connection.
func (s *Sandbox) demux(stdout *io.PipeWriter) {
	defer close(s.copyDone)
	_, err := stdcopy.StdCopy(stdout, s.stderr, s.attach.Reader)
	stdout.CloseWithError(err) // nil: io.EOF
}

// attachStdin is the helper's stdin: the attach connection's write side.
type attachStdin struct{ hr *types.HijackedResponse }

func (a attachStdin) Write(p []byte) (int, error) { return a.hr.Conn.Write(p) }
func (a attachStdin) Close() error                { return a.hr.CloseWrite() }

// Close ends the helper's input, removes the container (killing everything
// in it) and waits until the engine no longer knows it.
func (s *Sandbox) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Sandbox) close() error {
	if s.Client != nil {
		s.Client.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Removing with force kills first. With AutoRemove the engine may be
	// removing it already (a conflict), which the wait below covers.
	rmErr := s.cli.ContainerRemove(ctx, s.id, container.RemoveOptions{Force: true})
	var errs []error
	if err := waitGone(ctx, s.cli, s.id, 10*time.Second); err != nil {
		errs = append(errs, err)
		if rmErr != nil && !client.IsErrNotFound(rmErr) {
			errs = append(errs, fmt.Errorf("remove container %s: %w", shortID(s.id), rmErr))
		}
	}
	if s.attached {
		s.attach.Close()
		<-s.copyDone
	}
	if s.Client != nil {
		<-s.Done()
	}
	return errors.Join(errs...)
}

// waitGone waits until the engine no longer knows container id: then its
// processes are gone (the engine removes a container after its last
// process, and its cgroup with it).
func waitGone(ctx context.Context, cli *client.Client, id string, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var last error
	for {
		c, err := cli.ContainerInspect(ctx, id)
		switch {
		case client.IsErrNotFound(err):
			return nil
		case err != nil:
			last = err
		default:
			last = fmt.Errorf("state %s", c.State.Status)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("container %s survived Close (%v)", shortID(id), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// removeStale removes sandbox and desktop containers that never ran or were not
// removed after they ended: those of a server that died between creating
// and starting one, say (a running one ends by itself when its server's
// attach connection goes). The age bound keeps it off a container another
// Create has just made and not started yet.
func removeStale(ctx context.Context, cli *client.Client) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, kind := range []computer.Kind{computer.KindSandbox, computer.KindDesktop} {
		list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(
			filters.Arg("label", labelComputer+"="+string(kind)),
			filters.Arg("status", "created"), filters.Arg("status", "exited"), filters.Arg("status", "dead"))})
		if err != nil {
			return
		}
		for _, c := range list {
			if time.Since(time.Unix(c.Created, 0)) > time.Minute {
				cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
			}
		}
	}
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func randomSuffix() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}
