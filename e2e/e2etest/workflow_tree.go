package e2etest

import (
	"agentrun.dev/agentrun/internal/api"
)

// FindNode is the node at key in a run's tree.
func FindNode(n *api.WorkflowNode, key string) *api.WorkflowNode {
	if n == nil {
		return nil
	}
	if n.Key == key {
		return n
	}
	for _, c := range n.Children {
		if f := FindNode(c, key); f != nil {
			return f
		}
	}
	return nil
}
