package console

import (
	"context"
	"errors"
	"html/template"
	"net/http"

	"agentrun.dev/agentrun/internal/api"
)

// An agent's MCP page: for each MCP server the agent names, the tools the server lists (asked
// through the same lister as GET /v2/agents/NAME/mcp-tools/SERVER), which are ticked and which
// are safe to repeat after a crash, and a form that ticks and unticks them, applied as a new
// revision of the agent through the API's PATCH validation.

// Agents gives the agent pages the API's MCP lister and agent patch.
type Agents interface {
	MCPTools(ctx context.Context, agent, server string) (api.MCPToolList, error)
	// TickMCP applies a new revision of agent in which server ticks exactly tools, validated as
	// PATCH /v2/agents/NAME is; resourceVersion, when set, must be the agent's current one.
	TickMCP(ctx context.Context, agent, resourceVersion, server string, tools []string) (*api.Agent, error)
	// CreateAgent validates a and stores it, as POST /v2/agents does (newagent.go).
	CreateAgent(ctx context.Context, a *api.Agent) (*api.Agent, error)
	// ApplyTemplate makes req as POST /v2/templates/apply does, all or nothing, after sealing
	// the signing secrets pasted with it (name → key → value) that are not stored yet
	// (templates.go).
	ApplyTemplate(ctx context.Context, req *api.TemplateApply, secrets map[string]map[string]string) (*api.TemplateApplied, error)
	// StartRun starts a run of agent on input, as POST /v2/agents/NAME/runs does.
	StartRun(ctx context.Context, agent, input string) (*api.AgentRun, error)
	// ListableTools are the tools this server lets agents list besides the catalog's.
	ListableTools() map[string]bool
}

func (c *Console) registerAgents(mux *http.ServeMux) {
	mux.HandleFunc("GET /agents", c.guard(c.agentList))
	mux.HandleFunc("GET /agents/{name}", c.guard(c.agentPage))
	mux.HandleFunc("GET /agents/{name}/revisions/{span}", c.guard(c.revisionDiff))
	mux.HandleFunc("POST /agents/{name}/runs", c.guard(c.startRun))
	mux.HandleFunc("GET /agents/{name}/mcp", c.guard(c.agentMCP))
	mux.HandleFunc("POST /agents/{name}/mcp/{server}", c.guard(c.tickMCP))
	c.registerNewAgent(mux)
	c.registerTemplates(mux)
	c.registerComputers(mux)
}

// mcpSection is one server on the page: its tools, or why they could not be listed.
type mcpSection struct {
	Server  string
	Where   string // the command or URL, for the person to recognise it
	Tools   []api.MCPTool
	Missing []string
	Err     *api.Error
}

func (c *Console) agentMCP(w http.ResponseWriter, r *http.Request) {
	c.renderAgentMCP(w, r, http.StatusOK, r.URL.Query().Get("saved"), nil)
}

// renderAgentMCP draws the page, with the outcome of a form sent (saved names a server whose
// ticks were applied; failed is why a form was refused).
func (c *Console) renderAgentMCP(w http.ResponseWriter, r *http.Request, status int, saved string, failed *api.Error) {
	name := r.PathValue("name")
	a, err := c.Store.GetAgent(r.Context(), name)
	if err != nil {
		http.Error(w, "no agent "+name, http.StatusNotFound)
		return
	}
	var secs []mcpSection
	for _, srv := range a.Spec.MCPServers {
		sec := mcpSection{Server: srv.Name, Where: srv.URL}
		if srv.Command != "" {
			sec.Where = srv.Command
		}
		if c.Agents == nil {
			sec.Err = &api.Error{Code: api.CodeInternal, Message: "this console cannot ask MCP servers for their tools"}
		} else if list, err := c.Agents.MCPTools(r.Context(), name, srv.Name); err != nil {
			sec.Err = apiErr(err)
		} else {
			sec.Tools, sec.Missing = list.Tools, list.Missing
		}
		secs = append(secs, sec)
	}
	c.page(w, r, agentMCPTmpl, Page{Title: "MCP tools", Description: "Which tools of its MCP servers agent " + name + " may call.",
		Crumbs: []Crumb{{"Agents", "/agents"}, {name, "/agents/" + template.URLQueryEscaper(name)}}, Tabs: agentTabsOf(name, "/agents/"+template.URLQueryEscaper(name)+"/mcp"),
		Status: status, Data: map[string]any{"Agent": a, "Servers": secs, "CSRF": csrfToken(r), "Saved": saved, "Failed": failed}})
}

// apiErr is err as the API would answer it (code, field, message).
func apiErr(err error) *api.Error {
	if e, ok := api.AsError(err); ok {
		if e.Status == 0 {
			e.Status = http.StatusBadRequest // as the API answers it
		}
		return e
	}
	return &api.Error{Status: http.StatusInternalServerError, Code: api.CodeInternal, Message: err.Error()}
}

// tickMCP is POST /agents/NAME/mcp/SERVER from the page's form: tool=NAME for each ticked box.
func (c *Console) tickMCP(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	if !csrfValid(r, r.PostForm.Get("csrf")) {
		http.Error(w, "the form is stale or did not come from this console: reload the page", http.StatusForbidden)
		return
	}
	if c.Agents == nil {
		http.Error(w, "this console cannot change agents", http.StatusServiceUnavailable)
		return
	}
	server := r.PathValue("server")
	tools := r.PostForm["tool"]
	if tools == nil {
		tools = []string{} // none ticked: the server grants nothing
	}
	if _, err := c.Agents.TickMCP(r.Context(), r.PathValue("name"), r.PostForm.Get("resourceVersion"), server, tools); err != nil {
		if errors.Is(err, context.Canceled) {
			return // the browser left
		}
		e := apiErr(err)
		c.renderAgentMCP(w, r, e.Status, "", e)
		return
	}
	http.Redirect(w, r, "/agents/"+template.URLQueryEscaper(r.PathValue("name"))+"/mcp?saved="+template.URLQueryEscaper(server), http.StatusSeeOther)
}

var agentMCPTmpl = newPage("agent-mcp", `{{with .Agent}}<p>Revision {{.Status.Revision}}. A run is offered a server's ticked tools (as <code>mcp__SERVER__TOOL</code>) and no others; ticking applies a new revision of the agent, which runs started from then on get.</p>{{end}}
{{with .Saved}}<p id="saved">Applied the ticks of {{.}}: a new revision of the agent.</p>{{end}}
{{with .Failed}}<p class="wait" id="refused">Not applied: {{.Code}}{{if .Field}} on {{.Field}}{{end}}: {{.Message}}</p>{{end}}
{{range .Servers}}<h2 id="server-{{.Server}}">{{.Server}}</h2><p><code>{{.Where}}</code></p>
{{if .Err}}<p class="wait">The server's tools could not be listed: {{.Err.Code}}{{if .Err.Field}} on {{.Err.Field}}{{end}}: {{.Err.Message}}</p>
{{else}}<form method="post" action="/agents/{{$.Agent.Metadata.Name}}/mcp/{{.Server}}"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="resourceVersion" value="{{$.Agent.Metadata.ResourceVersion}}">
<table><tr><th>Ticked</th><th>Tool</th><th>Safe to repeat</th><th>Description</th></tr>
{{range .Tools}}<tr><td><input type="checkbox" name="tool" value="{{.Name}}" id="tick-{{.Name}}"{{if .Ticked}} checked{{end}}></td><td><label for="tick-{{.Name}}">{{.Name}}</label></td>
<td>{{if .ReadOnly}}yes (read-only){{else if .Idempotent}}yes (idempotent){{else}}no: a call a crash cuts off waits for a person{{end}}</td><td>{{.Description}}</td></tr>
{{else}}<tr><td colspan="4">The server lists no tools.</td></tr>{{end}}
{{range .Missing}}<tr><td><input type="checkbox" name="tool" value="{{.}}" checked></td><td>{{.}}</td><td></td><td>Ticked, but the server no longer has it: untick it to apply.</td></tr>{{end}}
</table><p><button class="primary">Apply</button></p></form>{{end}}
{{else}}{{empty "No MCP servers" (raw "This agent names no MCP servers (<code>spec.mcpServers</code>).")}}{{end}}`, learningFuncs)
