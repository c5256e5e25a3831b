package workflow

import (
	"context"
)

// workflow: a child workflow on its own input.

func init() {
	register(&nodeKind{
		name:     "workflow",
		kindSpec: kindSpec{[]string{"label", "workflow", "input", "out", "as"}, []string{"label", "workflow", "input", "out", "as"}},
		check:    checkWorkflow,
		run:      runWorkflow,
		planBody: planBodyWorkflow,
		tree:     treeWorkflow,
	})
}

func checkWorkflow(c *nodeCheck) {
	d, v, ptr, sc, w := c.d, c.v, c.ptr, c.sc, c.w
	d.childNode(v, ptr, sc, w)
	c.writeAs()
}

func runWorkflow(r *runner, ctx context.Context, n *Node, path, key string, state map[string]any) (map[string]any, error) {
	return r.child(ctx, n, key, state)
}

func planBodyWorkflow(p *Plan, n *Node, path, here string, times int64, input map[string]any, depth int) {
	if n.Child != nil {
		p.walk(n.Child.Root, here, times, nil, depth+1)
	}
}

func treeWorkflow(b *treeBuilder, t *TreeNode, n *Node, path, key string) {
	if n.Child != nil {
		t.Children = b.nodes(n.Child.Root, key)
	}
}
