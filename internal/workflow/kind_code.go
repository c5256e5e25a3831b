package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
)

// code: a JavaScript function on the state, run in the code child (codeproc.go).

func init() {
	register(&nodeKind{
		name:     "code",
		kindSpec: kindSpec{[]string{"label", "code", "as"}, []string{"label", "code"}},
		check:    checkCode,
		writes:   writesCode,
		run:      runCode,
		plan:     planCode,
	})
}

func checkCode(c *nodeCheck) {
	d, v, ptr, sc, av, lv, label := c.d, c.v, c.ptr, c.sc, c.av, c.lv, c.label
	src, cv := d.nonEmpty(v, ptr, "code")
	if cv == nil {
		return
	}
	keys, known, err := parseCode(src)
	if err != nil {
		d.sh.add(cv.off, ptr+"/code", CodeCodeInvalid, "%v", err)
		return
	}
	if av != nil {
		c.writeAs()
		return
	}
	if lv != nil && strings.HasPrefix(label, "$") {
		d.sh.add(lv.off, ptr+"/label", CodeReservedKey, "an unaliased code node's label must not begin with \"$\"")
	}
	if !known {
		sc.open = true
		return
	}
	for _, k := range keys {
		d.write(sc, k, cv.off, ptr+"/code")
	}
}

func writesCode(s *scope, v, as, label *value, walk func(*value)) {
	if as == nil {
		if c := v.get("code"); c != nil && c.kind == 's' {
			keys, known, err := parseCode(c.str)
			if err == nil && known {
				for _, k := range keys {
					s.add(k)
				}
			} else {
				s.open = true
			}
		}
	}
}

func runCode(r *runner, ctx context.Context, n *Node, path, key string, state map[string]any) (map[string]any, error) {
	res, err := RunCode(ctx, n.Code, state)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		code := FailCode
		if errors.Is(err, ErrCodeMemory) {
			code = FailCodeMemory
		}
		return nil, r.fail(n, key, code, "%v", err)
	}
	var v any
	if err := json.Unmarshal(res, &v); err != nil {
		return nil, r.fail(n, key, FailCode, "decode result: %v", err)
	}
	if n.As != "" {
		return r.write(n, key, state, n.As, v)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		// An unaliased code node's value that is not an object is written under its label.
		return r.write(n, key, state, n.Label, v)
	}
	next := cloneMap(state)
	for k, x := range obj {
		if strings.HasPrefix(k, "$") {
			return nil, r.fail(n, key, FailState, "the code wrote %q: keys starting with \"$\" are the engine's", k)
		}
		next[k] = x
	}
	return next, nil
}

func planCode(p *Plan, n *Node, times int64, line string) string {
	p.CodeSteps += times
	return line
}
