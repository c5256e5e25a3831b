package learning

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/workflow"
)

// What a run is offered from a commit of the folder beside its notes: the learned skills (each
// skills/NAME folder with a SKILL.md) and the learned workflows (each document under workflows/).

// Skills returns the skills of files (one commit's), each a skills/NAME folder holding SKILL.md,
// as the API's skill (Version 0: a learned skill has no catalogue version; its commit pins it).
// A folder whose SKILL.md does not parse is left out, with why in bad.
func Skills(files []File) (skills []*api.Skill, bad []string) {
	byName := map[string]*api.Skill{}
	var order []string
	for _, f := range files {
		rest, ok := strings.CutPrefix(f.Path, "skills/")
		if !ok {
			continue
		}
		name, file, ok := strings.Cut(rest, "/")
		if !ok {
			continue
		}
		s := byName[name]
		if s == nil {
			s = &api.Skill{Metadata: api.ObjectMeta{Name: name}}
			byName[name] = s
			order = append(order, name)
		}
		s.Spec.Files = append(s.Spec.Files, api.NewSkillFile(file, []byte(f.Content)))
	}
	sort.Strings(order)
	for _, name := range order {
		s := byName[name]
		md, ok := s.File(api.SkillFileName)
		if !ok {
			bad = append(bad, fmt.Sprintf("skills/%s has no SKILL.md", name))
			continue
		}
		fm, e := api.ParseSkillFrontMatter(md)
		if e != nil {
			bad = append(bad, fmt.Sprintf("skills/%s: %s", name, e.Message))
			continue
		}
		if fm.Name != name {
			bad = append(bad, fmt.Sprintf("skills/%s: SKILL.md names the skill %q, not its folder's name", name, fm.Name))
			continue
		}
		s.Spec.Description = fm.Description
		skills = append(skills, s)
	}
	return skills, bad
}

// Workflow is a learned workflow offered to a run as one tool.
type Workflow struct {
	// Path is the document's path in the folder (workflows/NAME.json).
	Path string
	// Tool is the tool's name: workflow_ and the document's name, lowercase, each run of other
	// characters than letters and digits one underscore, at most 64 characters.
	Tool string
	// Description tells the model what the tool runs.
	Description string
	// InputSchema is the workflow's input schema (its input.schemaId), or any object.
	InputSchema json.RawMessage
	// W is the validated document.
	W *workflow.Workflow
}

var nonWord = regexp.MustCompile(`[^a-z0-9]+`)

// ToolName is the tool name a workflow named name is offered as.
func ToolName(name string) string {
	n := strings.Trim(nonWord.ReplaceAllString(strings.ToLower(name), "_"), "_")
	if n == "" {
		n = "unnamed"
	}
	n = "workflow_" + n
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

// Workflows returns the runnable workflows of files (one commit's), by path. A document that does
// not validate as one this engine runs, or whose tool name another document took, is left out,
// with why in bad.
func Workflows(files []File) (out []Workflow, bad []string) {
	taken := map[string]string{}
	for _, f := range files {
		if !strings.HasPrefix(f.Path, "workflows/") || strings.Count(f.Path, "/") != 1 {
			continue
		}
		w, errs := workflow.Validate([]byte(f.Content), workflow.Options{Runnable: true})
		if len(errs) > 0 {
			bad = append(bad, fmt.Sprintf("%s: %s", f.Path, errs[0].Message))
			continue
		}
		name := w.Name
		if name == "" {
			name = strings.TrimSuffix(path.Base(f.Path), path.Ext(f.Path))
		}
		tool := ToolName(name)
		if other, ok := taken[tool]; ok {
			bad = append(bad, fmt.Sprintf("%s: its tool name %s is %s's", f.Path, tool, other))
			continue
		}
		taken[tool] = f.Path
		schema := json.RawMessage(`{"type": "object"}`)
		if w.Input != nil {
			if s, ok := w.Schemas[w.Input.SchemaID]; ok && len(s) > 0 {
				schema = s
			}
		}
		out = append(out, Workflow{Path: f.Path, Tool: tool, InputSchema: schema, W: w,
			Description: fmt.Sprintf("Runs the workflow %q you learned in an earlier run (%s) on the input its schema describes, and answers with its output. Each of its steps runs under this run's tools and approvals.", name, f.Path)})
	}
	return out, bad
}
