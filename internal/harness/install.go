package harness

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
)

// InstallTimeout bounds one npm install: a failed or stuck install fails the run, never hangs it.
const InstallTimeout = 10 * time.Minute

// installs serializes installs of one package version in this process; other processes sharing the
// data folder are kept apart by installing into a temporary folder renamed into place.
var installs sync.Map // folder -> *sync.Mutex

// Install returns the executable of p, installing it with npm into DATA/harnesses/NAME@VERSION when
// it is not installed yet. progress is told what happens (the host puts it on the run's timeline).
// npm runs with the machine's own configuration (registry, proxy, cache); the install is pinned to
// the exact version and writes no lockfile.
func Install(ctx context.Context, dataDir string, p Package, progress func(string)) (string, error) {
	if bin, ok := Installed(dataDir, p); ok {
		return bin, nil
	}
	if p.Manual {
		name := driverName(p)
		return "", fmt.Errorf("%s is not installed, and it is not installed on first use: install it beside the server with `%s`", p.Spec(), p.InstallLine(dataDir, name))
	}
	return InstallTo(ctx, filepath.Join(dataDir, "harnesses"), p, progress)
}

// InstallAll installs every driver's package into folder (as folder/NAME@VERSION, the layout
// AGENTRUN_HARNESS_CACHE names), skipping those already there: CI and tests install once.
func InstallAll(ctx context.Context, folder string, progress func(string)) error {
	var errs []error
	for _, d := range drivers {
		p := d.Package()
		if _, err := os.Stat(filepath.Join(folder, d.Name()+"@"+p.Version, "node_modules", ".bin", p.Bin)); err == nil {
			progress(p.Spec() + " is installed in " + folder)
			continue
		}
		if _, err := InstallTo(ctx, folder, p, progress); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// InstallTo installs p into folder/NAME@VERSION and returns its executable.
func InstallTo(ctx context.Context, folder string, p Package, progress func(string)) (string, error) {
	name := driverName(p)
	dest := filepath.Join(folder, name+"@"+p.Version)
	installedBin := func() (string, bool) {
		bin := filepath.Join(dest, "node_modules", ".bin", p.Bin)
		_, err := os.Stat(bin)
		return bin, err == nil
	}
	mu, _ := installs.LoadOrStore(dest, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	if bin, ok := installedBin(); ok {
		return bin, nil
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return "", errors.New("npm is not on PATH: install Node.js and npm to run this harness")
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o700); err != nil {
		return "", fmt.Errorf("harness folder: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dest), "."+name+"-install-")
	if err != nil {
		return "", fmt.Errorf("harness folder: %w", err)
	}
	defer os.RemoveAll(tmp)
	// A package.json of its own, so npm installs here and not in a parent folder's project.
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), []byte(`{"name":"agentrun-harness","private":true}`+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("harness folder: %w", err)
	}
	progress(fmt.Sprintf("installing %s with npm into %s (first use; later runs reuse it)", p.Spec(), dest))
	ictx, cancel := context.WithTimeout(ctx, InstallTimeout)
	defer cancel()
	cmd := exec.CommandContext(ictx, npm, "install", "--no-audit", "--no-fund", "--no-package-lock", "--save-exact", p.Spec())
	cmd.Dir = tmp
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start npm: %w", err)
	}
	go func() { done <- cmd.Wait() }() // owned here: Install returns only after it has sent
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				why := err.Error()
				if ictx.Err() == context.DeadlineExceeded {
					why = fmt.Sprintf("no result within %s", InstallTimeout)
				}
				if ctx.Err() != nil {
					return "", ctx.Err()
				}
				return "", fmt.Errorf("npm install %s failed (%s): %s", p.Spec(), why, lastLines(out.String(), 8))
			}
			bin := filepath.Join(tmp, "node_modules", ".bin", p.Bin)
			if _, err := os.Stat(bin); err != nil {
				return "", fmt.Errorf("npm install %s finished but node_modules/.bin/%s is missing: %s", p.Spec(), p.Bin, lastLines(out.String(), 8))
			}
			if err := os.Rename(tmp, dest); err != nil {
				if b, ok := installedBin(); ok {
					return b, nil // another process put it in place first
				}
				return "", fmt.Errorf("move the installed harness into place: %w", err)
			}
			progress(fmt.Sprintf("installed %s in %s", p.Spec(), time.Since(start).Round(time.Second)))
			bin, ok := installedBin()
			if !ok {
				return "", fmt.Errorf("installed %s but cannot find its %s", p.Spec(), p.Bin)
			}
			return bin, nil
		case <-tick.C:
			progress(fmt.Sprintf("still installing %s (%s so far)", p.Spec(), time.Since(start).Round(time.Second)))
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
