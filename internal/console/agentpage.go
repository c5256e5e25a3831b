package console

import (
	"context"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/store"
)

// The Agents page (every agent with its latest revision, harness, computer and recent runs) and
// an agent's page: its definition as canonical YAML, its revisions (each linked to its change
// from the one before, diff.go), its runs, its triggers, its MCP servers and Learning, and a
// Start a run form.

// recentRuns is how many runs the Agents page shows per agent.
const recentRuns = 3

// agentRunRow is one run as the agent pages list it.
type agentRunRow struct {
	Name, Phase, Reason, Model, Cost string
	Run                              *api.AgentRun
}

func runRowOf(r *api.AgentRun) agentRunRow {
	row := agentRunRow{Name: r.Metadata.Name, Phase: string(r.Status.Phase), Reason: string(r.Status.Reason), Run: r}
	for i := len(r.Status.Turns) - 1; i >= 0; i-- {
		if m := r.Status.Turns[i].Model; m != "" {
			row.Model = m
			break
		}
	}
	row.Cost = "unknown"
	if c := r.Status.Cost; c != nil && c.TotalUSD != "" {
		row.Cost = cost.Dollars(c.TotalUSD)
	}
	return row
}

// agentRuns lists agent's runs, newest first, at most n (0: all).
func (c *Console) agentRuns(ctx context.Context, agent string, n int) ([]agentRunRow, error) {
	runs, err := c.Store.ListRuns(ctx, store.RunFilter{Agent: agent, Newest: true, Limit: n})
	if err != nil {
		return nil, err
	}
	out := make([]agentRunRow, 0, len(runs))
	for _, r := range runs {
		out = append(out, runRowOf(r))
	}
	return out, nil
}

// computerText is an agent's computer as the pages show it.
func computerText(c *api.ComputerSpec) string {
	if c == nil {
		return "the server's best sandbox"
	}
	s := string(c.Kind)
	if s == "" {
		s = "none"
	}
	if c.Provider != "" {
		s += " (" + c.Provider + ")"
	}
	if c.Network {
		s += ", network"
	}
	return s
}

type agentRow struct {
	A        *api.Agent
	Computer string
	Runs     []agentRunRow
}

// agentList is GET /agents.
func (c *Console) agentList(w http.ResponseWriter, r *http.Request) {
	as, err := c.Store.ListAgents(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	sort.Slice(as, func(i, j int) bool { return as[i].Metadata.Name < as[j].Metadata.Name })
	rows := make([]agentRow, 0, len(as))
	for _, a := range as {
		runs, err := c.agentRuns(r.Context(), a.Metadata.Name, recentRuns)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		rows = append(rows, agentRow{A: a, Computer: computerText(a.Spec.Computer), Runs: runs})
	}
	c.page(w, r, agentListTmpl, Page{Title: "Agents", ID: "agents-title", Description: "Every agent on this server: its latest revision, what runs it and its recent runs.",
		Actions: []Action{{Label: "New agent", Href: "/agents/new", ID: "new-agent"}, {Label: "Apply a template", Href: "/templates"}},
		Data:    map[string]any{"Agents": rows}})
}

// canonicalYAML is a spec as the pages show and diff it: its JSON with sorted keys, as YAML.
func canonicalYAML(v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		return "(cannot show: " + err.Error() + ")"
	}
	return string(b)
}

// maxRevisionRows bounds the revisions an agent's page lists (the newest).
const maxRevisionRows = 50

type revisionRow struct {
	Rev, Prev int64
	Current   bool
}

// agentPage is GET /agents/NAME.
func (c *Console) agentPage(w http.ResponseWriter, r *http.Request) {
	c.renderAgentPage(w, r, http.StatusOK, "", nil)
}

// renderAgentPage draws an agent's page; input and failed are a Start a run form sent back
// with the API's refusal.
func (c *Console) renderAgentPage(w http.ResponseWriter, r *http.Request, status int, input string, failed *api.Error) {
	name := r.PathValue("name")
	a, err := c.Store.GetAgent(r.Context(), name)
	if errors.Is(err, store.ErrNotFound) {
		http.Error(w, "no agent "+name, http.StatusNotFound)
		return
	} else if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	runs, err := c.agentRuns(r.Context(), name, 50)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var revs []revisionRow
	for rev := a.Status.Revision; rev >= 1 && len(revs) < maxRevisionRows; rev-- {
		revs = append(revs, revisionRow{Rev: rev, Prev: rev - 1, Current: rev == a.Status.Revision})
	}
	ts, err := c.Store.ListTriggers(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var triggers []triggerRow
	for _, t := range ts {
		if t.Spec.Agent != name {
			continue
		}
		row, err := c.triggerRowOf(r, t, 0)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		triggers = append(triggers, row)
	}
	ticked := 0
	for _, s := range a.Spec.MCPServers {
		ticked += len(s.Tools)
	}
	spec := a.Spec
	spec.System = "" // shown on its own, as written
	base := "/agents/" + url.PathEscape(name)
	about := "An agent's definition, revisions, runs and triggers."
	if a.Spec.DisplayName != "" {
		about = a.Spec.DisplayName + ": its definition, revisions, runs and triggers."
	}
	c.page(w, r, agentPageTmpl, Page{Title: "Agent " + name, ID: "agent-title", Description: about,
		Crumbs: []Crumb{{"Agents", "/agents"}}, Tabs: agentTabsOf(name, base), Actions: []Action{{Label: "Start a run", Href: "#start-run-title"}},
		Status: status, Data: map[string]any{"Agent": a, "Computer": computerText(a.Spec.Computer), "Definition": canonicalYAML(spec),
			"Revisions": revs, "Runs": runs, "Triggers": triggers, "Ticked": ticked, "CSRF": csrfToken(r), "Input": input, "Failed": failed,
			"Tools": api.OfferedTools(&a.Spec), "Template": a.Metadata.Labels[api.TemplateLabel], "Made": r.URL.Query().Get("made") == "1"}})
}

// startRun is POST /agents/NAME/runs from a Start a run form (input): the run is started as
// POST /v2/agents/NAME/runs starts it, and the browser goes to its page.
func (c *Console) startRun(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, int64(api.MaxInputBytes)+4096)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form (the input is too long?)", http.StatusBadRequest)
		return
	}
	if !csrfValid(r, r.PostForm.Get("csrf")) {
		http.Error(w, "the form is stale or did not come from this console: reload the page", http.StatusForbidden)
		return
	}
	if c.Agents == nil {
		http.Error(w, "this console cannot start runs", http.StatusServiceUnavailable)
		return
	}
	name, input := r.PathValue("name"), r.PostForm.Get("input")
	run, err := c.Agents.StartRun(r.Context(), name, input)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return
		}
		// Refused (from the agent's page or the applied template's): the agent's page shows the
		// form again with the input and the API's error.
		e := apiErr(err)
		c.renderAgentPage(w, r, e.Status, input, e)
		return
	}
	http.Redirect(w, r, "/runs/"+url.PathEscape(run.Metadata.Name), http.StatusSeeOther)
}

var agentFuncs = template.FuncMap{
	"pathEscape": url.PathEscape,
	"itoa":       func(i int64) string { return strconv.FormatInt(i, 10) },
	"join":       strings.Join,
	"list":       func(s ...string) []string { return s },
	// dict makes a sub-template's data of key, value pairs.
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			k, _ := kv[i].(string)
			m[k] = kv[i+1]
		}
		return m
	},
}

// agentPageOf parses body as a console page with the agent pages' funcs and shared parts.
func agentPageOf(name, body string) *template.Template {
	return newPage(name, startRunForm+fieldError+body, agentFuncs)
}

// startRunForm is the Start a run form: .Agent is the agent's name.
const startRunForm = `{{define "startRun"}}<form method="post" action="/agents/{{pathEscape .Agent}}/runs" id="start-run" class="form card">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<div class="field"><label for="run-input">Input</label><textarea id="run-input" name="input" rows="4" aria-describedby="run-input-help{{if .Failed}} run-input-error{{end}}">{{.Input}}</textarea>
<small id="run-input-help" class="help">The run's first message to the agent (for a workflow agent, its input as JSON).</small>
{{with .Failed}}<span class="field-error" data-field="input" data-code="{{.Code}}" id="run-input-error">{{.Code}}{{if .Field}} at {{.Field}}{{end}}: {{.Message}}</span>{{end}}</div>
<p><button class="primary">Start a run</button></p></form>{{end}}`

// fieldError is an error beside its field: .F is the field's form name, .E the errors by it.
const fieldError = `{{define "fieldError"}}{{with index .E .F}}<span class="field-error" data-field="{{$.F}}" data-code="{{.Code}}" id="{{$.F}}-error">{{.Code}}{{if .Field}} at {{.Field}}{{end}}: {{.Message}}</span>{{end}}{{end}}`

var agentListTmpl = agentPageOf("agents", `{{if .Agents}}<table id="agents" class="table"><thead><tr><th scope="col">Agent</th><th scope="col" class="num">Revision</th><th scope="col">Harness</th><th scope="col">Computer</th><th scope="col">Recent runs (model, cost)</th><th scope="col">Pages</th></tr></thead><tbody>
{{range .Agents}}{{with .A}}<tr data-agent="{{.Metadata.Name}}"><td><a href="/agents/{{pathEscape .Metadata.Name}}">{{.Metadata.Name}}</a>{{with .Spec.DisplayName}}<br><small class="muted">{{.}}</small>{{end}}{{if eq .Spec.State "Stopped"}}<br>{{pill "Stopped"}}{{end}}</td>
<td class="num">{{.Status.Revision}}</td><td>{{with .Spec.Harness}}{{.}}{{else}}builtin{{end}}</td>{{end}}<td>{{.Computer}}</td>
<td>{{range .Runs}}<a href="/runs/{{pathEscape .Name}}">{{.Name}}</a> {{pill .Phase .Reason}}{{with .Model}} · <code>{{.}}</code>{{end}} · {{runCost .Run.Status.Cost}}<br>{{else}}<span class="muted">no runs yet</span>{{end}}</td>
{{with .A}}<td><a href="/agents/{{pathEscape .Metadata.Name}}/mcp">MCP tools</a>{{if .Spec.Learning}} · <a href="/agents/{{pathEscape .Metadata.Name}}/learning">Learning</a>{{end}}</td>{{end}}</tr>
{{end}}</tbody></table>{{else}}<div id="agents">{{empty "No agents yet" (raw "Apply one of the <a href=\"/templates\">Templates</a>, or make a <a href=\"/agents/new\">New agent</a>.")}}</div>{{end}}`)

var agentPageTmpl = agentPageOf("agent", `{{if .Made}}<p class="note" id="made" role="status">Made the agent {{.Agent.Metadata.Name}} (revision 1). Start its first run below.</p>{{end}}
{{with .Agent}}<p>Revision {{.Status.Revision}}{{with $.Template}}, from the template <a href="/templates/{{pathEscape .}}">{{.}}</a>{{end}}.{{if eq .Spec.State "Stopped"}} {{pill "Stopped"}} it takes no new runs.{{end}}</p>
<h2 id="start-run-title">Start a run</h2>{{end}}
{{template "startRun" (dict "Agent" .Agent.Metadata.Name "CSRF" .CSRF "Input" .Input "Failed" .Failed)}}
{{with .Agent}}<h2>Definition</h2>
<table id="summary" class="table"><tbody>
<tr><th scope="row">Harness</th><td>{{with .Spec.Harness}}{{.}}{{else}}builtin{{end}}</td></tr>
<tr><th scope="row">Model</th><td>{{.Spec.Model.Access}}{{with .Spec.Model.Provider}} · {{.}}{{end}}{{with .Spec.Model.Name}} · <code>{{.}}</code>{{else}} · the server's default model{{end}}</td></tr>
<tr><th scope="row">Computer</th><td>{{$.Computer}}</td></tr>
<tr><th scope="row">Tools offered</th><td>{{range $i, $t := $.Tools}}{{if $i}}, {{end}}<code>{{$t}}</code>{{else}}none{{end}}</td></tr>
<tr><th scope="row">Cap per run</th><td>{{money .Spec.PerRunMaxCostUSD}}</td></tr>
<tr><th scope="row">Approvals</th><td>{{with .Spec.Approvals}}{{if .NeverAsk}}never ask<br>{{end}}{{range .Rules}}{{.Action}} <code>{{.Match}}</code><br>{{end}}otherwise {{with .Default}}{{.}}{{else}}the default{{end}}{{else}}the server's default{{end}}</td></tr>
<tr><th scope="row">Learning</th><td>{{if .Spec.Learning}}on: <a href="/agents/{{pathEscape .Metadata.Name}}/learning">its Learning tab</a>{{else}}off{{end}}</td></tr>
<tr><th scope="row">MCP servers</th><td>{{range $i, $s := .Spec.MCPServers}}{{if $i}}, {{end}}{{$s.Name}} ({{len $s.Tools}} tools ticked){{else}}none{{end}}{{if .Spec.MCPServers}} · <a href="/agents/{{pathEscape .Metadata.Name}}/mcp">tick their tools</a>{{end}}</td></tr>
</tbody></table>
<h3>Instructions</h3><pre id="instructions">{{.Spec.System}}</pre>
<details><summary>The spec as canonical YAML (instructions above)</summary><pre id="definition">{{$.Definition}}</pre></details>{{end}}
<h2>Revisions</h2>
<p>Every change of the spec makes a new revision; a run keeps the revision it started on.</p>
<table id="revisions" class="table"><thead><tr><th scope="col" class="num">Revision</th><th scope="col">Change</th></tr></thead><tbody>
{{range .Revisions}}<tr data-revision="{{.Rev}}"><td class="num">{{.Rev}}{{if .Current}} (current){{end}}</td><td>{{if .Prev}}<a href="/agents/{{pathEscape $.Agent.Metadata.Name}}/revisions/{{.Prev}}..{{.Rev}}">changes from revision {{.Prev}}</a>{{else}}first revision{{end}}</td></tr>{{end}}
</tbody></table>
<h2>Runs</h2>
{{if .Runs}}<table id="agent-runs" class="table"><thead><tr><th scope="col">Run</th><th scope="col">Phase</th><th scope="col" class="num">Revision</th><th scope="col">Model</th><th scope="col" class="num">Cost</th><th scope="col">Created</th></tr></thead><tbody>
{{range .Runs}}<tr><td><a href="/runs/{{pathEscape .Name}}">{{.Name}}</a></td><td>{{pill .Phase .Reason}}</td><td class="num">{{.Run.Status.AgentRevision}}</td><td>{{with .Model}}<code>{{.}}</code>{{end}}</td><td class="num">{{runCost .Run.Status.Cost}}</td><td>{{reltime .Run.Metadata.CreationTimestamp}}</td></tr>{{end}}
</tbody></table>{{else}}<div id="agent-runs">{{empty "No runs yet" "Start one above."}}</div>{{end}}
<h2>Triggers</h2>
{{if .Triggers}}<table id="agent-triggers" class="table"><thead><tr><th scope="col">Trigger</th><th scope="col">Kind</th><th scope="col">State</th><th scope="col">What</th></tr></thead><tbody>
{{range .Triggers}}<tr><td><a href="/triggers/{{pathEscape .T.Metadata.Name}}">{{.T.Metadata.Name}}</a></td><td>{{.Kind}}</td><td>{{if .T.Spec.Suspend}}{{pill "Suspended"}}{{else}}active{{end}}</td><td>{{with .Schedule}}{{.}}{{end}}{{with .URL}}{{copyid .}}{{end}}</td></tr>{{end}}
</tbody></table>{{else}}<div id="agent-triggers">{{empty "No triggers" "No trigger starts this agent's runs."}}</div>{{end}}`)
