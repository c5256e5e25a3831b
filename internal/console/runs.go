package console

import (
	"context"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// The runs list (/runs): filters by agent, phase, trigger, group and time, and a search by name,
// all in the URL's query so a link or a reload keeps them; a page of runsPerPage at a time, newest
// first, with links to the next and previous pages that keep the filters; and a form over the
// rows to cancel or re-run the selected runs (POST /runs/bulk, with the page's CSRF token).

// Runs cancels and re-runs runs as the API does (the server implements it).
type Runs interface {
	// Cancel asks a run to stop, as POST /v2/agentruns/NAME/cancel does.
	Cancel(ctx context.Context, run, user string) error
	// Rerun starts a new run of the same agent with the same input and cap, as
	// `agentrun runs start AGENT --input …` would.
	Rerun(ctx context.Context, run, user string) (*api.AgentRun, error)
}

const (
	runsPerPage = 50
	maxBulk     = 100
)

// runsSince are the time filter's choices.
var runsSince = []struct{ Value, Label string }{
	{"", "any time"}, {"1h", "last hour"}, {"24h", "last day"}, {"168h", "last 7 days"}, {"720h", "last 30 days"},
}

// runQuery is the list's filters as the URL carries them.
type runQuery struct {
	Agent, Phase, Trigger, Group, Since, Q string
	Page                                   int
}

func runQueryOf(q url.Values) runQuery {
	rq := runQuery{Agent: q.Get("agent"), Phase: q.Get("phase"), Trigger: q.Get("trigger"), Group: q.Get("group"),
		Since: q.Get("since"), Q: strings.TrimSpace(q.Get("q"))}
	rq.Page, _ = strconv.Atoi(q.Get("page"))
	if rq.Page < 1 {
		rq.Page = 1
	}
	return rq
}

// values is the query of rq (page 1 left out).
func (rq runQuery) values() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"agent": rq.Agent, "phase": rq.Phase, "trigger": rq.Trigger, "group": rq.Group, "since": rq.Since, "q": rq.Q} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if rq.Page > 1 {
		v.Set("page", strconv.Itoa(rq.Page))
	}
	return v
}

// URL is /runs with rq's filters, on page p.
func (rq runQuery) URL(p int) string {
	rq.Page = p
	if e := rq.values().Encode(); e != "" {
		return "/runs?" + e
	}
	return "/runs"
}

// Filtered says whether any filter is set.
func (rq runQuery) Filtered() bool {
	rq.Page = 1
	return len(rq.values()) > 0
}

// filterRuns applies what the store's filter does not (trigger, time, search), newest first.
func filterRuns(runs []*api.AgentRun, rq runQuery, now time.Time) []*api.AgentRun {
	var since time.Time
	if d, err := time.ParseDuration(rq.Since); err == nil && d > 0 {
		since = now.Add(-d)
	}
	q := strings.ToLower(rq.Q)
	out := make([]*api.AgentRun, 0, len(runs))
	for i := len(runs) - 1; i >= 0; i-- {
		r := runs[i]
		if rq.Trigger != "" && r.Metadata.Labels["agentrun.dev/trigger"] != rq.Trigger {
			continue
		}
		if !since.IsZero() && (r.Metadata.CreationTimestamp == nil || r.Metadata.CreationTimestamp.Before(since)) {
			continue
		}
		if q != "" && !strings.Contains(strings.ToLower(r.Metadata.Name), q) {
			continue
		}
		out = append(out, r)
	}
	return out
}

type runsData struct {
	Q                runQuery
	Runs             []*api.AgentRun
	Total, From, To  int
	Prev, Next       string
	Agents, Triggers []string
	Groups           []string
	Phases           []api.Phase
	Since            []struct{ Value, Label string }
	CSRF, Back, Note string
	NewRuns          []string
	CanAct           bool
	PageNum          int
}

func (c *Console) runs(w http.ResponseWriter, r *http.Request) {
	rq := runQueryOf(r.URL.Query())
	d := runsData{Q: rq, Phases: api.Phases, Since: runsSince, CSRF: csrfToken(r), CanAct: c.Runs != nil}
	f := store.RunFilter{Agent: rq.Agent, Phase: api.Phase(rq.Phase), Group: rq.Group}
	from := (rq.Page - 1) * runsPerPage
	more := false
	if rq.Trigger == "" && rq.Since == "" && rq.Q == "" {
		// What the store filters: it reads one page, newest first, and one more run to know
		// whether there is a next page.
		f.Newest, f.Offset, f.Limit = true, from, runsPerPage+1
		page, err := c.Store.ListRuns(r.Context(), f)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if more = len(page) > runsPerPage; more {
			page = page[:runsPerPage]
		}
		d.Runs, d.Total = page, -1
		if rq.Agent == "" && rq.Group == "" {
			if counts, err := c.Store.CountRuns(r.Context()); err == nil {
				d.Total = 0
				for p, n := range counts {
					if rq.Phase == "" || p == rq.Phase {
						d.Total += n
					}
				}
			}
		}
	} else {
		all, err := c.Store.ListRuns(r.Context(), f)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		runs := filterRuns(all, rq, time.Now())
		d.Total = len(runs)
		to := min(from+runsPerPage, len(runs))
		if from < to {
			d.Runs = runs[from:to]
		}
		more = to < len(runs)
	}
	if len(d.Runs) > 0 {
		d.From, d.To = from+1, from+len(d.Runs)
	}
	d.PageNum = rq.Page
	if rq.Page > 1 {
		d.Prev = rq.URL(rq.Page - 1)
	}
	if more {
		d.Next = rq.URL(rq.Page + 1)
	}
	d.Back = rq.values().Encode()
	d.Agents, d.Triggers, d.Groups = c.runChoices(r.Context())
	d.Note, d.NewRuns = c.bulkNote(r.Context(), r.URL.Query())
	c.page(w, r, runsTmpl, Page{Title: "Runs", Description: "Every run, newest first: filter, search, and cancel or re-run many at once.",
		Actions: []Action{{Label: "Start a run", Href: "/templates"}}, Data: d})
}

// runChoices are the filters' choices: every agent, trigger and group there is.
func (c *Console) runChoices(ctx context.Context) (agents, triggers, groups []string) {
	if as, err := c.Store.ListAgents(ctx); err == nil {
		for _, a := range as {
			agents = append(agents, a.Metadata.Name)
		}
	}
	if ts, err := c.Store.ListTriggers(ctx); err == nil {
		for _, t := range ts {
			triggers = append(triggers, t.Metadata.Name)
		}
	}
	if gs, err := c.Store.ListGroups(ctx); err == nil {
		for _, g := range gs {
			groups = append(groups, g.Metadata.Name)
		}
	}
	sort.Strings(agents)
	sort.Strings(triggers)
	sort.Strings(groups)
	return
}

// bulkNote says what the last bulk action did, from the query it redirected to: counts, and the
// names of new runs that exist (a link cannot put words of its own on the page).
func (c *Console) bulkNote(ctx context.Context, q url.Values) (string, []string) {
	n, _ := strconv.Atoi(q.Get("done"))
	failed, _ := strconv.Atoi(q.Get("failed"))
	var note string
	switch q.Get("did") {
	case "cancel":
		note = "Asked " + plural(n, "run") + " to cancel."
	case "rerun":
		note = "Started " + plural(n, "new run") + "."
	default:
		return "", nil
	}
	if failed > 0 {
		note += " " + plural(failed, "run") + " could not be: they had finished already, or are gone."
	}
	var names []string
	for _, name := range strings.Split(q.Get("new"), ",") {
		if name == "" || len(names) >= maxBulk {
			continue
		}
		if _, err := c.Store.GetRun(ctx, name); err == nil {
			names = append(names, name)
		}
	}
	return note, names
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// bulk is POST /runs/bulk from the runs list: action=cancel|rerun, run=NAME for each selected
// row, back=the list's query to return to.
func (c *Console) bulk(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form (at most 64 KiB)", http.StatusBadRequest)
		return
	}
	if !csrfValid(r, r.PostForm.Get("csrf")) {
		http.Error(w, "the form is stale or did not come from this console: reload the page", http.StatusForbidden)
		return
	}
	if c.Runs == nil {
		http.Error(w, "this console cannot cancel or re-run runs", http.StatusServiceUnavailable)
		return
	}
	action := r.PostForm.Get("action")
	names := r.PostForm["run"]
	if action != "cancel" && action != "rerun" {
		http.Error(w, "action must be cancel or rerun", http.StatusBadRequest)
		return
	}
	if len(names) > maxBulk {
		http.Error(w, "at most "+strconv.Itoa(maxBulk)+" runs at once", http.StatusBadRequest)
		return
	}
	user := c.user(r)
	var done, failed int
	var started []string
	for _, name := range names {
		var err error
		if action == "cancel" {
			err = c.Runs.Cancel(r.Context(), name, user)
		} else {
			var nr *api.AgentRun
			if nr, err = c.Runs.Rerun(r.Context(), name, user); err == nil {
				started = append(started, nr.Metadata.Name)
			}
		}
		if r.Context().Err() != nil {
			return // the browser left
		}
		if err != nil {
			failed++
			continue
		}
		done++
	}
	back, _ := url.ParseQuery(r.PostForm.Get("back"))
	rq := runQueryOf(back)
	v := rq.values()
	v.Set("did", action)
	v.Set("done", strconv.Itoa(done))
	if failed > 0 {
		v.Set("failed", strconv.Itoa(failed))
	}
	if len(started) > 0 {
		v.Set("new", strings.Join(started, ","))
	}
	http.Redirect(w, r, "/runs?"+v.Encode(), http.StatusSeeOther)
}

var runsTmpl = newPage("runs", `<form method="get" action="/runs" class="filters" role="search" aria-label="Filter runs">
<div class="field"><label for="f-q">Search by name</label><input type="search" id="f-q" name="q" value="{{.Q.Q}}" placeholder="run name"></div>
<div class="field"><label for="f-agent">Agent</label><select id="f-agent" name="agent"><option value="">any</option>{{range .Agents}}<option{{if eq . $.Q.Agent}} selected{{end}}>{{.}}</option>{{end}}</select></div>
<div class="field"><label for="f-phase">Phase</label><select id="f-phase" name="phase"><option value="">any</option>{{range .Phases}}<option{{if eq (print .) $.Q.Phase}} selected{{end}}>{{.}}</option>{{end}}</select></div>
<div class="field"><label for="f-trigger">Trigger</label><select id="f-trigger" name="trigger"><option value="">any</option>{{range .Triggers}}<option{{if eq . $.Q.Trigger}} selected{{end}}>{{.}}</option>{{end}}</select></div>
<div class="field"><label for="f-group">Group</label><select id="f-group" name="group"><option value="">any</option>{{range .Groups}}<option{{if eq . $.Q.Group}} selected{{end}}>{{.}}</option>{{end}}</select></div>
<div class="field"><label for="f-since">Created</label><select id="f-since" name="since">{{range .Since}}<option value="{{.Value}}"{{if eq .Value $.Q.Since}} selected{{end}}>{{.Label}}</option>{{end}}</select></div>
<button class="primary" id="apply-filters">Filter</button>{{if .Q.Filtered}} <a href="/runs" id="clear-filters">Clear filters</a>{{end}}
</form>
{{with .Note}}<p class="note" id="bulk-note" role="status">{{.}}{{if $.NewRuns}} New: {{range $i, $n := $.NewRuns}}{{if $i}}, {{end}}<a href="/runs/{{$n}}">{{$n}}</a>{{end}}.{{end}}</p>{{end}}
{{if .Runs}}<form method="post" action="/runs/bulk" id="bulk-form"><input type="hidden" name="csrf" value="{{.CSRF}}"><input type="hidden" name="back" value="{{.Back}}">
{{if .CanAct}}<div class="bulk"><span class="muted">With the selected runs:</span> <button name="action" value="cancel" class="danger" id="bulk-cancel">Cancel</button> <button name="action" value="rerun" id="bulk-rerun">Re-run</button>
<span class="help">Re-run starts a new run of the same agent with the same input and cap.</span></div>{{end}}
<table class="table" id="runs"><thead><tr>{{if .CanAct}}<th scope="col"><input type="checkbox" id="select-all" aria-label="Select every run on this page" hidden></th>{{end}}<th scope="col">Run</th><th scope="col">Agent</th><th scope="col">Phase</th><th scope="col">Trigger / group</th><th scope="col" class="num">Cost</th><th scope="col">Created</th></tr></thead><tbody>
{{range .Runs}}<tr data-run="{{.Metadata.Name}}">{{if $.CanAct}}<td><input type="checkbox" name="run" value="{{.Metadata.Name}}" id="sel-{{.Metadata.Name}}" aria-label="Select {{.Metadata.Name}}"></td>{{end}}
<td><a href="/runs/{{.Metadata.Name}}">{{.Metadata.Name}}</a></td><td>{{.Spec.Agent}}</td><td>{{pill .Status.Phase .Status.Reason}}</td>
<td>{{with index .Metadata.Labels "agentrun.dev/trigger"}}<a href="/triggers/{{.}}">{{.}}</a>{{end}}{{with .Spec.Group}} <a href="/groups/{{.}}">{{.}}</a>{{end}}</td>
<td class="num">{{runCost .Status.Cost}}</td><td>{{reltime .Metadata.CreationTimestamp}}</td></tr>{{end}}
</tbody></table></form>
<div class="pager"><span class="muted num" id="runs-count">Runs {{.From}}–{{.To}}{{if ge .Total 0}} of {{.Total}}{{end}}</span>
<span>{{with .Prev}}<a class="button" href="{{.}}" rel="prev" id="prev-page">Newer</a>{{end}} {{with .Next}}<a class="button" href="{{.}}" rel="next" id="next-page">Older</a>{{end}}</span></div>
{{else if gt .Q.Page 1}}{{empty "No runs on this page" (raw "Go back to <a href=\"/runs\">the first page</a>.")}}
{{else if .Q.Filtered}}{{empty "No runs match these filters" (raw "<a href=\"/runs\">Clear the filters</a> to see every run.")}}
{{else}}{{empty "No runs yet" (raw "Open <a href=\"/templates\">Templates</a>, apply one and start a run, or run <code>agentrun runs start AGENT --input \"...\"</code>.")}}{{end}}`)
