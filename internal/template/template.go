// Package template owns agentrun's templates: the template folder format (template.yaml,
// instructions.md, skills/*/SKILL.md, workflow.json, triggers/*.yaml, eval/cases/*.yaml, a
// README.md), the ready-made templates embedded in the binary (templates/NAME/), and parsing and
// validating a folder into what POST /v2/templates/apply makes (api.TemplateApply). Every error
// names the file and the field path in it, with the api package's stable codes; the agent,
// triggers and skills are checked with the same validation `apply` runs.
package template

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"

	"regexp"
	"sort"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/policy"
	"agentrun.dev/agentrun/internal/trigger"
)

//go:embed all:templates
var embedded embed.FS

// File names of the format.
const (
	ManifestFile     = "template.yaml"
	InstructionsFile = "instructions.md"
	WorkflowFile     = "workflow.json"
	ReadmeFile       = "README.md"
	SkillsDir        = "skills"
	TriggersDir      = "triggers"
	CasesDir         = "eval/cases"
)

// Manifest is template.yaml.
type Manifest struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Agent is the agent's spec as `apply` takes it, without system (instructions.md) and
	// workflow (workflow.json).
	Agent api.AgentSpec `json:"agent"`
	// Threshold is the pass rate `template eval` needs to exit 0 (default 1: every case).
	Threshold *float64 `json:"threshold,omitempty"`
	// Params are the values `--set key=value` gives; $(KEY) in any of the template's text files
	// is replaced by the value (or the default).
	Params map[string]Param `json:"params,omitempty"`
	// Needs are what a person must do after apply that the files cannot say themselves (a
	// repository to connect, ...); the secrets triggers and MCP servers name, and the MCP tools
	// to tick, are listed without being written here.
	Needs []Need `json:"needs,omitempty"`
}

// Param is one --set value a template takes.
type Param struct {
	Description string `json:"description"`
	Default     string `json:"default,omitempty"`
}

// Need is one thing a person must do after apply, with the command that does it.
type Need struct {
	What    string `json:"what"`
	Command string `json:"command,omitempty"`
}

// Case is one eval case, eval/cases/NAME.yaml: the run's input, and how its answer is graded
// (the evaluation graders: exact, normalized, regex, json (JSON Schema), script, rubric).
type Case struct {
	Name   string          `json:"-"`
	Input  string          `json:"input"`
	Grader api.GraderSpec  `json:"grader"`
	Answer json.RawMessage `json:"answer,omitempty"`
}

// Template is one parsed, validated template.
type Template struct {
	Manifest Manifest
	Readme   string
	// Apply is what the server makes; its names follow the agent's (see Load).
	Apply api.TemplateApply
	// TriggerFiles and SkillFiles name the file each of Apply.Triggers and Apply.Skills came from,
	// so an error the server gives at triggers[i] or skills[i] is told with its file.
	TriggerFiles []string
	SkillFiles   []string
	Cases        []Case
	// Files lists every file of the folder (for show).
	Files []string
}

// Error is a template error: the file, and the api error (code, field path in the file, message).
type Error struct {
	File string
	Err  *api.Error
}

func (e *Error) Error() string {
	if e.Err.Field != "" {
		return fmt.Sprintf("%s: %s: %s (%s)", e.File, e.Err.Field, e.Err.Message, e.Err.Code)
	}
	return fmt.Sprintf("%s: %s (%s)", e.File, e.Err.Message, e.Err.Code)
}

func (e *Error) Unwrap() error { return e.Err }

// fileErr wraps err as the file's; an *api.Error's field is moved from under from to under to
// (spec.tools[0] in the agent is agent.tools[0] in template.yaml).
func fileErr(file string, err error, from, to string) error {
	ae, ok := api.AsError(err)
	if !ok {
		ae = api.Invalid("", "%v", err)
	}
	c := *ae
	move := func(field string) string {
		if from != "" && (field == from || strings.HasPrefix(field, from+".") || strings.HasPrefix(field, from+"[")) {
			return strings.TrimPrefix(to+strings.TrimPrefix(field, from), ".")
		}
		return field
	}
	c.Field = move(c.Field)
	// Every problem of the list is moved too, not only the first.
	c.Errors = append([]api.FieldError(nil), ae.Errors...)
	for i := range c.Errors {
		c.Errors[i].Field = move(c.Errors[i].Field)
	}
	return &Error{File: file, Err: &c}
}

// Names lists the embedded templates, sorted.
func Names() []string {
	ents, _ := fs.ReadDir(embedded, "templates")
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// Embedded returns the embedded template NAME's folder.
func Embedded(name string) (fs.FS, bool) {
	for _, n := range Names() {
		if n == name {
			sub, err := fs.Sub(embedded, "templates/"+name)
			return sub, err == nil
		}
	}
	return nil, false
}

// Open resolves NAME (an embedded template) or DIR (a folder on disk; anything with a slash or
// that exists is a folder).
func Open(nameOrDir string) (fs.FS, string, error) {
	if f, ok := Embedded(nameOrDir); ok && !strings.Contains(nameOrDir, "/") {
		return f, nameOrDir, nil
	}
	st, err := os.Stat(nameOrDir)
	if err != nil {
		return nil, "", fmt.Errorf("%q is neither a template (%s) nor a folder: %w", nameOrDir, strings.Join(Names(), ", "), err)
	}
	if !st.IsDir() {
		return nil, "", fmt.Errorf("%s is not a folder: a template is a folder holding %s", nameOrDir, ManifestFile)
	}
	return os.DirFS(nameOrDir), nameOrDir, nil
}

// Options are apply's choices: the agent's name (default: the template's) and --set values.
type Options struct {
	Name string
	Set  map[string]string
	Now  time.Time
}

var paramRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// maxTemplateBytes bounds a template folder (its text files are read whole).
const maxTemplateBytes = 4 << 20

// Load parses and validates the template in fsys. Nothing is stored: the result's Apply is what
// the server is asked to make. The agent is named opt.Name (or the template's name), each
// trigger AGENT-FILE (the trigger file's name without .yaml).
func Load(fsys fs.FS, opt Options) (*Template, error) {
	if opt.Now.IsZero() {
		opt.Now = time.Now()
	}
	files := map[string][]byte{}
	var names []string
	total := 0
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		if total += len(b); total > maxTemplateBytes {
			return &Error{File: p, Err: api.E(api.CodeTooLarge, "", "the template's files hold more than %d bytes", maxTemplateBytes)}
		}
		files[p] = b
		names = append(names, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	raw, ok := files[ManifestFile]
	if !ok {
		return nil, &Error{File: ManifestFile, Err: api.E(api.CodeRequired, "", "a template folder needs %s (name, description, agent)", ManifestFile)}
	}
	var m Manifest
	if err := decodeYAML(raw, &m); err != nil {
		return nil, fileErr(ManifestFile, err, "", "")
	}
	// Params: --set names must be declared; $(KEY) is replaced in every text file.
	values := map[string]string{}
	for k, p := range m.Params {
		values[k] = p.Default
	}
	// $(AGENT) is the agent's name (--name, or the template's).
	if _, ok := m.Params["AGENT"]; ok {
		return nil, &Error{File: ManifestFile, Err: api.Invalid("params.AGENT", "AGENT is the agent's name, filled in by apply; name the parameter otherwise")}
	}
	values["AGENT"] = opt.Name
	if values["AGENT"] == "" {
		values["AGENT"] = m.Name
	}
	for k, v := range opt.Set {
		if _, ok := m.Params[k]; !ok {
			return nil, &Error{File: ManifestFile, Err: api.Invalid("params", "--set %s: the template has no parameter %q (it has: %s)", k, k, paramNames(m.Params))}
		}
		values[k] = v
	}
	for p, b := range files {
		var bad string
		out := paramRef.ReplaceAllStringFunc(string(b), func(ref string) string {
			k := paramRef.FindStringSubmatch(ref)[1]
			v, ok := values[k]
			if !ok && bad == "" {
				bad = k
			}
			return v
		})
		if bad != "" {
			return nil, &Error{File: p, Err: api.Invalid("", "$(%s) names no parameter of the template (params in %s: %s)", bad, ManifestFile, paramNames(m.Params))}
		}
		files[p] = []byte(out)
	}
	if raw = files[ManifestFile]; true {
		m = Manifest{}
		if err := decodeYAML(raw, &m); err != nil {
			return nil, fileErr(ManifestFile, err, "", "")
		}
	}
	if err := api.ValidName("name", m.Name); err != nil {
		return nil, fileErr(ManifestFile, err, "", "")
	}
	if m.Name == api.TemplateBuiltin {
		return nil, &Error{File: ManifestFile, Err: api.Invalid("name", "%q marks the server's own ready-made agent; name the template otherwise", m.Name)}
	}
	if strings.TrimSpace(m.Description) == "" {
		return nil, &Error{File: ManifestFile, Err: api.E(api.CodeRequired, "description", "a template needs a description")}
	}
	if m.Threshold != nil && (*m.Threshold < 0 || *m.Threshold > 1) {
		return nil, &Error{File: ManifestFile, Err: api.Invalid("threshold", "threshold is a pass rate between 0 and 1")}
	}
	for i, n := range m.Needs {
		if strings.TrimSpace(n.What) == "" {
			return nil, &Error{File: ManifestFile, Err: api.E(api.CodeRequired, api.NewPath("needs").Index(i).Child("what").String(), "a need says what a person must do")}
		}
	}
	t := &Template{Manifest: m, Readme: string(files[ReadmeFile]), Files: names}
	if t.Readme == "" {
		return nil, &Error{File: ReadmeFile, Err: api.E(api.CodeRequired, "", "a template needs a README.md saying what it does and what it needs")}
	}
	agentName := opt.Name
	if agentName == "" {
		agentName = m.Name
	}
	if err := api.ValidName("metadata.name", agentName); err != nil {
		return nil, fmt.Errorf("--name: %w", err)
	}

	// The agent: template.yaml's agent, instructions.md as its system prompt, workflow.json.
	spec := m.Agent
	if spec.System != "" {
		return nil, &Error{File: ManifestFile, Err: api.Invalid("agent.system", "a template's instructions are %s, not agent.system", InstructionsFile)}
	}
	if len(spec.Workflow) != 0 {
		return nil, &Error{File: ManifestFile, Err: api.Invalid("agent.workflow", "a template's workflow is %s, not agent.workflow", WorkflowFile)}
	}
	instr, ok := files[InstructionsFile]
	if !ok || strings.TrimSpace(string(instr)) == "" {
		return nil, &Error{File: InstructionsFile, Err: api.E(api.CodeRequired, "", "a template needs its instructions (the agent's system prompt)")}
	}
	spec.System = string(instr)
	if wf, ok := files[WorkflowFile]; ok {
		if !json.Valid(wf) {
			return nil, &Error{File: WorkflowFile, Err: api.Invalid("", "%s is not valid JSON", WorkflowFile)}
		}
		spec.Workflow = json.RawMessage(wf)
	}
	// MCP tools are granted nothing until a person ticks them.
	for i, s := range spec.MCPServers {
		if len(s.Tools) > 0 {
			return nil, &Error{File: ManifestFile, Err: api.Invalid(api.NewPath("agent", "mcpServers").Index(i).Child("tools").String(), "a template ticks no MCP tool: a person ticks them after apply (agentrun agents mcp-tools AGENT %s)", s.Name)}
		}
	}

	// Skills: skills/NAME/ folders, each named by its SKILL.md; the agent names them all.
	skillDirs := map[string]bool{}
	for _, p := range names {
		if rest, ok := strings.CutPrefix(p, SkillsDir+"/"); ok {
			dir, _, found := strings.Cut(rest, "/")
			if !found {
				return nil, &Error{File: p, Err: api.Invalid("", "a skill is a folder skills/NAME/ holding SKILL.md, not a file in skills/")}
			}
			skillDirs[dir] = true
		}
	}
	var dirs []string
	for d := range skillDirs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		prefix := SkillsDir + "/" + d + "/"
		sk := api.Skill{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Skill"}}
		for _, p := range names {
			if rel, ok := strings.CutPrefix(p, prefix); ok {
				sk.Spec.Files = append(sk.Spec.Files, api.NewSkillFile(rel, files[p]))
			}
		}
		file := prefix + api.SkillFileName
		if err := api.DefaultAndValidateSkill(&sk); err != nil {
			return nil, fileErr(file, err, "", "")
		}
		t.Apply.Skills = append(t.Apply.Skills, sk)
		t.SkillFiles = append(t.SkillFiles, file)
		listed := false
		for _, ref := range spec.Skills {
			if n, _, _ := strings.Cut(ref, "@"); n == sk.Metadata.Name {
				listed = true
			}
		}
		if !listed {
			spec.Skills = append(spec.Skills, sk.Metadata.Name)
		}
	}

	agent := api.Agent{
		TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Agent"},
		Metadata: api.ObjectMeta{Name: agentName, Labels: map[string]string{api.TemplateLabel: m.Name}},
		Spec:     spec,
	}
	// The same checks the server's apply makes that need no store (the server makes the rest:
	// the computer's provider, skills stored, workflow children).
	if err := api.DefaultAndValidateAgent(&agent, nil); err != nil {
		return nil, agentErr(err)
	}
	if agent.Spec.Approvals != nil {
		if field, err := policy.Validate(*agent.Spec.Approvals); err != nil {
			return nil, &Error{File: ManifestFile, Err: api.Invalid(api.NewPath("agent", "approvals").Join(field), "%v", err)}
		}
	}
	t.Apply.Template = m.Name
	t.Apply.Agent = agent

	// Triggers: triggers/FILE.yaml, each named AGENT-FILE, starting runs of the agent.
	for _, p := range names {
		base, ok := strings.CutPrefix(p, TriggersDir+"/")
		if !ok {
			continue
		}
		stem, isYAML := strings.CutSuffix(base, ".yaml")
		if !isYAML || strings.Contains(stem, "/") {
			return nil, &Error{File: p, Err: api.Invalid("", "a trigger is a file triggers/NAME.yaml")}
		}
		var tr api.Trigger
		if err := decodeYAML(files[p], &tr); err != nil {
			return nil, fileErr(p, err, "", "")
		}
		if tr.Metadata.Name != "" {
			return nil, &Error{File: p, Err: api.Invalid("metadata.name", "a template's trigger is named AGENT-%s (the agent's name and the file's); leave metadata.name out", stem)}
		}
		if tr.Spec.Agent != "" {
			return nil, &Error{File: p, Err: api.Invalid("spec.agent", "a template's trigger starts runs of the template's agent; leave spec.agent out")}
		}
		tr.Metadata.Name = agentName + "-" + stem
		tr.Spec.Agent = agentName
		check := tr
		if check.Spec.Schedule != nil {
			sch := *check.Spec.Schedule
			check.Spec.Schedule = &sch
		}
		if err := trigger.DefaultAndValidate(&check, opt.Now); err != nil {
			return nil, fileErr(p, err, "", "")
		}
		// A schedule without a time zone is kept so: the server gives it its own zone.
		t.Apply.Triggers = append(t.Apply.Triggers, tr)
		t.TriggerFiles = append(t.TriggerFiles, p)
	}

	// Eval cases: eval/cases/NAME.yaml.
	for _, p := range names {
		base, ok := strings.CutPrefix(p, CasesDir+"/")
		if !ok {
			continue
		}
		stem, isYAML := strings.CutSuffix(base, ".yaml")
		if !isYAML || strings.Contains(stem, "/") {
			return nil, &Error{File: p, Err: api.Invalid("", "an eval case is a file eval/cases/NAME.yaml")}
		}
		var c Case
		if err := decodeYAML(files[p], &c); err != nil {
			return nil, fileErr(p, err, "", "")
		}
		c.Name = stem
		if err := validateCase(c); err != nil {
			return nil, fileErr(p, err, "", "")
		}
		t.Cases = append(t.Cases, c)
	}
	return t, nil
}

// agentErr names the file an agent validation error belongs to: the system prompt is
// instructions.md, the workflow workflow.json, the rest template.yaml's agent.
func agentErr(err error) error {
	ae, ok := api.AsError(err)
	if !ok {
		return &Error{File: ManifestFile, Err: api.Invalid("agent", "%v", err)}
	}
	switch {
	case ae.Field == "spec.system":
		return fileErr(InstructionsFile, err, "spec.system", "")
	case strings.HasPrefix(ae.Field, "spec.workflow"):
		// The field is the JSON pointer in workflow.json.
		c := *ae
		c.Field = strings.TrimPrefix(ae.Field, "spec.workflow")
		if c.Field == "" {
			c.Field = "/"
		}
		c.Message = strings.ReplaceAll(c.Message, "spec.workflow", "")
		return &Error{File: WorkflowFile, Err: &c}
	}
	return fileErr(ManifestFile, err, "spec", "agent")
}

// validateCase checks a case as the evaluation would load it: as a one-task environment, so the
// grader is refused for what an Environment's is.
func validateCase(c Case) error {
	if strings.TrimSpace(c.Input) == "" {
		return api.E(api.CodeRequired, "input", "an eval case needs its input (the run's first message)")
	}
	env := c.Environment("t", "1")
	if err := api.ValidateEnvironment(&env); err != nil {
		ae, ok := api.AsError(err)
		if !ok {
			return err
		}
		cp := *ae
		switch {
		case strings.HasPrefix(cp.Field, "spec.grader"):
			cp.Field = strings.TrimPrefix(cp.Field, "spec.")
		case strings.HasSuffix(cp.Field, ".prompt"):
			cp.Field = "input"
		}
		return &cp
	}
	return nil
}

// Environment is the case as an evaluation environment of one task (id: the case's name).
func (c Case) Environment(name, version string) api.Environment {
	return api.Environment{
		TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Environment"},
		Metadata: api.ObjectMeta{Name: name},
		Spec: api.EnvironmentSpec{
			Version: version, Grader: c.Grader,
			Splits: map[string][]api.Task{"cases": {{ID: nameOr(c.Name, "case"), Prompt: c.Input, Answer: c.Answer}}},
		},
	}
}

func nameOr(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// Threshold is the pass rate template eval needs (default 1).
func (t *Template) Threshold() float64 {
	if t.Manifest.Threshold == nil {
		return 1
	}
	return *t.Manifest.Threshold
}

// FileOf names the file an apply error's field (agent..., triggers[i]..., skills[i]...) comes from,
// and the field within it.
func (t *Template) FileOf(field string) (file, inFile string) {
	idx := func(prefix string) (int, string, bool) {
		rest, ok := strings.CutPrefix(field, prefix+"[")
		if !ok {
			return 0, "", false
		}
		n, tail, ok := strings.Cut(rest, "]")
		if !ok {
			return 0, "", false
		}
		var i int
		if _, err := fmt.Sscanf(n, "%d", &i); err != nil {
			return 0, "", false
		}
		return i, strings.TrimPrefix(tail, "."), true
	}
	if i, rest, ok := idx("triggers"); ok && i < len(t.TriggerFiles) {
		return t.TriggerFiles[i], rest
	}
	if i, rest, ok := idx("skills"); ok && i < len(t.SkillFiles) {
		return t.SkillFiles[i], rest
	}
	if rest, ok := strings.CutPrefix(field, "agent."); ok {
		switch {
		case rest == "spec.system":
			return InstructionsFile, ""
		case strings.HasPrefix(rest, "spec.workflow"):
			return WorkflowFile, strings.TrimPrefix(rest, "spec.workflow")
		case strings.HasPrefix(rest, "spec."):
			return ManifestFile, "agent." + strings.TrimPrefix(rest, "spec.")
		}
		return ManifestFile, rest
	}
	return ManifestFile, field
}

// Needs lists what a person must do once the template is applied, with the command for each:
// the template's own needs, each signing secret a trigger waits on, each secret an MCP server or
// the model names, and each MCP server's tools to tick.
func (t *Template) Needs(applied *api.TemplateApplied) []Need {
	out := append([]Need(nil), t.Manifest.Needs...)
	agent := t.Apply.Agent.Metadata.Name
	if applied != nil {
		for _, tr := range applied.Triggers {
			if tr.Suspended && tr.SuspendedFor != "" {
				out = append(out, Need{
					What:    fmt.Sprintf("trigger %s is suspended until its signing secret %s exists: make one (signed in as a person), give it to the sender, then resume the trigger", tr.Name, tr.SuspendedFor),
					Command: fmt.Sprintf("agentrun triggers rotate %s && agentrun triggers resume %s", tr.Name, tr.Name),
				})
			}
		}
	}
	secrets := map[string]map[string]bool{}
	addSecret := func(v string) {
		if name, key, ok, err := api.ParseSecretRef(v); ok && err == nil {
			if secrets[name] == nil {
				secrets[name] = map[string]bool{}
			}
			secrets[name][key] = true
		}
	}
	spec := t.Apply.Agent.Spec
	for _, s := range spec.MCPServers {
		for _, v := range s.Env {
			addSecret(v)
		}
		for _, v := range s.Headers {
			addSecret(v)
		}
	}
	if spec.Model.APIKeySecret != "" {
		secrets[spec.Model.APIKeySecret] = map[string]bool{"API_KEY": true}
	}
	var sn []string
	for n := range secrets {
		sn = append(sn, n)
	}
	sort.Strings(sn)
	for _, n := range sn {
		var keys []string
		for k := range secrets[n] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out = append(out, Need{What: fmt.Sprintf("secret %s (keys %s) for the agent's tools", n, strings.Join(keys, ", ")),
			Command: "agentrun secrets set " + n + " " + strings.Join(keys, " ")})
	}
	for _, s := range spec.MCPServers {
		out = append(out, Need{
			What:    fmt.Sprintf("MCP server %s: no tool is granted until you tick it; list its tools, then tick those the agent may call", s.Name),
			Command: fmt.Sprintf("agentrun agents mcp-tools %s %s && agentrun patch agent/%s --patch '{\"spec\":{\"mcpServers\":[...{\"name\":\"%s\",\"tools\":[\"TOOL\"]}]}}' (or the console's Tools page)", agent, s.Name, agent, s.Name),
		})
	}
	return out
}

func paramNames(p map[string]Param) string {
	if len(p) == 0 {
		return "none"
	}
	var n []string
	for k := range p {
		n = append(n, k)
	}
	sort.Strings(n)
	return strings.Join(n, ", ")
}

// decodeYAML decodes one YAML document strictly (unknown fields and wrong types refused with
// their path, keys given twice refused), as apply decodes a file.
func decodeYAML(b []byte, v any) error {
	j, err := api.YAMLToJSON(b)
	if err != nil {
		return err
	}
	if string(j) == "null" {
		return api.E(api.CodeRequired, "", "the file is empty")
	}
	return api.DecodeStrict(j, v)
}

// Describe is one line per embedded template: its name and description (for list).
func Describe() ([][2]string, error) {
	var out [][2]string
	for _, n := range Names() {
		f, _ := Embedded(n)
		t, err := Load(f, Options{})
		if err != nil {
			return nil, fmt.Errorf("template %s: %w", n, err)
		}
		out = append(out, [2]string{n, t.Manifest.Description})
	}
	return out, nil
}
