package workflow

import (
	"context"
)

// parallel: its branches side by side.

func init() {
	register(&nodeKind{
		name:     "parallel",
		kindSpec: kindSpec{[]string{"label", "branches"}, []string{"label", "branches"}},
		check:    checkParallel,
		writes:   writesParallel,
		run:      runParallel,
		planBody: planBodyParallel,
		tree:     treeParallel,
	})
}

func checkParallel(c *nodeCheck) {
	d, v, ptr, sc, w := c.d, c.v, c.ptr, c.sc, c.w
	d.parallel(v, ptr, sc, w)
}

func writesParallel(s *scope, v, as, label *value, walk func(*value)) {
	if b := v.get("branches"); b != nil {
		for _, e := range b.elems {
			walk(e)
		}
	}
}

func runParallel(r *runner, ctx context.Context, n *Node, path, key string, state map[string]any) (map[string]any, error) {
	return r.parallel(ctx, n, key, state)
}

func planBodyParallel(p *Plan, n *Node, path, here string, times int64, input map[string]any, depth int) {
	for _, b := range n.Parallel {
		p.walk(b, here, times, input, depth+1)
	}
}

func treeParallel(b *treeBuilder, t *TreeNode, n *Node, path, key string) {
	for _, br := range n.Parallel {
		t.Children = append(t.Children, b.nodes(br, key)...)
	}
}
