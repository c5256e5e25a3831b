package eval

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/store"
)

// Verdict is a grader's decision on one answer. A grader error (as opposed to a failing verdict)
// leaves the case unscored.
type Verdict struct {
	Pass     bool
	Reward   float64
	Evidence string
}

// ErrRubricUnavailable: Grade alone cannot run the model rubric grader; the Evaluator runs it as
// an ordinary run of a grader agent (rubric.go).
var ErrRubricUnavailable = errors.New("the model rubric grader runs only inside an evaluation group")

// GraderVersion identifies a grader: its kind, the environment version and a hash of its spec.
func GraderVersion(env *api.Environment) string {
	b, _ := json.Marshal(env.Spec.Grader)
	sum := sha256.Sum256(b)
	return env.Spec.Grader.Kind + "/" + env.Spec.Version + "/" + hex.EncodeToString(sum[:6])
}

// Grade scores answer against task with the environment's grader. files is the run's folder
// (for script graders).
func Grade(ctx context.Context, g api.GraderSpec, task api.Task, answer string, files []store.File) (Verdict, error) {
	return GradeIn(ctx, nil, g, task, answer, files)
}

// GradeIn is Grade with script graders run in a sandbox from sb when it is available here (no
// network, resource limits, only the grading folder mounted); otherwise, or with sb nil, as a
// plain subprocess in that folder.
func GradeIn(ctx context.Context, sb computer.Provider, g api.GraderSpec, task api.Task, answer string, files []store.File) (Verdict, error) {
	expected := expectedText(task.Answer)
	switch g.Kind {
	case "exact":
		got, want := strings.TrimSpace(answer), strings.TrimSpace(expected)
		return boolVerdict(got == want, fmt.Sprintf("answer %q, expected %q", clip(got), clip(want))), nil
	case "normalized":
		got, want := normalize(answer), normalize(expected)
		ok := got == want
		if !ok {
			if a, err1 := strconv.ParseFloat(got, 64); err1 == nil {
				if b, err2 := strconv.ParseFloat(want, 64); err2 == nil {
					ok = math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b))
				}
			}
		}
		return boolVerdict(ok, fmt.Sprintf("normalized answer %q, expected %q", clip(got), clip(want))), nil
	case "regex":
		pat := g.Pattern
		if pat == "" {
			pat = expected
		}
		if !g.CaseSensitive && !strings.HasPrefix(pat, "(?i)") {
			pat = "(?i)" + pat
		}
		re, err := regexp.Compile(pat)
		if err != nil {
			return Verdict{}, fmt.Errorf("grader pattern: %w", err)
		}
		ok := re.MatchString(strings.TrimSpace(answer))
		return boolVerdict(ok, fmt.Sprintf("answer %q matched /%s/: %v", clip(answer), pat, ok)), nil
	case "json":
		return gradeJSON(g, task, answer)
	case "script":
		return gradeScript(ctx, sb, g, task, answer, files)
	case "rubric":
		return Verdict{}, ErrRubricUnavailable
	}
	return Verdict{}, fmt.Errorf("unknown grader kind %q", g.Kind)
}

func boolVerdict(ok bool, evidence string) Verdict {
	v := Verdict{Pass: ok, Evidence: evidence}
	if ok {
		v.Reward = 1
	}
	return v
}

// expectedText is a task's answer as text: a JSON string's value, or the JSON itself.
func expectedText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

var spaces = regexp.MustCompile(`\s+`)

func normalize(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = spaces.ReplaceAllString(s, " ")
	s = strings.TrimRight(s, ".!")
	s = strings.Trim(s, "\"'`*")
	return strings.TrimSpace(s)
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// gradeJSON: the answer (or its first {...} block) must be JSON satisfying the grader's JSON Schema
// and equal to every field of the task's answer object. An answer that is not JSON is a scored
// failure; a schema that does not compile is a grader error (ValidateEnvironment refuses it at load).
func gradeJSON(g api.GraderSpec, task api.Task, answer string) (Verdict, error) {
	text := strings.TrimSpace(answer)
	var got any
	if json.Unmarshal([]byte(text), &got) != nil {
		got = nil
		if i, j := strings.Index(text, "{"), strings.LastIndex(text, "}"); i >= 0 && j > i {
			text = text[i : j+1]
			if json.Unmarshal([]byte(text), &got) != nil {
				got = nil
			}
		}
		if got == nil {
			return Verdict{Evidence: "the answer is not JSON"}, nil
		}
	}
	schema, err := g.CompiledSchema()
	if err != nil {
		return Verdict{}, fmt.Errorf("grader schema: %w", err)
	}
	if schema != nil {
		// The validator reads numbers as json.Number, so large integers keep their precision.
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
		if err != nil {
			return Verdict{}, fmt.Errorf("answer JSON: %w", err)
		}
		if err := schema.Validate(inst); err != nil {
			return Verdict{Evidence: "schema: " + schemaProblems(err)}, nil
		}
	}
	var want map[string]any
	if len(task.Answer) > 0 && json.Unmarshal(task.Answer, &want) == nil {
		obj, _ := got.(map[string]any)
		var wrong []string
		for k, v := range want {
			if !reflect.DeepEqual(obj[k], v) {
				wrong = append(wrong, fmt.Sprintf("%s is %s, expected %s", k, js(obj[k]), js(v)))
			}
		}
		if len(wrong) > 0 {
			sort.Strings(wrong)
			return Verdict{Evidence: strings.Join(wrong, "; ")}, nil
		}
	}
	return Verdict{Pass: true, Reward: 1, Evidence: "valid JSON with the expected fields"}, nil
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }

// schemaProblems flattens a validation error to its leaf causes, one "PATH: what" each
// ($.items[0].n), as every schema check's errors read (model.SchemaProblems).
func schemaProblems(err error) string { return model.SchemaProblems(err) }

// gradeScript runs the environment's script with sh in a fresh folder (never the run's folder)
// holding answer.txt, expected.json (the hidden answer), task.json and workspace/ (a copy of the
// run's folder as the store saved it). The agent never sees this folder. The script prints
// {"pass": bool, "reward": number, "evidence": "..."}; a non-zero exit, a timeout or other output
// is a grader failure (the case is unscored).
//
// With a sandbox provider available (the local bubblewrap sandbox) the script runs inside it, the
// folder mounted at /workspace, without network; otherwise it is a plain subprocess in the folder
// with a minimal environment (isolated from the run, not from this machine).
func gradeScript(ctx context.Context, sb computer.Provider, g api.GraderSpec, task api.Task, answer string, files []store.File) (Verdict, error) {
	dir, err := os.MkdirTemp("", "agentrun-grade-")
	if err != nil {
		return Verdict{}, err
	}
	defer os.RemoveAll(dir)
	taskJSON, _ := json.Marshal(map[string]string{"id": task.ID, "prompt": task.Prompt})
	expected := task.Answer
	if len(expected) == 0 {
		expected = json.RawMessage("null")
	}
	for name, content := range map[string][]byte{"answer.txt": []byte(answer), "expected.json": expected, "task.json": taskJSON, "grader.sh": []byte(g.Script)} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			return Verdict{}, err
		}
	}
	ws := filepath.Join(dir, "workspace")
	os.MkdirAll(ws, 0o700)
	for _, f := range files {
		p := filepath.Join(ws, filepath.FromSlash(f.Path))
		if !strings.HasPrefix(p, ws+string(filepath.Separator)) {
			continue
		}
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, f.Content, 0o600); err != nil {
			return Verdict{}, err
		}
	}
	timeout := time.Duration(g.TimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	if sb != nil && sb.Available(ctx).Available {
		return scriptInSandbox(ctx, sb, dir, timeout)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, "sh", "grader.sh")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "LANG=C.UTF-8"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if cctx.Err() != nil {
			return Verdict{}, fmt.Errorf("grader script did not finish within %s", timeout)
		}
		return Verdict{}, fmt.Errorf("grader script failed: %v: %s", err, clip(strings.TrimSpace(stderr.String())))
	}
	return parseVerdict(stdout.String())
}

func scriptInSandbox(ctx context.Context, sb computer.Provider, dir string, timeout time.Duration) (Verdict, error) {
	var b [4]byte
	rand.Read(b[:])
	c, err := sb.Create(ctx, computer.Spec{Run: "grade-" + hex.EncodeToString(b[:]), Folder: dir, Kind: computer.KindSandbox})
	if err != nil {
		return Verdict{}, fmt.Errorf("grader sandbox: %w", err)
	}
	defer c.Close()
	box, ok := c.(computer.Sandbox)
	if !ok {
		return Verdict{}, fmt.Errorf("grader sandbox: provider %s made no sandbox", sb.Name())
	}
	res, err := box.Exec(ctx, "sh grader.sh", computer.ExecOptions{Timeout: timeout})
	if err != nil {
		return Verdict{}, fmt.Errorf("grader sandbox: %w", err)
	}
	if res.TimedOut {
		return Verdict{}, fmt.Errorf("grader script did not finish within %s", timeout)
	}
	if res.ExitCode != 0 {
		return Verdict{}, fmt.Errorf("grader script failed: exit %d: %s", res.ExitCode, clip(strings.TrimSpace(res.Stderr)))
	}
	return parseVerdict(res.Stdout)
}

func parseVerdict(stdout string) (Verdict, error) {
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	var out struct {
		Pass     *bool    `json:"pass"`
		Reward   *float64 `json:"reward"`
		Evidence string   `json:"evidence"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &out); err != nil || out.Pass == nil {
		return Verdict{}, fmt.Errorf("grader script printed no verdict ({\"pass\": ..., \"reward\": ...}): %q", clip(stdout))
	}
	v := Verdict{Pass: *out.Pass, Evidence: out.Evidence}
	if out.Reward != nil {
		v.Reward = *out.Reward
	} else if v.Pass {
		v.Reward = 1
	}
	return v, nil
}
