package policy

import (
	"regexp"
	"strconv"
	"strings"
)

// A shell call's command line is not matched as one string: it is split into its simple commands
// (at ; & && || | |& newlines, ( ) subshells, { } groups, $(...), backticks, <(...) >(...), and in
// if/while/for/case bodies), quotes and escapes are removed as the shell would, and each simple
// command is matched on its own, in several forms (see Command.Forms).

// Command is one simple command of a shell command line, as approvals see it.
type Command struct {
	// Text is the command as written (for messages).
	Text string
	// Forms are the strings patterns are matched against: the command with quotes removed and
	// words joined by single spaces (redirections at the end), then the same without leading
	// VAR=value assignments, with the program's base name (/usr/bin/curl -> curl), and with each
	// wrapper (env, sudo, timeout 5, xargs, ...) taken off. Empty for a part that could not be
	// parsed.
	Forms []string
	// Opaque names a construct whose commands approvals cannot see ("eval", "bash -c", "source",
	// "a program name computed when it runs", "an unterminated quote", ...), "" for none.
	Opaque string
}

// SplitCommand splits a shell command line into its simple commands. Parts it cannot parse come
// back as a Command with Opaque set and no Forms.
func SplitCommand(line string) []Command {
	budget := 10000 + 50*len(line)
	p := &parser{s: line, budget: &budget}
	p.list(0)
	var out []Command
	for _, sc := range p.cmds {
		if sc.skip {
			continue
		}
		out = append(out, normalize(sc)...)
	}
	for _, pr := range p.problems {
		out = append(out, Command{Text: strings.TrimSpace(line), Opaque: pr})
	}
	return out
}

// ---- lexing ----

type word struct {
	text    string // quotes and escapes removed; expansions kept as written
	raw     string // as written
	dynamic bool   // has a $ expansion or a command substitution
	glob    bool   // has an unquoted * ? [ or a brace expansion
	quoted  bool
	redir   string // the operator, when this word is a redirection's target
	assign  bool   // NAME=value (unquoted name)
}

type simpleCmd struct {
	words []word
	raw   string
	skip  bool // not a command: a for/select/case header, a case pattern, a function's name
}

type heredoc struct {
	delim         string
	quoted, strip bool
}

type parser struct {
	s        string
	i        int
	cmds     []*simpleCmd
	problems []string
	pending  []heredoc
	depth    int
	arithing int // nested arithmetic expansions being tried (each may be parsed twice)
	budget   *int
}

// tick spends a step of the parse's budget; once it is spent the rest of the line is not read
// and the line counts as one approvals cannot see into.
func (p *parser) tick() bool {
	if *p.budget--; *p.budget > 0 {
		return true
	}
	p.problem("a command too complex to check")
	p.i = len(p.s)
	return false
}

const maxDepth = 64

func (p *parser) problem(s string) {
	for _, x := range p.problems {
		if x == s {
			return
		}
	}
	p.problems = append(p.problems, s)
}

var keywords = map[string]bool{"!": true, "{": true, "}": true, "if": true, "then": true, "else": true,
	"elif": true, "fi": true, "do": true, "done": true, "while": true, "until": true, "esac": true,
	"time": true, "coproc": true}

// headers are words that start something that is not itself a command.
var headers = map[string]bool{"for": true, "select": true, "case": true, "function": true, "[[": true}

// atCommand reports whether the next word of sc would be in command position.
func atCommand(sc *simpleCmd) bool {
	for _, w := range sc.words {
		if w.redir != "" || w.assign || (!w.quoted && keywords[w.text]) || (!w.quoted && w.text == "-p" && len(sc.words) > 0 && sc.words[0].text == "time") {
			continue
		}
		return false
	}
	return true
}

var redirRE = regexp.MustCompile(`^(?:[0-9]*(?:<<<|<<-|<<|<>|<&|>&|>>|>\||<|>)|&>>|&>)`)

// list parses commands up to term (')' for $( ( <( >(, 0 for the whole string); it consumes term.
func (p *parser) list(term byte) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		p.problem("commands nested too deeply")
		p.i = len(p.s)
		return
	}
	caseDepth := 0
	cur := &simpleCmd{}
	start := p.i
	flush := func(end int, skip bool) {
		if len(cur.words) > 0 {
			cur.raw = strings.TrimSpace(p.s[min(start, end):end])
			first := firstCommandWord(cur)
			if skip || headers[first] {
				cur.skip = true
			}
			p.cmds = append(p.cmds, cur)
		}
		cur = &simpleCmd{}
		start = p.i
	}
	for p.i < len(p.s) && p.tick() {
		c := p.s[p.i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			p.i++
		case c == '\\' && p.i+1 < len(p.s) && p.s[p.i+1] == '\n':
			p.i += 2
		case c == '\n':
			flush(p.i, false)
			p.i++
			p.readHeredocs()
			start = p.i
		case c == '#':
			for p.i < len(p.s) && p.s[p.i] != '\n' {
				p.i++
			}
		case (c == '<' || c == '>') && p.i+1 < len(p.s) && p.s[p.i+1] == '(':
			p.addWord(cur, p.word(), &caseDepth)
		case redirRE.MatchString(p.s[p.i:]):
			op := redirRE.FindString(p.s[p.i:])
			p.i += len(op)
			p.skipBlanks()
			t := p.word()
			if t.raw == "" {
				p.problem("a redirection without a target")
			}
			t.redir = op
			if strings.HasSuffix(op, "<<") || strings.HasSuffix(op, "<<-") {
				p.pending = append(p.pending, heredoc{delim: t.text, quoted: t.quoted, strip: strings.HasSuffix(op, "-")})
			}
			cur.words = append(cur.words, t)
		case c == ';' || c == '&' || c == '|':
			end := p.i
			for p.i < len(p.s) && strings.IndexByte(";&|", p.s[p.i]) >= 0 && p.i-end < 3 {
				p.i++
			}
			flush(end, false)
		case c == '(':
			end := p.i
			// f() { ...; } defines f: its name is not a command. Anything else before "(" is a
			// syntax error (the shell runs nothing of that line).
			fn := false
			if n := len(cur.words); n == 1 || (n == 2 && cur.words[0].text == "function") {
				fn = true
			} else if n > 0 && caseDepth == 0 { // in a case, "(" may open a pattern
				p.problem("an unexpected (")
			}
			flush(end, fn)
			p.i++
			p.list(')')
			start = p.i
		case c == ')':
			if caseDepth > 0 { // a case pattern ends: the pattern is not a command
				flush(p.i, true)
				p.i++
				start = p.i
				continue
			}
			if term == ')' {
				flush(p.i, false)
				p.i++
				return
			}
			p.problem("an unbalanced )")
			flush(p.i, false)
			p.i++
			start = p.i
		default:
			w := p.word()
			if w.raw == "" { // cannot happen, but never loop forever
				p.i++
				continue
			}
			p.addWord(cur, w, &caseDepth)
		}
	}
	flush(p.i, false)
	if term != 0 {
		p.problem("an unclosed (")
	}
}

func (p *parser) addWord(cur *simpleCmd, w word, caseDepth *int) {
	if atCommand(cur) && !w.quoted {
		switch w.text {
		case "case":
			*caseDepth++
		case "esac":
			if *caseDepth > 0 {
				*caseDepth--
			}
		}
	}
	cur.words = append(cur.words, w)
}

func firstCommandWord(sc *simpleCmd) string {
	for _, w := range sc.words {
		if w.redir != "" || w.assign || (!w.quoted && keywords[w.text]) {
			continue
		}
		if w.quoted {
			return ""
		}
		return w.text
	}
	return ""
}

func (p *parser) skipBlanks() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

var assignRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=`)

// wb builds a word.
type wb struct {
	text     strings.Builder
	dynamic  bool
	glob     bool
	quoted   bool
	braceOpn bool
}

// word reads one word at p.i (which is not a blank or an operator).
func (p *parser) word() word {
	start := p.i
	var b wb
	if !p.tick() {
		return b.done(p.s[start:p.i])
	}
	// Process substitution.
	if p.i+1 < len(p.s) && (p.s[p.i] == '<' || p.s[p.i] == '>') && p.s[p.i+1] == '(' {
		p.i += 2
		p.list(')')
		return word{text: p.s[start:p.i], raw: p.s[start:p.i], dynamic: true}
	}
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch c {
		case ' ', '\t', '\r', '\n', ';', '&', '|', ')', '<', '>':
			return b.done(p.s[start:p.i])
		case '(':
			// NAME=( ... ) is an array assignment.
			if p.i > start && b.text.Len() == p.i-start && assignRE.MatchString(b.text.String()) && strings.HasSuffix(b.text.String(), "=") {
				p.i++
				p.array(&b)
				continue
			}
			return b.done(p.s[start:p.i])
		case '\\':
			if p.i+1 >= len(p.s) {
				b.text.WriteByte('\\')
				p.i++
				continue
			}
			if p.s[p.i+1] == '\n' {
				p.i += 2
				continue
			}
			b.quoted = true
			b.text.WriteByte(p.s[p.i+1])
			p.i += 2
		case '\'':
			b.quoted = true
			end := strings.IndexByte(p.s[p.i+1:], '\'')
			if end < 0 {
				p.problem("an unterminated single quote")
				b.text.WriteString(p.s[p.i+1:])
				p.i = len(p.s)
				continue
			}
			b.text.WriteString(p.s[p.i+1 : p.i+1+end])
			p.i += end + 2
		case '"':
			b.quoted = true
			p.i++
			p.dq(&b, '"')
		case '$':
			p.dollar(&b, false)
		case '`':
			p.backtick(&b)
		case '*', '?', '[':
			b.glob = true
			b.text.WriteByte(c)
			p.i++
		case '{':
			b.braceOpn = true
			b.text.WriteByte(c)
			p.i++
		case '}':
			if b.braceOpn {
				b.glob = true
			}
			b.text.WriteByte(c)
			p.i++
		default:
			b.text.WriteByte(c)
			p.i++
		}
	}
	return b.done(p.s[start:p.i])
}

func (b *wb) done(raw string) word {
	t := b.text.String()
	return word{text: t, raw: raw, dynamic: b.dynamic, glob: b.glob, quoted: b.quoted,
		assign: assignRE.MatchString(raw)}
}

// array reads the words of NAME=( ... ) after the "(".
func (p *parser) array(b *wb) {
	b.text.WriteByte('(')
	for p.i < len(p.s) {
		switch c := p.s[p.i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			b.text.WriteByte(' ')
			p.i++
		case c == ')':
			b.text.WriteByte(')')
			p.i++
			return
		case c == '#':
			for p.i < len(p.s) && p.s[p.i] != '\n' {
				p.i++
			}
		case strings.IndexByte(";&|<>(", c) >= 0:
			p.problem("an unexpected " + string(c) + " in an array")
			p.i++
		default:
			w := p.word()
			if w.raw == "" {
				p.i++
				continue
			}
			b.text.WriteString(w.text)
			b.dynamic = b.dynamic || w.dynamic
		}
	}
	p.problem("an unclosed (")
}

// dq reads a double-quoted string's inside (after the opening quote) up to close (consumed).
func (p *parser) dq(b *wb, close byte) {
	for p.i < len(p.s) && p.tick() {
		c := p.s[p.i]
		switch {
		case c == close:
			p.i++
			return
		case c == '\\' && p.i+1 < len(p.s):
			n := p.s[p.i+1]
			switch {
			case n == '\n':
			case n == '$' || n == '`' || n == '"' || n == '\\':
				b.text.WriteByte(n)
			default:
				b.text.WriteByte('\\')
				b.text.WriteByte(n)
			}
			p.i += 2
		case c == '$':
			p.dollar(b, true)
		case c == '`':
			p.backtick(b)
		default:
			b.text.WriteByte(c)
			p.i++
		}
	}
	p.problem("an unterminated double quote")
}

var nameRE = regexp.MustCompile(`^\$(?:[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])`)

// dollar reads an expansion at p.i ("$...").
func (p *parser) dollar(b *wb, inDQ bool) {
	start := p.i
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxDepth {
		p.problem("commands nested too deeply")
		p.i = len(p.s)
		return
	}
	rest := p.s[p.i:]
	switch {
	case strings.HasPrefix(rest, "$((") && p.arithing < 4:
		// Arithmetic if it closes with "))"; otherwise a command substitution of a subshell.
		// (Deeper down, it is read as the latter at once: each try may read the text twice.)
		nc, np, saved := len(p.cmds), len(p.problems), p.pending
		p.i += 3
		p.arithing++
		ok := p.arith()
		p.arithing--
		if ok {
			b.dynamic = true
			b.text.WriteString(p.s[start:p.i])
			return
		}
		p.cmds, p.problems, p.pending = p.cmds[:nc], p.problems[:np], saved
		p.i = start + 2
		p.list(')')
	case strings.HasPrefix(rest, "$("):
		p.i += 2
		p.list(')')
	case strings.HasPrefix(rest, "${"):
		p.i += 2
		p.brace()
	case !inDQ && strings.HasPrefix(rest, "$'"):
		p.i += 2
		b.quoted = true
		b.text.WriteString(p.ansiC())
		return
	case !inDQ && strings.HasPrefix(rest, `$"`):
		p.i += 2
		b.quoted = true
		p.dq(b, '"')
		return
	default:
		if m := nameRE.FindString(rest); m != "" {
			p.i += len(m)
		} else {
			p.i++
			b.text.WriteByte('$')
			return
		}
	}
	b.dynamic = true
	b.text.WriteString(p.s[start:p.i])
}

// arith scans an arithmetic expansion's inside after "$((" and reports whether it closed with "))".
func (p *parser) arith() bool {
	depth := 0
	var scratch wb
	for p.i < len(p.s) && p.tick() {
		switch c := p.s[p.i]; c {
		case '(':
			depth++
			p.i++
		case ')':
			if depth == 0 {
				if p.i+1 < len(p.s) && p.s[p.i+1] == ')' {
					p.i += 2
					return true
				}
				return false
			}
			depth--
			p.i++
		case '$':
			p.dollar(&scratch, true)
		case '`':
			p.backtick(&scratch)
		case '"':
			p.i++
			p.dq(&scratch, '"')
		case '\\':
			p.i += 2
		default:
			p.i++
		}
	}
	return false
}

// brace scans a ${...} expansion after "${" up to its "}".
func (p *parser) brace() {
	var scratch wb
	for p.i < len(p.s) && p.tick() {
		switch c := p.s[p.i]; c {
		case '}':
			p.i++
			return
		case '\\':
			p.i += 2
		case '\'':
			end := strings.IndexByte(p.s[p.i+1:], '\'')
			if end < 0 {
				p.problem("an unterminated single quote")
				p.i = len(p.s)
				return
			}
			p.i += end + 2
		case '"':
			p.i++
			p.dq(&scratch, '"')
		case '$':
			p.dollar(&scratch, false)
		case '`':
			p.backtick(&scratch)
		default:
			p.i++
		}
	}
	p.problem("an unclosed ${")
}

// backtick reads a `...` command substitution and parses its inside.
func (p *parser) backtick(b *wb) {
	start := p.i
	p.i++
	var in strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '\\' && p.i+1 < len(p.s) && strings.IndexByte("`\\$", p.s[p.i+1]) >= 0 {
			in.WriteByte(p.s[p.i+1])
			p.i += 2
			continue
		}
		if c == '`' {
			p.i++
			sub := &parser{s: in.String(), depth: p.depth + 1, budget: p.budget}
			sub.list(0)
			p.cmds = append(p.cmds, sub.cmds...)
			for _, pr := range sub.problems {
				p.problem(pr)
			}
			b.dynamic = true
			b.text.WriteString(p.s[start:p.i])
			return
		}
		in.WriteByte(c)
		p.i++
	}
	p.problem("an unterminated backtick")
}

// ansiC decodes a $'...' string after "$'".
func (p *parser) ansiC() string {
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '\'' {
			p.i++
			return b.String()
		}
		if c != '\\' || p.i+1 >= len(p.s) {
			b.WriteByte(c)
			p.i++
			continue
		}
		n := p.s[p.i+1]
		p.i += 2
		simple := map[byte]string{'a': "\a", 'b': "\b", 'e': "\x1b", 'E': "\x1b", 'f': "\f", 'n': "\n",
			'r': "\r", 't': "\t", 'v': "\v", '\\': "\\", '\'': "'", '"': "\"", '?': "?"}
		if s, ok := simple[n]; ok {
			b.WriteString(s)
			continue
		}
		digits := func(max int, ok func(byte) bool) string {
			j := p.i
			for j < len(p.s) && j-p.i < max && ok(p.s[j]) {
				j++
			}
			d := p.s[p.i:j]
			p.i = j
			return d
		}
		isHex := func(c byte) bool { return strings.IndexByte("0123456789abcdefABCDEF", c) >= 0 }
		switch {
		case n >= '0' && n <= '7':
			p.i--
			d := digits(3, func(c byte) bool { return c >= '0' && c <= '7' })
			v, _ := strconv.ParseUint(d, 8, 16)
			b.WriteByte(byte(v))
		case n == 'x':
			if d := digits(2, isHex); d != "" {
				v, _ := strconv.ParseUint(d, 16, 8)
				b.WriteByte(byte(v))
			} else {
				b.WriteString(`\x`)
			}
		case n == 'u' || n == 'U':
			max := 4
			if n == 'U' {
				max = 8
			}
			if d := digits(max, isHex); d != "" {
				v, _ := strconv.ParseUint(d, 16, 32)
				b.WriteRune(rune(v))
			} else {
				b.WriteByte('\\')
				b.WriteByte(n)
			}
		case n == 'c' && p.i < len(p.s):
			b.WriteByte(p.s[p.i] & 0x1f)
			p.i++
		default:
			b.WriteByte('\\')
			b.WriteByte(n)
		}
	}
	p.problem("an unterminated $' quote")
	return b.String()
}

// readHeredocs reads the bodies of the here-documents started on the line that just ended. An
// unquoted delimiter's body is expanded by the shell, so its substitutions are commands too.
func (p *parser) readHeredocs() {
	docs := p.pending
	p.pending = nil
	for _, h := range docs {
		for p.i < len(p.s) {
			end := strings.IndexByte(p.s[p.i:], '\n')
			if end < 0 {
				end = len(p.s)
			} else {
				end += p.i
			}
			line := p.s[p.i:end]
			if h.strip {
				line = strings.TrimLeft(line, "\t")
			}
			if line == h.delim {
				p.i = min(end+1, len(p.s))
				break
			}
			if h.quoted {
				p.i = min(end+1, len(p.s))
				continue
			}
			var scratch wb
			for p.i < len(p.s) && p.s[p.i] != '\n' {
				switch p.s[p.i] {
				case '\\':
					p.i += 2
				case '$':
					p.dollar(&scratch, true)
				case '`':
					p.backtick(&scratch)
				default:
					p.i++
				}
			}
			p.i = min(p.i+1, len(p.s))
		}
	}
}
