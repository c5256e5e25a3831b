// Package local is the "local" provider: a sandbox made with Linux namespaces
// through bubblewrap (bwrap), around the run folder; and a desktop (kind
// desktop), the same sandbox running an X server (Xvfb) whose screen it
// captures and drives (desktop.go; the X side is package xdesktop, shared with
// the docker provider).
//
// Each computer is one long-lived bwrap whose command is a small helper (this
// same executable, see package sandboxhelper) that starts the agent's commands, keeps the
// background ones and reads and writes files. Inside: the run folder
// read-write at /workspace (the working folder), the host's /usr (and the
// /bin, /lib... links or folders into it) and a few files of /etc read-only,
// a fresh /dev, and /tmp, /dev/shm and home as tmpfs mounts of bounded size (TmpBytes...), the
// root and /dev read-only, its own /proc (read-only); nothing else of the host (no /root,
// /home, data folder or other runs' folders). Its own PID, IPC, UTS, cgroup and
// network namespaces: without network it has only its own loopback; with the
// network allowed, user-mode networking by slirp4netns that reaches the
// outside but not the host (network.go). No capabilities, no new privileges (bwrap sets
// no_new_privs), its own session (no terminal injection), killed when the
// server dies (--die-with-parent).
//
// Limits: every command gets RLIMIT_CPU, RLIMIT_NPROC, RLIMIT_FSIZE and,
// unless a memory cgroup bounds memory, RLIMIT_AS. RLIMIT_NPROC counts per
// user per user namespace, so for a server running as a normal user (where
// bwrap makes a user namespace) it bounds this sandbox alone; it never binds
// root, so as root the sandbox's commands are put in its own cgroups (pids.max
// and a memory limit, v1 or v2) when the cgroup file system is writable; the
// helper stays outside them, so a command that exhausts them is killed, not it.
//
// A desktop is such a sandbox whose first process starts Xvfb (on a display
// of its own, listening only on its socket in the sandbox's /tmp) before it
// becomes the helper, with DISPLAY set for every command; the screen is read
// with xwd and driven with xdotool, run in the sandbox. Those programs come
// from the host's /usr: KindAvailable says whether they are there.
package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/computer/sandboxhelper"
)

// Provider is the local provider. The zero value is ready to use.
type Provider struct {
	// Bwrap is the bwrap binary; default: "bwrap" on PATH.
	Bwrap string
	// Slirp4netns is the slirp4netns binary, which gives a sandbox with the network allowed its
	// network (network.go); default: "slirp4netns" on PATH.
	Slirp4netns string

	mu     sync.Mutex
	probed bool // a probe sandbox worked once
}

// New returns the local provider.
func New() *Provider { return &Provider{} }

func (p *Provider) Name() string { return "local" }

// SharesHostNetwork reports false: a sandbox with the network allowed has a network namespace of
// its own, behind slirp4netns, that does not reach the host (see computertest and network.go).
func (p *Provider) SharesHostNetwork() bool { return false }

// Kinds: sandbox, and desktop (a sandbox with an X display, see desktop.go), which needs
// more programs on this machine: KindAvailable says whether they are there.
func (p *Provider) Kinds() []computer.Kind {
	return []computer.Kind{computer.KindSandbox, computer.KindDesktop}
}

func (p *Provider) bwrap() (string, error) {
	name := p.Bwrap
	if name == "" {
		name = "bwrap"
	}
	return exec.LookPath(name)
}

// Available checks that bwrap is installed and can make the namespaces a
// sandbox needs (a container or sysctl may forbid user namespaces). Its note
// (Reason, while available) says when a sandbox with the network allowed
// cannot be made here, and what to install.
func (p *Provider) Available(ctx context.Context) computer.Availability {
	a := p.available(ctx)
	if a.Available {
		if _, err := p.netTools(); err != nil {
			a.Reason = err.Error()
		}
	}
	return a
}

func (p *Provider) available(ctx context.Context) computer.Availability {
	bw, err := p.bwrap()
	if err != nil {
		return computer.Availability{Reason: "bubblewrap not installed: apt-get install bubblewrap"}
	}
	if _, err := os.Stat("/bin/bash"); err != nil {
		return computer.Availability{Reason: "/bin/bash not found on this machine"}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.probed {
		return computer.Availability{Available: true}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	args := append(baseArgs(computer.DefaultLimits), "--", "/bin/true")
	cmd := exec.CommandContext(ctx, bw, args...)
	// A child of bubblewrap that outlives it keeps the output pipe open: without a WaitDelay the
	// timeout kills bwrap but the wait goes on, with every sandbox run queued on p.mu behind it.
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return computer.Availability{Reason: fmt.Sprintf("bubblewrap cannot make a sandbox here (%v): %s",
			err, strings.TrimSpace(string(out)))}
	}
	p.probed = true
	return computer.Availability{Available: true}
}

// sandboxPath is PATH inside the sandbox.
const sandboxPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// etcFiles are the parts of the host's /etc a shell, python3 and common
// tools need: users and groups (names for ids), name resolution, TLS roots,
// Debian's alternatives links, the dynamic linker's cache, shell profiles,
// time zone. Secrets (/etc/shadow, ssh keys...) are not among them.
var etcFiles = []string{
	"passwd", "group", "hosts", "resolv.conf", "nsswitch.conf", "host.conf", "gai.conf",
	"ssl", "ca-certificates", "ca-certificates.conf", "alternatives", "ld.so.cache", "ld.so.conf",
	"ld.so.conf.d", "localtime", "timezone", "profile", "profile.d", "bash.bashrc", "inputrc",
	"python3", "python3.11", "python3.12", "python3.13", "mime.types", "protocols", "services",
	"os-release", "debian_version", "terminfo", "magic", "mime.types", "papersize", "ucf.conf",
}

// The sizes of the sandbox's own file systems (tmpfs, in memory): writing past one fails with
// ENOSPC ("No space left on device") for the command that wrote it.
const (
	TmpBytes  = 512 << 20 // /tmp
	HomeBytes = 256 << 20 // /home/agent, the home folder
	ShmBytes  = 64 << 20  // /dev/shm
)

// tmpfsSizes are the sizes of /tmp, the home folder and /dev/shm for a sandbox with limits lim:
// the defaults, made smaller for a small memory limit so that together they take under half of
// it (their pages count as the commands' memory): full, they leave the commands room to run, rm
// included.
func tmpfsSizes(lim computer.Limits) (tmp, home, shm int64) {
	m := lim.WithDefaults().MemoryBytes
	return min(TmpBytes, m/4), min(HomeBytes, m/8), min(ShmBytes, m/16)
}

// baseArgs are the bwrap arguments every sandbox has: a network namespace of its own among them,
// with the network allowed too (create attaches slirp4netns to it then).
func baseArgs(lim computer.Limits) []string {
	tmp, home, shm := tmpfsSizes(lim)
	a := []string{
		"--die-with-parent", "--new-session",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--unshare-net",
		"--hostname", "sandbox",
		"--ro-bind", "/usr", "/usr",
	}
	// /bin, /lib... are links into /usr on merged-/usr systems, folders on
	// older ones: make them the same inside.
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		st, err := os.Lstat(d)
		switch {
		case err != nil:
		case st.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", target, d)
			}
		case st.IsDir():
			a = append(a, "--ro-bind", d, d)
		}
	}
	seen := map[string]bool{}
	for _, f := range etcFiles {
		if seen[f] {
			continue
		}
		seen[f] = true
		a = append(a, "--ro-bind-try", "/etc/"+f, "/etc/"+f)
	}
	// /proc read-only: a server running as root makes sandboxes whose
	// processes are uid 0 on the host (without capabilities), and DAC alone
	// would let them write global sysctls in /proc/sys.
	// Every file system the sandbox may write besides the run folder is a tmpfs of a bounded size
	// (an unbounded one could take the host's memory), and the root and /dev are made read-only
	// once the mounts are in place (create).
	a = append(a, "--proc", "/proc", "--remount-ro", "/proc", "--dev", "/dev",
		"--size", fmt.Sprint(shm), "--tmpfs", "/dev/shm", "--size", fmt.Sprint(tmp), "--tmpfs", "/tmp",
		"--size", fmt.Sprint(home), "--tmpfs", "/home/agent", "--cap-drop", "ALL", "--clearenv",
		"--setenv", "PATH", sandboxPath, "--setenv", "HOME", "/home/agent",
		"--setenv", "LANG", "C.UTF-8", "--setenv", "TERM", "dumb", "--setenv", "TMPDIR", "/tmp")
	return a
}

// Create starts a sandbox, or a desktop, around spec.Folder.
func (p *Provider) Create(ctx context.Context, spec computer.Spec) (computer.Computer, error) {
	switch spec.Kind {
	case "", computer.KindSandbox:
		s, err := p.create(ctx, spec, nil)
		if err != nil {
			return nil, err // not a nil *Sandbox in a non-nil Computer
		}
		return s, nil
	case computer.KindDesktop:
		return p.createDesktop(ctx, spec)
	}
	return nil, fmt.Errorf("local provider makes sandbox and desktop computers, not %s", spec.Kind)
}

// launch is what a kind of computer adds to the sandbox: bwrap arguments, and a command that
// runs before the helper (it ends by exec'ing the helper's argv, given as its arguments).
type launch struct {
	args []string
	wrap func(helper []string) []string
}

// create starts a sandbox around spec.Folder, its helper wrapped as l says (nil: as is).
func (p *Provider) create(ctx context.Context, spec computer.Spec, l *launch) (*Sandbox, error) {
	if a := p.available(ctx); !a.Available {
		return nil, errors.New(a.Reason)
	}
	bw, _ := p.bwrap()
	var sn *sandboxNet
	if spec.Network {
		var err error
		if sn, err = p.newSandboxNet(); err != nil {
			return nil, err
		}
	}
	folder, err := filepath.Abs(spec.Folder)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(folder); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("run folder %s is not a folder", folder)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable for the sandbox helper: %w", err)
	}
	lim := spec.Limits.WithDefaults()
	s := &Sandbox{spec: spec, limits: lim, net: sn}
	cg, cgErr := newCgroups(sandboxhelper.SafeName(spec.Run), lim)
	s.cg = cg
	started := false
	defer func() {
		if !started {
			if cg != nil {
				cg.remove()
			}
			if sn != nil {
				sn.close()
			}
		}
	}()
	hl := sandboxhelper.Limits{CPU: lim.CPUSeconds, NProc: lim.Processes, AS: lim.MemoryBytes, MaxFile: 8 << 30}
	if cg != nil && cg.memory {
		// The cgroup bounds real memory; RLIMIT_AS would also refuse
		// programs that reserve much address space without using it (V8, JVMs).
		hl.AS = 0
	}
	// The commands enter the cgroups, the helper does not (see cgroups.files).
	cgFiles, err := cg.files()
	if err != nil {
		return nil, err
	}
	defer closeAll(cgFiles)
	for i := range cgFiles {
		hl.CgroupFDs = append(hl.CgroupFDs, 4+i) // after the arguments pipe at fd 3
	}
	if err := computer.CheckMounts(spec.Mounts); err != nil {
		return nil, err
	}
	args, extra := bwrapArgs(lim, folder, self, spec.Mounts, cgFiles, sn, l)
	helper := sandboxhelper.Argv(hl)
	if l != nil {
		helper = l.wrap(helper)
	}
	argsR, err := argsPipe(args)
	if err != nil {
		return nil, err
	}
	defer argsR.Close()
	bwArgs := append([]string{bw, "--args", "3", "--"}, helper...)
	cmd := exec.Command(bw, bwArgs[1:]...)
	extra[0] = argsR
	cmd.ExtraFiles = extra
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	s.stderr = sandboxhelper.NewTailBuffer(8 << 10)
	cmd.Stderr = s.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s.cmd = cmd
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start bwrap: %w", err)
	}
	started = true // from here on Close removes the cgroups
	if sn != nil {
		sn.closeBwrapEnds()
	}
	s.Client = sandboxhelper.NewClient(stdin, stdout, s.stderr.String)

	s.info = sandboxInfo(folder, spec.Mounts, lim, hl.AS == 0, cg, cgErr)

	pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	ns, err := s.Ping(pctx)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("sandbox did not start: %v: %s", err, strings.TrimSpace(s.stderr.String()))
	}
	s.pidNS = ns
	if sn != nil {
		// Once the helper answers, so bwrap has set up the namespace (its loopback, which
		// slirp4netns must not race), and before Create returns, so before any command runs.
		if err := sn.started(ctx); err != nil {
			s.Close()
			return nil, fmt.Errorf("give the sandbox its network: %w", err)
		}
		s.info[2] = sn.describe()
	}
	return s, nil
}

// bwrapArgs are bwrap's options for a sandbox on folder, the helper self bound in, mounts (checked)
// bound, sn's network and l's launch added; extra are the files it passes from fd 3: a place for
// the arguments pipe, the cgroups' cgFiles, then sn's.
func bwrapArgs(lim computer.Limits, folder, self string, mounts []computer.Mount, cgFiles []*os.File, sn *sandboxNet, l *launch) (args []string, extra []*os.File) {
	// bwrap mounts every bind nosuid and nodev, so a setuid program or device node planted in the
	// run folder is inert inside (e2e TestSandboxCannotPlantSetuid checks the mount).
	args = append(baseArgs(lim),
		"--bind", folder, "/workspace", "--chdir", "/workspace",
		"--ro-bind", self, sandboxhelper.HelperPath)
	for _, m := range mounts {
		args = append(args, map[bool]string{true: "--bind", false: "--ro-bind"}[m.Writable], m.Source, m.Target)
	}
	extra = append([]*os.File{nil}, cgFiles...) // fd 3 (the arguments pipe), then the cgroups' from fd 4
	if sn != nil {
		args = append(args, sn.bwrapArgs(3+len(extra), 3+len(extra)+1)...)
		extra = append(extra, sn.infoW, sn.resolvR)
	}
	if l != nil {
		args = append(args, l.args...)
	}
	// Last, once every mount point is made: nothing but the run folder and the sized tmpfs mounts
	// is writable.
	return append(args, "--remount-ro", "/dev", "--remount-ro", "/"), extra
}

// argsPipe is a pipe holding bwrap's options NUL-separated, its read end to pass as fd 3 for
// --args: so that the sandbox's PID 1 (bwrap itself) does not show host paths in its command line.
func argsPipe(args []string) (*os.File, error) {
	argsR, argsW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer argsW.Close()
	var nul bytes.Buffer
	for _, a := range args {
		nul.WriteString(a)
		nul.WriteByte(0)
	}
	if nul.Len() > 60<<10 {
		argsR.Close()
		return nil, errors.New("bwrap arguments exceed a pipe's buffer")
	}
	if _, err := argsW.Write(nul.Bytes()); err != nil {
		argsR.Close()
		return nil, err
	}
	return argsR, nil
}

// sandboxInfo is a new sandbox's Info: where it runs, its mounts and its bounds (noAS: the memory
// cgroup bounds memory, so RLIMIT_AS is not set; cg nil: no cgroup, for the reason cgErr).
func sandboxInfo(folder string, mounts []computer.Mount, lim computer.Limits, noAS bool, cg *cgroups, cgErr error) []string {
	info := []string{
		"provider: local (bubblewrap)",
		"workspace: " + folder + " at /workspace",
		"network: none (own network namespace)",
		mountsInfo(mounts),
		fmt.Sprintf("rlimits per process: CPU %d s, processes %d, address space %s", lim.CPUSeconds, lim.Processes,
			map[bool]string{true: "not set (memory cgroup)", false: fmt.Sprint(lim.MemoryBytes) + " bytes"}[noAS]),
	}
	if cg != nil {
		return append(info, fmt.Sprintf("cgroup: %v (pids.max %d, memory %v) holds every command; the sandbox's helper is outside it", cg.dirs, lim.Processes, cg.memory))
	}
	info = append(info, "cgroup: none ("+cgErr.Error()+")")
	if os.Geteuid() == 0 {
		info = append(info, "WARNING: process count not bounded (root ignores RLIMIT_NPROC and no cgroup)")
	}
	return info
}

// mountsInfo is the Info line of a computer's mounts besides the run folder.
func mountsInfo(ms []computer.Mount) string {
	if len(ms) == 0 {
		return "mounts: none besides the run folder"
	}
	var b strings.Builder
	b.WriteString("mounts:")
	for _, m := range ms {
		fmt.Fprintf(&b, " %s at %s (%s);", m.Source, m.Target, map[bool]string{true: "read-write", false: "read-only"}[m.Writable])
	}
	return strings.TrimSuffix(b.String(), ";")
}
