package learning

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"

	"agentrun.dev/agentrun/internal/api"
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

// ParseProposal reads the proposal from the model's answer: a JSON object, alone or in a fenced
// block.
func ParseProposal(text string) (Proposal, error) {
	var p Proposal
	s := strings.TrimSpace(text)
	if i := strings.Index(s, "{"); i >= 0 {
		if j := strings.LastIndex(s, "}"); j > i {
			s = s[i : j+1]
		}
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, fmt.Errorf("the proposal is not the JSON object asked for: %w", err)
	}
	return p, nil
}

// ParseNote reads a note: front matter with name, description and type, then the fact.
func ParseNote(text string) (Note, error) {
	var n Note
	rest, ok := strings.CutPrefix(strings.TrimPrefix(text, "\uFEFF"), "---\n")
	if !ok {
		return n, fmt.Errorf("a note starts with a line \"---\", then name:, description: and type:, then \"---\"")
	}
	head, body, ok := strings.Cut(rest, "\n---\n")
	if !ok {
		if h, found := strings.CutSuffix(rest, "\n---"); found {
			head, body, ok = h, "", true
		}
	}
	if !ok {
		return n, fmt.Errorf("the note's front matter has no closing \"---\" line")
	}
	raw, err := api.FrontMatterYAML("the note", []byte(head))
	if err != nil {
		return n, err
	}
	str := func(k string) (string, error) {
		v, ok := raw[k].(string)
		if !ok || strings.TrimSpace(v) == "" {
			return "", fmt.Errorf("the note's front matter has no %s (a string)", k)
		}
		return strings.TrimSpace(v), nil
	}
	if n.Name, err = str("name"); err != nil {
		return n, err
	}
	if n.Description, err = str("description"); err != nil {
		return n, err
	}
	if n.Type, err = str("type"); err != nil {
		return n, err
	}
	switch n.Type {
	case "user", "feedback", "project", "reference":
	default:
		return n, fmt.Errorf("the note's type %q is not one of %s", n.Type, noteTypeList)
	}
	n.Body = strings.TrimSpace(body)
	if n.Body == "" {
		return n, fmt.Errorf("the note holds no fact after its front matter")
	}
	return n, nil
}

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
		if !ValidPath(it.Path) {
			reject("PathOutsideFolder", "path %q is not a clean path under notes/, skills/ or workflows/", it.Path)
			continue
		}
		texts := []string{it.Content}
		n := 1
		switch it.Kind {
		case "note":
			if !strings.HasPrefix(it.Path, "notes/") || !strings.HasSuffix(it.Path, ".md") || strings.Count(it.Path, "/") != 1 {
				reject("PathOutsideFolder", "a note's path is notes/NAME.md, not %q", it.Path)
				continue
			}
			switch it.Action {
			case "retire":
				texts, n = nil, 1
			case "add", "change":
				if len(it.Content) > MaxNote {
					reject("TooLarge", "the note is %d bytes, over the %d-byte limit", len(it.Content), MaxNote)
					continue
				}
				if _, err := ParseNote(it.Content); err != nil {
					reject("InvalidFrontMatter", "%v", err)
					continue
				}
			default:
				reject("InvalidValue", "a note's action is add, change or retire, not %q", it.Action)
				continue
			}
		case "skill":
			if !succeeded {
				reject("SkillNeedsSuccess", "only a run that Succeeded may write a skill")
				continue
			}
			if skills++; skills > 1 {
				reject("TooMany", "a proposal holds at most one skill")
				continue
			}
			if !strings.HasPrefix(it.Path, "skills/") || strings.Count(it.Path, "/") != 1 {
				reject("PathOutsideFolder", "a skill's path is its folder skills/NAME, not %q", it.Path)
				continue
			}
			size, bad, hasSkill := 0, "", false
			texts, n = nil, len(it.Files)
			for _, f := range it.Files {
				if !ValidPath(it.Path + "/" + f.Path) {
					bad = f.Path
				}
				hasSkill = hasSkill || f.Path == api.SkillFileName
				size += len(f.Content)
				texts = append(texts, f.Content)
			}
			if bad != "" {
				reject("PathOutsideFolder", "the skill's file %q leaves its folder", bad)
				continue
			}
			if size > MaxSkill {
				reject("TooLarge", "the skill is %d bytes, over the %d-byte limit", size, MaxSkill)
				continue
			}
			if !hasSkill {
				reject("InvalidFrontMatter", "a skill holds a SKILL.md")
				continue
			}
			for _, f := range it.Files {
				if f.Path == api.SkillFileName {
					if fm, e := api.ParseSkillFrontMatter([]byte(f.Content)); e != nil {
						reject("InvalidFrontMatter", "%s", e.Message)
						bad = "x"
					} else if folder := strings.TrimPrefix(it.Path, "skills/"); fm.Name != folder {
						// A run is offered the skill by its folder's name, which SKILL.md states.
						reject("InvalidFrontMatter", "SKILL.md names the skill %q, not its folder's name %q", fm.Name, folder)
						bad = "x"
					}
				}
			}
			if bad != "" {
				continue
			}
		case "workflow":
			if !strings.HasPrefix(it.Path, "workflows/") || strings.Count(it.Path, "/") != 1 || !(strings.HasSuffix(it.Path, ".yaml") || strings.HasSuffix(it.Path, ".json")) {
				reject("PathOutsideFolder", "a workflow's path is workflows/NAME.json (or .yaml), not %q", it.Path)
				continue
			}
			if len(it.Content) > MaxWorkflow {
				reject("TooLarge", "the workflow is %d bytes, over the %d-byte limit", len(it.Content), MaxWorkflow)
				continue
			}
			// The workflow engine's own validation: what it would refuse to load is not kept.
			if _, errs := workflow.Validate([]byte(it.Content), workflow.Options{}); len(errs) > 0 {
				reject("InvalidWorkflow", "the workflow is not valid: %s", errs[0].Message)
				continue
			}
		default:
			reject("InvalidValue", "kind %q is not note, skill or workflow", it.Kind)
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

// leak says why texts hold a secret ("" when none): one of secrets (at least 6 characters, so
// a short value does not refuse common words), a well-known key format, or a long high-entropy
// string.
func leak(texts, secrets []string) string {
	for _, t := range texts {
		for _, s := range secrets {
			if len(s) >= 6 && strings.Contains(t, s) {
				return "it holds a secret the run was handed"
			}
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

// riskyRE finds words that set or change a rule of behaviour.
var riskyRE = regexp.MustCompile(`(?i)\b(always|never|must|must not|do not|don't|approv\w*|permission\w*|allow\w*|deny|denied|tool\w*|spend\w*|cost\w*|budget\w*|cap|pay\w*|price\w*|\$\d)`)

// Risky reports whether an item waits for a person: a note added or changed whose fact sets or
// changes a rule of behaviour (its type is feedback, Claude Code's type for guidance on how to
// work, or it speaks of always/never/must, approvals or permissions, tools, or spending), a note
// changed or retired whose text on main (current, "" when main has none at its path) is such a
// rule (removing or rewording a rule changes it too), any skill (it is instructions the next runs
// follow) and any workflow (it runs tools).
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

// noteRule reports whether a note's text sets a rule of behaviour, and why.
func noteRule(content string) (bool, string) {
	n, err := ParseNote(content)
	if err != nil {
		return false, ""
	}
	if n.Type == "feedback" {
		return true, "a feedback note sets how later runs work"
	}
	if m := riskyRE.FindString(n.Body); m != "" {
		return true, fmt.Sprintf("the note sets a rule (%q)", m)
	}
	return false, ""
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
