package learning

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/secret"
	"agentrun.dev/agentrun/internal/workflow"
)

// Limits of a proposal.
const (
	MaxNote      = 4 << 10
	MaxSkill     = 64 << 10
	MaxFiles     = 20
	MaxWorkflow  = 64 << 10
	noteTypeList = "user, feedback, project or reference"
)

// Proposal is what a run's last turn says it would keep.
type Proposal struct {
	Items []Item `json:"items"`
}

// Item is one thing to keep: a note to add, change or retire; a skill folder; a workflow.
type Item struct {
	// Kind is note, skill or workflow.
	Kind string `json:"kind"`
	// Action is add, change or retire (a note); a skill or workflow is always add or change.
	Action string `json:"action,omitempty"`
	// Path is the file (a note: notes/NAME.md; a workflow: workflows/NAME.json) or the folder (a
	// skill: skills/NAME) in the learning folder.
	Path string `json:"path"`
	// Content is a note's or workflow's whole text.
	Content string `json:"content,omitempty"`
	// Files are a skill's files, paths relative to its folder; one is SKILL.md.
	Files []SkillFile `json:"files,omitempty"`
}

// SkillFile is one file of a proposed skill.
type SkillFile struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// Note is a note's front matter (Claude Code's memory format) and the fact after it.
type Note struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Type        string `json:"type"`
	Body        string `json:"-"`
}

// The learning turn's structured answers (model.Structured): the proposal, the forced tool
// ProposeTool's input, and the grader's verdicts, GradeTool's.
const (
	ProposeTool = "propose_learning"
	GradeTool   = "grade_learning"
)

// ProposalSchema is the proposal's shape; Check judges what it holds.
var ProposalSchema = model.MustSchema(ProposeTool, "Propose what later runs of this agent should keep in its learning folder (items may be empty).", json.RawMessage(`{
  "type": "object", "additionalProperties": false, "required": ["items"],
  "properties": {"items": {"type": "array", "items": {
    "type": "object", "additionalProperties": false, "required": ["kind", "path"],
    "properties": {
      "kind": {"enum": ["note", "skill", "workflow"]},
      "action": {"enum": ["add", "change", "retire"]},
      "path": {"type": "string", "description": "notes/NAME.md, skills/NAME or workflows/NAME.json"},
      "content": {"type": "string", "description": "a note's or workflow's whole text"},
      "files": {"type": "array", "description": "a skill's files, one of them SKILL.md", "items": {
        "type": "object", "additionalProperties": false, "required": ["path", "content"],
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}}}}}}}`))

// GradeSchema is the grader's answer: one verdict per item it was shown.
var GradeSchema = model.MustSchema(GradeTool, "Give one verdict per proposed item: keep it or not, and why.", json.RawMessage(`{
  "type": "object", "additionalProperties": false, "required": ["verdicts"],
  "properties": {"verdicts": {"type": "array", "items": {
    "type": "object", "additionalProperties": false, "required": ["item", "keep", "reason"],
    "properties": {"item": {"type": "integer", "minimum": 0}, "keep": {"type": "boolean"}, "reason": {"type": "string"}, "rule": {"type": "boolean"}}}}}}`))

// DecodeProposal reads a proposal already valid against ProposalSchema.
func DecodeProposal(raw json.RawMessage) (Proposal, error) {
	var p Proposal
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("the proposal is not the JSON object asked for: %w", err)
	}
	return p, nil
}

// Limits of a note's front matter: name and description are one line each (the description is
// a line of the notes index in every later run's instructions).
const (
	MaxNoteName        = 100
	MaxNoteDescription = 1024
)

// JSONSpan is text from its first "{" to its last "}" (a harness's answer may put words or a
// fence around its JSON), or text itself when it holds no such span.
func JSONSpan(text string) string {
	s := strings.TrimSpace(text)
	if i := strings.Index(s, "{"); i >= 0 {
		if j := strings.LastIndex(s, "}"); j > i {
			return s[i : j+1]
		}
	}
	return s
}

// ParseNote reads a note: front matter with name, description and type, then the fact.
func ParseNote(text string) (Note, error) {
	n, _, err := parseNote(text)
	return n, err
}

// parseNote is ParseNote with the whole front matter as YAML read it.
func parseNote(text string) (Note, map[string]any, error) {
	var n Note
	rest, ok := strings.CutPrefix(strings.TrimPrefix(text, "\uFEFF"), "---\n")
	if !ok {
		return n, nil, fmt.Errorf("a note starts with a line \"---\", then name:, description: and type:, then \"---\"")
	}
	head, body, ok := strings.Cut(rest, "\n---\n")
	if !ok {
		if h, found := strings.CutSuffix(rest, "\n---"); found {
			head, body, ok = h, "", true
		}
	}
	if !ok {
		return n, nil, fmt.Errorf("the note's front matter has no closing \"---\" line")
	}
	raw, err := api.FrontMatterYAML("the note", []byte(head))
	if err != nil {
		return n, nil, err
	}
	str := func(k string, max int) (string, error) {
		v, ok := raw[k].(string)
		if !ok || strings.TrimSpace(v) == "" {
			return "", fmt.Errorf("the note's front matter has no %s (a string)", k)
		}
		v = strings.TrimSpace(v)
		if strings.ContainsFunc(v, func(r rune) bool { return unicode.IsControl(r) || r == '\u2028' || r == '\u2029' }) {
			return "", fmt.Errorf("the note's %s is one line of text: it holds a line break or another control character", k)
		}
		if n := utf8.RuneCountInString(v); n > max {
			return "", fmt.Errorf("the note's %s is %d characters, over the limit of %d", k, n, max)
		}
		return v, nil
	}
	if n.Name, err = str("name", MaxNoteName); err != nil {
		return n, nil, err
	}
	if n.Description, err = str("description", MaxNoteDescription); err != nil {
		return n, nil, err
	}
	if n.Type, err = str("type", 20); err != nil {
		return n, nil, err
	}
	switch n.Type {
	case "user", "feedback", "project", "reference":
	default:
		return n, nil, fmt.Errorf("the note's type %q is not one of %s", n.Type, noteTypeList)
	}
	n.Body = strings.TrimSpace(body)
	if n.Body == "" {
		return n, nil, fmt.Errorf("the note holds no fact after its front matter")
	}
	return n, raw, nil
}

// HiddenPath stands for a proposed path that holds a secret wherever the path would be shown.
const HiddenPath = "(a path that holds a secret, not shown)"

// Refusal is why code refused an item, before any grader saw it.
type Refusal struct {
	Item   int    `json:"item"`
	Path   string `json:"path"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// Check applies the code's rules to each item: the secrets the run was handed and anything that
// looks like a key or token, paths inside the folder, sizes, front matter, and a skill only from
// a run that Succeeded. It returns the items that pass and the refusals, by index.
func Check(p Proposal, secrets []string, succeeded bool) (ok []int, refused []Refusal) {
	files := 0
	skills := 0
	for i, it := range p.Items {
		reject := func(code, format string, args ...any) {
			refused = append(refused, Refusal{Item: i, Path: it.Path, Code: code, Reason: fmt.Sprintf(format, args...)})
		}
		// A path is shown on the timeline and in commit messages: one holding a secret is
		// refused without being repeated.
		names := []string{it.Path}
		for _, f := range it.Files {
			names = append(names, f.Path)
		}
		if why := leak(names, secrets); why != "" {
			// Not reject: the refusal must not repeat the path that holds the secret.
			code := "SecretInProposal"
			refused = append(refused, Refusal{Item: i, Path: HiddenPath, Code: code, Reason: "its path " + strings.TrimPrefix(why, "it ")})
			continue
		}
		if why := PathProblem(it.Path); why != "" {
			code := "InvalidPath"
			if strings.Contains(why, "not clean") || strings.Contains(why, "absolute") || strings.Contains(why, "not under") {
				code = "PathOutsideFolder"
			}
			reject(code, "path %q: %s", it.Path, why)
			continue
		}
		var texts []string
		var n int
		var passed bool
		switch it.Kind {
		case "note":
			texts, n, passed = checkNote(it, reject)
		case "skill":
			if !succeeded {
				reject("SkillNeedsSuccess", "only a run that Succeeded may write a skill")
				continue
			}
			if skills++; skills > 1 {
				reject("TooMany", "a proposal holds at most one skill")
				continue
			}
			texts, n, passed = checkSkill(it, reject)
		case "workflow":
			texts, n, passed = checkWorkflow(it, reject)
		default:
			reject("InvalidValue", "kind %q is not note, skill or workflow", it.Kind)
			continue
		}
		if !passed {
			continue
		}
		if files+n > MaxFiles {
			reject("TooMany", "a proposal writes at most %d files", MaxFiles)
			continue
		}
		if why := leak(texts, secrets); why != "" {
			reject("SecretInProposal", "%s", why)
			continue
		}
		files += n
		ok = append(ok, i)
	}
	return ok, refused
}

// rejectFunc records a refusal of the item being checked.
type rejectFunc func(code, format string, args ...any)

// checkNote checks a note (notes/NAME.md: its action, size and front matter). passed is false
// when it was refused; texts are what is checked for secrets and n the files it writes.
func checkNote(it Item, reject rejectFunc) (texts []string, n int, passed bool) {
	if !strings.HasPrefix(it.Path, "notes/") || !strings.HasSuffix(it.Path, ".md") || strings.Count(it.Path, "/") != 1 {
		reject("PathOutsideFolder", "a note's path is notes/NAME.md, not %q", it.Path)
		return nil, 0, false
	}
	switch it.Action {
	case "retire":
		return nil, 1, true
	case "add", "change":
		if len(it.Content) > MaxNote {
			reject("TooLarge", "the note is %d bytes, over the %d-byte limit", len(it.Content), MaxNote)
			return nil, 0, false
		}
		if _, err := ParseNote(it.Content); err != nil {
			reject("InvalidFrontMatter", "%v", err)
			return nil, 0, false
		}
		return []string{it.Content}, 1, true
	}
	reject("InvalidValue", "a note's action is add, change or retire, not %q", it.Action)
	return nil, 0, false
}

// checkSkill checks a skill folder (skills/NAME: its files' paths, its size, a SKILL.md naming
// the folder), as checkNote does a note.
func checkSkill(it Item, reject rejectFunc) (texts []string, n int, passed bool) {
	if !strings.HasPrefix(it.Path, "skills/") || strings.Count(it.Path, "/") != 1 {
		reject("PathOutsideFolder", "a skill's path is its folder skills/NAME, not %q", it.Path)
		return nil, 0, false
	}
	size, bad, badWhy, hasSkill := 0, "", "", false
	for _, f := range it.Files {
		if why := PathProblem(it.Path + "/" + f.Path); why != "" && bad == "" {
			bad, badWhy = f.Path, why
		}
		hasSkill = hasSkill || f.Path == api.SkillFileName
		size += len(f.Content)
		texts = append(texts, f.Content)
	}
	if bad != "" {
		reject("PathOutsideFolder", "the skill's file %q: %s", bad, badWhy)
		return nil, 0, false
	}
	if size > MaxSkill {
		reject("TooLarge", "the skill is %d bytes, over the %d-byte limit", size, MaxSkill)
		return nil, 0, false
	}
	if !hasSkill {
		reject("InvalidFrontMatter", "a skill holds a SKILL.md")
		return nil, 0, false
	}
	passed = true
	for _, f := range it.Files {
		if f.Path == api.SkillFileName {
			if fm, e := api.ParseSkillFrontMatter([]byte(f.Content)); e != nil {
				reject("InvalidFrontMatter", "%s", e.Message)
				passed = false
			} else if folder := strings.TrimPrefix(it.Path, "skills/"); fm.Name != folder {
				// A run is offered the skill by its folder's name, which SKILL.md states.
				reject("InvalidFrontMatter", "SKILL.md names the skill %q, not its folder's name %q", fm.Name, folder)
				passed = false
			}
		}
	}
	return texts, len(it.Files), passed
}

// checkWorkflow checks a workflow (workflows/NAME.json or .yaml: its size, and that the workflow
// engine would load it), as checkNote does a note.
func checkWorkflow(it Item, reject rejectFunc) (texts []string, n int, passed bool) {
	if !strings.HasPrefix(it.Path, "workflows/") || strings.Count(it.Path, "/") != 1 || !(strings.HasSuffix(it.Path, ".yaml") || strings.HasSuffix(it.Path, ".json")) {
		reject("PathOutsideFolder", "a workflow's path is workflows/NAME.json (or .yaml), not %q", it.Path)
		return nil, 0, false
	}
	if len(it.Content) > MaxWorkflow {
		reject("TooLarge", "the workflow is %d bytes, over the %d-byte limit", len(it.Content), MaxWorkflow)
		return nil, 0, false
	}
	// The workflow engine's own validation: what it would refuse to load is not kept.
	if _, errs := workflow.Validate([]byte(it.Content), workflow.Options{}); len(errs) > 0 {
		reject("InvalidWorkflow", "the workflow is not valid: %s", errs[0].Message)
		return nil, 0, false
	}
	return []string{it.Content}, 1, true
}

// keyPatterns are well-known key and token formats.
var keyPatterns = []struct {
	name string
	re   *regexp.Regexp
}{
	{"an Anthropic key", regexp.MustCompile(`sk-ant-[A-Za-z0-9_-]{8,}`)},
	{"an OpenAI-style key", regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{16,}`)},
	{"an AWS access key", regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`)},
	{"a GitHub token", regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})`)},
	{"a Slack token", regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}`)},
	{"a Google API key", regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`)},
	{"a Stripe key", regexp.MustCompile(`\b[rs]k_(live|test)_[0-9A-Za-z]{16,}`)},
	{"a private key", regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----`)},
	{"a JSON Web Token", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}`)},
	{"a bearer token", regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9._~+/-]{20,}`)},
}

var tokenRE = regexp.MustCompile(`[A-Za-z0-9+/=_\-]{24,}`)

// minSecret is the shortest value the run was handed that a proposal is checked for: a shorter
// one would refuse common words.
const minSecret = 6

// leak says why texts hold a secret ("" when none): one of secrets (at least minSecret
// characters), in any form the shared detector knows (hex, base64, reversed, %-encoded, in
// chunks), a well-known key format, or a long high-entropy string.
func leak(texts, secrets []string) string {
	var known secret.Detector
	for i, s := range secrets {
		if len(s) >= minSecret {
			known.Add(fmt.Sprint(i), s)
		}
	}
	for _, t := range texts {
		if _, found := known.Find(t); found {
			return "it holds a secret the run was handed (as written, encoded or in parts)"
		}
		for _, k := range keyPatterns {
			if k.re.MatchString(t) {
				return "it holds what looks like " + k.name
			}
		}
		for _, w := range tokenRE.FindAllString(t, -1) {
			if highEntropy(w) {
				return "it holds a long high-entropy string, which looks like a key or token"
			}
		}
	}
	return ""
}

// HoldsSecret reports whether text holds one of secrets or what looks like a key (the checks
// Check applies to an item's content): what a proposal's path must not repeat on the timeline.
func HoldsSecret(text string, secrets []string) bool { return leak([]string{text}, secrets) != "" }

// highEntropy: a token of 24 or more characters mixing letters and digits, with over 4 bits of
// Shannon entropy a character (English words and paths stay under it; random keys do not).
func highEntropy(w string) bool {
	var lower, upper, digit bool
	counts := map[rune]int{}
	for _, r := range w {
		counts[r]++
		switch {
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= '0' && r <= '9':
			digit = true
		}
	}
	if !digit || !(lower || upper) {
		return false
	}
	h := 0.0
	for _, c := range counts {
		p := float64(c) / float64(len(w))
		h -= p * math.Log2(p)
	}
	return h > 4
}

// ruleWords are the words that set or change a rule of behaviour, or instruct the agent (about
// approvals and permissions, its instructions or system prompt, running commands); spendWords
// those about tools and spending. Both are matched in text as Fold leaves it.
const (
	ruleWords = `\b(always|never|must|must not|do not|don't|dont|should|shall|required?|mandatory|forbidden|prohibited|` +
		`approv\w*|pre-?approved|permission\w*|allow\w*|deny|denied|authori[sz]\w*|consent\w*|confirm\w*|ask|asks|asked|asking|` +
		`obey\w*|ignor\w*|disregard\w*|overrid\w*|bypass\w*|skip\w*|instruct\w*|system|prompt\w*|rules?|polic(y|ies)|important|` +
		`you|your|execut\w*|command\w*|shell|sudo|curl|wget|bash)\b|\| *(ba|z)?sh\b|#+ *system`
	spendWords = `\b(tool\w*|spend\w*|cost\w*|budget\w*|cap|pay\w*|price\w*)\b|\$\d`
)

var (
	// riskyRE finds a rule in a note's description, other front matter and fact.
	riskyRE = regexp.MustCompile(ruleWords + "|" + spendWords)
	// riskyNameRE finds one in its name: a name is a short label, where "cap" or "cost" names
	// what the note is about rather than setting a rule.
	riskyNameRE = regexp.MustCompile(ruleWords)
)

// Risky reports whether an item waits for a person: a note added or changed that sets or
// changes a rule of behaviour or reads as an instruction to the agent (its type is feedback,
// Claude Code's type for guidance on how to work, or any of its fields (name, description, the
// other front matter, the fact) speaks of always/never/must, approvals or permissions, asking,
// its instructions or system prompt, running commands, tools, or spending, after Fold undid
// look-alike letters and spacing), a note changed or retired whose text on main (current, ""
// when main has none at its path) is such a rule (removing or rewording a rule changes it too),
// any skill (it is instructions the next runs follow) and any workflow (it runs tools). The
// grader's verdict may make a note risky too (it reads rules no word list names).
func Risky(it Item, current string) (bool, string) {
	switch it.Kind {
	case "skill":
		return true, "a skill tells later runs how to work"
	case "workflow":
		return true, "a workflow runs tools"
	case "note":
		if current != "" {
			if rule, why := noteRule(current); rule {
				if it.Action == "retire" {
					return true, "it retires a note that sets a rule: " + why
				}
				return true, "it changes a note that sets a rule: " + why
			}
		}
		if it.Action == "retire" {
			return false, ""
		}
		return noteRule(it.Content)
	}
	return false, ""
}

// noteRule reports whether a note's text sets a rule of behaviour, and why. Every field that
// reaches a prompt is read: the name and description (the notes index in the instructions),
// any other front matter and the fact (the note tool answers the whole text).
func noteRule(content string) (bool, string) {
	n, raw, err := parseNote(content)
	if err != nil {
		// Check refuses a note that does not parse; one already stored is read whole.
		if m := riskyRE.FindString(Fold(content)); m != "" {
			return true, fmt.Sprintf("the note sets a rule (%q)", m)
		}
		return false, ""
	}
	if n.Type == "feedback" {
		return true, "a feedback note sets how later runs work"
	}
	type field struct{ name, text string }
	fields := []field{{"name", n.Name}, {"description", n.Description}}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		if k != "name" && k != "description" && k != "type" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		fields = append(fields, field{"front matter " + k, k + ": " + flatten(raw[k])})
	}
	fields = append(fields, field{"fact", n.Body})
	for _, f := range fields {
		re := riskyRE
		if f.name == "name" {
			re = riskyNameRE
		}
		if m := re.FindString(Fold(f.text)); m != "" {
			if f.name == "fact" {
				return true, fmt.Sprintf("the note sets a rule (%q)", m)
			}
			return true, fmt.Sprintf("the note's %s sets a rule (%q)", f.name, m)
		}
	}
	return false, ""
}

// flatten is every string a YAML value holds, keys of maps included, one per line.
func flatten(v any) string {
	switch v := v.(type) {
	case map[string]any:
		var parts []string
		for k, x := range v {
			parts = append(parts, k+": "+flatten(x))
		}
		sort.Strings(parts)
		return strings.Join(parts, "\n")
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = flatten(x)
		}
		return strings.Join(parts, "\n")
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// Changes turns the kept items into file changes.
func Changes(items []Item) []Change {
	var out []Change
	for _, it := range items {
		switch {
		case it.Kind == "note" && it.Action == "retire":
			out = append(out, Change{Path: it.Path, Delete: true})
		case it.Kind == "skill":
			for _, f := range it.Files {
				out = append(out, Change{Path: it.Path + "/" + f.Path, Content: f.Content})
			}
		default:
			out = append(out, Change{Path: it.Path, Content: it.Content})
		}
	}
	return out
}

// Index is the notes index a run's instructions carry: each active note's name and description,
// by path.
func Index(files []File) string {
	var b bytes.Buffer
	for _, f := range files {
		if !strings.HasPrefix(f.Path, "notes/") {
			continue
		}
		n, err := ParseNote(f.Content)
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "- %s (%s): %s\n", n.Name, f.Path, n.Description)
	}
	return b.String()
}
