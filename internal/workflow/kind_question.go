package workflow

import (
	"context"
	"fmt"
)

// decide, extract, judge and pick: one typed question in one structured model call (a sift
// shares treeQuestion: its parts are its own steps).

func init() {
	register(&nodeKind{
		name:         "decide",
		kindSpec:     kindSpec{generative, []string{"label", "instructions"}},
		ownsSubSteps: true,
		check:        checkGenerative,
		writes:       writesGenerative,
		run:          runQuestion,
		plan:         planQuestion,
		tree:         treeQuestion,
	})
	register(&nodeKind{
		name:         "extract",
		kindSpec:     kindSpec{generative, []string{"label", "instructions"}},
		ownsSubSteps: true,
		check:        checkGenerative,
		writes:       writesGenerative,
		run:          runQuestion,
		plan:         planQuestion,
		tree:         treeQuestion,
	})
	register(&nodeKind{
		name:         "judge",
		kindSpec:     kindSpec{[]string{"label", "state", "out", "as", "requires"}, []string{"label", "state", "out", "as"}},
		ownsSubSteps: true,
		check:        checkJudge,
		run:          runQuestion,
		plan:         planQuestion,
		tree:         treeQuestion,
	})
	register(&nodeKind{
		name:         "pick",
		kindSpec:     kindSpec{[]string{"label", "itemsPath", "describe", "instructions", "state", "allowNone", "as", "requires"}, []string{"label", "itemsPath", "describe", "instructions", "as"}},
		ownsSubSteps: true,
		check:        checkPick,
		run:          runPick,
		plan:         planQuestion,
		tree:         treeQuestion,
	})
}

func checkJudge(c *nodeCheck) {
	d, v, ptr, sc, av, as := c.d, c.v, c.ptr, c.sc, c.av, c.as
	if st := v.get("state"); st != nil && st.kind == 'o' && len(st.mem) == 0 {
		d.sh.add(st.off, ptr+"/state", CodeInvalidValue, "a judge's state is a non-empty map of what it sees")
	}
	if id := d.schemaRef(v, ptr, "out"); id != "" {
		d.questionSchema(id, ptr+"/out", v.get("out").off)
	}
	c.writeAs()
	if av != nil {
		sc.add(as + "$answers")
	}
}

func checkPick(c *nodeCheck) {
	d, v, ptr, sc, w := c.d, c.v, c.ptr, c.sc, c.w
	if p, pv := d.nonEmpty(v, ptr, "itemsPath"); pv != nil {
		d.read(sc, p, pv.off, ptr+"/itemsPath", w)
	}
	d.nonEmpty(v, ptr, "instructions")
	if _, dv := d.nonEmpty(v, ptr, "describe"); dv != nil {
		d.reads(sc, dv, ptr+"/describe", where{item: true, siblings: w.siblings})
	}
	if f := v.get("allowNone"); f != nil && f.kind != 'b' {
		d.sh.add(f.off, ptr+"/allowNone", CodeWrongType, "allowNone is true or false")
	}
	c.writeAs()
}

func runQuestion(r *runner, ctx context.Context, n *Node, path, key string, state map[string]any) (map[string]any, error) {
	return r.question(ctx, n, key, state)
}

func runPick(r *runner, ctx context.Context, n *Node, path, key string, state map[string]any) (map[string]any, error) {
	return r.pick(ctx, n, key, state)
}

func planQuestion(p *Plan, n *Node, times int64, line string) string {
	q := times
	if n.Verify != nil {
		q *= 2 * int64(verifyDrives(n.Verify))
		line += fmt.Sprintf(" up to %d drives, each one structured model call and its review", verifyDrives(n.Verify))
	} else {
		line += " one structured model call"
	}
	p.Questions += q
	return line
}

func treeQuestion(b *treeBuilder, t *TreeNode, n *Node, path, key string) {
	b.own(t, key)
	// A sift asked in parts (KEY/part#N), a verify's reviews and drives: the node's steps.
	b.subSteps(t, key, nil)
}
