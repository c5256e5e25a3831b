package workflow

import (
	"context"
	"fmt"
)

// loop: its body until its predicate holds, at most maxIters times.

func init() {
	register(&nodeKind{
		name:     "loop",
		kindSpec: kindSpec{[]string{"label", "body", "until", "maxIters", "expect_iters"}, []string{"label", "body", "until", "maxIters"}},
		check:    checkLoop,
		writes:   writesLoop,
		run:      runLoop,
		plan:     planLoop,
		planBody: planBodyLoop,
		tree:     treeLoop,
	})
}

func checkLoop(c *nodeCheck) {
	d, v, ptr, sc, w := c.d, c.v, c.ptr, c.sc, c.w
	d.integer(v, ptr, "maxIters", 1)
	d.integer(v, ptr, "expect_iters", 1)
	if body := v.get("body"); body != nil {
		d.node(body, ptr+"/body", sc, where{inside: "loop", item: w.item, siblings: w.siblings}, false)
	}
	if u := v.get("until"); u != nil {
		d.predicate(u, ptr+"/until", sc, w, false)
	}
}

func writesLoop(s *scope, v, as, label *value, walk func(*value)) {
	walk(v.get("body"))
}

func runLoop(r *runner, ctx context.Context, n *Node, path, key string, state map[string]any) (map[string]any, error) {
	return r.loop(ctx, n, key, state)
}

func planLoop(p *Plan, n *Node, times int64, line string) string {
	if n.Until != nil && n.Until.Predicate == "ask" {
		p.Questions += times * int64(n.MaxIters)
	}
	return line
}

func planBodyLoop(p *Plan, n *Node, path, here string, times int64, input map[string]any, depth int) {
	p.walk(n.Body, here+"/[iter]", times*int64(n.MaxIters), nil, depth+1)
}

func treeLoop(b *treeBuilder, t *TreeNode, n *Node, path, key string) {
	for _, i := range b.indexes(key+"#", "/") {
		ip := fmt.Sprintf("%s#%d", key, i)
		it := &TreeNode{Key: ip, Kind: "iteration", Label: fmt.Sprintf("#%d", i)}
		b.place(it)
		it.Children = b.nodes(n.Body, ip)
		if n.Until != nil && n.Until.Predicate == "ask" {
			u := &TreeNode{Key: ip + "/$until", Kind: "ask", Label: "until"}
			b.place(u)
			b.own(u, u.Key)
			it.Children = append(it.Children, u)
		}
		t.Children = append(t.Children, it)
	}
}
