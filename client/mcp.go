package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"agentrun.dev/agentrun/internal/api"
)

// MCP types: a server an agent names, and the tools it lists.
type (
	MCPServer   = api.MCPServer
	MCPTool     = api.MCPTool
	MCPToolList = api.MCPToolList
)

// MCPTools is GET /v2/agents/NAME/mcp-tools/SERVER: the tools the agent's MCP server lists (the
// server starts or reaches it to ask), each marked ticked or not, and ticked names it lacks.
func (c *Client) MCPTools(ctx context.Context, agent, server string) (*MCPToolList, error) {
	var out MCPToolList
	path := "/v2/" + Agents + "/" + url.PathEscape(agent) + "/mcp-tools/" + url.PathEscape(server)
	if _, _, err := c.call(ctx, request{method: http.MethodGet, path: path}, &out); err != nil {
		return nil, fmt.Errorf("list the tools of MCP server %s of agent %s: %w", server, agent, err)
	}
	return &out, nil
}
