package local

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"agentrun.dev/agentrun/internal/computer"
)

// cgroups bound a sandbox as a whole: pids.max its process count and the
// memory controller its memory. They are used when the server runs as root
// (RLIMIT_NPROC does not bind root at all, so without them a fork bomb would
// not be contained) and the cgroup file system is writable; otherwise the
// sandbox relies on rlimits alone, which Info says.
type cgroups struct {
	dirs   []string // one per hierarchy (cgroup v1) or one (v2)
	v2     bool
	memory bool // a memory limit is enforced
	pids   bool
}

const cgroupRoot = "/sys/fs/cgroup"

// files opens the cgroups' cgroup.procs files (none when cg is nil) for the sandbox's helper to
// hand to each command, which writes itself into them before it runs (sandboxhelper.Limits.
// CgroupFDs). The helper, and bwrap, stay outside: the cgroups' memory and process accounting is
// the commands' alone, so a command that fills the memory (a tmpfs in the sandbox counts) is the
// one the kernel kills, never the helper that reports on it.
func (cg *cgroups) files() ([]*os.File, error) {
	if cg == nil {
		return nil, nil
	}
	var out []*os.File
	for _, d := range cg.dirs {
		f, err := os.OpenFile(filepath.Join(d, "cgroup.procs"), os.O_WRONLY, 0)
		if err != nil {
			closeAll(out)
			return nil, fmt.Errorf("open the sandbox's cgroup %s: %w", d, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// adopt moves the processes of PID namespace ns named comm (as /proc/PID/comm has it) into the
// cgroups (nothing when cg is nil); it fails when there is none.
func (cg *cgroups) adopt(ns, comm string) error {
	if cg == nil {
		return nil
	}
	n := 0
	for _, pid := range namespaceProcs(ns) {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
		if err != nil || strings.TrimSpace(string(b)) != comm {
			continue
		}
		for _, d := range cg.dirs {
			if err := writeFile(d, "cgroup.procs", strconv.Itoa(pid)); err != nil {
				return fmt.Errorf("move %s (pid %d) into the sandbox's cgroup %s: %w", comm, pid, d, err)
			}
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("move %s into the sandbox's cgroup: no such process in the sandbox", comm)
	}
	return nil
}

func closeAll(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

func randomSuffix() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// ownCgroup returns this process's cgroup path in hierarchy controller
// ("" for cgroup v2's unified hierarchy).
func ownCgroup(controller string) string {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "/"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if controller == "" && parts[0] == "0" && parts[1] == "" {
			return parts[2]
		}
		for _, c := range strings.Split(parts[1], ",") {
			if controller != "" && c == controller {
				return parts[2]
			}
		}
	}
	return "/"
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// newCgroups makes the cgroups of one sandbox, or returns nil and why not.
func newCgroups(name string, lim computer.Limits) (*cgroups, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("not running as root")
	}
	// The creator's PID in the name lets a later server tell a dead server's cgroup at once.
	leaf := fmt.Sprintf("agentrun-%s-%d-%s", name, os.Getpid(), randomSuffix())
	switch {
	case exists(filepath.Join(cgroupRoot, "pids", "cgroup.procs")):
		// cgroup v1 (or hybrid): one directory per controller, each under
		// this process's own cgroup so the container's accounting holds.
		cg := &cgroups{}
		for _, c := range []string{"pids", "memory"} {
			mount := filepath.Join(cgroupRoot, c)
			if !exists(filepath.Join(mount, "cgroup.procs")) {
				continue
			}
			removeStale(filepath.Join(mount, ownCgroup(c)))
			dir := filepath.Join(mount, ownCgroup(c), leaf)
			if err := os.Mkdir(dir, 0o755); err != nil {
				cg.remove()
				return nil, err
			}
			cg.dirs = append(cg.dirs, dir)
			var err error
			if c == "pids" {
				err = writeFile(dir, "pids.max", strconv.FormatInt(lim.Processes, 10))
				cg.pids = err == nil
			} else {
				err = writeFile(dir, "memory.limit_in_bytes", strconv.FormatInt(lim.MemoryBytes, 10))
				cg.memory = err == nil
				// Swap counts too where the kernel accounts it.
				writeFile(dir, "memory.memsw.limit_in_bytes", strconv.FormatInt(lim.MemoryBytes, 10))
			}
			if err != nil {
				cg.remove()
				return nil, err
			}
		}
		if !cg.pids {
			cg.remove()
			return nil, errors.New("no pids controller")
		}
		return cg, nil
	case exists(filepath.Join(cgroupRoot, "cgroup.controllers")):
		// cgroup v2: a parent "agentrun" at the root (the root is exempt
		// from the rule that a cgroup with processes cannot delegate
		// controllers, which this process's own cgroup would break).
		parent := filepath.Join(cgroupRoot, "agentrun")
		if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, err
		}
		writeFile(cgroupRoot, "cgroup.subtree_control", "+pids +memory")
		if err := writeFile(parent, "cgroup.subtree_control", "+pids +memory"); err != nil {
			return nil, fmt.Errorf("enable pids and memory controllers: %w", err)
		}
		removeStale(parent)
		dir := filepath.Join(parent, leaf)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, err
		}
		cg := &cgroups{dirs: []string{dir}, v2: true}
		if err := writeFile(dir, "pids.max", strconv.FormatInt(lim.Processes, 10)); err != nil {
			cg.remove()
			return nil, err
		}
		cg.pids = true
		cg.memory = writeFile(dir, "memory.max", strconv.FormatInt(lim.MemoryBytes, 10)) == nil
		writeFile(dir, "memory.swap.max", "0")
		return cg, nil
	}
	return nil, errors.New("no writable cgroup file system")
}

func writeFile(dir, name, value string) error {
	return os.WriteFile(filepath.Join(dir, name), []byte(value), 0)
}

func (cg *cgroups) procs() []int {
	var pids []int
	for _, d := range cg.dirs {
		b, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				pids = append(pids, n)
			}
		}
	}
	return pids
}

// kill kills every process in the cgroups and waits until they are empty.
func (cg *cgroups) kill(wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		pids := cg.procs()
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v still in the sandbox's cgroup", pids)
		}
		if cg.v2 && writeFile(cg.dirs[0], "cgroup.kill", "1") == nil {
			// done in one go
		} else {
			for _, p := range pids {
				killPID(p)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (cg *cgroups) remove() error {
	var errs []error
	for _, d := range cg.dirs {
		// Killed processes the kernel has not finished tearing down (reaped by the host's init,
		// not by the sandbox, whose PID 1 is gone) keep a cgroup busy for a moment.
		err := os.Remove(d)
		for deadline := time.Now().Add(2 * time.Second); errors.Is(err, syscall.EBUSY) && time.Now().Before(deadline); err = os.Remove(d) {
			time.Sleep(20 * time.Millisecond)
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		// A dead server's leftovers go too, not only at the next Create.
		removeStale(filepath.Dir(d))
	}
	return errors.Join(errs...)
}

// removeStale removes the cgroups of sandboxes whose server died without
// closing them (--die-with-parent killed their processes, but the empty
// directories stay). A cgroup named with its creator's PID is stale as soon as
// that process is gone; one without (an older server's) once it is a minute
// old, which keeps this off a cgroup another Create has just made and not
// entered yet. The kernel refuses to remove a cgroup that still has processes.
func removeStale(parent string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "agentrun-") {
			continue
		}
		stale := false
		if pid, ok := creatorPID(e.Name()); ok {
			stale = !processExists(pid)
		} else if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > time.Minute {
			stale = true
		}
		if stale {
			os.Remove(filepath.Join(parent, e.Name()))
		}
	}
}

// creatorPID reads the PID from a cgroup named agentrun-RUN-PID-SUFFIX.
func creatorPID(name string) (int, bool) {
	parts := strings.Split(name, "-")
	if len(parts) < 4 {
		return 0, false
	}
	pid, err := strconv.Atoi(parts[len(parts)-2])
	if err != nil || pid <= 0 || len(parts[len(parts)-1]) != 8 {
		return 0, false
	}
	return pid, true
}

// processExists reports whether a process with pid exists (as any user).
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
