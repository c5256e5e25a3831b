package workflow

import (
	"context"
	"fmt"
	"strings"
)

// agent, report and artifact: the agent's loop (a file artifact names a file of the run folder
// instead). checkGenerative is decide's and extract's too: they write under their label as an
// agent node does.

func init() {
	register(&nodeKind{
		name:         "agent",
		kindSpec:     kindSpec{append(append([]string{}, generative...), "budget_usd", "context"), []string{"label", "instructions"}},
		ownsSubSteps: true,
		check:        checkGenerative,
		writes:       writesGenerative,
		run:          runAgent,
		plan:         planAgent,
		tree:         treeAgent,
	})
	register(&nodeKind{
		name:     "report",
		kindSpec: kindSpec{[]string{"label", "state", "instructions", "sopSection", "requires", "tools", "effort", "thinking"}, []string{"label", "instructions"}},
		check:    checkReport,
		writes:   writesReport,
		run:      runAgent,
		plan:     planAgent,
		tree:     treeAgent,
	})
	register(&nodeKind{
		name:     "artifact",
		kindSpec: kindSpec{[]string{"label", "state", "type", "path", "instructions", "sopSection", "requires", "tools", "effort", "thinking"}, []string{"label", "type"}},
		check:    checkArtifact,
		run:      runArtifact,
		plan:     planArtifact,
		tree:     treeAgent,
	})
}

func checkGenerative(c *nodeCheck) {
	d, v, ptr, sc, kind, av, lv, label, as := c.d, c.v, c.ptr, c.sc, c.kind, c.av, c.lv, c.label, c.as
	if av != nil {
		c.writeAs()
	} else if lv != nil {
		if strings.HasPrefix(label, "$") {
			d.sh.add(lv.off, ptr+"/label", CodeReservedKey, "an unaliased %s node writes under its label, which must not begin with \"$\"; set \"as\"", kind)
		} else {
			sc.add(label)
		}
	}
	if key := orElse(as, label); v.get("verify") != nil && key != "" {
		sc.add(key + "$verify")
	}
}

func checkReport(c *nodeCheck) {
	sc := c.sc
	sc.add("report_markdown")
}

func checkArtifact(c *nodeCheck) {
	d, v, ptr, sc := c.d, c.v, c.ptr, c.sc
	t, tv := d.nonEmpty(v, ptr, "type")
	if tv == nil {
		return
	}
	if t == "markdown" || t == "report" {
		if v.get("instructions") == nil {
			d.sh.add(v.off, ptr+"/instructions", CodeMissingField, "an artifact of type %q writes the report: it needs \"instructions\"", t)
		}
		sc.add("report_markdown")
		return
	}
	p, pv := d.nonEmpty(v, ptr, "path")
	if pv == nil {
		d.sh.add(v.off, ptr+"/path", CodeMissingField, "an artifact of type %q names a file: it needs \"path\", a file an earlier shell call declared in produces", t)
	} else if !sc.keys["$produced:"+p] && !sc.open {
		d.sh.add(pv.off, ptr+"/path", CodePathUnwritten, "no earlier shell call declares %q in produces", p)
	}
	for _, f := range []string{"instructions", "state", "sopSection", "tools", "effort", "thinking"} {
		if fv := v.get(f); fv != nil {
			d.sh.add(fv.off, ptr+"/"+f, CodeInvalidValue, "an artifact that names a file has no model fields: remove %q", f)
		}
	}
	sc.add("artifact")
}

func writesGenerative(s *scope, v, as, label *value, walk func(*value)) {
	if as == nil && label != nil && label.kind == 's' {
		s.add(label.str)
		if v.get("verify") != nil {
			s.add(label.str + "$verify")
		}
	} else if as != nil && as.kind == 's' && v.get("verify") != nil {
		s.add(as.str + "$verify")
	}
}

func writesReport(s *scope, v, as, label *value, walk func(*value)) {
	s.add("report_markdown")
}

func runArtifact(r *runner, ctx context.Context, n *Node, path, key string, state map[string]any) (map[string]any, error) {
	if n.Type != "markdown" && n.Type != "report" {
		return r.fileArtifact(ctx, n, key, state)
	}
	return r.agent(ctx, n, key, state)
}

func runAgent(r *runner, ctx context.Context, n *Node, path, key string, state map[string]any) (map[string]any, error) {
	return r.agent(ctx, n, key, state)
}

func planArtifact(p *Plan, n *Node, times int64, line string) string {
	if n.Type != "markdown" && n.Type != "report" {
		line += " the file " + n.Path
		return line
	}
	p.AgentSteps += times
	line += " the agent's loop (bounded by the run's cap)"
	return line
}

func planAgent(p *Plan, n *Node, times int64, line string) string {
	if n.Verify != nil {
		d := int64(verifyDrives(n.Verify))
		p.AgentSteps += times * d
		p.Questions += times * d
		line += fmt.Sprintf(" the agent's loop (bounded by the run's cap), up to %d drives, each reviewed by one structured model call", d)
		return line
	}
	p.AgentSteps += times
	line += " the agent's loop (bounded by the run's cap)"
	return line
}

func treeAgent(b *treeBuilder, t *TreeNode, n *Node, path, key string) {
	b.own(t, key)
	for _, k := range b.withPrefix(key + "/") {
		st := &TreeNode{Key: k, Kind: "step", Label: k[len(key)+1:]}
		b.place(st)
		b.own(st, k)
		t.Children = append(t.Children, st)
	}
	if len(t.Children) > 0 {
		// Its answer: the last model call's text.
		t.Value = t.Children[len(t.Children)-1].Value
	}
}
