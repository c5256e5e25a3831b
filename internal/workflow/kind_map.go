package workflow

import (
	"context"
	"fmt"
)

// map: its body once per item.

func init() {
	register(&nodeKind{
		name:     "map",
		kindSpec: kindSpec{[]string{"label", "itemsPath", "body", "as", "resultPath", "maxConcurrency"}, []string{"label", "itemsPath", "body", "as"}},
		check:    checkMap,
		run:      runMap,
		planBody: planBodyMap,
		tree:     treeMap,
	})
}

func checkMap(c *nodeCheck) {
	d, v, ptr, sc, w := c.d, c.v, c.ptr, c.sc, c.w
	if p, pv := d.nonEmpty(v, ptr, "itemsPath"); pv != nil {
		d.read(sc, p, pv.off, ptr+"/itemsPath", w)
	}
	d.integer(v, ptr, "maxConcurrency", 1)
	defer d.enterMap(v, ptr)()
	if body := v.get("body"); body != nil {
		bs := sc.clone()
		bw := where{inside: "map", item: true, siblings: w.siblings}
		d.node(body, ptr+"/body", bs, bw, false)
		if rp, rv := d.nonEmpty(v, ptr, "resultPath"); rv != nil {
			d.read(bs, rp, rv.off, ptr+"/resultPath", bw)
		}
	}
	c.writeAs()
}

func runMap(r *runner, ctx context.Context, n *Node, path, key string, state map[string]any) (map[string]any, error) {
	return r.mapNode(ctx, n, key, state)
}

func planBodyMap(p *Plan, n *Node, path, here string, times int64, input map[string]any, depth int) {
	items := int64(1)
	v, _ := lookupOK(input, n.ItemsPath)
	if list, ok := v.([]any); ok && input != nil {
		items = int64(len(list))
	} else {
		p.Unbounded = true
	}
	p.walk(n.Body, here+"/[i]", times*items, nil, depth+1)
}

func treeMap(b *treeBuilder, t *TreeNode, n *Node, path, key string) {
	for _, i := range b.indexes(key+"[", "]") {
		ip := fmt.Sprintf("%s[%d]", key, i)
		it := &TreeNode{Key: ip, Kind: "item", Label: fmt.Sprintf("[%d]", i)}
		b.place(it)
		it.Children = b.nodes(n.Body, ip)
		t.Children = append(t.Children, it)
	}
}
