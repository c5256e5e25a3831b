package workflow

import (
	"context"
	"encoding/json"
)

// route: one of its named branches, chosen by a question or a value.

func init() {
	register(&nodeKind{
		name:     "route",
		kindSpec: kindSpec{[]string{"label", "state", "instructions", "branches", "unsure", "valuePath", "otherwise", "as", "requires"}, []string{"label", "branches"}},
		check:    checkRoute,
		writes:   writesRoute,
		run:      runRoute,
		plan:     planRoute,
		planBody: planBodyRoute,
		tree:     treeRoute,
	})
}

func checkRoute(c *nodeCheck) {
	d, v, ptr, sc, w, av, as := c.d, c.v, c.ptr, c.sc, c.w, c.av, c.as
	d.route(v, ptr, sc, w)
	c.writeAs()
	if av != nil {
		sc.add(as + "$answers")
	}
}

func writesRoute(s *scope, v, as, label *value, walk func(*value)) {
	if b := v.get("branches"); b != nil && b.kind == 'o' {
		for _, m := range b.mem {
			walk(m.val.get("body"))
		}
	}
}

func runRoute(r *runner, ctx context.Context, n *Node, path, key string, state map[string]any) (map[string]any, error) {
	return r.route(ctx, n, key, path, state)
}

func planRoute(p *Plan, n *Node, times int64, line string) string {
	if n.ValuePath == "" {
		p.Questions += times
		line += " one structured model call"
	} else {
		line += " dispatch on " + n.ValuePath
	}
	return line
}

func planBodyRoute(p *Plan, n *Node, path, here string, times int64, input map[string]any, depth int) {
	// Every branch is listed; the counts take each (a bound, not a sum of what runs).
	for _, b := range n.Routes {
		p.walk(b.Body, here+"/"+b.Name, times, input, depth+1)
	}
}

func treeRoute(b *treeBuilder, t *TreeNode, n *Node, path, key string) {
	b.own(t, key)
	if ss := b.steps[key]; len(ss) > 0 && ss[len(ss)-1].State == "Completed" {
		// The branch the answer took (the unsure branch below its threshold), as route does.
		if v, conf, ok := answerOf(ss[len(ss)-1].Result); ok {
			var name string
			if json.Unmarshal(v, &name) == nil {
				if n.Unsure != nil && conf < n.Unsure.Gte {
					name = n.Unsure.Branch
				}
				b.taken = append(b.taken, key+">"+escapeSeg(name))
			}
		}
	}
	for _, r := range n.Routes {
		bp := key + ">" + escapeSeg(r.Name)
		bt := &TreeNode{Key: bp, Kind: "branch", Label: r.Name}
		b.place(bt)
		bt.Children = b.nodes(r.Body, bp)
		t.Children = append(t.Children, bt)
	}
}
