package workflow

import (
	"context"
	"fmt"
)

// sift: one question set over many items (kinds.go runs it).

func init() {
	register(&nodeKind{
		name:         "sift",
		kindSpec:     kindSpec{[]string{"label", "itemsPath", "describe", "state", "out", "as", "keep", "requires"}, []string{"label", "itemsPath", "out", "as"}},
		ownsSubSteps: true,
		check:        checkSift,
		run:          runSift,
		plan:         planSift,
		tree:         treeQuestion,
	})
}

func checkSift(c *nodeCheck) {
	d, v, ptr, sc, w := c.d, c.v, c.ptr, c.sc, c.w
	if p, pv := d.nonEmpty(v, ptr, "itemsPath"); pv != nil {
		d.read(sc, p, pv.off, ptr+"/itemsPath", w)
	}
	if _, dv := d.nonEmpty(v, ptr, "describe"); dv != nil {
		d.reads(sc, dv, ptr+"/describe", where{item: true, siblings: w.siblings})
	}
	id := d.schemaRef(v, ptr, "out")
	if id != "" {
		d.questionSchema(id, ptr+"/out", v.get("out").off)
	}
	if k := d.object(v, ptr, "keep"); k != nil {
		d.fields(k, ptr+"/keep", "keep", []string{"path", "gte"}, []string{"path"})
		kp, kv := d.nonEmpty(k, ptr+"/keep", "path")
		if kv != nil && id != "" {
			d.keepPath(id, kp, kv.off, ptr+"/keep/path")
		}
		if x, f, ok := d.number(k, ptr+"/keep", "gte"); ok && x < 0 {
			d.sh.add(f.off, ptr+"/keep/gte", CodeOutOfBounds, "keep.gte is a probability, a confidence or a score level: at least 0")
		}
	}
	c.writeAs()
}

func runSift(r *runner, ctx context.Context, n *Node, path, key string, state map[string]any) (map[string]any, error) {
	return r.sift(ctx, n, key, state)
}

func planSift(p *Plan, n *Node, times int64, line string) string {
	p.Questions += times
	p.SiftCalls += times
	line += fmt.Sprintf(" one structured model call (%d questions at most per call)", MaxQuestionsPerRequest)
	return line
}
