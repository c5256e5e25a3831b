package workflow

import (
	"context"
)

// escalate: the run stops for a person when its predicate holds.

func init() {
	register(&nodeKind{
		name:     "escalate",
		kindSpec: kindSpec{[]string{"label", "when", "kind", "stage", "summary"}, []string{"label", "when", "kind", "stage", "summary"}},
		check:    checkEscalate,
		run:      runEscalate,
		plan:     planEscalate,
		tree:     treeEscalate,
	})
}

func checkEscalate(c *nodeCheck) {
	d, v, ptr, sc, w := c.d, c.v, c.ptr, c.sc, c.w
	if wh := v.get("when"); wh != nil {
		d.predicate(wh, ptr+"/when", sc, w, false)
	}
	d.nonEmpty(v, ptr, "kind")
	d.nonEmpty(v, ptr, "stage")
	if _, sv := d.nonEmpty(v, ptr, "summary"); sv != nil {
		d.reads(sc, sv, ptr+"/summary", w)
	}
}

func runEscalate(r *runner, ctx context.Context, n *Node, path, key string, state map[string]any) (map[string]any, error) {
	ok, err := r.holdsAt(ctx, n, key+"/$when", n.When, state)
	if err != nil {
		return nil, err
	}
	if !ok {
		return state, nil
	}
	return nil, &escalated{Escalation: Escalation{Kind: n.EscKind, Stage: n.Stage, Summary: renderText(n.Summary, state), Label: n.Label, Path: key}, state: state}
}

func planEscalate(p *Plan, n *Node, times int64, line string) string {
	if n.When != nil && n.When.Predicate == "ask" {
		p.Questions += times
	}
	return line
}

func treeEscalate(b *treeBuilder, t *TreeNode, n *Node, path, key string) {
	b.own(t, key+"/$when")
}
