package e2etest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// NeedDockerBase skips unless a Docker engine answers and AGENTRUN_DOCKER_BASE names a base image
// it has (.ci/run makes one with debootstrap: this machine reaches no image registry).
func NeedDockerBase(t *testing.T) string {
	t.Helper()
	base := os.Getenv("AGENTRUN_DOCKER_BASE")
	if base == "" {
		t.Skip("docker sandbox tests skipped: AGENTRUN_DOCKER_BASE names no base image (.ci/run makes one where a Docker engine runs)")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("docker sandbox tests skipped: no docker CLI")
	}
	if out, err := exec.Command("docker", "image", "inspect", base).CombinedOutput(); err != nil {
		t.Skipf("docker sandbox tests skipped: base image %s: %v %s", base, err, out)
	}
	return base
}

// NoContainers checks that the containers of a finished run go. The run's end is committed
// before its computer is closed, so they may be there at that instant; not 20 s later.
func NoContainers(t *testing.T, run string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, _ := exec.Command("docker", "ps", "-aq", "--filter", "label=agentrun.run="+run).Output()
		if strings.TrimSpace(string(out)) == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("containers of the finished run are left 20 s after it ended: %s", out)
			return
		}
	}
}

// NoContainersOf waits until no computer container binds a folder from dir (a data folder: the
// run folders and harness homes of its server's runs), and fails the test if one is left after d.
func NoContainersOf(t *testing.T, dir string, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); ; time.Sleep(100 * time.Millisecond) {
		left := containersOf(dir)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("containers binding %s are left %s after their server was killed: %v", dir, d, left)
			return
		}
	}
}

// containersOf are the IDs of the computer containers (label agentrun.computer) binding a path
// under dir.
func containersOf(dir string) []string {
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label=agentrun.computer").Output()
	ids := strings.Fields(string(out))
	if err != nil || len(ids) == 0 {
		return nil
	}
	// A container gone since the listing makes inspect fail; the others are still printed.
	out, _ = exec.Command("docker", append([]string{"inspect", "--format", "{{.ID}}{{range .Mounts}} {{.Source}}{{end}}"}, ids...)...).Output()
	var left []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		for _, src := range f[min(1, len(f)):] {
			if strings.HasPrefix(src, dir+string(os.PathSeparator)) {
				left = append(left, shortContainer(f[0]))
				break
			}
		}
	}
	return left
}

func shortContainer(id string) string { return id[:min(12, len(id))] }
