package workflow

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// TreeNode is one node of a workflow run's tree as `runs steps` and the console show it: the
// document's nodes with the run's map items, loop iterations and route branches under them, each
// with its state, a short preview of its value and its cost (its own steps' and, rolled up, its
// children's). It is made from the document and the run's journal (Tree), so it is exactly what
// the journal says and nothing is re-run to make it.
type TreeNode struct {
	// Key is the node's execution path (the step key of its effect, the prefix of its children's).
	Key string `json:"key"`
	// Kind is the node kind, or item (a map item), iteration (a loop's), branch (a route's) or
	// step (one journal step of an agent node: a model or tool call).
	Kind  string `json:"kind"`
	Label string `json:"label,omitempty"`
	// State is done, running, waiting (on a person: an approval, a question, a resolution),
	// failed, escalated, skipped (not reached in a run that ended, or a branch not taken) or
	// pending (not reached yet).
	State string `json:"state"`
	// Value is a short preview of what the node's effect answered.
	Value string `json:"value,omitempty"`
	// CostMicros is the known cost of the node's model calls, children included, in micro-dollars;
	// CostUnknown counts those calls whose cost is not known (so the cost is "at least" it).
	CostMicros  int64 `json:"costMicros"`
	CostUnknown int   `json:"costUnknown,omitempty"`
	// Steps is the number of journal steps under the node, children included.
	Steps    int         `json:"steps"`
	Children []*TreeNode `json:"children,omitempty"`
}

// Tree node states.
const (
	NodeDone      = "done"
	NodeRunning   = "running"
	NodeWaiting   = "waiting"
	NodeFailed    = "failed"
	NodeEscalated = "escalated"
	NodeSkipped   = "skipped"
	NodePending   = "pending"
)

// TreeStep is what the tree reads of one journal step.
type TreeStep struct {
	Key   string
	Kind  string // model, tool, question, ...
	State string // Started, Completed, Interrupted, Failed (api.StepState)
	Title string
	// Result is the recorded result; CostMicros the step's cost (nil on a model step: unknown).
	Result     json.RawMessage
	CostMicros *int64
}

// TreeRun is how the run stands, for the states of nodes the journal has no step of.
type TreeRun struct {
	// Finished: the run ended (Succeeded, Failed, Cancelled); a node not reached is skipped.
	// Completed: it ended with the workflow's output, so every node ran (but branches not taken).
	Finished, Completed bool
	// WaitingKey is the step a waiting run waits on (status.waitingOn.stepKey).
	WaitingKey string
	// FailedKey is the node a WorkflowFailed run failed at; EscalatedKey the escalate node that
	// stopped it.
	FailedKey    string
	EscalatedKey string
}

// Tree is the run tree of w given the run's journal steps (in journal order) and its standing.
func (w *Workflow) Tree(steps []TreeStep, run TreeRun) *TreeNode {
	b := &treeBuilder{run: run, steps: map[string][]TreeStep{}, order: map[*TreeNode]int{}}
	keys := make([]string, 0, len(steps))
	for _, s := range steps {
		if _, ok := b.steps[s.Key]; !ok {
			keys = append(keys, s.Key)
		}
		b.steps[s.Key] = append(b.steps[s.Key], s)
	}
	sort.Strings(keys)
	b.keys = keys
	root := &TreeNode{Key: "wf", Kind: "workflow", Label: w.Name}
	root.Children = b.nodes(w.Root, "wf")
	b.resolve(root)
	return root
}

type treeBuilder struct {
	run   TreeRun
	steps map[string][]TreeStep
	keys  []string // sorted, for prefix scans
	// order is each node's place in document order; frontier the furthest place with evidence.
	order    map[*TreeNode]int
	frontier int
	// mark is each node's own state from its steps ("" when it has none).
	mark map[*TreeNode]string
	// taken are the branch keys routes' answers took.
	taken []string
}

// withPrefix lists the step keys that start with p, in key order.
func (b *treeBuilder) withPrefix(p string) []string {
	i := sort.SearchStrings(b.keys, p)
	var out []string
	for ; i < len(b.keys) && strings.HasPrefix(b.keys[i], p); i++ {
		out = append(out, b.keys[i])
	}
	return out
}

func (b *treeBuilder) place(t *TreeNode) {
	b.order[t] = len(b.order)
}

// nodes is n's subtree at path; a chain without a label is its steps (it adds nothing to a key).
func (b *treeBuilder) nodes(n *Node, path string) []*TreeNode {
	if n.Kind != "chain" || n.Label != "" {
		return []*TreeNode{b.node(n, path)}
	}
	var out []*TreeNode
	for _, s := range n.Steps {
		out = append(out, b.nodes(s, path)...)
	}
	return out
}

// node builds n's subtree at path, as the engine keys it (engine.go).
func (b *treeBuilder) node(n *Node, path string) *TreeNode {
	key := Key(path, n.Label)
	t := &TreeNode{Key: key, Kind: n.Kind, Label: n.Label}
	b.place(t)
	if k := kinds[n.Kind]; k != nil && k.tree != nil {
		k.tree(b, t, n, path, key)
	}
	return t
}

// subSteps puts the steps keyed KEY/... under t, each a step node, but those skip says are t's own.
func (b *treeBuilder) subSteps(t *TreeNode, key string, skip func(rest string) bool) {
	for _, k := range b.withPrefix(key + "/") {
		if skip != nil && skip(k[len(key)+1:]) {
			continue
		}
		st := &TreeNode{Key: k, Kind: "step", Label: k[len(key)+1:]}
		b.place(st)
		b.own(st, k)
		t.Children = append(t.Children, st)
	}
}

// indexes are the numbers n of the steps keyed prefix+n+end..., in order ("" end: prefix+n).
func (b *treeBuilder) indexes(prefix, end string) []int {
	seen := map[int]bool{}
	var out []int
	for _, k := range b.withPrefix(prefix) {
		rest := k[len(prefix):]
		j := strings.Index(rest, end)
		if end == "" {
			j = len(rest)
		}
		if j <= 0 {
			continue
		}
		i, err := strconv.Atoi(rest[:j])
		if err != nil || i < 0 || seen[i] {
			continue
		}
		seen[i] = true
		out = append(out, i)
	}
	sort.Ints(out)
	return out
}

// own puts the steps at key on t: their cost, their count, t's state from the last one and its
// value's preview.
func (b *treeBuilder) own(t *TreeNode, key string) {
	ss := b.steps[key]
	if len(ss) == 0 {
		return
	}
	if b.mark == nil {
		b.mark = map[*TreeNode]string{}
	}
	for _, s := range ss {
		t.Steps++
		if s.Kind == "model" && s.State == "Completed" {
			if s.CostMicros == nil {
				t.CostUnknown++
			} else {
				t.CostMicros += *s.CostMicros
			}
		} else if s.CostMicros != nil {
			t.CostMicros += *s.CostMicros
		}
	}
	last := ss[len(ss)-1]
	state := NodeDone
	switch last.State {
	case "Started":
		state = NodeRunning
		if b.run.Finished {
			state = NodeFailed // a run that ended with a step still started: it never finished
		}
	case "Interrupted":
		state = NodeWaiting
	case "Failed":
		state = NodeFailed
	}
	if b.run.WaitingKey == key && state != NodeDone {
		state = NodeWaiting
	}
	if prev := b.mark[t]; prev == "" || rank(state) > rank(prev) {
		b.mark[t] = state
	}
	if state == NodeDone && last.State == "Completed" {
		t.Value = Preview(last.Result, 120)
	}
	b.frontier = max(b.frontier, b.order[t])
}

// rank orders states by how much they say: a node shows its most telling child's.
func rank(s string) int {
	switch s {
	case NodeFailed:
		return 6
	case NodeEscalated:
		return 5
	case NodeWaiting:
		return 4
	case NodeRunning:
		return 3
	case NodeDone:
		return 2
	case NodeSkipped:
		return 1
	}
	return 0
}

// resolve sets every node's state and rolls costs and step counts up, children first.
func (b *treeBuilder) resolve(root *TreeNode) {
	for t, o := range b.order {
		f := b.run.FailedKey
		if f != "" && (t.Key == f || t.Kind == "call" && strings.HasPrefix(f, t.Key+"#") || kinds[t.Kind] != nil && kinds[t.Kind].ownsSubSteps && strings.HasPrefix(f, t.Key+"/")) {
			b.setMark(t, NodeFailed)
			b.frontier = max(b.frontier, o)
		}
		if t.Key == b.run.EscalatedKey && b.run.EscalatedKey != "" && t.Kind == "escalate" {
			b.setMark(t, NodeEscalated)
			b.frontier = max(b.frontier, o)
		}
	}
	b.settle(root)
}

func (b *treeBuilder) setMark(t *TreeNode, s string) {
	if b.mark == nil {
		b.mark = map[*TreeNode]string{}
	}
	b.mark[t] = s
}

// settle computes t's state: its own steps' and its children's, the most telling; a node with no
// evidence before the furthest node with some ran (it is pure, or its effects were answered
// without a step), one after it is pending, or skipped once the run ended.
func (b *treeBuilder) settle(t *TreeNode) {
	state := b.mark[t]
	anyOpen := false
	for _, c := range t.Children {
		b.settle(c)
		t.CostMicros += c.CostMicros
		t.CostUnknown += c.CostUnknown
		t.Steps += c.Steps
		if rank(c.State) > rank(state) {
			state = c.State
		}
		if c.State != NodeDone && c.State != NodeSkipped {
			anyOpen = true
		}
	}
	if t.Kind == "route" {
		// A branch with no evidence beside one that has some was not taken.
		taken := ""
		for _, c := range t.Children {
			if c.Steps > 0 || b.mark[c] != "" || slices.Contains(b.taken, c.Key) {
				taken = c.Key
			}
		}
		if taken != "" {
			for _, c := range t.Children {
				if c.Key != taken && c.Steps == 0 && c.State != NodeFailed {
					skip(c)
				}
			}
			t.Value = strings.TrimSpace(t.Value + " → " + taken[strings.LastIndexByte(taken, '>')+1:])
		}
	}
	if state == NodeDone && anyOpen && !b.run.Finished {
		state = NodeRunning // some children done, others not yet
	}
	if state == "" || state == NodePending {
		switch {
		case b.order[t] < b.frontier, b.run.Completed:
			state = NodeDone
		case b.run.Finished:
			state = NodeSkipped
		default:
			state = NodePending
		}
		if len(t.Children) > 0 && state == NodeDone {
			// Children with no evidence of their own take their parent's reading.
			for _, c := range t.Children {
				if c.State == NodePending {
					c.State = NodeDone
				}
			}
		}
	}
	if t.Kind == "workflow" && t.Key == "wf" {
		// The root: as the run stands.
		if b.run.Finished && state != NodeFailed && state != NodeEscalated {
			state = NodeDone
		}
	}
	t.State = state
}

func skip(t *TreeNode) {
	t.State = NodeSkipped
	for _, c := range t.Children {
		skip(c)
	}
}

// Preview is a short text of a step's recorded result: a tool's content, a typed question's
// answer and confidence, a model call's text, or the JSON itself; at most n characters.
func Preview(result json.RawMessage, n int) string {
	var s string
	var tool struct {
		Content *string
		IsError bool
	}
	var model struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
			Name string `json:"name"`
		} `json:"content"`
	}
	switch {
	case len(result) == 0 || string(result) == "null":
		return ""
	case json.Unmarshal(result, &tool) == nil && tool.Content != nil:
		s = *tool.Content
		if tool.IsError {
			s = "error: " + s
		}
	case json.Unmarshal(result, &model) == nil && len(model.Content) > 0:
		var text strings.Builder
		var uses []string
		for _, b := range model.Content {
			switch b.Type {
			case "text":
				text.WriteString(b.Text)
			case "tool_use":
				uses = append(uses, b.Name)
			}
		}
		s = strings.TrimSpace(text.String())
		if v, conf, ok := answerOf(result); ok {
			s = fmt.Sprintf("%s (confidence %.2f)", v, conf)
		}
		if len(uses) > 0 {
			if s != "" {
				s += " "
			}
			s += "→ " + strings.Join(uses, ", ")
		}
	default:
		s = string(result)
	}
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}

// answerOf reads a typed question's recorded answer: the model call's text is
// {"answer": ..., "confidence": ...} (the workflow host's question format).
func answerOf(result json.RawMessage) (json.RawMessage, float64, bool) {
	var model struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(result, &model) != nil {
		return nil, 0, false
	}
	var text strings.Builder
	for _, b := range model.Content {
		if b.Type == "text" {
			text.WriteString(b.Text)
		}
	}
	var ans struct {
		Answer     json.RawMessage `json:"answer"`
		Confidence *float64        `json:"confidence"`
	}
	if json.Unmarshal([]byte(stripFence(text.String())), &ans) != nil || len(ans.Answer) == 0 || ans.Confidence == nil {
		return nil, 0, false
	}
	return ans.Answer, *ans.Confidence, true
}
