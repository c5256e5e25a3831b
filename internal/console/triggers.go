package console

import (
	"context"
	"net/http"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/trigger"
)

// Trigger pages: every trigger with its next fire, its last fires and its webhook URL to copy,
// suspend and resume; a trigger's page with its fires, each linked to its run.

func (c *Console) registerTriggers(mux *http.ServeMux) {
	mux.HandleFunc("GET /triggers", c.guard(c.triggers))
	mux.HandleFunc("GET /triggers/{name}", c.guard(c.triggerPage))
	mux.HandleFunc("POST /triggers/{name}/suspend", c.guard(c.suspendTrigger))
}

type triggerRow struct {
	T          *api.Trigger
	Kind       string
	Next       *time.Time
	URL        string
	Fires      []api.TriggerFire
	Schedule   string
	FilterText string
}

// hookURL is a trigger's delivery URL on the host the person reached the console by (behind a
// proxy, the public one, which is where senders must post too).
func (c *Console) hookURL(r *http.Request, name string) string {
	scheme := "http"
	if r.TLS != nil || (c.TrustProxy && r.Header.Get("X-Forwarded-Proto") == "https") {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/v2/hooks/" + name
}

func (c *Console) triggerRowOf(r *http.Request, t *api.Trigger, fires int) (triggerRow, error) {
	fs, err := c.Store.ListFires(r.Context(), t.Metadata.Name, fires)
	if err != nil {
		return triggerRow{}, err
	}
	row := triggerRow{T: t, Kind: t.Spec.Kind(), Next: trigger.NextFire(t, time.Now()), Fires: fs}
	switch {
	case t.Spec.Schedule != nil:
		row.Schedule = t.Spec.Schedule.Cron + " (" + t.Spec.Schedule.TimeZone + ", missed: " + t.Spec.Schedule.Missed + ")"
	case t.Spec.GitHub != nil:
		row.URL = c.hookURL(r, t.Metadata.Name)
		row.FilterText = strings.Join(t.Spec.GitHub.Events, ",") + " " + strings.Join(t.Spec.GitHub.Actions, ",") + " " + strings.Join(t.Spec.GitHub.Repositories, ",")
	default:
		row.URL = c.hookURL(r, t.Metadata.Name)
	}
	return row, nil
}

func (c *Console) triggers(w http.ResponseWriter, r *http.Request) {
	ts, err := c.Store.ListTriggers(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var rows []triggerRow
	for _, t := range ts {
		row, err := c.triggerRowOf(r, t, 3)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		rows = append(rows, row)
	}
	c.page(w, r, triggersTmpl, Page{Title: "Triggers", Description: "What starts runs on its own: schedules and webhooks, their next and last fires.", Data: map[string]any{"Triggers": rows, "CSRF": csrfToken(r)}})
}

func (c *Console) triggerPage(w http.ResponseWriter, r *http.Request) {
	t, err := c.Store.GetTrigger(r.Context(), r.PathValue("name"))
	if err != nil {
		c.notFound(w, r, "No such trigger", "There is no trigger "+r.PathValue("name")+".")
		return
	}
	row, err := c.triggerRowOf(r, t, 100)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	c.page(w, r, triggerTmpl, Page{Title: t.Metadata.Name, Description: "A " + row.Kind + " trigger of agent " + t.Spec.Agent + ": its fires, each linked to its run.",
		Crumbs: []Crumb{{"Triggers", "/triggers"}}, Data: map[string]any{"R": row, "CSRF": csrfToken(r)}})
}

// suspendTrigger is POST /triggers/NAME/suspend with suspend=true|false from the pages' buttons.
func (c *Console) suspendTrigger(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	if !csrfValid(r, r.PostForm.Get("csrf")) {
		http.Error(w, "the form is stale or did not come from this console: reload the page", http.StatusForbidden)
		return
	}
	name := r.PathValue("name")
	t, err := c.Store.GetTrigger(r.Context(), name)
	if err != nil {
		http.Error(w, "no trigger "+name, http.StatusNotFound)
		return
	}
	t.Spec.Suspend = r.PostForm.Get("suspend") == "true"
	if err := c.Store.UpdateTrigger(r.Context(), t); err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	back := "/triggers"
	if r.PostForm.Get("back") == "page" {
		back = "/triggers/" + name
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// failedFire is a fire that failed in the last day, as Mission Control lists it.
type failedFire struct {
	Trigger string
	api.TriggerFire
}

// failedFires lists the fires of the last day that started no run because it could not be made
// (a failed run is listed as a run, with its trigger named).
func (c *Console) failedFires(ctx context.Context, since time.Time) []failedFire {
	ts, err := c.Store.ListTriggers(ctx)
	if err != nil {
		return nil
	}
	var out []failedFire
	for _, t := range ts {
		fs, err := c.Store.ListFires(ctx, t.Metadata.Name, 20)
		if err != nil {
			continue
		}
		for _, f := range fs {
			if f.Outcome == api.FireFailed && f.Time.After(since) {
				out = append(out, failedFire{Trigger: t.Metadata.Name, TriggerFire: f})
			}
		}
	}
	return out
}

const firesTable = `<table class="table"><tr><th>Time</th><th>Source</th><th>Delivery / slot</th><th>Run</th><th>Outcome</th><th class="num">Cost</th><th>Note</th></tr>
{{range .}}<tr><td>{{.Time.Format "2006-01-02 15:04:05 MST"}}</td><td>{{.Source}}</td><td>{{if .DeliveryID}}{{.DeliveryID}}{{else if .ScheduledTime}}{{.ScheduledTime.Format "2006-01-02 15:04 MST"}}{{end}}</td>
<td>{{if .Run}}<a href="/runs/{{.Run}}">{{.Run}}</a> {{with .RunPhase}}{{pill .}}{{end}}{{end}}</td><td>{{.Outcome}}</td>
<td class="num">{{if .Run}}{{money .CostUSD}}{{end}}</td><td>{{.Message}}</td></tr>
{{else}}<tr><td colspan="7">No fires yet.</td></tr>{{end}}</table>`

const suspendForm = `<form method="post" action="/triggers/{{.T.Metadata.Name}}/suspend" class="inline"><input type="hidden" name="csrf" value="{{$.CSRF}}">` +
	`{{if .T.Spec.Suspend}}<input type="hidden" name="suspend" value="false"><button>Resume</button>{{else}}<input type="hidden" name="suspend" value="true"><button>Suspend</button>{{end}}</form>`

var triggersTmpl = newPage("triggers", `{{if .Triggers}}<table class="table"><tr><th>Trigger</th><th>Kind</th><th>Agent</th><th>Next fire</th><th>Webhook URL</th><th>Last fires</th><th></th></tr>
{{range .Triggers}}<tr><td><a href="/triggers/{{.T.Metadata.Name}}">{{.T.Metadata.Name}}</a>{{if .T.Spec.Suspend}} (suspended){{end}}</td><td>{{.Kind}}</td><td>{{.T.Spec.Agent}}</td>
<td>{{if .Next}}{{.Next.Format "2006-01-02 15:04 MST"}}{{else}}-{{end}}{{if .Schedule}}<br><small>{{.Schedule}}</small>{{end}}</td>
<td>{{if .URL}}<input readonly size="40" value="{{.URL}}" aria-label="webhook URL of {{.T.Metadata.Name}}">{{end}}</td>
<td>{{range .Fires}}{{.Time.Format "01-02 15:04"}} {{.Outcome}}{{if .Run}} <a href="/runs/{{.Run}}">{{.Run}}</a>{{end}}<br>{{else}}none yet{{end}}</td>
<td>`+suspendForm+`</td></tr>
{{end}}
</table>{{else}}{{empty "No triggers yet" (raw "Apply one with <code>agentrun apply -f trigger.yaml</code>, or apply a template that has one.")}}{{end}}`)

var triggerTmpl = newPage("trigger", `{{define "firesOf"}}`+firesTable+`{{end}}{{with .R}}<p>{{.Kind}} trigger of agent <b>{{.T.Spec.Agent}}</b>{{if .T.Spec.Suspend}} · <b>suspended</b>{{end}} · concurrency {{.T.Spec.Concurrency}}
{{if .T.Spec.MaxCostUSD}} · each run capped at {{dollars .T.Spec.MaxCostUSD}}{{else}} · each run capped at the agent's cap{{end}}{{if .T.Spec.Group}} · group <a href="/groups/{{.T.Spec.Group}}">{{.T.Spec.Group}}</a>{{end}}</p>
{{if .Schedule}}<p>Schedule {{.Schedule}} · next fire {{if .Next}}{{.Next.Format "2006-01-02 15:04 MST"}}{{else}}-{{end}}</p>{{end}}
{{if .URL}}<p><label>Webhook URL <input readonly size="60" value="{{.URL}}"></label>{{if .FilterText}} · {{.FilterText}}{{end}}</p>{{end}}
<p><form method="post" action="/triggers/{{.T.Metadata.Name}}/suspend"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="back" value="page">
{{if .T.Spec.Suspend}}<input type="hidden" name="suspend" value="false"><button>Resume</button>{{else}}<input type="hidden" name="suspend" value="true"><button>Suspend</button>{{end}}</form></p>
<h2>Fires</h2>{{template "firesOf" .Fires}}{{end}}`)
