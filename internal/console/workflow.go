package console

import (
	"context"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/store"
)

// nodeRow is one row of a workflow run's node tree on the run page.
type nodeRow struct {
	Key, Label, Kind, State, Value, Cost string
	Depth, Steps                         int
}

// workflowTree is the run's node tree as rows in document order (nil for a run of an agent
// revision without a workflow, or one whose tree cannot be read).
func (c *Console) workflowTree(ctx context.Context, run *api.AgentRun) []nodeRow {
	t, err := store.RunTree(ctx, c.Store, run)
	if err != nil || t.Root == nil {
		return nil
	}
	var rows []nodeRow
	var walk func(n *api.WorkflowNode, depth int)
	walk = func(n *api.WorkflowNode, depth int) {
		label := n.Label
		if label == "" {
			label = n.Kind
		}
		money := ""
		if n.CostMicros != 0 || n.CostUnknown > 0 {
			money = cost.Dollars(cost.Total{Known: cost.Micros(n.CostMicros), Unknown: n.CostUnknown}.String())
		}
		rows = append(rows, nodeRow{Key: n.Key, Label: label, Kind: n.Kind, State: n.State, Value: n.Value, Cost: money, Depth: depth, Steps: n.Steps})
		for _, ch := range n.Children {
			walk(ch, depth+1)
		}
	}
	walk(t.Root, 0)
	return rows
}
