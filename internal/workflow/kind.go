package workflow

import "context"

// nodeKind is one node kind: its exact fields and what validation, the dry-run plan, the engine
// and the tree do for it. Each kind registers itself from its own file (kind_NAME.go; kinds that
// share their code share a file), so a new kind is one file. A nil function means the kind has
// nothing of its own there.
type nodeKind struct {
	name string
	kindSpec
	// ownsSubSteps: its steps KEY/... are its own (a poll, an executor's tool call, a sift's part,
	// a verify's review or drive, an agent's turn), so a failure keyed there is the node's.
	ownsSubSteps bool
	// check validates the kind's own fields and records what it writes (doc.node).
	check func(c *nodeCheck)
	// writes adds the keys the node may write to s, walking into nodes it holds (writesOf).
	writes func(s *scope, v, as, label *value, walk func(*value))
	// run runs the node from state and returns the state after it (runner.node).
	run func(r *runner, ctx context.Context, n *Node, path, key string, state map[string]any) (map[string]any, error)
	// plan adds the node's counts to p for times runs and returns its line with what it does.
	plan func(p *Plan, n *Node, times int64, line string) string
	// planBody walks the nodes it holds (here is its own path).
	planBody func(p *Plan, n *Node, path, here string, times int64, input map[string]any, depth int)
	// tree gives t the node's steps and children as the engine keyed them.
	tree func(b *treeBuilder, t *TreeNode, n *Node, path, key string)
}

// kinds is the published language's node set, by name (every kind also accepts metadata).
var kinds = map[string]*nodeKind{}

// RunnableKinds are the kinds the engine runs; the rest are refused at run start and by
// validation with Runnable (every kind of the published set runs).
var RunnableKinds = map[string]bool{}

func register(k *nodeKind) {
	kinds[k.name] = k
	if k.run != nil {
		RunnableKinds[k.name] = true
	}
}

// nodeCheck is what doc.node has read of a node when its kind's check runs.
type nodeCheck struct {
	d         *doc
	v         *value
	ptr       string
	sc        *scope
	w         where
	kind      string
	av, lv    *value // its "as" and "label", nil when absent
	label, as string
}

// writeAs records the write of the node's "as".
func (c *nodeCheck) writeAs() {
	if c.av != nil {
		c.d.write(c.sc, c.as, c.av.off, c.ptr+"/as")
	}
}
