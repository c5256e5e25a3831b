package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"
)

// code nodes run in goja, a JavaScript interpreter written in Go: the published language's code
// is a JavaScript function expression, so documents run unchanged, and goja runs it with nothing
// of the host reachable (no require, no fetch, no timers, no clock, no randomness, no globalThis:
// only the ECMAScript built-ins that are pure). Each call gets a new runtime in a child process
// of its own (codeproc.go), so nothing carries over between nodes and a call that exhausts its
// memory or stack ends only that child; a call is cut off at CodeTimeout (goja's Interrupt, and
// the parent's kill for native work that never looks at it), its call stack is bounded, and its
// result is bounded to CodeMaxResult bytes and CodeMaxDepth levels as it is converted.
const (
	CodeTimeout    = 2 * time.Second
	CodeMaxResult  = 1 << 20
	CodeMaxDepth   = 100
	codeStackDepth = 1000
	codeMaxSource  = 64 << 10
)

// parseCode checks that src is one function expression and returns its top-level returned
// object keys when every return is an object literal with plain keys (known=false otherwise).
func parseCode(src string) (keys []string, known bool, err error) {
	if len(src) > codeMaxSource {
		return nil, false, fmt.Errorf("the code is over %d KiB", codeMaxSource>>10)
	}
	prog, err := parser.ParseFile(nil, "", "("+src+"\n)", 0)
	if err != nil {
		return nil, false, fmt.Errorf("not JavaScript: %v", err)
	}
	if len(prog.Body) != 1 {
		return nil, false, errors.New("the code must be one function expression such as \"(s) => ({ n: s.items.length })\"")
	}
	es, ok := prog.Body[0].(*ast.ExpressionStatement)
	if !ok {
		return nil, false, errors.New("the code must be one function expression")
	}
	var rets []ast.Expression
	switch f := es.Expression.(type) {
	case *ast.ArrowFunctionLiteral:
		if f.Async {
			return nil, false, errors.New("the code must be synchronous (no async)")
		}
		switch b := f.Body.(type) {
		case *ast.ExpressionBody:
			rets = []ast.Expression{b.Expression}
		case *ast.BlockStatement:
			rets, known = returns(b.List)
			if !known {
				return nil, false, nil
			}
		}
	case *ast.FunctionLiteral:
		var ok bool
		rets, ok = returns(f.Body.List)
		if !ok {
			return nil, false, nil
		}
	default:
		return nil, false, errors.New("the code must be one function expression such as \"(s) => ({ n: s.items.length })\"")
	}
	seen := map[string]bool{}
	for _, r := range rets {
		obj, ok := r.(*ast.ObjectLiteral)
		if !ok {
			return nil, false, nil
		}
		for _, p := range obj.Value {
			var k string
			switch p := p.(type) {
			case *ast.PropertyKeyed:
				if p.Computed {
					return nil, false, nil
				}
				switch key := p.Key.(type) {
				case *ast.StringLiteral:
					k = string(key.Value)
				case *ast.Identifier:
					k = string(key.Name)
				default:
					return nil, false, nil
				}
			case *ast.PropertyShort:
				k = string(p.Name.Name)
			default:
				return nil, false, nil
			}
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	return keys, true, nil
}

// returns lists the return expressions of a function body's own top-level statements; false
// when a return is nested (in an if, a loop ...) or the body can end without one.
func returns(list []ast.Statement) ([]ast.Expression, bool) {
	var out []ast.Expression
	for _, s := range list {
		switch s := s.(type) {
		case *ast.ReturnStatement:
			if s.Argument == nil {
				return nil, false
			}
			out = append(out, s.Argument)
		case *ast.IfStatement, *ast.ForStatement, *ast.ForInStatement, *ast.ForOfStatement, *ast.WhileStatement,
			*ast.DoWhileStatement, *ast.SwitchStatement, *ast.TryStatement, *ast.BlockStatement, *ast.LabelledStatement:
			return nil, false
		}
	}
	return out, len(out) > 0
}

// unavailable are the globals a code node may not reach (the published language's list, and the
// sources of nondeterminism).
var unavailable = []string{"Date", "Promise", "Function", "globalThis", "require", "process", "fetch",
	"setTimeout", "setInterval", "queueMicrotask", "eval", "WeakRef", "FinalizationRegistry", "Atomics", "SharedArrayBuffer"}

// sandbox is a new goja runtime with nothing of the host reachable (code nodes and executor
// bodies each get their own), and the bounded JSON.stringify its result is converted with.
func sandbox() (*goja.Runtime, goja.Callable, error) {
	vm := goja.New()
	vm.SetMaxCallStackSize(codeStackDepth)
	for _, name := range unavailable {
		if err := vm.GlobalObject().Delete(name); err != nil {
			return nil, nil, fmt.Errorf("code sandbox: %w", err)
		}
	}
	// Math.random is the one nondeterministic pure built-in: it throws, so a replay computes the same.
	if _, err := vm.RunString(`Math.random = function () { throw new Error("Math.random is unavailable: code is deterministic") };`); err != nil {
		return nil, nil, fmt.Errorf("code sandbox: %w", err)
	}
	// The bounded stringify is made now, from the pristine built-ins, and only Go holds it.
	sv, err := vm.RunString(boundedStringify)
	if err != nil {
		return nil, nil, fmt.Errorf("code sandbox: %w", err)
	}
	str, _ := goja.AssertFunction(sv)
	return vm, str, nil
}

// runCodeHere calls the code node's function on in (the state as JSON) in this process and
// returns its result as JSON: the code child's work (codeproc.go), never the server's.
func runCodeHere(src string, in []byte) (json.RawMessage, error) {
	vm, str, err := sandbox()
	if err != nil {
		return nil, err
	}
	timer := time.AfterFunc(CodeTimeout, func() { vm.Interrupt("time limit") })
	defer timer.Stop()
	fnv, err := vm.RunString("(" + src + "\n)")
	if err != nil {
		return nil, codeErr(err)
	}
	fn, ok := goja.AssertFunction(fnv)
	if !ok {
		return nil, errors.New("the code is not a function")
	}
	arg, err := vm.RunString("(" + string(in) + ")")
	if err != nil {
		return nil, fmt.Errorf("code input: %w", err)
	}
	// The state is frozen deeply: the function returns new values and never mutates its input.
	freeze, err := vm.RunString(`(function f(o){ if (o && typeof o === "object") { Object.freeze(o); for (const k of Object.keys(o)) f(o[k]); } return o; })`)
	if err != nil {
		return nil, fmt.Errorf("code sandbox: %w", err)
	}
	ff, _ := goja.AssertFunction(freeze)
	if arg, err = ff(goja.Undefined(), arg); err != nil {
		return nil, fmt.Errorf("code input: %w", err)
	}
	res, err := fn(goja.Undefined(), arg)
	if err != nil {
		return nil, codeErr(err)
	}
	if goja.IsUndefined(res) {
		return json.RawMessage("null"), nil
	}
	if _, isPromise := res.Export().(*goja.Promise); isPromise {
		return nil, errors.New("the code returned a Promise: code is synchronous")
	}
	return stringify(vm, str, res)
}

// boundedStringify is JSON.stringify with a replacer that bounds what it walks: a value nested
// over CodeMaxDepth levels, or more than CodeMaxResult bytes of keys, strings and values, throws
// as soon as it is reached. The replacer is JavaScript, so goja's time limit (Interrupt) holds
// while the result is converted too: JSON.stringify alone is native code that never looks at it
// (a 150,000-deep object ran minutes past the limit). The built-ins it uses are taken before the
// code runs, so a code node that replaces Map or Reflect does not change them.
const boundedStringify = `(function () {
  const MapC = Map, get = Map.prototype.get, set = Map.prototype.set, apply = Reflect.apply;
  const stringify = JSON.stringify, JSONo = JSON, RangeErrorC = RangeError;
  return function (value, maxDepth, maxBytes) {
    const depth = new MapC();
    let bytes = 0;
    return apply(stringify, JSONo, [value, function (k, v) {
      bytes += k.length + 1;
      if (typeof v === "string") bytes += v.length;
      if (bytes > maxBytes) throw new RangeErrorC("the code's result is over " + maxBytes + " bytes");
      if (v !== null && typeof v === "object") {
        const d = (apply(get, depth, [this]) || 0) + 1;
        if (d > maxDepth) throw new RangeErrorC("the code's result is nested over " + maxDepth + " levels deep");
        apply(set, depth, [v, d]);
      }
      return v;
    }]);
  };
})()`

// stringify is a JavaScript value as JSON, bounded to CodeMaxResult bytes and CodeMaxDepth levels.
func stringify(vm *goja.Runtime, str goja.Callable, res goja.Value) (json.RawMessage, error) {
	if goja.IsUndefined(res) {
		return json.RawMessage("null"), nil
	}
	out, err := str(goja.Undefined(), res, vm.ToValue(CodeMaxDepth), vm.ToValue(CodeMaxResult))
	if err != nil {
		return nil, codeErr(err)
	}
	if goja.IsUndefined(out) {
		return nil, errors.New("the code returned a value JSON cannot hold (a function or a symbol)")
	}
	s := out.String()
	if len(s) > CodeMaxResult {
		return nil, fmt.Errorf("the code's result is over %d bytes", CodeMaxResult)
	}
	return json.RawMessage(s), nil
}

func codeErr(err error) error {
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		return fmt.Errorf("the code ran over its time limit (%s)", CodeTimeout)
	}
	var ex *goja.Exception
	if errors.As(err, &ex) {
		return fmt.Errorf("the code threw: %s", strings.TrimSpace(ex.Value().String()))
	}
	return fmt.Errorf("the code failed: %v", err)
}
