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
	c.page(w, r, groupsTmpl, Page{Title: "Groups", Description: "Batches of runs of one agent: evaluations, fan-outs, and what each cost.", Data: map[string]any{"Groups": rows}})
}

func (c *Console) group(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	g, err := c.Store.GetGroup(r.Context(), name)
	if err != nil {
		c.notFound(w, r, "No such group", "There is no group "+name+".")
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
	desc := "A group of runs of agent " + g.Spec.Agent + "."
	if g.Spec.Evaluation != nil {
		desc = "An evaluation of agent " + g.Spec.Agent + ": its scored cases and their runs."
	}
	c.page(w, r, groupTmpl, Page{Title: name, Description: desc, Crumbs: []Crumb{{"Groups", "/groups"}}, Refresh: boolInt(live, 2),
		Data: map[string]any{"G": g, "S": st, "Runs": runs, "Total": len(ms), "Live": live, "E": st.Evaluation}})
}

var groupsTmpl = newPage("groups", `{{if .Groups}}<table class="table"><thead><tr><th>Group</th><th>Agent</th><th>Phase</th><th class="num">Succeeded</th><th class="num">Active</th><th class="num">Cost</th><th>Created</th></tr></thead><tbody>
{{range .Groups}}<tr><td><a href="/groups/{{.G.Metadata.Name}}">{{.G.Metadata.Name}}</a>{{if .G.Spec.Evaluation}} <span class="muted">(evaluation)</span>{{end}}</td><td>{{.G.Spec.Agent}}</td>
<td class="phase">{{pill .Status.Phase}}</td><td class="num">{{.Status.Counts.Succeeded}}/{{.Total}}</td><td class="num">{{.Status.Counts.Active}}</td>
<td class="num">{{with .Status.Cost}}{{money .TotalUSD}}{{if .LimitUSD}} of {{money .LimitUSD}}{{end}}{{else}}{{money ""}}{{end}}</td><td>{{reltime .G.Metadata.CreationTimestamp}}</td></tr>{{end}}
</tbody></table>{{else}}{{empty "No groups yet" (raw "Create one with <code>agentrun create agentgroup NAME --agent A</code>, or run an evaluation with <code>agentrun eval</code>.")}}{{end}}`)

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

var groupTmpl = newPage("group", `<p>Agent <b>{{.G.Spec.Agent}}</b> · <span class="phase">{{pill .S.Phase .S.Reason}}</span>
 · at most {{.G.Spec.Limits.MaxActive}} at once{{with .S.Cost}} · spent {{money .TotalUSD}}{{if .LimitUSD}} of {{money .LimitUSD}}{{end}}{{end}}{{if .G.Spec.Sealed}} · sealed{{end}}</p>
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
<td class="phase">{{pill .Status.Phase}}</td><td>{{.Status.Reason}}</td><td class="num">{{runCost .Status.Cost}}</td></tr>{{end}}</table>`, groupFuncs)
