package workflow

import (
	"context"
	"strconv"
)

// chain: its steps in order, each on the state the one before left.

func init() {
	register(&nodeKind{
		name:     "chain",
		kindSpec: kindSpec{[]string{"steps"}, []string{"steps"}},
		check:    checkChain,
		writes:   writesChain,
		run:      runChain,
		planBody: planBodyChain,
		tree:     treeChain,
	})
}

func checkChain(c *nodeCheck) {
	d, v, ptr, sc, w := c.d, c.v, c.ptr, c.sc, c.w
	steps := v.get("steps")
	if steps == nil {
		return
	}
	if steps.kind != 'a' || len(steps.elems) == 0 {
		d.sh.add(steps.off, ptr+"/steps", CodeWrongType, "steps is a non-empty list of nodes")
		return
	}
	for i, s := range steps.elems {
		sw := w
		sw.last = w.last && i == len(steps.elems)-1
		d.node(s, ptr+"/steps/"+strconv.Itoa(i), sc, sw, false)
	}
}

func writesChain(s *scope, v, as, label *value, walk func(*value)) {
	if st := v.get("steps"); st != nil {
		for _, e := range st.elems {
			walk(e)
		}
	}
}

func runChain(r *runner, ctx context.Context, n *Node, path, key string, state map[string]any) (map[string]any, error) {
	var err error
	for _, s := range n.Steps {
		if state, err = r.node(ctx, s, path, state); err != nil {
			return nil, err
		}
	}
	return state, nil
}

func planBodyChain(p *Plan, n *Node, path, here string, times int64, input map[string]any, depth int) {
	for _, s := range n.Steps {
		p.walk(s, path, times, input, depth+1)
	}
}

func treeChain(b *treeBuilder, t *TreeNode, n *Node, path, key string) {
	t.Key = path
	for _, s := range n.Steps {
		t.Children = append(t.Children, b.nodes(s, path)...)
	}
}
