package policy

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// A shell call's command line is not matched as one string: it is parsed as bash
// (mvdan.cc/sh/v3/syntax) and split into its simple commands (those of lists, pipelines,
// subshells, groups, if/while/for/case bodies, function and coproc bodies, $(...), backticks,
// <(...) >(...), and here-documents whose delimiter is not quoted), quotes and escapes are removed
// as the shell would, and each simple command is matched on its own, in several forms (see
// Command.Forms). A construct that can run text no simple command shows (arithmetic on a
// variable, ${x@P}, ${!x}, eval, trap, ...) and a line that does not parse are opaque.

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
	// inner is the index in Forms of the first form of the command the wrappers run (0 with no
	// wrapper), and tail the length of the text after that command's program in every form: a
	// pattern's allow of an outer form ("sudo *" on "sudo curl x") counts only if its text
	// before any "*" reaches past the inner program's name ("sudo apt-get *").
	inner, tail int
}

// SplitCommand splits a shell command line into its simple commands, in the order the text of
// each ends (a substitution before the command holding it, a here-document's after its line).
// What it cannot see into comes back with Opaque set; a line that does not parse, as one
// Command with Opaque set and no Forms (after the commands of the lines before it, which the
// shell runs before it reads the bad one).
func SplitCommand(line string) (out []Command) {
	defer func() {
		// The parser is not ours: should it ever panic, the line is one approvals cannot see.
		if r := recover(); r != nil {
			out = []Command{{Text: strings.TrimSpace(line), Opaque: "a line the shell parser could not read"}}
		}
	}()
	if len(line) > maxLine {
		return []Command{{Text: strings.TrimSpace(line[:200]) + "...", Opaque: "a command line too long to check"}}
	}
	if bracketDepth(line) > maxDepth*8 {
		// The parser recurses per level and a deep enough line overflows the stack, which no
		// recover catches: such a line is not parsed at all.
		return []Command{{Text: strings.TrimSpace(line[:min(len(line), 200)]), Opaque: "commands nested too deeply"}}
	}
	src, f, err := parse(line)
	var problem string
	if err != nil {
		problem = parseProblem(err)
		// The shell runs the lines before the one it cannot read.
		var pe syntax.ParseError
		if errors.As(err, &pe) && pe.Pos.Line() > 1 {
			cut := nthLineStart(line, int(pe.Pos.Line()))
			if s, pf, perr := parse(line[:cut]); perr == nil {
				src, f = s, pf
			} else {
				f = nil
			}
		} else {
			f = nil
		}
	}
	w := &walker{src: src}
	if f != nil {
		w.stmts(f.Stmts)
	}
	sort.SliceStable(w.out, func(i, j int) bool { return w.out[i].end < w.out[j].end })
	for _, c := range w.out {
		out = append(out, c.Command)
	}
	for _, pr := range w.problems {
		out = append(out, Command{Text: strings.TrimSpace(line), Opaque: pr})
	}
	if problem != "" {
		out = append(out, Command{Text: strings.TrimSpace(line), Opaque: problem})
	}
	return out
}

// maxLine bounds the command lines approvals parse (a MiB: a here-document writing a big file
// fits).
const maxLine = 1 << 20

// bracketDepth is the deepest nesting of ( [ { in s, quotes not considered: an upper bound of
// how deep the parser recurses for them.
func bracketDepth(s string) int {
	depth, deepest := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[', '{':
			depth++
			deepest = max(deepest, depth)
		case ')', ']', '}':
			depth = max(depth-1, 0)
		}
	}
	return deepest
}

// parse parses a line as bash. A $(( or (( that the parser cannot read as arithmetic is, as
// in bash, a subshell inside a substitution or another subshell ("$((cd x) )"): the text is
// parsed again with a space after the first parenthesis of the one nearest before the error.
func parse(line string) (string, *syntax.File, error) {
	src := line
	var err error
	for try := 0; try < 8; try++ {
		var f *syntax.File
		f, err = syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
		if err == nil {
			return src, f, nil
		}
		var pe syntax.ParseError
		if !errors.As(err, &pe) || !strings.Contains(pe.Text, "arithmetic") {
			break
		}
		at := openArith(src, int(pe.Pos.Offset()))
		if at < 0 {
			break
		}
		src = src[:at+1] + " " + src[at+1:]
	}
	return line, nil, err
}

// openArith returns the offset of the "((" nearest before off that is still open at off (its
// parentheses not yet balanced) and not already split, or -1. One pass back from off.
func openArith(s string, off int) int {
	depth := 0
	for i := min(off, len(s)) - 1; i >= 0; i-- {
		switch s[i] {
		case '(':
			depth++
			if depth > 0 && i+1 < len(s) && s[i+1] == '(' {
				return i
			}
		case ')':
			depth--
		}
	}
	return -1
}

func nthLineStart(s string, n int) int {
	at := 0
	for k := 1; k < n; k++ {
		i := strings.IndexByte(s[at:], '\n')
		if i < 0 {
			return len(s)
		}
		at += i + 1
	}
	return at
}

// parseProblem says in words why a line does not parse.
func parseProblem(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "closing quote `'`"):
		return "an unterminated single quote"
	case strings.Contains(msg, "closing quote `\"`"):
		return "an unterminated double quote"
	case strings.Contains(msg, "closing quote \"`\""):
		return "an unterminated backtick"
	case strings.Contains(msg, "`(`") || strings.Contains(msg, "`$(`") || strings.Contains(msg, "`<(`") || strings.Contains(msg, "`>(`"):
		return "an unclosed ( (" + msg + ")"
	}
	return "a line that does not parse as bash (" + msg + ")"
}

// ---- the walk ----

type word struct {
	text    string // quotes and escapes removed; expansions kept as written
	raw     string // as written
	dynamic bool   // has a $ expansion or a command substitution
	glob    bool   // has an unquoted * ? [ or a brace expansion
	redir   string // the operator, when this word is a redirection's target
	assign  bool   // NAME=value (unquoted name)
}

type simpleCmd struct {
	words []word
	raw   string
}

type found struct {
	Command
	end int // where its text ends in the line: the order commands are listed in
}

type walker struct {
	src      string
	out      []found
	problems []string
	depth    int
	// reason collects the first opaque construct met in the words of the simple command being
	// read; nil outside one, where a construct is listed as a Command of its own.
	reason *string
	ctx    syntax.Node // the command being read, named by a construct outside a simple command
	listed map[syntax.Node]bool
	assoc  bool // reading declare -A: its subscripts are string keys, not arithmetic
}

// maxDepth bounds nested commands and substitutions; deeper, the line is one approvals cannot
// see into.
const maxDepth = 64

func (w *walker) problem(s string) {
	for _, x := range w.problems {
		if x == s {
			return
		}
	}
	w.problems = append(w.problems, s)
}

func (w *walker) raw(n syntax.Node) string {
	return w.span(n.Pos(), n.End())
}

func (w *walker) span(a, b syntax.Pos) string {
	i, j := int(a.Offset()), int(b.Offset())
	if !a.IsValid() || !b.IsValid() || i > j || j > len(w.src) {
		return ""
	}
	return strings.TrimSpace(w.src[i:j])
}

// opaque records a construct approvals cannot see into.
func (w *walker) opaque(why string) {
	if w.reason != nil {
		if *w.reason == "" {
			*w.reason = why
		}
		return
	}
	if w.listed[w.ctx] { // one construct per command is enough to name
		return
	}
	if w.listed == nil {
		w.listed = map[syntax.Node]bool{}
	}
	w.listed[w.ctx] = true
	c := found{Command: Command{Opaque: why}}
	if w.ctx != nil {
		c.Text, c.end = w.raw(w.ctx), int(w.ctx.End().Offset())
	}
	w.out = append(w.out, c)
}

func (w *walker) enter() bool {
	w.depth++
	if w.depth > maxDepth {
		w.problem("commands nested too deeply")
		return false
	}
	return true
}

func (w *walker) stmts(ss []*syntax.Stmt) {
	for _, s := range ss {
		w.stmt(s)
	}
}

func (w *walker) stmt(s *syntax.Stmt) {
	if s == nil {
		return
	}
	if _, chain := s.Cmd.(*syntax.BinaryCmd); !chain { // a && b || c ... is not nesting
		if !w.enter() {
			w.depth--
			return
		}
		defer func() { w.depth-- }()
	}
	if call, ok := s.Cmd.(*syntax.CallExpr); ok || s.Cmd == nil {
		w.call(call, s.Redirs)
		return
	}
	ctx, reason := w.ctx, w.reason
	w.ctx, w.reason = s.Cmd, nil
	defer func() { w.ctx, w.reason = ctx, reason }()
	for _, r := range s.Redirs {
		w.redirect(r)
	}
	switch c := s.Cmd.(type) {
	case *syntax.BinaryCmd:
		w.stmt(c.X)
		w.stmt(c.Y)
	case *syntax.Block:
		w.stmts(c.Stmts)
	case *syntax.Subshell:
		w.stmts(c.Stmts)
	case *syntax.IfClause:
		for ; c != nil; c = c.Else {
			w.stmts(c.Cond)
			w.stmts(c.Then)
		}
	case *syntax.WhileClause:
		w.stmts(c.Cond)
		w.stmts(c.Do)
	case *syntax.ForClause:
		switch l := c.Loop.(type) {
		case *syntax.WordIter:
			for _, it := range l.Items {
				w.word(it)
			}
		case *syntax.CStyleLoop:
			for _, x := range []syntax.ArithmExpr{l.Init, l.Cond, l.Post} {
				w.arith(x)
			}
		}
		w.stmts(c.Do)
	case *syntax.CaseClause:
		w.word(c.Word)
		for _, it := range c.Items {
			for _, p := range it.Patterns { // a pattern is expanded: its substitutions run
				w.word(p)
			}
			w.stmts(it.Stmts)
		}
	case *syntax.FuncDecl:
		// The body runs when the function is called, by a name approvals see as a program:
		// its commands are decided with the line that defines it.
		w.stmt(c.Body)
	case *syntax.CoprocClause:
		if c.Name != nil {
			w.word(c.Name)
		}
		w.stmt(c.Stmt)
	case *syntax.TimeClause:
		w.stmt(c.Stmt)
	case *syntax.ArithmCmd:
		w.arith(c.X)
	case *syntax.TestClause:
		w.test(c.X)
	case *syntax.LetClause:
		w.let(c, s.Redirs)
	case *syntax.DeclClause:
		w.decl(c, s.Redirs)
	default:
		w.opaque(fmt.Sprintf("a shell construct approvals do not read (%T)", s.Cmd))
	}
}

// call lists a simple command (and what its words and redirections run).
func (w *walker) call(c *syntax.CallExpr, redirs []*syntax.Redirect) {
	var reason string
	saved := w.reason
	w.reason = &reason
	sc := &simpleCmd{}
	var nodes []syntax.Node
	if c != nil {
		for _, a := range c.Assigns {
			sc.words = append(sc.words, w.assign(a))
			nodes = append(nodes, a)
		}
		for _, a := range c.Args {
			sc.words = append(sc.words, w.word(a))
			nodes = append(nodes, a)
		}
	}
	for _, r := range redirs {
		sc.words = append(sc.words, w.redirect(r))
		nodes = append(nodes, redirNode(r))
	}
	w.reason = saved
	w.emit(sc, nodes, reason)
}

// emit lists a simple command read from nodes, with the opaque construct its words hold.
func (w *walker) emit(sc *simpleCmd, nodes []syntax.Node, reason string) {
	if len(nodes) == 0 {
		return
	}
	start, end := nodes[0].Pos(), nodes[0].End()
	for _, n := range nodes[1:] {
		if n.Pos().Offset() < start.Offset() {
			start = n.Pos()
		}
		if n.End().Offset() > end.Offset() {
			end = n.End()
		}
	}
	sc.raw = w.span(start, end)
	cmds := normalize(sc)
	if reason != "" {
		if len(cmds) == 0 {
			cmds = []Command{{Text: sc.raw}}
		}
		if cmds[0].Opaque == "" {
			cmds[0].Opaque = reason
		}
	}
	for _, c := range cmds {
		w.out = append(w.out, found{Command: c, end: int(end.Offset())})
	}
}

// extent is a stretch of the line, as a node.
type extent struct{ from, to syntax.Pos }

func (e extent) Pos() syntax.Pos { return e.from }
func (e extent) End() syntax.Pos { return e.to }

// redirNode spans a redirection's operator and target, not a here-document's body.
func redirNode(r *syntax.Redirect) syntax.Node {
	if r.Word != nil {
		return extent{r.Pos(), r.Word.End()}
	}
	return extent{r.Pos(), r.OpPos}
}

func (w *walker) redirect(r *syntax.Redirect) word {
	op := r.Op.String()
	if r.N != nil {
		op = r.N.Value + op
	}
	var t word
	if r.Word != nil {
		t = w.word(r.Word)
	}
	t.redir = op
	if r.Hdoc != nil { // an unquoted delimiter's body is expanded: its substitutions run
		w.word(r.Hdoc)
	}
	return t
}

func (w *walker) assign(a *syntax.Assign) word {
	var b strings.Builder
	wd := word{raw: w.raw(a), assign: a.Name != nil}
	if a.Name != nil {
		b.WriteString(a.Name.Value)
	}
	if a.Index != nil {
		b.WriteString("[" + w.span(a.Index.Pos(), a.Index.End()) + "]")
		w.index(a.Index)
	}
	if a.Naked {
		if a.Value != nil { // an argument of declare, read as an option or assignment when it runs
			v := w.word(a.Value)
			v.assign = assignRE.MatchString(v.raw)
			if v.dynamic {
				w.opaque("a declare argument computed when it runs (" + v.raw + ")")
			}
			// export 'GIT_PAGER=x': quoted, still an assignment when declare reads it.
			if name, value, ok := strings.Cut(v.text, "="); ok && assignRE.MatchString(v.text) {
				if why := hiddenVar(strings.TrimSuffix(name, "+"), value, true); why != "" {
					w.opaque(why)
				}
			}
			return v
		}
		if a.Name != nil { // export GIT_PAGER: a value set before (read, printf -v) goes to programs
			if why := hiddenVar(a.Name.Value, "", false); why != "" {
				w.opaque(why)
			}
		}
		wd.text = b.String()
		return wd
	}
	if a.Append {
		b.WriteString("+=")
	} else {
		b.WriteString("=")
	}
	var value word
	if a.Value != nil {
		value = w.word(a.Value)
		b.WriteString(value.text)
		wd.dynamic = value.dynamic
	}
	if a.Name != nil {
		if why := hiddenVar(a.Name.Value, value.text, !value.dynamic && a.Array == nil); why != "" {
			w.opaque(why)
		}
	}
	if a.Array != nil {
		var elems []string
		for _, e := range a.Array.Elems {
			var s string
			if e.Index != nil {
				s = "[" + w.span(e.Index.Pos(), e.Index.End()) + "]="
				w.index(e.Index)
			}
			if e.Value != nil {
				v := w.word(e.Value)
				s += v.text
				wd.dynamic = wd.dynamic || v.dynamic
			}
			elems = append(elems, s)
		}
		b.WriteString("(" + strings.Join(elems, " ") + ")")
	}
	wd.text = b.String()
	return wd
}

var assignRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=`)

// word reads a word: its text with quotes and escapes removed, and what its substitutions run.
func (w *walker) word(wd *syntax.Word) word {
	if wd == nil {
		return word{}
	}
	out := word{raw: w.raw(wd)}
	var b strings.Builder
	brace := false
	for _, p := range wd.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			lit, glob, br := unescape(x.Value, brace)
			b.WriteString(lit)
			out.glob = out.glob || glob
			brace = br
		case *syntax.SglQuoted:
			if x.Dollar {
				b.WriteString(ansiC(x.Value))
			} else {
				b.WriteString(x.Value)
			}
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					b.WriteString(unescapeDQ(l.Value))
					continue
				}
				b.WriteString(w.raw(q))
				w.part(q)
				out.dynamic = true
			}
		case *syntax.ExtGlob:
			out.glob = true
			b.WriteString(w.raw(x))
			if strings.ContainsAny(x.Pattern.Value, "$`") {
				w.opaque("a substitution inside an extended glob " + w.raw(x))
			}
		default:
			b.WriteString(w.raw(p))
			w.part(p)
			out.dynamic = true
		}
	}
	out.text = b.String()
	out.assign = assignRE.MatchString(out.raw)
	return out
}

// part reads a word part that expands: a parameter, a substitution, arithmetic.
func (w *walker) part(p syntax.WordPart) {
	switch x := p.(type) {
	case *syntax.ParamExp:
		w.param(x)
	case *syntax.CmdSubst:
		w.sub(x.Stmts)
	case *syntax.ProcSubst:
		w.sub(x.Stmts)
	case *syntax.ArithmExp:
		w.arith(x.X)
	case *syntax.DblQuoted:
		for _, q := range x.Parts {
			w.part(q)
		}
	case *syntax.Lit, *syntax.SglQuoted, *syntax.ExtGlob, nil:
	default:
		w.opaque(fmt.Sprintf("an expansion approvals do not read (%T)", p))
	}
}

// sub reads the commands of a substitution: they are listed on their own, and what is opaque in
// them belongs to them, not to the command holding the substitution.
func (w *walker) sub(ss []*syntax.Stmt) {
	reason, ctx, assoc := w.reason, w.ctx, w.assoc
	w.reason, w.assoc = nil, false
	w.stmts(ss)
	w.reason, w.ctx, w.assoc = reason, ctx, assoc
}

// let is a simple command ("let x=1") whose arguments are arithmetic.
func (w *walker) let(c *syntax.LetClause, redirs []*syntax.Redirect) {
	var reason string
	saved := w.reason
	w.reason = &reason
	sc := &simpleCmd{words: []word{{text: "let", raw: "let"}}}
	nodes := []syntax.Node{extent{c.Let, c.Let}}
	for _, x := range c.Exprs {
		w.arith(x)
		t := w.span(x.Pos(), x.End())
		sc.words = append(sc.words, word{text: t, raw: t})
		nodes = append(nodes, x)
	}
	for _, r := range redirs {
		sc.words = append(sc.words, w.redirect(r))
		nodes = append(nodes, redirNode(r))
	}
	w.reason = saved
	w.emit(sc, nodes, reason)
}

// decl is declare, local, export, readonly, typeset or nameref: a simple command whose
// assignments are read as such (their substitutions run, their subscripts are arithmetic).
func (w *walker) decl(c *syntax.DeclClause, redirs []*syntax.Redirect) {
	var reason string
	saved := w.reason
	w.reason = &reason
	sc := &simpleCmd{words: []word{{text: c.Variant.Value, raw: c.Variant.Value}}}
	nodes := []syntax.Node{c.Variant}
	for _, a := range c.Args {
		if a.Naked && a.Name == nil && a.Value != nil {
			if f := a.Value.Lit(); strings.HasPrefix(f, "-") && strings.Contains(f, "A") {
				w.assoc = true
			}
		}
	}
	for _, a := range c.Args {
		sc.words = append(sc.words, w.assign(a))
		nodes = append(nodes, a)
	}
	w.assoc = false
	for _, r := range redirs {
		sc.words = append(sc.words, w.redirect(r))
		nodes = append(nodes, redirNode(r))
	}
	w.reason = saved
	w.emit(sc, nodes, reason)
}
