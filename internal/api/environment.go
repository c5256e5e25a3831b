package api

import (
	"encoding/json"
	"regexp"
)

// Environment is a versioned evaluation task set: splits of tasks (a prompt for the agent and
// hidden answer data only the grader sees) and the grader. NAME@VERSION is immutable: loading the
// same name and version again with other content is refused.
type Environment struct {
	TypeMeta `json:",inline"`
	Metadata ObjectMeta        `json:"metadata"`
	Spec     EnvironmentSpec   `json:"spec"`
	Status   EnvironmentStatus `json:"status,omitempty"`
}

// EnvironmentSpec is an environment's content.
type EnvironmentSpec struct {
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
	// Image names the grader's image when a sandbox provider runs graders (recorded as given).
	Image  string            `json:"image,omitempty"`
	Grader GraderSpec        `json:"grader"`
	Splits map[string][]Task `json:"splits"`
}

// Task is one evaluation task. Answer is hidden from the agent: only the grader sees it.
type Task struct {
	ID     string          `json:"id"`
	Prompt string          `json:"prompt"`
	Answer json.RawMessage `json:"answer,omitempty"`
}

// GraderSpec says how an answer is scored.
//
//   - exact: the answer equals the task's answer (a JSON string, or any JSON value's text).
//   - normalized: equal after trimming, lower-casing, collapsing spaces and dropping a final
//     period; numbers compare as numbers.
//   - regex: the answer matches pattern (or, if pattern is empty, the task's answer as a pattern).
//   - json: the answer (or its first {...} block) is JSON that satisfies schema (JSON Schema,
//     draft 2020-12 unless $schema says otherwise; formats asserted; no remote $refs) and whose
//     fields equal the task's answer object's fields.
//   - script: a shell script run as a subprocess in a fresh folder holding answer.txt,
//     expected.json, task.json and workspace/ (a copy of the run's folder); it prints
//     {"pass": bool, "reward": number, "evidence": "..."} on stdout.
//   - rubric: a model grades the answer against rubric, in an ordinary run of a grader agent
//     (routed, capped, billed and journaled like any run), model names the model (default: routed
//     within haiku).
type GraderSpec struct {
	Kind          string          `json:"kind"`
	Pattern       string          `json:"pattern,omitempty"`
	CaseSensitive bool            `json:"caseSensitive,omitempty"`
	Schema        json.RawMessage `json:"schema,omitempty"`
	Script        string          `json:"script,omitempty"`
	Rubric        string          `json:"rubric,omitempty"`
	Model         string          `json:"model,omitempty"`
	// TimeoutSeconds bounds one script grading (default 60).
	TimeoutSeconds int `json:"timeoutSeconds,omitempty"`
}

// EnvironmentStatus is written by the system.
type EnvironmentStatus struct {
	// Builtin: shipped with this server.
	Builtin bool           `json:"builtin,omitempty"`
	Tasks   map[string]int `json:"tasks,omitempty"`
}

var envName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?(/[a-z0-9]([-a-z0-9.]*[a-z0-9])?)?$`)
var envVersion = regexp.MustCompile(`^[A-Za-z0-9][-A-Za-z0-9_.+]{0,63}$`)

// Grader kinds.
var GraderKinds = map[string]bool{"exact": true, "normalized": true, "regex": true, "json": true, "script": true, "rubric": true}

// ValidateEnvironment checks an environment as loaded.
func ValidateEnvironment(e *Environment) error {
	if err := checkTypeMeta(&e.TypeMeta, "Environment"); err != nil {
		return err
	}
	if !envName.MatchString(e.Metadata.Name) || len(e.Metadata.Name) > 128 {
		return Invalid("metadata.name", "environment name %q: lowercase letters, digits, '-' and '.', optionally OWNER/NAME", e.Metadata.Name)
	}
	if !envVersion.MatchString(e.Spec.Version) {
		return E(CodeRequired, "spec.version", "an environment needs a version (like 1.0.0)")
	}
	if !GraderKinds[e.Spec.Grader.Kind] {
		return Invalid("spec.grader.kind", "grader kind %q: use exact, normalized, regex, json, script or rubric", e.Spec.Grader.Kind)
	}
	if e.Spec.Grader.Kind == "script" && e.Spec.Grader.Script == "" {
		return E(CodeRequired, "spec.grader.script", "a script grader needs its script")
	}
	if e.Spec.Grader.Kind == "rubric" && e.Spec.Grader.Rubric == "" {
		return E(CodeRequired, "spec.grader.rubric", "a rubric grader needs its rubric")
	}
	if e.Spec.Grader.Kind == "regex" && e.Spec.Grader.Pattern != "" {
		if _, err := regexp.Compile(e.Spec.Grader.Pattern); err != nil {
			return Invalid("spec.grader.pattern", "%v", err)
		}
	}
	if err := validateGraderSchema(e.Spec.Grader); err != nil {
		return err
	}
	if len(e.Spec.Splits) == 0 {
		return E(CodeRequired, "spec.splits", "an environment needs at least one split of tasks")
	}
	e.Status.Tasks = map[string]int{}
	for split, tasks := range e.Spec.Splits {
		if err := ValidName("spec.splits", split); err != nil {
			return err
		}
		if len(tasks) == 0 {
			return Invalid(NewPath("spec", "splits", split).String(), "split %q has no tasks", split)
		}
		seen := map[string]bool{}
		for i, t := range tasks {
			at := NewPath("spec", "splits", split).Index(i)
			if t.ID == "" || len(t.ID) > 128 {
				return E(CodeRequired, at.Child("id").String(), "every task needs an id (at most 128 characters)")
			}
			if seen[t.ID] {
				return Invalid(at.Child("id").String(), "task id %q is used twice in split %q", t.ID, split)
			}
			seen[t.ID] = true
			if t.Prompt == "" || len(t.Prompt) > MaxInputBytes {
				return Invalid(at.Child("prompt").String(), "every task needs a prompt of at most 256 KiB")
			}
		}
		e.Status.Tasks[split] = len(tasks)
	}
	return nil
}

// Ref is NAME@VERSION.
func (e *Environment) Ref() string { return e.Metadata.Name + "@" + e.Spec.Version }
