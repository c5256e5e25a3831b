// Package policy owns approvals: whether a tool call is allowed, must ask a person first, or is
// denied. An agent lists rules (a tool name, or a tool with a pattern on its main argument such as
// `bash(go test *)` or `write(docs/**)`), a default for everything else, and may run unattended
// ("never-ask"); a deny set configured on the server holds over every agent, never-ask included.
// It does no I/O: the agent loop asks Decide and journals the answer.
package policy

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"

	"agentrun.dev/agentrun/internal/api"
)

// Actions.
const (
	Allow = "allow"
	Ask   = "ask"
	Deny  = "deny"
)

// Rule maps calls matching Match (a tool name "write", a tool with an argument pattern
// "bash(go test *)", or "*") to an Action.
type Rule = api.ApprovalRule

// Spec is an agent's approval settings: NeverAsk turns every "ask" into "allow" (the server's
// deny set still holds); Default is the action for calls no rule matches (default allow).
type Spec = api.Approvals

// Decision is the outcome for one call.
type Decision struct {
	Action string `json:"action"`
	// Rule is the rule that decided ("server deny: bash(rm *)", "rule 2: bash(go test *)",
	// "default").
	Rule string `json:"rule"`
}

// Validate checks a spec; field is the path of the bad part inside it (e.g. "rules[1].match").
func Validate(s Spec) (field string, err error) {
	if s.Default != "" && s.Default != Allow && s.Default != Ask && s.Default != Deny {
		return "default", fmt.Errorf("default %q: use allow, ask or deny", s.Default)
	}
	for i, r := range s.Rules {
		if r.Action != Allow && r.Action != Ask && r.Action != Deny {
			return fmt.Sprintf("rules[%d].action", i), fmt.Errorf("action %q: use allow, ask or deny", r.Action)
		}
		if _, err := Parse(r.Match); err != nil {
			return fmt.Sprintf("rules[%d].match", i), err
		}
	}
	return "", nil
}

// Pattern is a parsed match: a tool name (or "*") and an optional argument glob.
type Pattern struct {
	Tool string
	Arg  string
	has  bool
}

var matchRE = regexp.MustCompile(`^([a-z_*][a-z0-9_]*|\*)(?:\((.*)\))?$`)

// Parse parses "tool" or "tool(glob)".
func Parse(m string) (Pattern, error) {
	sub := matchRE.FindStringSubmatch(strings.TrimSpace(m))
	if sub == nil {
		return Pattern{}, fmt.Errorf("match %q: write a tool name, or a tool with a pattern in parentheses such as bash(go test *)", m)
	}
	p := Pattern{Tool: sub[1], Arg: sub[2], has: strings.Contains(m, "(")}
	if p.has && p.Arg == "" {
		return Pattern{}, fmt.Errorf("match %q: empty pattern in parentheses", m)
	}
	return p, nil
}

// MainArg is the argument a pattern is matched against, per tool: the command for shells, the
// path for file tools, the URL for fetchers and browsers.
func MainArg(tool string, input json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(input, &m) != nil {
		return ""
	}
	for _, k := range []string{"command", "path", "url", "pattern", "selector", "text", "label"} {
		if v, ok := m[k].(string); ok {
			return v
		}
	}
	return ""
}

// pathTools match their argument as a path: "*" stays within a folder, "**" crosses folders.
var pathTools = map[string]bool{"read": true, "write": true, "edit": true, "ls": true, "grep": true}

// Matches reports whether a call matches the pattern.
func (p Pattern) Matches(tool string, input json.RawMessage) bool {
	if p.Tool != "*" && p.Tool != tool {
		return false
	}
	if !p.has {
		return true
	}
	arg := MainArg(tool, input)
	if pathTools[tool] {
		return matchPath(p.Arg, strings.TrimPrefix(path.Clean("/"+strings.TrimPrefix(arg, "/workspace/")), "/"))
	}
	return globAny(p.Arg, strings.TrimSpace(arg))
}

// globAny matches with "*" standing for any run of characters (spaces and slashes included), so
// "go test *" matches "go test ./...".
func globAny(pattern, s string) bool {
	re := "^" + strings.ReplaceAll(regexp.QuoteMeta(pattern), `\*`, ".*") + "$"
	ok, _ := regexp.MatchString(re, s)
	return ok
}

// matchPath matches slash paths, "**" matching any number of folders.
func matchPath(pattern, p string) bool {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; {
		case c == '*' && i+1 < len(pattern) && pattern[i+1] == '*':
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	ok, _ := regexp.MatchString(b.String(), p)
	return ok
}

// Decide returns what to do with a call: the server's deny set first (it holds over everything),
// then the agent's rules in order (the first that matches decides), then the agent's default.
// NeverAsk turns "ask" into "allow" but never a deny into anything else.
func Decide(s Spec, serverDeny []string, tool string, input json.RawMessage) Decision {
	for _, d := range serverDeny {
		if p, err := Parse(d); err == nil && p.Matches(tool, input) {
			return Decision{Action: Deny, Rule: "server deny: " + d}
		}
	}
	d := Decision{Action: s.Default, Rule: "default"}
	if d.Action == "" {
		d.Action = Allow
	}
	for i, r := range s.Rules {
		if p, err := Parse(r.Match); err == nil && p.Matches(tool, input) {
			d = Decision{Action: r.Action, Rule: fmt.Sprintf("rule %d: %s", i+1, r.Match)}
			break
		}
	}
	if s.NeverAsk && d.Action == Ask {
		d = Decision{Action: Allow, Rule: d.Rule + " (never-ask)"}
	}
	return d
}
