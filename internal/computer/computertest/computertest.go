// Package computertest is the conformance suite every computer provider of a
// kind passes. The checks are plain functions, so they run both under `go
// test` (RunSandbox, RunBrowser, RunDesktop) and from `agentrun computer conformance`
// against a live provider (Checks and RunChecks).
package computertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/computer"
)

// Check is one conformance check.
type Check struct {
	Name string
	Run  func(e *Env) error
}

// Skip is returned by a check that does not apply here; the message says why.
type Skip struct{ Reason string }

func (s Skip) Error() string { return "skipped: " + s.Reason }

// Env is what a check runs with: the provider, a scratch data folder (as a
// server's, with run folders under runs/), and cleanups run after the check.
type Env struct {
	Ctx      context.Context
	Provider computer.Provider
	Kind     computer.Kind
	// Data is a scratch folder standing in for the server's data folder.
	Data     string
	cleanups []func()
	Logf     func(format string, args ...any)
}

// Cleanup registers f to run when the check ends (last registered first).
func (e *Env) Cleanup(f func()) { e.cleanups = append(e.cleanups, f) }

func (e *Env) done() {
	for i := len(e.cleanups) - 1; i >= 0; i-- {
		e.cleanups[i]()
	}
}

// RunFolder makes an empty run folder for run under Data and returns its path.
func (e *Env) RunFolder(run string) (string, error) {
	dir := filepath.Join(e.Data, "runs", run)
	return dir, os.MkdirAll(dir, 0o755)
}

// New creates a computer of the suite's kind for run with a fresh run
// folder, closed when the check ends (Close errors are reported by the
// cleanup check, not here).
func (e *Env) New(run string, adjust func(*computer.Spec)) (computer.Computer, string, error) {
	dir, err := e.RunFolder(run)
	if err != nil {
		return nil, "", err
	}
	spec := computer.Spec{Run: run, Folder: dir, Kind: e.Kind}
	if adjust != nil {
		adjust(&spec)
	}
	ctx, cancel := context.WithTimeout(e.Ctx, 60*time.Second)
	defer cancel()
	c, err := e.Provider.Create(ctx, spec)
	if err != nil {
		return nil, "", fmt.Errorf("create %s computer: %w", e.Kind, err)
	}
	e.Cleanup(func() { c.Close() })
	return c, dir, nil
}

// Checks returns the checks of kind.
func Checks(kind computer.Kind) []Check {
	switch kind {
	case computer.KindSandbox:
		return sandboxChecks
	case computer.KindBrowser:
		return browserChecks
	case computer.KindDesktop:
		return desktopChecks
	}
	return nil
}

// Result is the outcome of one check run by RunChecks.
type Result struct {
	Name     string
	Err      error // nil: passed; a Skip: skipped
	Duration time.Duration
}

// RunChecks runs the checks of kind against p outside `go test`, each with
// its own scratch folder under tmp, calling report after each.
func RunChecks(ctx context.Context, p computer.Provider, kind computer.Kind, tmp string, report func(Result)) (failed int, err error) {
	if !offers(p, kind) {
		return 0, fmt.Errorf("provider %s makes %v computers, not %s", p.Name(), p.Kinds(), kind)
	}
	if a := computer.KindAvailable(ctx, p, kind); !a.Available {
		return 0, fmt.Errorf("provider %s is not available here: %s", p.Name(), a.Reason)
	}
	checks := Checks(kind)
	if checks == nil {
		return 0, fmt.Errorf("no conformance checks for kind %q", kind)
	}
	for i, c := range checks {
		data := filepath.Join(tmp, fmt.Sprintf("check%02d", i))
		if err := os.MkdirAll(data, 0o755); err != nil {
			return failed, err
		}
		e := &Env{Ctx: ctx, Provider: p, Kind: kind, Data: data, Logf: func(string, ...any) {}}
		start := time.Now()
		err := runOne(c, e)
		if err != nil && !isSkip(err) {
			failed++
		}
		report(Result{Name: c.Name, Err: err, Duration: time.Since(start)})
	}
	return failed, nil
}

func runOne(c Check, e *Env) (err error) {
	defer e.done()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return c.Run(e)
}

func isSkip(err error) bool {
	var s Skip
	return errors.As(err, &s)
}

func run(t *testing.T, p computer.Provider, kind computer.Kind) {
	t.Helper()
	ctx := t.Context()
	if !offers(p, kind) {
		t.Fatalf("provider %s makes %v computers, not %s", p.Name(), p.Kinds(), kind)
	}
	if a := computer.KindAvailable(ctx, p, kind); !a.Available {
		t.Skipf("provider %s not available: %s", p.Name(), a.Reason)
	}
	for _, c := range Checks(kind) {
		t.Run(c.Name, func(t *testing.T) {
			e := &Env{Ctx: t.Context(), Provider: p, Kind: kind, Data: t.TempDir(), Logf: t.Logf}
			err := runOne(c, e)
			var s Skip
			switch {
			case errors.As(err, &s):
				t.Skip(s.Reason)
			case err != nil:
				t.Fatal(err)
			}
		})
	}
}

// RunSandbox runs the sandbox checks against p, skipping with p's reason when
// it is not available here.
func RunSandbox(t *testing.T, p computer.Provider) { run(t, p, computer.KindSandbox) }

// RunDesktop runs the desktop checks against p (the sandbox's among them), skipping with p's
// reason when it does not make desktops here.
func RunDesktop(t *testing.T, p computer.Provider) { run(t, p, computer.KindDesktop) }

// RunBrowser runs the browser checks against p, skipping with p's reason when
// it is not available here.
func RunBrowser(t *testing.T, p computer.Provider) { run(t, p, computer.KindBrowser) }

func offers(p computer.Provider, kind computer.Kind) bool {
	for _, k := range p.Kinds() {
		if k == kind {
			return true
		}
	}
	return false
}
