package policy

import (
	"fmt"
	"regexp"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// What bash runs out of sight: the value of a variable named in arithmetic is evaluated as
// arithmetic too, and a subscript in it (a[$(cmd)]) runs commands; ${x@P} runs the substitutions
// in a value; ${!x} expands the variable another names. These parts of a word or a test are
// read here, and reported to the walker as opaque.

// expandedLater are names the shell expands or runs later, or that change what a name runs:
// assigning one is opaque.
var expandedLater = map[string]bool{"PS0": true, "PS1": true, "PS2": true, "PS3": true, "PS4": true,
	"PROMPT_COMMAND": true, "BASH_ENV": true, "ENV": true, "SHELLOPTS": true, "BASHOPTS": true,
	"BASH_CMDS": true, "BASH_ALIASES": true}

var safeAtOps = "QEAaUuLKk" // ${x@Q} and the like only quote or change case

// param reads a parameter expansion: its subscript, offsets and the words it expands.
func (w *walker) param(x *syntax.ParamExp) {
	switch {
	case x.Excl && x.Names == 0 && !allIndex(x.Index):
		w.opaque("an indirect expansion " + w.raw(x) + " (it expands the variable another names, whose subscript can run commands)")
	case x.Exp != nil && x.Exp.Op == syntax.OtherParamOps && (x.Exp.Word == nil || x.Exp.Word.Lit() == "" || strings.Trim(x.Exp.Word.Lit(), safeAtOps) != ""):
		w.opaque("a prompt expansion " + w.raw(x) + " (it runs the substitutions in the value)")
	case x.Exp != nil && (x.Exp.Op == syntax.AssignUnset || x.Exp.Op == syntax.AssignUnsetOrNull):
		w.opaque("an assignment inside an expansion " + w.raw(x))
	}
	if x.Index != nil && !allIndex(x.Index) {
		w.arith(x.Index) // whichever array it names, declared -A or not
	}
	if x.Slice != nil {
		w.arith(x.Slice.Offset)
		w.arith(x.Slice.Length)
	}
	if x.Exp != nil && x.Exp.Word != nil {
		w.word(x.Exp.Word)
	}
	if x.Repl != nil {
		if x.Repl.Orig != nil {
			w.word(x.Repl.Orig)
		}
		if x.Repl.With != nil {
			w.word(x.Repl.With)
		}
	}
}

// allIndex: ${a[@]} or ${a[*]}.
func allIndex(x syntax.ArithmExpr) bool {
	wd, ok := x.(*syntax.Word)
	return ok && (wd.Lit() == "@" || wd.Lit() == "*")
}

// index reads the subscript of an assignment: arithmetic (quoted or not), unless it is the key
// of an associative array declared by the same command.
func (w *walker) index(x syntax.ArithmExpr) {
	if wd, ok := x.(*syntax.Word); ok && w.assoc {
		w.word(wd)
		return
	}
	w.arith(x)
}

// numberRE is an arithmetic constant (10, 0x1f, 8#17): it names no variable.
var numberRE = regexp.MustCompile(`^[0-9][0-9A-Za-z_@#]*$`)

// arith reads an arithmetic expression. Bash evaluates the value of every variable an
// expression names as an expression too, and a subscript in it (a[$(cmd)]) runs commands: any
// variable, expansion or substitution in arithmetic is opaque; constants and $# $? $$ $! are not.
func (w *walker) arith(x syntax.ArithmExpr) {
	if x == nil {
		return
	}
	if !w.enter() {
		w.depth--
		return
	}
	defer func() { w.depth-- }()
	switch e := x.(type) {
	case *syntax.BinaryArithm:
		// x=1 assigns x without reading it.
		if l, ok := e.X.(*syntax.Word); !(ok && e.Op == syntax.Assgn && syntax.ValidName(l.Lit())) {
			w.arith(e.X)
		}
		w.arith(e.Y)
	case *syntax.UnaryArithm:
		w.arith(e.X)
	case *syntax.ParenArithm:
		w.arith(e.X)
	case *syntax.Word:
		w.word(e)
		if !numericWord(e) {
			w.opaque("arithmetic on a variable (" + w.raw(e) + ": bash evaluates its value, which can run commands)")
		}
	default:
		w.opaque(fmt.Sprintf("arithmetic approvals do not read (%T)", x))
	}
}

// numericWord reports whether a word in arithmetic is a number, whatever the variables hold.
func numericWord(wd *syntax.Word) bool {
	if wd == nil || len(wd.Parts) == 0 {
		return false
	}
	for _, p := range wd.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			if !numberRE.MatchString(x.Value) {
				return false
			}
		case *syntax.SglQuoted:
			if !numberRE.MatchString(x.Value) {
				return false
			}
		case *syntax.DblQuoted:
			if !numericWord(&syntax.Word{Parts: x.Parts}) {
				return false
			}
		case *syntax.ParamExp:
			special := x.Short && x.Param != nil && strings.Contains("#?$!", x.Param.Value) && len(x.Param.Value) == 1
			length := x.Length && x.Exp == nil && x.Slice == nil && x.Repl == nil && !x.Excl
			if !special && !length {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// test reads a [[ ]] expression: its numeric comparisons are arithmetic, and -v's subscript is
// evaluated.
func (w *walker) test(x syntax.TestExpr) {
	switch e := x.(type) {
	case *syntax.BinaryTest:
		w.test(e.X)
		w.test(e.Y)
		switch e.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			for _, o := range []syntax.TestExpr{e.X, e.Y} {
				if wd, ok := o.(*syntax.Word); !ok || !numericWord(wd) {
					w.opaque("arithmetic on a variable (" + w.raw(o) + " in [[ " + e.Op.String() + " ]]: bash evaluates its value, which can run commands)")
				}
			}
		}
	case *syntax.UnaryTest:
		w.test(e.X)
		if e.Op == syntax.TsVarSet || e.Op == syntax.TsRefVar {
			if strings.Contains(w.raw(e.X), "[") {
				w.opaque("an array subscript in [[ " + e.Op.String() + " ]] (it is evaluated, which can run commands)")
			}
		}
	case *syntax.ParenTest:
		w.test(e.X)
	case *syntax.Word:
		w.word(e)
	case nil:
	default:
		w.opaque(fmt.Sprintf("a test approvals do not read (%T)", x))
	}
}
