package policy

import (
	"regexp"
	"strings"
)

// wrapper describes a program that runs another program given on its command line.
type wrapper struct {
	argShort   string   // short options that take an argument (attached or next word)
	optShort   string   // short options whose argument, if any, is attached (-i[REPL])
	argLong    []string // long options that take the next word unless written --opt=value
	opaqueOpt  string   // short options that make it run a shell or a string
	opaqueLong []string
	stopShort  string // short options after which no program follows
	positional int    // words between the options and the program (timeout's DURATION)
	fallback   string // the program run when none is given (xargs runs echo)
}

// wrappers are taken off to find the program that runs: `sudo -u x env A=1 nice -n 5 curl` is
// checked as curl too. (command -v / type are treated like command: a false alarm at worst.)
var wrappers = map[string]wrapper{
	"env": {argShort: "uCP", opaqueOpt: "S", argLong: []string{"unset", "chdir"},
		opaqueLong: []string{"split-string"}},
	"command": {},
	"builtin": {},
	"exec":    {argShort: "a"},
	"nohup":   {},
	"time":    {argShort: "fo", argLong: []string{"format", "output"}},
	"nice":    {argShort: "n", argLong: []string{"adjustment"}},
	"timeout": {argShort: "sk", argLong: []string{"signal", "kill-after"}, positional: 1},
	"xargs": {argShort: "adELnPsI", optShort: "eil", argLong: []string{"arg-file", "delimiter",
		"max-args", "max-procs", "max-chars", "process-slot-var"}, fallback: "echo"},
	"sudo": {argShort: "ugCDhprtTUR", opaqueOpt: "si", stopShort: "elKV", argLong: []string{"user", "group",
		"close-from", "chdir", "host", "prompt", "role", "type", "command-timeout", "other-user", "chroot"},
		opaqueLong: []string{"shell", "login"}},
	"doas":       {argShort: "uC", opaqueOpt: "s"},
	"stdbuf":     {argShort: "ioe", argLong: []string{"input", "output", "error"}},
	"setsid":     {},
	"ionice":     {argShort: "cnPu", stopShort: "p", argLong: []string{"class", "classdata", "pgid", "uid"}},
	"taskset":    {stopShort: "p", positional: 1},
	"flock":      {argShort: "wE", opaqueOpt: "c", argLong: []string{"timeout", "conflict-exit-code"}, opaqueLong: []string{"command"}, positional: 1},
	"chroot":     {argLong: []string{"userspec", "groups"}, positional: 1},
	"strace":     {argShort: "eoEsuapbIOSXPU"},
	"ltrace":     {argShort: "eoEsuapbIOSXPUn"},
	"busybox":    {},
	"unbuffer":   {},
	"caffeinate": {argShort: "tw"},
	// Issue 24: more programs that run the command after their options.
	"unshare":          {argShort: "SGRw", argLong: []string{"setuid", "setgid", "root", "wd", "map-user", "map-group", "propagation"}},
	"nsenter":          {argShort: "tSG", argLong: []string{"target", "setuid", "setgid"}},
	"runuser":          {argShort: "ugGw", opaqueOpt: "cs", argLong: []string{"user", "group", "supp-group", "whitelist-environment"}, opaqueLong: []string{"command", "session-command", "shell"}},
	"xvfb-run":         {argShort: "nsfewp", argLong: []string{"server-num", "server-args", "auth-file", "error-file", "wait", "xauth-protocol"}},
	"valgrind":         {},
	"faketime":         {positional: 1},
	"torsocks":         {argShort: "upaP", argLong: []string{"user", "pass", "address", "port"}},
	"proxychains":      {argShort: "f"},
	"proxychains4":     {argShort: "f"},
	"ssh-agent":        {argShort: "aEPt", stopShort: "kl"},
	"dbus-run-session": {},
	"chronic":          {},
	"firejail":         {},
}

// strip takes a wrapper's options off; rest is the wrapped command (nil for none).
func (w wrapper) strip(args []word) (rest []word, opaque string) {
	i := 0
	for i < len(args) {
		t := args[i].text
		if t == "--" {
			i++
			break
		}
		if !strings.HasPrefix(t, "-") || t == "-" {
			break
		}
		if strings.HasPrefix(t, "--") {
			// GNU getopt takes a unique prefix of a long option (env --sp is --split-string).
			name, _, hasVal := strings.Cut(t[2:], "=")
			abbrev := func(o string) bool { return name == o || len(name) >= 2 && strings.HasPrefix(o, name) }
			for _, o := range w.opaqueLong {
				if abbrev(o) {
					return nil, "--" + o
				}
			}
			i++
			if !hasVal {
				for _, o := range w.argLong {
					if abbrev(o) {
						i++
						break
					}
				}
			}
			continue
		}
		i++
		for j := 1; j < len(t); j++ {
			ch := t[j]
			if strings.IndexByte(w.opaqueOpt, ch) >= 0 {
				return nil, "-" + string(ch)
			}
			if strings.IndexByte(w.stopShort, ch) >= 0 {
				return nil, ""
			}
			if strings.IndexByte(w.optShort, ch) >= 0 {
				break
			}
			if strings.IndexByte(w.argShort, ch) >= 0 {
				if j == len(t)-1 {
					i++
				}
				break
			}
		}
	}
	i += w.positional
	if i >= len(args) {
		if w.fallback != "" {
			return []word{{text: w.fallback, raw: w.fallback}}, ""
		}
		return nil, ""
	}
	return args[i:], ""
}

var (
	shells  = regexp.MustCompile(`^(sh|bash|dash|zsh|ksh|mksh|pdksh|ash|yash|posh|fish|csh|tcsh|rbash)$`)
	pythons = regexp.MustCompile(`^(python|pypy)[0-9.]*$`)
	awks    = regexp.MustCompile(`^[gmn]?awk$`)
)

// interpreters that run a string given with one of these options, or their input when given no
// script.
var interpreters = map[string]struct {
	eval    string   // short options that run a string
	evalL   []string // long ones
	argOpts string   // short options that take the next word
}{
	"perl":      {eval: "eE", argOpts: ""},
	"ruby":      {eval: "e", argOpts: "IrCEF"},
	"node":      {eval: "ep", evalL: []string{"eval", "print"}, argOpts: "r"},
	"nodejs":    {eval: "ep", evalL: []string{"eval", "print"}, argOpts: "r"},
	"bun":       {eval: "ep", evalL: []string{"eval", "print"}},
	"php":       {eval: "rBRFE", argOpts: "cdz"},
	"lua":       {eval: "e", argOpts: "l"},
	"luajit":    {eval: "e", argOpts: "l"},
	"Rscript":   {eval: "e"},
	"tclsh":     {},
	"expect":    {eval: "c"},
	"osascript": {eval: "e"},
}

// opaque reports whether a command (program base name and arguments) runs commands approvals
// cannot see: a string, a file sourced into the shell, or its input.
func opaque(prog string, args []word) string {
	texts := make([]string, len(args))
	for i, a := range args {
		texts[i] = a.text
	}
	has := func(s ...string) bool {
		for _, t := range texts {
			for _, x := range s {
				if t == x {
					return true
				}
			}
		}
		return false
	}
	version := has("--version", "-V", "--help", "-h", "-v", "-version")
	switch {
	case prog == "eval":
		return "eval"
	case prog == "source" || prog == ".":
		return prog + " (it runs a file's commands in this shell)"
	case prog == "trap" && trapSets(texts):
		return "trap (its string runs later)"
	case prog == "alias" && strings.Contains(strings.Join(texts, " "), "="):
		return "alias"
	case prog == "let" && strings.ContainsAny(strings.Join(texts, " "), "[`$abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_"):
		return "let (arithmetic on a variable: bash evaluates its value, which can run commands)"
	case declares[prog] && declFlags(texts, "in"):
		return prog + " -i or -n (what is assigned later is evaluated, which can run commands)"
	case (declares[prog] || namesVars[prog]) && subscript(prog, texts):
		return "an array subscript given to " + prog + " (it is evaluated, which can run commands)"
	case (prog == "compgen" || prog == "complete") && (has("-C") || has("-F")):
		return prog + " -C or -F (it runs a command or a function)"
	case prog == "hash" && has("-p"):
		return "hash -p (it changes what a name runs)"
	case prog == "enable" && has("-f"):
		return "enable -f (it loads a builtin from a file)"
	case (prog == "mapfile" || prog == "readarray") && has("-C"):
		return prog + " -C"
	case setsVar[prog] && setsHiddenVar(texts) != "":
		return setsHiddenVar(texts)
	case runsFromOptions(prog, texts) != "":
		return runsFromOptions(prog, texts)
	case prog == "fc", prog == "su", prog == "watch", prog == "parallel":
		return prog + " (it runs a string with a shell)"
	case prog == "flock" && has("-c", "--command"):
		return "flock -c (it runs a string with a shell)"
	case prog == "script" && has("-c", "--command"):
		return "script -c"
	case shells.MatchString(prog):
		return interp(prog, texts, "c", nil, "oO", version)
	case pythons.MatchString(prog):
		if has("-m") {
			return ""
		}
		return interp(prog, texts, "c", nil, "WXQ", version)
	case awks.MatchString(prog):
		return awkRuns(prog, texts)
	}
	if ip, ok := interpreters[prog]; ok {
		return interp(prog, texts, ip.eval, ip.evalL, ip.argOpts, version)
	}
	return ""
}

// awkRuns: an awk program given inline (the first word after the options, or -e / --source)
// that runs commands (system, a pipe, getline from a command) or loads code (@load, -l) is opaque.
// A program file (-f) is like any script.
func awkRuns(prog string, texts []string) string {
	runs := func(p string) bool {
		return strings.Contains(p, "system") || strings.Contains(p, "|") || strings.Contains(p, "getline") || strings.Contains(p, "@load")
	}
	file := false
	for i := 0; i < len(texts); i++ {
		t := texts[i]
		name, val, hasVal := strings.Cut(strings.TrimPrefix(t, "--"), "=")
		switch {
		case t == "--":
			if !file && i+1 < len(texts) && runs(texts[i+1]) {
				return prog + " running commands (system, | or getline)"
			}
			return ""
		case t == "-e" || strings.HasPrefix(t, "--") && len(name) > 1 && strings.HasPrefix("source", name):
			if hasVal && strings.HasPrefix(t, "--") {
				if runs(val) {
					return prog + " running commands (system, | or getline)"
				}
			} else if i+1 < len(texts) {
				i++
				if runs(texts[i]) {
					return prog + " running commands (system, | or getline)"
				}
			}
			file = true
		case t == "-l" || strings.HasPrefix(t, "-l") && !strings.HasPrefix(t, "--") || strings.HasPrefix(t, "--") && len(name) > 1 && strings.HasPrefix("load", name):
			return prog + " -l (it loads an extension library)"
		case t == "-f" || t == "-E" || t == "-i" || strings.HasPrefix(t, "--") && !hasVal && len(name) > 1 &&
			(strings.HasPrefix("file", name) || strings.HasPrefix("exec", name) || strings.HasPrefix("include", name)):
			file = true
			i++
		case strings.HasPrefix(t, "-f") || strings.HasPrefix(t, "--f") || strings.HasPrefix(t, "--exec=") || strings.HasPrefix(t, "--include="):
			file = true
		case t == "-v" || t == "-F" || !hasVal && (t == "--assign" || t == "--field-separator"):
			i++
		case strings.HasPrefix(t, "-") && t != "-":
		default:
			if !file && runs(t) {
				return prog + " running commands (system, | or getline)"
			}
			return ""
		}
	}
	return ""
}

// trapSets: trap given a string and signals (not "trap - SIG", "trap -p", "trap -l").
func trapSets(texts []string) bool {
	i := 0
	for i < len(texts) && strings.HasPrefix(texts[i], "-") && texts[i] != "-" {
		if texts[i] == "--" {
			i++
			break
		}
		i++
	}
	return len(texts)-i >= 2 && texts[i] != "-"
}

// declares take assignments; namesVars take the names of variables to set or test. Either
// evaluates an array subscript in a name (a[$(cmd)]), and bash evaluates a subscript as
// arithmetic, whose variables' values can run commands.
var (
	declares  = map[string]bool{"declare": true, "typeset": true, "local": true, "export": true, "readonly": true, "nameref": true}
	namesVars = map[string]bool{"read": true, "unset": true, "mapfile": true, "readarray": true, "getopts": true,
		"printf": true, "wait": true, "test": true, "[": true}
)

// declFlags reports whether declare-like options hold any of flags (-i, -ni, +i ...).
func declFlags(texts []string, flags string) bool {
	for _, t := range texts {
		if t == "--" {
			return false
		}
		if len(t) > 1 && (t[0] == '-' || t[0] == '+') && strings.ContainsAny(t[1:], flags) {
			return true
		}
	}
	return false
}

// subscript reports whether a name given to prog has a subscript that is not a plain number.
func subscript(prog string, texts []string) bool {
	for i, t := range texts {
		switch {
		case prog == "printf" || prog == "wait":
			switch {
			case (t == "-v" || t == "-p") && i+1 < len(texts):
				t = texts[i+1]
			case strings.HasPrefix(t, "-v") || strings.HasPrefix(t, "-p"):
				t = t[2:] // -vNAME
			default:
				continue
			}
		case prog == "test" || prog == "[":
			if t != "-v" && t != "-R" || i+1 >= len(texts) {
				continue
			}
			t = texts[i+1]
		case declares[prog]:
			t, _, _ = strings.Cut(t, "=") // the name, not the value
		}
		if _, sub, ok := strings.Cut(t, "["); ok && !numberRE.MatchString(strings.SplitN(sub, "]", 2)[0]) {
			return true
		}
	}
	return false
}

// interp: an interpreter runs a string with an eval option, its input with "-" or "-s" or no
// script, and otherwise a script file (not opaque: like any program, what it does is its own).
func interp(prog string, texts []string, eval string, evalL []string, argOpts string, version bool) string {
	for i := 0; i < len(texts); i++ {
		t := texts[i]
		switch {
		case t == "--":
			if i+1 < len(texts) {
				return ""
			}
			i = len(texts)
		case t == "-" || t == "-s":
			return prog + " reading commands from its input"
		case strings.HasPrefix(t, "--"):
			name, _, _ := strings.Cut(t[2:], "=")
			for _, e := range evalL {
				if name == e {
					return prog + " --" + e
				}
			}
			if name == "rcfile" || name == "init-file" {
				i++
			}
		case strings.HasPrefix(t, "-") || strings.HasPrefix(t, "+"):
			for j := 1; j < len(t); j++ {
				if strings.IndexByte(eval, t[j]) >= 0 {
					return prog + " -" + string(t[j])
				}
				if strings.IndexByte(argOpts, t[j]) >= 0 {
					if j == len(t)-1 {
						i++
					}
					break
				}
			}
		default:
			return "" // a script file
		}
	}
	if version {
		return ""
	}
	return prog + " reading commands from its input"
}

// normalize turns a parsed simple command into the commands approvals check: itself, and those
// a find -exec in it runs.
func normalize(sc *simpleCmd) []Command {
	var ws, redirs []word
	for _, w := range sc.words {
		if w.redir != "" {
			redirs = append(redirs, w)
		} else {
			ws = append(ws, w)
		}
	}
	var rs []string
	for _, r := range redirs {
		if strings.HasSuffix(r.redir, "&") {
			rs = append(rs, r.redir+r.text)
		} else {
			rs = append(rs, r.redir+" "+r.text)
		}
	}
	c := Command{Text: sc.raw}
	var extra []Command
	seen := map[string]bool{}
	form := func(prog string, args []word) {
		parts := []string{prog}
		for _, a := range args {
			parts = append(parts, a.text)
		}
		parts = append(parts, rs...)
		f := strings.TrimSpace(strings.Join(parts, " "))
		if !seen[f] {
			seen[f] = true
			c.Forms = append(c.Forms, f)
		}
	}
	// An assignment given to a program (env PS4=... bash -x s.sh, an exported function) changes
	// what the shell it starts runs.
	for _, w := range ws {
		name, value, _ := strings.Cut(w.text, "=")
		if w.assign {
			if why := hiddenVar(name, value, !w.dynamic); why != "" {
				c.Opaque = why
				break
			}
		}
		if strings.HasPrefix(w.text, "BASH_FUNC_") && strings.Contains(w.text, "=") {
			c.Opaque = "an assignment to " + name + " (the shell expands or uses it later, which can run commands)"
			break
		}
	}
	layer := ws
	for n := 0; len(layer) > 0 && n < 16; n++ {
		full := layer
		for len(layer) > 0 && layer[0].assign {
			layer = layer[1:]
		}
		if len(layer) == 0 {
			break // only assignments: no program runs
		}
		c.inner = len(c.Forms)
		form(full[0].text, full[1:])
		prog, args := layer[0], layer[1:]
		tail := []string{""}
		for _, a := range args {
			tail = append(tail, a.text)
		}
		c.tail = len(strings.TrimRight(strings.Join(append(tail, rs...), " "), " "))
		form(prog.text, args)
		if prog.dynamic || prog.glob {
			c.Opaque = "a program name computed when it runs (" + prog.raw + ")"
			break
		}
		base := prog.text
		if i := strings.LastIndexByte(strings.TrimRight(base, "/"), '/'); i >= 0 {
			base = strings.TrimRight(base, "/")[i+1:]
		}
		form(base, args)
		if o := opaque(base, args); o != "" && c.Opaque == "" {
			c.Opaque = o
		}
		if base == "find" {
			extra = append(extra, findExec(args)...)
		}
		w, ok := wrappers[base]
		if !ok {
			break
		}
		rest, op := w.strip(args)
		if op != "" && c.Opaque == "" {
			c.Opaque = base + " " + op + " (it runs a shell or a string)"
		}
		layer = rest
	}
	if len(c.Forms) == 0 && c.Opaque == "" {
		return extra // only assignments or redirections: no program runs
	}
	return append([]Command{c}, extra...)
}

// findExec returns the commands a find runs with -exec, -execdir, -ok or -okdir.
func findExec(args []word) []Command {
	var out []Command
	for i := 0; i < len(args); i++ {
		switch args[i].text {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && args[j].text != ";" && args[j].text != "+" {
				j++
			}
			if j > i+1 {
				var raw []string
				for _, a := range args[i+1 : j] {
					raw = append(raw, a.raw)
				}
				out = append(out, normalize(&simpleCmd{words: args[i+1 : j], raw: strings.Join(raw, " ")})...)
			}
			i = j
		}
	}
	return out
}
