package agent

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/catalog"
	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/tools"
	"agentrun.dev/agentrun/internal/tools/mcpclient"
)

// The MCP servers an agent names: started (stdio, inside the run's computer when it has a sandbox
// or a desktop, on the runner in the run folder otherwise: incomputer.go) or reached
// (streamable HTTP) when a drive starts, their ticked tools offered as mcp__SERVER__TOOL, each
// call a journal step. A server that does not start, or dies, makes its tools answer with the
// error and says so on the timeline; the run goes on.

// maxMCPResult bounds what one MCP call gives the model.
const maxMCPResult = 256 << 10

// mcpState is a drive's MCP servers.
type mcpState struct {
	sessions map[string]*mcpclient.Session // live, by server name
	entries  map[string]catalog.Entry      // ticked tools, by mcp__SERVER__TOOL
	order    []string                      // ticked tools in the order the model is told of them
}

// mcpOpen opens the secrets a server's env and headers name.
func (d *drive) mcpOpen() mcpclient.OpenSecret {
	if d.e.Secrets == nil {
		return nil
	}
	return d.e.Secrets.Open
}

func mcpField(i int) string { return api.NewPath("spec", "mcpServers").Index(i).String() }

// startMCP connects to every server the agent names and takes the definitions of its ticked
// tools. A server that fails is noted on the timeline; its ticked tools are still offered (with
// an open schema), so the model learns from the call why it cannot be used.
func (d *drive) startMCP(ctx context.Context) {
	if d.mcp != nil {
		return
	}
	d.mcp = &mcpState{sessions: map[string]*mcpclient.Session{}, entries: map[string]catalog.Entry{}}
	// The ticked tools, by server, as OfferedTools names them.
	ticked := map[string][]string{}
	for _, n := range OfferedTools(d.spec) {
		if server, tool, ok := catalog.SplitMCPName(n); ok {
			ticked[server] = append(ticked[server], tool)
		}
	}
	for i, srv := range d.spec.MCPServers {
		listed := map[string]catalog.MCPTool{}
		s, err := d.connectMCP(ctx, i)
		if err == nil {
			var ts []catalog.MCPTool
			ts, _, err = s.Tools(ctx)
			for _, t := range ts {
				listed[t.Name] = t
			}
		}
		if err != nil {
			d.mcpDown(srv.Name, err)
		}
		for _, name := range ticked[srv.Name] {
			t, ok := listed[name]
			if offered := api.MCPOfferedName(d.spec.Harness, srv.Name, name); len(offered) > api.MaxToolName {
				// An agent stored before validation refused such names: the vendors would
				// refuse the whole request, so the tool is left out, visibly.
				d.mcpDown(srv.Name, fmt.Errorf("MCP tool %q of server %s is not offered: its name %s is %d characters, over the model vendors' %d", name, srv.Name, offered, len(offered), api.MaxToolName))
				continue
			}
			switch {
			case ok:
			case err != nil:
				t = catalog.MCPTool{Name: name, Description: fmt.Sprintf("Tool %s of the MCP server %s, which did not start: %v", name, srv.Name, err)}
			default:
				d.mcpDown(srv.Name, fmt.Errorf("MCP server %s no longer has the ticked tool %q: it is not offered", srv.Name, name))
				continue
			}
			e := catalog.MCPEntry(srv.Name, t)
			d.mcp.entries[e.Name] = e
			d.mcp.order = append(d.mcp.order, e.Name)
		}
	}
}

// connectMCP starts or reaches server i of the spec and keeps its session for the drive.
func (d *drive) connectMCP(ctx context.Context, i int) (*mcpclient.Session, error) {
	srv := d.spec.MCPServers[i]
	if s := d.mcp.sessions[srv.Name]; s != nil {
		return s, nil
	}
	s, err := d.connectMCPServer(ctx, mcpField(i), srv)
	if err != nil {
		return nil, err
	}
	d.mcp.sessions[srv.Name] = s
	return s, nil
}

// mcpDown puts a server's failure on the timeline.
func (d *drive) mcpDown(server string, err error) {
	d.j.Emit(api.Event{Type: api.EventMCPUnavailable, Message: api.FirstLine(err.Error(), 300),
		Data: mustRaw(map[string]string{"server": server, "error": err.Error()})})
}

// mcpToolDefs are the ticked MCP tools, as the model is told of them.
func (d *drive) mcpToolDefs(ctx context.Context) []model.ToolDef {
	d.startMCP(ctx)
	out := make([]model.ToolDef, 0, len(d.mcp.order))
	for _, n := range d.mcp.order {
		e := d.mcp.entries[n]
		out = append(out, model.ToolDef{Name: e.Name, Description: e.Description, InputSchema: e.Schema})
	}
	return out
}

// mcpEntry is a ticked MCP tool of the agent.
func (d *drive) mcpEntry(name string) (catalog.Entry, bool) {
	if d.mcp == nil {
		return catalog.Entry{}, false
	}
	e, ok := d.mcp.entries[name]
	return e, ok
}

// closeMCP stops the drive's stdio servers and ends its HTTP sessions.
func (d *drive) closeMCP() {
	if d.mcp == nil {
		return
	}
	names := make([]string, 0, len(d.mcp.sessions))
	for n := range d.mcp.sessions {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := d.mcp.sessions[n].Close(); err != nil && !errors.Is(err, context.Canceled) {
			d.log.Debug("close MCP session", "server", n, "err", err)
		}
	}
	d.mcp.sessions = map[string]*mcpclient.Session{}
}

// mcpCall runs (or replays) one MCP tool call as a journal step: safe to repeat after a crash
// when the server marks the tool readOnlyHint or idempotentHint, otherwise uncertain (a crash
// mid-call parks the run for a person to resolve).
func (d *drive) mcpCall(ctx context.Context, key string, e catalog.Entry, call model.Block, in catalog.Input) (journal.Outcome, error) {
	server, tool, _ := catalog.SplitMCPName(call.Name)
	spec := journal.Spec{Key: key, Kind: "tool", Title: call.Name + " " + summarize(in),
		Args: map[string]any{"tool": call.Name, "input": call.Input, "mcpServer": server}, Safe: e.ReadOnly || e.Repeatable, Concurrent: true}
	if !e.ReadOnly {
		spec.Files = d.filesOf(key) // a stdio server works in the run folder
	}
	idx := -1
	for i, s := range d.spec.MCPServers {
		if s.Name == server {
			idx = i
		}
	}
	out, err := d.j.Do(ctx, spec, func(ctx context.Context) (any, *int64, error) {
		if idx < 0 {
			return tools.Result{Content: fmt.Sprintf("%s: the agent names no MCP server %q", call.Name, server), IsError: true}, nil, nil
		}
		// The call runs outside a workflow's drive lock (Concurrent): the drive's sessions are
		// changed under it, and one session takes several calls at once.
		var s *mcpclient.Session
		var err error
		d.j.Locked(func() {
			if s, err = d.connectMCP(ctx, idx); err != nil && ctx.Err() == nil {
				d.mcpDown(server, err)
			}
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			return tools.Result{Content: err.Error() + "; the call did not run", IsError: true}, nil, nil
		}
		r, err := s.Call(ctx, tool, call.Input)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			// The server died or went away mid-call: the next call starts it again.
			d.j.Locked(func() {
				s.Close()
				if d.mcp.sessions[server] == s {
					delete(d.mcp.sessions, server)
				}
				d.mcpDown(server, err)
			})
			return tools.Result{Content: fmt.Sprintf("%v; the MCP server stopped during the call, so it may or may not have taken effect", err), IsError: true}, nil, nil
		}
		content := r.Content
		if len(content) > maxMCPResult {
			content = content[:maxMCPResult] + fmt.Sprintf("\n[cut: the result was %d bytes; the first %d are shown]", len(r.Content), maxMCPResult)
		}
		return tools.Result{Content: content, IsError: r.IsError}, nil, nil
	})
	if err != nil {
		return journal.Outcome{}, err
	}
	return out, nil
}
