// Package policy owns approvals: whether a tool call is allowed, must ask a person first, or is
// denied. An agent lists rules (a tool name, or a tool with a pattern on its main argument such as
// `bash(go test *)` or `write(docs/**)`), a default for everything else, and may run unattended
// ("never-ask"); a deny set configured on the server holds over every agent, never-ask included.
// A shell call's command line is split into its simple commands and each is matched on its own
// (shell.go, normalize.go): a chain is denied if any part is, allowed only if every part is.
// It does no I/O: the agent loop asks Decide and journals the answer (docs/architecture.md,
// "Tool calls").
package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/catalog"
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
	// For a shell call: Command is the simple command that decided, Line the whole command line
	// (when it is more than that command), and Construct what approvals could not see into, when
	// that decided ("eval", "bash -c", ...).
	Command   string `json:"command,omitempty"`
	Line      string `json:"line,omitempty"`
	Construct string `json:"construct,omitempty"`
}

// Explain says what was decided, by which rule and on which command, e.g. `denied by the
// server's rule bash(curl *): curl --version (in "true && curl --version | head -1")`.
func (d Decision) Explain() string {
	verb := map[string]string{Allow: "allowed", Ask: "needs approval", Deny: "denied"}[d.Action]
	var by string
	switch r := d.Rule; {
	case strings.HasPrefix(r, "server deny: "):
		by = "the server's rule " + strings.TrimPrefix(r, "server deny: ")
	case strings.HasPrefix(r, "invalid input: "):
		return verb + ": " + r
	case strings.HasPrefix(r, "rule "):
		n, m, _ := strings.Cut(strings.TrimPrefix(r, "rule "), ": ")
		by = "the agent's rule " + n + " " + m
	default:
		by = "the agent's " + r
	}
	s := verb + " by " + by
	if d.Construct != "" {
		s += ": " + d.Command + " uses " + d.Construct + ", whose commands approvals cannot check; write the commands plainly"
	} else if d.Command != "" {
		s += ": " + d.Command
	}
	if d.Line != "" {
		s += " (in " + strconv.Quote(d.Line) + ")"
	}
	return s
}

// Check is Validate as the API's error at spec.approvals (nil for no spec or a valid one), the
// one form the server and the CLI's apply refuse an agent's approvals in.
func Check(s *Spec) error {
	if s == nil {
		return nil
	}
	if field, err := Validate(*s); err != nil {
		return api.Invalid(api.NewPath("spec", "approvals").Join(field), "%v", err)
	}
	return nil
}

// Validate checks a spec; field is the path of the bad part inside it (e.g. "rules[1].match").
func Validate(s Spec) (field string, err error) {
	if s.Default != "" && s.Default != Allow && s.Default != Ask && s.Default != Deny {
		return "default", fmt.Errorf("default %q: use allow, ask or deny", s.Default)
	}
	for i, r := range s.Rules {
		if r.Action != Allow && r.Action != Ask && r.Action != Deny {
			return api.NewPath("rules").Index(i).Child("action").String(), fmt.Errorf("action %q: use allow, ask or deny", r.Action)
		}
		if _, err := Parse(r.Match); err != nil {
			return api.NewPath("rules").Index(i).Child("match").String(), err
		}
	}
	// neverAsk turns every ask into allow: an ask written beside it would never ask (a merge
	// patch adding an ask rule to a never-ask agent ran the tool unasked). The two contradict.
	if s.NeverAsk {
		const why = "neverAsk is true, which turns every ask into allow, so this would never ask: remove neverAsk (set it to false or null) or make it allow or deny"
		if s.Default == Ask {
			return "default", fmt.Errorf("default ask contradicts neverAsk: %s", why)
		}
		for i, r := range s.Rules {
			if r.Action == Ask {
				return api.NewPath("rules").Index(i).Child("action").String(), fmt.Errorf("rule %d (%s) asks, and %s", i, r.Match, why)
			}
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

// A tool name: the catalog's are lowercase; an MCP tool's (mcp__SERVER__TOOL) may hold capitals, "-" and ".".
var matchRE = regexp.MustCompile(`^([a-z_*][a-zA-Z0-9_.-]*|\*)(?:\((.*)\))?$`)

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

// decodeInput decodes a call's input with the tool catalog's strict decoder, the one the tool
// runs on (a tool the catalog does not have is decoded generically, still strictly), so a
// pattern is matched against exactly the values the tool will use.
func decodeInput(tool string, input json.RawMessage) (catalog.Input, error) {
	in, err := catalog.DecodeMatch(tool, input)
	if errors.Is(err, catalog.ErrUnknownTool) {
		return catalog.DecodeGeneric(tool, input)
	}
	return in, err
}

// matches reports whether a decoded call matches the pattern. File tools match their argument as
// a path: "*" stays within a folder, "**" crosses folders.
func (p Pattern) matches(tool string, in catalog.Input) bool {
	if p.Tool != "*" && p.Tool != tool {
		return false
	}
	if !p.has {
		return true
	}
	arg := in.Arg()
	if in.IsPath() {
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

// ShellCommand returns the command line of a shell call: a call whose input has a "command"
// string (the sandbox's bash, and any tool that takes a command line), for a tool that is not a
// file tool.
func ShellCommand(tool string, input json.RawMessage) (string, bool) {
	in, err := decodeInput(tool, input)
	if err != nil {
		return "", false
	}
	return in.Command()
}

// Decide returns what to do with a call: the server's deny set first (it holds over everything),
// then the agent's rules in order (the first that matches decides), then the agent's default.
// NeverAsk turns "ask" into "allow" but never a deny into anything else.
//
// A shell call is decided per simple command (see SplitCommand): it is denied if any of its
// commands is denied, allowed only if every one is allowed, and asks otherwise. A command is
// matched in each of its forms; the first rule matching a form decides that form; a deny of any
// form denies the command, else the most restrictive of the forms a pattern rule decided (the
// rest, decided only by a tool-wide rule or the default, do not count), else the tool-wide rule
// or default. A construct approvals cannot see into (eval, bash -c, source, ...) in a call
// against which the server denies a pattern is denied; against which the agent denies or asks a
// pattern, it asks (and is denied under never-ask if that pattern denies); and where the commands
// it hides would fall to a tool-wide rule or default that is not allow, it is not allowed by a
// pattern allowing the visible command (it asks; under never-ask a deny denies).
//
// The input is decoded strictly (see DecideInput); one that does not decode is denied.
func Decide(s Spec, serverDeny []string, tool string, input json.RawMessage) Decision {
	in, err := decodeInput(tool, input)
	if err != nil {
		return Decision{Action: Deny, Rule: "invalid input: " + err.Error()}
	}
	return DecideInput(s, serverDeny, tool, in)
}

// DecideInput is Decide on an input decoded once by the caller (catalog.Decode), the same value
// the journal titles and the tool runs: what is decided is what runs.
func DecideInput(s Spec, serverDeny []string, tool string, in catalog.Input) Decision {
	if line, ok := in.Command(); ok {
		return decideShell(s, serverDeny, tool, line)
	}
	for _, d := range serverDeny {
		if p, err := Parse(d); err == nil && p.matches(tool, in) {
			return Decision{Action: Deny, Rule: "server deny: " + d}
		}
	}
	d := Decision{Action: s.Default, Rule: "default"}
	if d.Action == "" {
		d.Action = Allow
	}
	for i, r := range s.Rules {
		if p, err := Parse(r.Match); err == nil && p.matches(tool, in) {
			d = Decision{Action: r.Action, Rule: fmt.Sprintf("rule %d: %s", i+1, r.Match)}
			break
		}
	}
	if s.NeverAsk && d.Action == Ask {
		d = Decision{Action: Allow, Rule: d.Rule + " (never-ask)"}
	}
	return d
}

// namesInner reports whether a pattern matching an outer form of a command (a wrapper's) names
// the command it runs: its text before any "*" reaches past the inner program's name, which ends
// tail bytes before the form's end.
func namesInner(pattern, form string, tail int) bool {
	lit, _, _ := strings.Cut(pattern, "*")
	return len(lit) >= len(form)-tail
}

// matchShell matches a pattern's argument against a form of a simple command: "*" is any run of
// characters, and a pattern ending in " *" also matches the command without arguments
// ("curl *" matches "curl").
func matchShell(pattern, form string) bool {
	return globAny(pattern, form) || (strings.HasSuffix(pattern, " *") && globAny(strings.TrimSuffix(pattern, " *"), form))
}

func (p Pattern) forTool(tool string) bool { return p.Tool == "*" || p.Tool == tool }

var severity = map[string]int{Allow: 0, Ask: 1, Deny: 2}

func decideShell(s Spec, serverDeny []string, tool, line string) Decision {
	cmds := SplitCommand(line)
	line = strings.TrimSpace(line)
	if len(cmds) == 0 { // nothing runs (empty, comments): match the line as it is
		cmds = []Command{{Text: line, Forms: []string{line}}}
	}
	at := func(d Decision, c Command) Decision {
		d.Command = c.Text
		if c.Text != line {
			d.Line = line
		}
		return d
	}
	server := serverDenyFor(serverDeny, tool)
	if d, ok := server.deny(cmds, at); ok {
		return d
	}
	var dark *Command
	for i := range cmds {
		if cmds[i].Opaque != "" {
			dark = &cmds[i]
			break
		}
	}
	if dark != nil && len(server) > 0 {
		d := at(Decision{Action: Deny, Rule: "server deny: " + server[0].text, Construct: dark.Opaque}, *dark)
		return d
	}
	// The agent's rules, per command.
	r := newShellRules(s, tool)
	ruleName, action := r.name, r.action
	decided := make([]int, len(cmds))
	for i, c := range cmds {
		decided[i] = r.decide(c)
		if action(decided[i]) == Deny {
			return at(Decision{Action: Deny, Rule: ruleName(decided[i])}, c)
		}
	}
	if dark != nil && r.guardDeny >= 0 {
		d := at(Decision{Action: Ask, Rule: ruleName(r.guardDeny), Construct: dark.Opaque}, *dark)
		if s.NeverAsk {
			d.Action, d.Rule = Deny, d.Rule+" (never-ask)"
		}
		return d
	}
	// The commands a construct hides would be decided by the tool-wide rule or the default: if
	// that is not allow, a pattern allowing the visible command (echo * for echo $((x))) does
	// not allow what it hides.
	wide := r.wide()
	var d Decision
	switch {
	case dark != nil && r.guardAsk >= 0:
		d = at(Decision{Action: Ask, Rule: ruleName(r.guardAsk), Construct: dark.Opaque}, *dark)
	default:
		d = Decision{Action: Allow}
		for i, c := range cmds {
			if action(decided[i]) == Ask {
				d = at(Decision{Action: Ask, Rule: ruleName(decided[i])}, c)
				break
			}
		}
		if d.Action == Allow {
			// Every command is allowed: name the rule of the first (the default if all are).
			d.Rule = ruleName(decided[0])
			for _, x := range decided {
				if x >= 0 {
					d.Rule = ruleName(x)
					break
				}
			}
			if len(cmds) == 1 {
				d = at(d, cmds[0])
			} else {
				d.Line = line
			}
		}
		if d.Action == Allow && dark != nil && action(wide) != Allow {
			d = at(Decision{Action: Ask, Rule: ruleName(wide), Construct: dark.Opaque}, *dark)
			if s.NeverAsk && action(wide) == Deny {
				d.Action, d.Rule = Deny, d.Rule+" (never-ask)"
				return d
			}
		}
	}
	if s.NeverAsk && d.Action == Ask {
		d.Action, d.Rule = Allow, d.Rule+" (never-ask)"
	}
	return d
}

// serverRules are the server's deny set's patterns for one tool, each with its text.
type serverRules []serverRule

type serverRule struct {
	p    Pattern
	text string
}

func serverDenyFor(serverDeny []string, tool string) serverRules {
	var server serverRules
	for _, d := range serverDeny {
		if p, err := Parse(d); err == nil && p.forTool(tool) {
			server = append(server, serverRule{p, d})
		}
	}
	return server
}

// deny is the server's deny set's decision on cmds, if it denies: a tool-wide deny, then each
// command's forms (at names the command in the decision).
func (server serverRules) deny(cmds []Command, at func(Decision, Command) Decision) (Decision, bool) {
	for _, d := range server {
		if !d.p.has {
			return Decision{Action: Deny, Rule: "server deny: " + d.text}, true
		}
	}
	for _, c := range cmds {
		for _, f := range c.Forms {
			for _, d := range server {
				if matchShell(d.p.Arg, f) {
					return at(Decision{Action: Deny, Rule: "server deny: " + d.text}, c), true
				}
			}
		}
	}
	return Decision{}, false
}

// shellRules are an agent's rules as they apply to one tool's commands: rules[i] is s.Rules[i]
// parsed, nil for another tool's (or one that does not parse); a rule index -1 is the default.
type shellRules struct {
	s     Spec
	def   string
	rules []*Pattern
	// guardDeny and guardAsk are the first deny and ask rules with a pattern (-1: none): what a
	// construct hiding commands is held to.
	guardDeny, guardAsk int
}

func newShellRules(s Spec, tool string) *shellRules {
	r := &shellRules{s: s, def: s.Default, rules: make([]*Pattern, len(s.Rules)), guardDeny: -1, guardAsk: -1}
	if r.def == "" {
		r.def = Allow
	}
	for i, rule := range s.Rules {
		if p, err := Parse(rule.Match); err == nil && p.forTool(tool) {
			r.rules[i] = &p
			if p.has && rule.Action == Deny && r.guardDeny < 0 {
				r.guardDeny = i
			}
			if p.has && rule.Action == Ask && r.guardAsk < 0 {
				r.guardAsk = i
			}
		}
	}
	return r
}

func (r *shellRules) name(i int) string {
	if i < 0 {
		return "default"
	}
	return fmt.Sprintf("rule %d: %s", i+1, r.s.Rules[i].Match)
}

func (r *shellRules) action(i int) string {
	if i < 0 {
		return r.def
	}
	return r.s.Rules[i].Action
}

// wide is the first tool-wide rule (no pattern); -1: the default.
func (r *shellRules) wide() int {
	for i, p := range r.rules {
		if p != nil && !p.has {
			return i
		}
	}
	return -1
}

// decide is the rule that decides command c: the first deny any of its forms meets, else the
// most severe of the rules with a pattern its forms meet, else the tool-wide rule or the default.
func (r *shellRules) decide(c Command) int {
	best := -2 // none yet
	for k, f := range c.Forms {
		first := -1
		for i, p := range r.rules {
			if p != nil && (!p.has || matchShell(p.Arg, f)) {
				if p.has && r.action(i) == Allow && k < c.inner && !namesInner(p.Arg, f, c.tail) {
					continue // bash(sudo *) allows sudo, not the command it runs
				}
				first = i
				break
			}
		}
		if first >= 0 && r.action(first) == Deny {
			return first
		}
		if first < 0 || !r.rules[first].has {
			continue // decided by the tool-wide rule or the default only: does not count
		}
		if best == -2 || severity[r.action(first)] > severity[r.action(best)] {
			best = first
		}
	}
	if best == -2 {
		return r.wide()
	}
	return best
}
