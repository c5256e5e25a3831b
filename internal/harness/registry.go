package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
)

// drivers are the harnesses this build has; add yours here (and its name to api.Harnesses).
var drivers = []Driver{claude{}, pi{}, codex{}, opencode{}}

// Lookup returns the driver named name.
func Lookup(name string) (Driver, bool) {
	for _, d := range drivers {
		if d.Name() == name {
			return d, true
		}
	}
	return nil, false
}

// Names are the drivers' names, sorted.
func Names() []string {
	var out []string
	for _, d := range drivers {
		out = append(out, d.Name())
	}
	sort.Strings(out)
	return out
}

// Info is one harness as `agentrun server capabilities` shows it.
type Info struct {
	Name    string `json:"name"`
	Package string `json:"package,omitempty"`
	Version string `json:"version,omitempty"`
	// Available: a run can use it now, or it installs itself on first use.
	Available bool `json:"available"`
	// Installed is where it is installed ("" when it installs on first use).
	Installed string `json:"installed,omitempty"`
	// Why says why it cannot run, or what happens on first use.
	Why string `json:"why,omitempty"`
}

// Capabilities lists builtin and every driver as this machine can run them, with dataDir the data
// folder they install into.
func Capabilities(dataDir string) []Info {
	out := []Info{{Name: "builtin", Available: true}}
	for _, d := range drivers {
		p := d.Package()
		in := Info{Name: d.Name(), Package: p.NPM, Version: p.Version}
		if bin, ok := Installed(dataDir, p); ok {
			in.Available, in.Installed = true, filepath.Dir(filepath.Dir(filepath.Dir(bin)))
		} else if p.Manual {
			in.Why = "not installed (it is not installed on first use): install it with `" + p.InstallLine(dataDir, d.Name()) + "`"
		} else if _, err := exec.LookPath("npm"); err != nil {
			in.Why = "not installed, and npm is not on PATH to install it (install Node.js and npm)"
		} else {
			in.Available = true
			in.Why = "installs " + p.Spec() + " with npm on first use into " + filepath.Join(dataDir, "harnesses", d.Name()+"@"+p.Version)
		}
		out = append(out, in)
	}
	return out
}

// Notes are the lines `serve` prints about harnesses it cannot run yet: each one installed by hand
// and not installed, with the exact line that installs it.
func Notes(dataDir string) []string {
	var out []string
	for _, d := range drivers {
		p := d.Package()
		if _, ok := Installed(dataDir, p); p.Manual && !ok {
			out = append(out, fmt.Sprintf("%s is not installed; to run it: %s", d.Name(), p.InstallLine(dataDir, d.Name())))
		}
	}
	return out
}

// CacheEnv names a folder of pre-installed NAME@VERSION folders, looked in before the data folder.
const CacheEnv = "AGENTRUN_HARNESS_CACHE"

// folders are where p may be installed, in the order they are looked in.
func folders(dataDir, name string, p Package) []string {
	var out []string
	if c := os.Getenv(CacheEnv); c != "" {
		out = append(out, filepath.Join(c, name+"@"+p.Version))
	}
	return append(out, filepath.Join(dataDir, "harnesses", name+"@"+p.Version))
}

// Installed returns the executable of p when it is installed already.
func Installed(dataDir string, p Package) (string, bool) {
	name := driverName(p)
	for _, dir := range folders(dataDir, name, p) {
		bin := filepath.Join(dir, "node_modules", ".bin", p.Bin)
		if st, err := os.Stat(bin); err == nil && !st.IsDir() {
			return bin, true
		}
	}
	return "", false
}

func driverName(p Package) string {
	for _, d := range drivers {
		if d.Package().NPM == p.NPM {
			return d.Name()
		}
	}
	return p.Bin
}
