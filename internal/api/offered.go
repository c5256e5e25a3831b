package api

import (
	"slices"

	"agentrun.dev/agentrun/internal/catalog"
)

// OfferedTools names the tools a run of an agent with spec is offered, in the order the model is
// told of them: the tools spec.tools lists and those its computer brings (catalog.OfferedWith),
// the note tool of a learning agent, then each MCP server's ticked tools as mcp__SERVER__TOOL
// (catalog.MCPName), server by server. It is the agent's status.tools and what its runs offer
// (a run leaves out, and says so on its timeline, a ticked tool its server no longer has).
func OfferedTools(spec *AgentSpec) []string {
	kind := "none"
	if spec.Computer != nil && spec.Computer.Kind != "" {
		kind = string(spec.Computer.Kind)
	}
	out := catalog.OfferedWith(kind, spec.Tools, len(spec.Skills) > 0)
	if spec.Learning && !slices.Contains(out, catalog.NoteName) {
		out = append(out, catalog.NoteName)
	}
	for _, srv := range spec.MCPServers {
		for _, t := range srv.Tools {
			out = append(out, catalog.MCPName(srv.Name, t))
		}
	}
	return out
}
