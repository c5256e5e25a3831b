package workflow

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// call: a tool, a shell command or an executor body, retried and polled as it says.

func init() {
	register(&nodeKind{
		name:         "call",
		kindSpec:     kindSpec{[]string{"label", "via", "tool", "args", "code", "input", "command", "env", "where", "out", "as", "produces", "deadline_s", "retry", "poll", "requires"}, []string{"label", "via", "as", "deadline_s"}},
		ownsSubSteps: true,
		check:        checkCall,
		run:          runCall,
		plan:         planCall,
		tree:         treeCall,
	})
}

func checkCall(c *nodeCheck) {
	d, v, ptr, sc, w := c.d, c.v, c.ptr, c.sc, c.w
	d.call(v, ptr, sc, w)
	c.writeAs()
}

func runCall(r *runner, ctx context.Context, n *Node, path, key string, state map[string]any) (map[string]any, error) {
	call := r.call
	if n.Poll != nil {
		call = r.polled
	}
	v, err := call(ctx, n, key, state)
	if err != nil {
		return nil, err
	}
	return r.write(n, key, state, n.As, v)
}

func planCall(p *Plan, n *Node, times int64, line string) string {
	// A polled call runs at most once per interval within poll.deadline_s, and the issue.
	runs := times
	if n.Poll != nil && n.Poll.IntervalS > 0 {
		runs *= 1 + int64(n.Poll.DeadlineS/n.Poll.IntervalS)
	}
	switch n.Via {
	case "shell":
		p.ShellCalls += runs
		line += fmt.Sprintf(" shell (deadline %gs)", n.DeadlineS)
	case "executor":
		p.ExecutorCalls += runs
		line += fmt.Sprintf(" executor body (deadline %gs; its tool calls are not counted)", n.DeadlineS)
	default:
		p.ToolCalls += runs
		line += fmt.Sprintf(" tool %s (deadline %gs)", n.Tool, n.DeadlineS)
	}
	if n.Retry != nil && n.Retry.Attempts > 1 {
		line += fmt.Sprintf(", up to %d attempts", n.Retry.Attempts)
	}
	if n.Poll != nil {
		line += fmt.Sprintf(", polled every %gs for at most %gs (up to %d runs)", n.Poll.IntervalS, n.Poll.DeadlineS, runs/times)
	}
	return line
}

func treeCall(b *treeBuilder, t *TreeNode, n *Node, path, key string) {
	b.own(t, key)
	for _, k := range b.withPrefix(key + "#") {
		if _, err := strconv.Atoi(k[len(key)+1:]); err == nil {
			b.own(t, k) // a retry's attempt
		}
	}
	// A polled call's polls (KEY/$poll#i) are the node's own too, in order, so its value is
	// the last poll's; its clock readings and an executor body's tool calls are its steps.
	polls := b.indexes(key+"/$poll#", "")
	for _, i := range polls {
		b.own(t, fmt.Sprintf("%s/$poll#%d", key, i))
	}
	b.subSteps(t, key, func(rest string) bool { _, err := strconv.Atoi(strings.TrimPrefix(rest, "$poll#")); return err == nil })
}
