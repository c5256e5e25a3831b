package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/catalog"
	"agentrun.dev/agentrun/internal/secret"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/tools/mcpclient"
)

// mcpCapabilities is what `server capabilities` says of MCP.
var mcpCapabilities = map[string]any{
	"client":     "github.com/modelcontextprotocol/go-sdk",
	"transports": []string{"stdio", "streamable-http"},
	// Where a stdio server runs (internal/agent/incomputer.go decides).
	"stdio": "inside the run's computer for a sandbox or desktop (in /workspace); on the runner, in the run folder, otherwise",
	"tools": catalog.MCPName("SERVER", "TOOL"),
}

// mcpOpen opens the secrets an MCP server's env and headers name, as the runner will.
func (s *Server) mcpOpen() mcpclient.OpenSecret {
	if s.Seal == nil {
		return nil
	}
	return (&secret.Opener{Box: s.Seal, Store: s.Store}).Open
}

// listMCP lists server i's tools. A stdio server is started here, on the server's machine, in a
// scratch folder removed afterwards (a run starts it in the run folder). Errors name the field.
func (s *Server) listMCP(ctx context.Context, srv api.MCPServer, i int) ([]api.MCPTool, error) {
	at := api.NewPath("spec", "mcpServers").Index(i).String()
	dir := ""
	if srv.Command != "" {
		d, err := os.MkdirTemp("", "agentrun-mcp-list-")
		if err != nil {
			return nil, fmt.Errorf("list MCP tools: %w", err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	_, tools, err := mcpclient.List(ctx, at, srv, dir, s.mcpOpen())
	var se *mcpclient.SecretError
	switch {
	case errors.As(err, &se) && errors.Is(se.Err, store.ErrNotFound):
		return nil, api.E(api.CodeSecretNotFound, se.Field, "%s names secret %q, which does not exist: a signed-in person sets it first", se.Field, se.Secret)
	case errors.As(err, &se):
		return nil, api.Invalid(se.Field, "%v", se)
	case err != nil:
		return nil, api.Invalid(at, "%v", err)
	}
	ticked := map[string]bool{}
	for _, t := range srv.Tools {
		ticked[t] = true
	}
	for j := range tools {
		tools[j].Ticked = ticked[tools[j].Name]
	}
	return tools, nil
}

// checkMCPServers asks each MCP server an agent names for its tools when the agent is created or
// applied, and refuses a ticked name the server does not have (or a server that does not start).
// The runs ask again each time they start: a tool the server dropped since is not offered.
func (s *Server) checkMCPServers(ctx context.Context, a *api.Agent) error {
	// Every server is asked, and every problem told: one that does not start does not hide the
	// next one's missing tool.
	var errs api.ErrorList
	for i, srv := range a.Spec.MCPServers {
		tools, err := s.listMCP(ctx, srv, i)
		if _, ok := api.AsError(err); ok {
			errs.AddErr(err)
			continue
		} else if err != nil {
			return err
		}
		has := map[string]bool{}
		for _, t := range tools {
			has[t.Name] = true
		}
		for j, name := range srv.Tools {
			if !has[name] {
				names := make([]string, 0, len(tools))
				for _, t := range tools {
					names = append(names, t.Name)
				}
				errs.Add(api.Invalid(api.NewPath("spec", "mcpServers").Index(i).Child("tools").Index(j).String(), "MCP server %s has no tool %q (it has: %v)", srv.Name, name, names))
			}
		}
		errs.AddErr(checkMCPPatterns(a.Spec.Approvals, srv.Name, tools))
	}
	return errs.Err()
}

// checkMCPPatterns refuses an approval rule with a pattern in parentheses on an MCP tool that
// has none of the arguments a pattern is matched against: the pattern could never match, so the
// rule would never apply (an "ask" or "deny" meant for some calls would let them all through).
func checkMCPPatterns(ap *api.Approvals, server string, tools []api.MCPTool) error {
	if ap == nil {
		return nil
	}
	keys := catalog.MatchKeys()
	for k, r := range ap.Rules {
		name, _, has := strings.Cut(strings.TrimSpace(r.Match), "(")
		if !has {
			continue
		}
		for _, t := range tools {
			if catalog.MCPName(server, t.Name) != name {
				continue
			}
			props := schemaProperties(t.InputSchema)
			if slices.ContainsFunc(keys, func(k string) bool { return slices.Contains(props, k) }) {
				break
			}
			return api.Invalid(api.NewPath("spec", "approvals", "rules").Index(k).Child("match").String(),
				"%s has none of the arguments a pattern in parentheses is matched against (%s), so %q would never match: its arguments are %v; write the rule without a pattern",
				name, strings.Join(keys, ", "), r.Match, props)
		}
	}
	return nil
}

// schemaProperties are the property names of a JSON Schema object, sorted.
func schemaProperties(schema any) []string {
	b, err := json.Marshal(schema)
	if err != nil {
		return nil
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(b, &s) != nil {
		return nil
	}
	out := make([]string, 0, len(s.Properties))
	for p := range s.Properties {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// mcpTools answers GET /v2/agents/{name}/mcp-tools/{server}: the server's tools, each marked
// ticked or not, and the ticked names it lacks.
func (s *Server) mcpTools(w http.ResponseWriter, r *http.Request) {
	out, err := s.mcpToolList(r.Context(), r.PathValue("name"), r.PathValue("server"))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// mcpToolList lists the tools of the agent's MCP server name, as the API and the console show them.
func (s *Server) mcpToolList(ctx context.Context, agent, name string) (api.MCPToolList, error) {
	a, err := s.Store.GetAgent(ctx, agent)
	if err != nil {
		return api.MCPToolList{}, storeErr(err)
	}
	for i, srv := range a.Spec.MCPServers {
		if srv.Name != name {
			continue
		}
		tools, err := s.listMCP(ctx, srv, i)
		if err != nil {
			return api.MCPToolList{}, err
		}
		out := api.MCPToolList{Agent: a.Metadata.Name, Server: name, Tools: tools}
		has := map[string]bool{}
		for _, t := range tools {
			has[t.Name] = true
		}
		for _, t := range srv.Tools {
			if !has[t] {
				out.Missing = append(out.Missing, t)
			}
		}
		if out.Tools == nil {
			out.Tools = []api.MCPTool{}
		}
		return out, nil
	}
	return api.MCPToolList{}, api.E(api.CodeNotFound, "server", "agent %s names no MCP server %q", a.Metadata.Name, name)
}

// consoleAgents gives the console's agent pages the API's MCP lister and agent patch.
type consoleAgents struct{ s *Server }

func (c consoleAgents) MCPTools(ctx context.Context, agent, server string) (api.MCPToolList, error) {
	return c.s.mcpToolList(ctx, agent, server)
}

// TickMCP is PATCH /v2/agents/NAME with the agent's mcpServers, server's tools replaced: the same
// merge, validation (each ticked name asked of the server) and revision as the API's.
func (c consoleAgents) TickMCP(ctx context.Context, agent, resourceVersion, server string, tools []string) (*api.Agent, error) {
	cur, err := c.s.Store.GetAgent(ctx, agent)
	if err != nil {
		return nil, storeErr(err)
	}
	servers := append([]api.MCPServer(nil), cur.Spec.MCPServers...)
	found := false
	for i := range servers {
		if servers[i].Name == server {
			servers[i].Tools, found = tools, true
		}
	}
	if !found {
		return nil, api.E(api.CodeNotFound, "server", "agent %s names no MCP server %q", agent, server)
	}
	patch := map[string]any{"spec": map[string]any{"mcpServers": servers}}
	if resourceVersion != "" {
		patch["metadata"] = map[string]any{"resourceVersion": resourceVersion}
	}
	body, err := json.Marshal(patch)
	if err != nil {
		return nil, fmt.Errorf("encode the patch: %w", err)
	}
	return c.s.patchAgentWith(ctx, cur, body)
}
