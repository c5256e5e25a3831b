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
	"regexp"
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
	s, err := startOnce(ctx, cli, tag, base, spec, x)
	var gone *missingAtStart
	if errors.As(err, &gone) && ctx.Err() == nil {
		// Seen once in CI under heavy load: a desktop container's tini could not find the
		// image's /bin/sh, while containers of the same image before and after (and the
		// image's own build, which runs sh) had it: the engine started the container before
		// its root was there. A second container settles which it is; an image that really
		// lacks the program fails the same way again, with the same message.
		logf("docker container of image %s could not run %s at start; trying once more with a new container", tag, gone.program)
		s, err = startOnce(ctx, cli, tag, base, spec, x)
	}
	return s, err
}

// missingAtStart is the error of a container whose first program (the helper or the image's
// /bin/sh) was not found when the container started.
type missingAtStart struct {
	program string
	err     error
}

func (e *missingAtStart) Error() string { return e.err.Error() }
func (e *missingAtStart) Unwrap() error { return e.err }

// startOnce is one try of start.
func startOnce(ctx context.Context, cli *client.Client, tag, base string, spec computer.Spec, x *xLaunch) (*Sandbox, error) {
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
	user := fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
	cfg, hc, err := containerConfig(spec, folder, self, tag, user, lim, x)
	if err != nil {
		return nil, err
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
		return nil, s.notStarted(err, tag)
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

// containerConfig is a sandbox's container: the helper as its command (started by x's script
// for a desktop), the run folder and spec's mounts bound, user's ids, bounded by lim.
func containerConfig(spec computer.Spec, folder, self, tag, user string, lim computer.Limits, x *xLaunch) (*container.Config, *container.HostConfig, error) {
	// The container's cgroup bounds memory and the process count: no
	// RLIMIT_AS (it would also refuse programs that reserve much address
	// space without using it), and no RLIMIT_NPROC (without a user
	// namespace it would count every process of the server's user on the
	// host).
	argv := sandboxhelper.Argv(sandboxhelper.Limits{CPU: lim.CPUSeconds, MaxFile: 8 << 30})
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
		return nil, nil, err
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
	return cfg, hc, nil
}

// notStarted is the error of a sandbox whose helper did not answer (err): with what the
// container wrote, and, when it has ended, why it could not start from image tag.
func (s *Sandbox) notStarted(err error, tag string) error {
	err = fmt.Errorf("sandbox did not start: %w", err)
	if tail := strings.TrimSpace(s.stderr.String()); tail != "" && !strings.Contains(err.Error(), tail) {
		err = fmt.Errorf("%w: %s", err, tail)
	}
	if isDone(s.Done()) {
		if why := startFailure(s.stderr.String(), tag); why != "" {
			err = fmt.Errorf("%w (%s)", err, why)
		}
		if m := tiniExec.FindStringSubmatch(s.stderr.String()); m != nil && strings.Contains(s.stderr.String(), m[0]+" No such file or directory") {
			err = &missingAtStart{program: m[1], err: err}
		}
	}
	return err
}

// tiniExec is what docker-init (tini, the container's PID 1) says when the command it starts
// cannot be executed: "[FATAL tini (7)] exec /bin/sh failed: No such file or directory".
var tiniExec = regexp.MustCompile(`\[FATAL tini \(\d+\)\] exec (\S+) failed:`)

// startFailure explains, from the end of its stderr, why a container's first command ended
// before the helper answered, or says nothing when the output explains itself (Xvfb's) or
// names no program that could not run. The helper is this executable, run in the image: when
// it is what could not run, the C library is the usual reason; when a program of the image
// could not (a desktop's /bin/sh, which starts Xvfb and then the helper), the image is.
func startFailure(stderr, tag string) string {
	if strings.Contains(stderr, "Xvfb did not start") {
		return ""
	}
	helper := func() string {
		return fmt.Sprintf("the server's executable, the sandbox's helper, could not run in image %s: it must be static "+
			"or built against a C library the image has", tag)
	}
	if m := tiniExec.FindStringSubmatch(stderr); m != nil {
		if m[1] == sandboxhelper.HelperPath {
			return helper()
		}
		return fmt.Sprintf("the image's %s could not be run: image %s must have it and what it needs; the helper was not reached", m[1], tag)
	}
	// A desktop's shell execs the helper last: dash says "exec: /.agentrun/helper: not found",
	// the dynamic loader names the C library the helper needs and the image lacks.
	if strings.Contains(stderr, sandboxhelper.HelperPath+":") {
		return helper()
	}
	return ""
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
