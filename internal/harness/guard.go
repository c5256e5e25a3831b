package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"agentrun.dev/agentrun/internal/computer"
)

// A harness inside the run's computer shares it with the agent's commands: same user, and its
// home (Session.Home) mounted writable, since the harness writes its session files there. What in
// that home decides what the harness may do (its settings, its MCP configuration, its skills, its
// instructions) must not be writable from inside, or an agent's command could give the harness a
// hook or a tool of its own, which would take effect at once or when the harness starts again
// after a crash. Each driver names those paths (ConfigPaths); the computer shows each one
// read-only over the writable home (GuardMounts), and every folder between the home and it as a
// mount point of its own, which cannot be renamed or removed from inside, so the guarded path
// cannot be moved aside and replaced. The driver writes them on the runner, in place.

// ConfigPath is a file or folder under a harness home (Rel, relative to it) that the harness reads
// its configuration from.
type ConfigPath struct {
	Rel string
	Dir bool
}

// ConfigPaths are the paths driver name's harness reads its configuration from, under its home;
// nil for a name that is no driver.
func ConfigPaths(name string) []ConfigPath {
	d, ok := Lookup(name)
	if !ok {
		return nil
	}
	return d.(interface{ configPaths() []ConfigPath }).configPaths()
}

// GuardMounts makes each of paths exist under home (an empty file or folder; what is there is
// kept) and returns the mounts that show them read-only inside a computer over home's writable
// mount (itself a mount point there), each folder between home and a path made a mount point of
// its own first. They go after home's mount, in order.
func GuardMounts(home string, paths []ConfigPath) ([]computer.Mount, error) {
	var ms []computer.Mount
	seen := map[string]bool{}
	for _, p := range paths {
		clean, ok := inside(p.Rel)
		if !ok {
			return nil, fmt.Errorf("harness config path %q is not inside the harness home", p.Rel)
		}
		parts := strings.Split(clean, string(filepath.Separator))
		for i := 1; i < len(parts); i++ {
			dir := filepath.Join(append([]string{home}, parts[:i]...)...)
			if seen[dir] {
				continue
			}
			seen[dir] = true
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, fmt.Errorf("harness home: %w", err)
			}
			ms = append(ms, computer.Mount{Source: dir, Target: dir, Writable: true})
		}
		full := filepath.Join(home, clean)
		if seen[full] {
			continue
		}
		seen[full] = true
		if p.Dir {
			if err := os.MkdirAll(full, 0o700); err != nil {
				return nil, fmt.Errorf("harness home: %w", err)
			}
		} else {
			f, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE, 0o600)
			if err != nil {
				return nil, fmt.Errorf("harness home: %w", err)
			}
			f.Close()
		}
		ms = append(ms, computer.Mount{Source: full, Target: full})
	}
	return ms, nil
}

// inside is rel (slash-separated) cleaned, and whether it names something strictly inside the
// folder it is relative to: not that folder itself, not absolute, not out of it by "..".
func inside(rel string) (string, bool) {
	clean := filepath.Clean(filepath.FromSlash(rel))
	return clean, clean != "." && filepath.IsLocal(clean)
}
