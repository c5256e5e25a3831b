package e2etest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// axe-core, from npm at the version pinned in e2e/console/axe (package.json and its lockfile),
// checks the console's pages for accessibility: CheckA11y injects it into the page a browser test
// has open and fails the test on any serious or critical violation, in the light and the dark
// theme. It is installed with npm ci into AGENTRUN_AXE_CACHE (.ci/run fills it) or, without it, a
// folder in the user's cache, once; a test skips, saying why, when npm cannot install it.

var (
	axeOnce sync.Once
	axeJS   string
	axeErr  error
)

// axeFolder is e2e/console/axe, beside this package's source.
func axeFolder() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "console", "axe")
}

// AxeSource is axe.min.js at the pinned version; it skips t when it cannot be installed.
func AxeSource(t testing.TB) string {
	t.Helper()
	axeOnce.Do(func() { axeJS, axeErr = installAxe() })
	if axeErr != nil {
		t.Skipf("axe-core could not be installed, so the accessibility checks cannot run: %v", axeErr)
	}
	return axeJS
}

func installAxe() (string, error) {
	src := axeFolder()
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		return "", fmt.Errorf("read the pinned lockfile: %w", err)
	}
	var l struct {
		Packages map[string]struct {
			Version string `json:"version"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(lock, &l); err != nil {
		return "", fmt.Errorf("parse %s: %w", filepath.Join(src, "package-lock.json"), err)
	}
	version := l.Packages["node_modules/axe-core"].Version
	dir := os.Getenv("AGENTRUN_AXE_CACHE")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(cache, "agentrun-axe-"+version)
	}
	js := filepath.Join(dir, "node_modules", "axe-core", "axe.min.js")
	if b, err := os.ReadFile(js); err == nil && installedVersion(dir) == version {
		return string(b), nil
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return "", fmt.Errorf("npm is not installed")
	}
	// Install beside the cache folder and move it in whole, so a half-done install is never used.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".axe-install-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	for _, f := range []string{"package.json", "package-lock.json", ".npmrc"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			return "", err
		}
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("npm ci axe-core@%s (offline?): %v\n%s", version, err, out)
	}
	os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	b, err := os.ReadFile(js)
	return string(b), err
}

func installedVersion(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", "axe-core", "package.json"))
	if err != nil {
		return ""
	}
	var p struct {
		Version string `json:"version"`
	}
	json.Unmarshal(b, &p)
	return p.Version
}

// AxeViolation is one rule axe found broken, with the elements that break it.
type AxeViolation struct {
	ID          string `json:"id"`
	Impact      string `json:"impact"`
	Help        string `json:"help"`
	Description string `json:"description"`
	Nodes       []struct {
		Target         []any  `json:"target"`
		HTML           string `json:"html"`
		FailureSummary string `json:"failureSummary"`
	} `json:"nodes"`
}

func (v AxeViolation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %s", v.ID, v.Impact, v.Help)
	for i, n := range v.Nodes {
		if i == 5 {
			fmt.Fprintf(&b, "\n    … and %d more", len(v.Nodes)-5)
			break
		}
		fmt.Fprintf(&b, "\n    %v %s\n      %s", n.Target, n.HTML, strings.ReplaceAll(n.FailureSummary, "\n", "; "))
	}
	return b.String()
}

// Axe runs axe-core on the page open in ctx and returns its violations (all impacts). axe is
// injected through the DevTools protocol, which the page's CSP does not govern.
func Axe(ctx context.Context, source string) ([]AxeViolation, error) {
	loaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`typeof window.axe === "object"`))
	if err != nil {
		return nil, err
	}
	if !loaded {
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](source+";true")); err != nil {
			return nil, fmt.Errorf("inject axe-core: %w", err)
		}
	}
	run := `axe.run(document, {resultTypes: ["violations"]}).then(function (r) { return JSON.stringify(r.violations); })`
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](run, chromedp.EvalAwaitPromise))
	if err != nil {
		return nil, fmt.Errorf("axe.run: %w", err)
	}
	var vs []AxeViolation
	if err := json.Unmarshal([]byte(raw), &vs); err != nil {
		return nil, fmt.Errorf("axe's result: %w", err)
	}
	return vs, nil
}

// EmulateColorScheme makes the browser in ctx prefer "light" or "dark" (prefers-color-scheme).
func EmulateColorScheme(ctx context.Context, scheme string) error {
	_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
	return err
}

// CheckA11y checks the page open in ctx (what names it in failures) with axe-core in the light and
// the dark theme, and fails t on any serious or critical violation. It leaves the browser
// preferring light. Other engineers' browser tests call it on their pages:
//
//	chromedp.Run(ctx, chromedp.Navigate(e.URL+"/agents"), chromedp.WaitVisible(`h1`))
//	CheckA11y(t, ctx, "/agents")
func CheckA11y(t testing.TB, ctx context.Context, what string) {
	t.Helper()
	src := AxeSource(t)
	for _, scheme := range []string{"dark", "light"} {
		if err := EmulateColorScheme(ctx, scheme); err != nil {
			t.Fatalf("%s: emulate prefers-color-scheme %s: %v", what, scheme, err)
		}
		vs, err := Axe(ctx, src)
		if err != nil {
			t.Fatalf("%s (%s theme): %v", what, scheme, err)
		}
		for _, v := range vs {
			if v.Impact == "serious" || v.Impact == "critical" {
				t.Errorf("%s (%s theme): axe-core: %s", what, scheme, v)
			}
		}
	}
}
