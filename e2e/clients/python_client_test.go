package clients

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
)

// pythonDir is the Python client's source folder (python/ at the repository's root).
func pythonDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs(filepath.Join("..", "..", "python"))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// pythons are the Python 3 interpreters to test with: Debian's /usr/bin/python3 and the one on
// PATH, each once (by the executable it runs).
func pythons(t *testing.T) []string {
	t.Helper()
	var out []string
	seen := map[string]bool{}
	cands := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		cands = append(cands, p)
	}
	for _, c := range cands {
		b, err := exec.Command(c, "-c", "import sys; assert sys.version_info >= (3, 9); print(sys.executable)").Output()
		if err != nil {
			continue
		}
		if exe := strings.TrimSpace(string(b)); !seen[exe] {
			seen[exe] = true
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		t.Skip("no python3 (3.9 or later) on this machine: the Python client is not tested")
	}
	return out
}

// copyTree copies the files under src into dst (pip builds in the folder it installs from, and
// must not leave build/ and *.egg-info in the shared source tree).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if d.Name() == "__pycache__" || d.Name() == "build" || strings.HasSuffix(d.Name(), ".egg-info") {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}

// pythonWithClient returns an interpreter that imports agentrun and nodus, and the environment to
// run it in. It installs the package with pip into a new venv, as a user would (offline: no build
// isolation, no index; the venv sees the system's setuptools and wheel). Where that cannot work
// (an interpreter without wheel), it says so and puts the source folder on PYTHONPATH instead.
func pythonWithClient(t *testing.T, py string) (string, []string) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "python")
	copyTree(t, pythonDir(t), src)
	venv := filepath.Join(t.TempDir(), "venv")
	env := []string{"PYTHONDONTWRITEBYTECODE=1", "PIP_NO_INDEX=1", "PIP_DISABLE_PIP_VERSION_CHECK=1"}
	run := func(name string, args ...string) error {
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), env...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if err != nil {
			t.Logf("%s %s: %v\n%s", name, strings.Join(args, " "), err, Tail(out.String(), 2000))
		}
		return err
	}
	vpy := filepath.Join(venv, "bin", "python")
	if run(py, "-m", "venv", "--system-site-packages", venv) == nil &&
		run(vpy, "-m", "pip", "install", "--no-build-isolation", "--no-index", src) == nil {
		return vpy, env
	}
	t.Logf("%s: pip could not install ./python here (see above); testing it from PYTHONPATH", py)
	return py, append(env, "PYTHONPATH="+src)
}

// pythonEnv is the environment a Python program gets: the server's address and token as a user
// would export them, and a data folder of its own (so nothing is read from ~/.agentrun).
func pythonEnv(e *Env, extra []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AGENTRUN_") || k == "PYTHONPATH" {
			continue
		}
		out = append(out, kv)
	}
	return append(append(out, "AGENTRUN_URL="+e.URL, "AGENTRUN_TOKEN="+e.Token, "AGENTRUN_HOME="+e.T.TempDir()), extra...)
}

// The Python client (python/): its unittest suite, the seed's "From Python" snippet among it, runs
// against the real server and runner, with the scripted model server for the vendor, under each
// python3 there is.
func TestPythonClient(t *testing.T) {
	t.Parallel()
	script, err := os.ReadFile(filepath.Join(pythonDir(t), "tests", "model-script.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, py := range pythons(t) {
		t.Run(strings.ReplaceAll(strings.TrimPrefix(py, "/"), "/", "_"), func(t *testing.T) {
			e := NewEnv(t, string(script))
			e.Start()
			vpy, extra := pythonWithClient(t, py)
			extra = append(extra, "AGENTRUN_TEST_SETUP_CODE="+e.SetupCode())
			tests := filepath.Join(pythonDir(t), "tests")
			// Run from an empty folder, with only tests/ as the top level: agentrun and nodus are
			// imported from where pip put them, not from the source tree.
			cmd := exec.Command(vpy, "-m", "unittest", "discover", "-v", "-s", tests, "-t", tests)
			cmd.Dir = t.TempDir()
			cmd.Env = pythonEnv(e, extra)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("python -m unittest: %v\n%s", err, out)
			}
			// Every test ran: none was skipped for want of a server or a setup code.
			if s := string(out); strings.Contains(s, "skipped") || !strings.Contains(s, "test_seed_snippet") {
				t.Errorf("the suite skipped tests:\n%s", s)
			}
			t.Logf("%s", out)
		})
	}
}

// The seed's evaluation.py, unchanged (it finds the server from AGENTRUN_URL), after deploying the
// seed's parallel-agents-worker: it creates the evaluation group, waits, prints per-case outcomes
// and deletes the group. The scripted model answers every task of the test split right, so the
// real grader passes both cases.
func TestPythonSeedEvaluation(t *testing.T) {
	t.Parallel()
	dir := pythonDir(t)
	script, err := os.ReadFile(filepath.Join(dir, "examples", "evaluation-model-script.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, py := range pythons(t) {
		t.Run(strings.ReplaceAll(strings.TrimPrefix(py, "/"), "/", "_"), func(t *testing.T) {
			e := NewEnv(t, string(script))
			e.Start()
			e.MustCLI(0, "apply", "-f", WriteFile(t, e.Dir, "agent.yaml", SeedGroupAgentYAML))
			vpy, extra := pythonWithClient(t, py)
			cmd := exec.Command(vpy, filepath.Join(dir, "examples", "evaluation.py"))
			cmd.Dir = t.TempDir()
			cmd.Env = pythonEnv(e, extra)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			if err := cmd.Run(); err != nil {
				t.Fatalf("evaluation.py: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
			}
			t.Logf("evaluation.py took %s:\n%s", time.Since(start).Round(time.Millisecond), stdout.String())
			lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
			want := []string{"Succeeded: cases=2, pending=0", "pass rate: 1", "mean reward: 1"}
			if len(lines) != 5 || strings.Join(lines[:3], "\n") != strings.Join(want, "\n") {
				t.Fatalf("evaluation.py printed:\n%s\nwant it to start with:\n%s", stdout.String(), strings.Join(want, "\n"))
			}
			caseLine := regexp.MustCompile(`^test-\d\d scored pass$`)
			for _, l := range lines[3:] {
				if !caseLine.MatchString(l) {
					t.Errorf("case line %q", l)
				}
			}
			if lines[3] == lines[4] {
				t.Errorf("the same case twice: %q", lines[3])
			}
			// Its finally: the group is gone, with its runs.
			if st := e.Do("GET", "/v2/agentgroups/parallel-agents-eval", nil, nil); st != 404 {
				t.Errorf("the evaluation group is still there: HTTP %d", st)
			}
			var runs struct{ Items []any }
			e.Do("GET", "/v2/agentruns?fieldSelector=spec.group%3Dparallel-agents-eval", nil, &runs)
			if len(runs.Items) != 0 {
				t.Errorf("%d runs of the deleted group are left", len(runs.Items))
			}
		})
	}
}
