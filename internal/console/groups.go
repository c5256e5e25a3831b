package console

import (
	"fmt"
	"html/template"
	"net/http"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/group"
	"agentrun.dev/agentrun/internal/store"
)

// Group pages: the list of groups, and a group's page with its members and, for an evaluation, its
// scored cases, pass rate, mean reward, pending cases and failures, each case linked to its run.

func (c *Console) registerGroups(mux *http.ServeMux) {
	mux.HandleFunc("GET /groups", c.guard(c.groups))
	mux.HandleFunc("GET /groups/{name}", c.guard(c.group))
}

type groupRow struct {
	G      *api.AgentGroup
	Total  int
	Status api.AgentGroupStatus
}

func (c *Console) groups(w http.ResponseWriter, r *http.Request) {
	gs, err := c.Store.ListGroups(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var rows []groupRow
	for _, g := range gs {
		ms, err := c.Store.GroupMembers(r.Context(), g.Metadata.Name)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		rows = append(rows, groupRow{G: g, Total: len(ms), Status: group.Status(g, ms)})
	}
	render(w, groupsTmpl, map[string]any{"Groups": rows})
}

func (c *Console) group(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	g, err := c.Store.GetGroup(r.Context(), name)
	if err != nil {
		http.Error(w, "no group "+name, http.StatusNotFound)
		return
	}
	ms, err := c.Store.GroupMembers(r.Context(), name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	runs, _ := c.Store.ListRuns(r.Context(), store.RunFilter{Group: name})
	st := group.Status(g, ms)
	live := st.Phase == api.GroupRunning || st.Phase == api.GroupCancelling
	render(w, groupTmpl, map[string]any{"G": g, "S": st, "Runs": runs, "Total": len(ms), "Live": live, "E": st.Evaluation})
}

var groupsTmpl = template.Must(template.New("groups").Funcs(funcs).Parse(head + `<h1>Groups</h1>
<table><tr><th>Group</th><th>Agent</th><th>Phase</th><th>Runs</th><th>Active</th><th>Cost</th><th>Created</th></tr>
{{range .Groups}}<tr><td><a href="/groups/{{.G.Metadata.Name}}">{{.G.Metadata.Name}}</a>{{if .G.Spec.Evaluation}} (evaluation){{end}}</td><td>{{.G.Spec.Agent}}</td>
<td class="phase">{{.Status.Phase}}</td><td>{{.Status.Counts.Succeeded}}/{{.Total}}</td><td>{{.Status.Counts.Active}}</td>
<td>{{with .Status.Cost}}{{dollars .TotalUSD}}{{if .LimitUSD}} of {{dollars .LimitUSD}}{{end}}{{end}}</td><td>{{ago .G.Metadata.CreationTimestamp}}</td></tr>
{{else}}<tr><td colspan="7">No groups yet. Create one with <code>agentrun create agentgroup NAME --agent A</code>.</td></tr>{{end}}
</table></body></html>`))

var groupFuncs = template.FuncMap{
	"num3": func(p *float64) string { return numOf(p, "%.3f") },
	"num2": func(p *float64) string { return numOf(p, "%.2f") },
}

func numOf(p *float64, format string) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf(format, *p)
}

var groupTmpl = template.Must(template.New("group").Funcs(funcs).Funcs(groupFuncs).Parse(`{{define "refresh"}}{{if .Live}}<meta http-equiv="refresh" content="2">{{end}}{{end}}` + head + `{{template "refresh" .}}
<h1>{{.G.Metadata.Name}}</h1>
<p>Agent <b>{{.G.Spec.Agent}}</b> · <span class="phase">{{.S.Phase}}</span>{{if .S.Reason}} ({{.S.Reason}}){{end}}
 · at most {{.G.Spec.Limits.MaxActive}} at once{{with .S.Cost}} · spent {{dollars .TotalUSD}}{{if .LimitUSD}} of {{dollars .LimitUSD}}{{end}}{{end}}{{if .G.Spec.Sealed}} · sealed{{end}}</p>
{{if .S.Message}}<p>{{.S.Message}}</p>{{end}}
<p>{{.Total}} runs: {{.S.Counts.Queued}} queued, {{.S.Counts.Active}} active, {{.S.Counts.Waiting}} waiting, {{.S.Counts.Succeeded}} succeeded, {{.S.Counts.Failed}} failed, {{.S.Counts.Cancelled}} cancelled
{{range $k, $v := .S.BlockedReasons}} · {{$v}} {{$k}}{{end}}</p>
{{with .E}}<h2>Evaluation</h2>
<p>{{.Environment}}, split {{.Split}}, seed {{.Seed}}, grader {{.GraderVersion}}{{if $.G.Status.Deadline}}, deadline {{$.G.Status.Deadline.Format "15:04:05 MST"}}{{end}}</p>
<p class="wait">Scored {{.Scored}} (passed {{.Passed}}) · pass rate {{num3 .PassRate}} · mean reward {{num3 .MeanReward}}
 · pending {{.Pending}} · unscored (run or grader failures) {{.Unscored}} · evaluation timeouts {{.TimedOut}}</p>
{{if .Error}}<p>Error: {{.Error}}</p>{{end}}
<table><tr><th>Task</th><th>Rep</th><th>State</th><th>Verdict</th><th>Reward</th><th>Evidence</th><th>Run</th></tr>
{{range .Results}}<tr><td>{{.TaskID}}</td><td>{{.Repetition}}</td><td>{{.State}}</td><td>{{.Verdict}}</td><td>{{num2 .Reward}}</td>
<td>{{.Evidence}}{{if .Detail}}{{.Detail}}{{end}}</td><td><a href="/runs/{{.Run}}">{{.Run}}</a></td></tr>{{end}}</table>{{end}}
<h2>Runs</h2><table><tr><th>Run</th><th>Task</th><th>Depends on</th><th>Phase</th><th>Reason</th><th>Cost</th></tr>
{{range .Runs}}<tr><td><a href="/runs/{{.Metadata.Name}}">{{.Metadata.Name}}</a></td><td>{{.Spec.TaskKey}}</td><td>{{range .Spec.DependsOn}}{{.}} {{end}}</td>
<td class="phase">{{.Status.Phase}}</td><td>{{.Status.Reason}}</td><td>{{with .Status.Cost}}{{dollars .TotalUSD}}{{end}}</td></tr>{{end}}</table>
</body></html>`))
