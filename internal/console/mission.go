package console

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/store"
)

// Approval is a tool call that asked a person, as the run page shows it.
type Approval struct {
	ID        int64
	StepKey   string // the approval step's key (a learning item's: learn/approval/N)
	Tool      string
	Input     string
	Reason    string
	State     string // pending, approved, denied
	DecidedBy string
}

// Approver lists and decides a run's approvals (the server implements it, so the console and the
// API decide the same way).
type Approver interface {
	Approvals(ctx context.Context, run string) ([]Approval, error)
	Decide(ctx context.Context, run string, id int64, decision, reason, user string) error
}

// mission is Mission Control, the first page: what needs you, what is running, what failed in the
// last day, and what the last two weeks cost (per day, per agent, and against caps) as charts.
func (c *Console) mission(w http.ResponseWriter, r *http.Request) {
	runs, err := c.Store.ListRuns(r.Context(), store.RunFilter{})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	now := time.Now()
	m := missionOf(runs, now)
	var computers []computer.ProviderStatus
	if c.Computers != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		computers = c.Computers.Status(ctx)
		cancel()
	}
	// The runners (a scale-out deployment has several): a listing that fails leaves the table out.
	var runners []missionRunner
	if rs, err := c.Store.ListRunners(r.Context()); err == nil {
		for _, ri := range rs {
			runners = append(runners, missionRunner{RunnerInfo: ri, Live: ri.Live(now), Since: now.Sub(ri.HeartbeatAt).Round(time.Second).String()})
		}
	}
	m.FailedFires = c.failedFires(r.Context(), now.Add(-24*time.Hour))
	m.Computers, m.Runners, m.LocalRunner = computers, runners, c.Runner
	c.page(w, r, missionTmpl, Page{Title: "Mission Control", ID: "mission", Description: "What needs you, what runs, what failed, and what it all cost.",
		Actions: []Action{{Label: "Start a run", Href: "/templates"}}, Data: m})
}

// missionData is what Mission Control shows.
type missionData struct {
	Needs, Running, Failed, Recent []*api.AgentRun
	// How many there are of each: the lists hold the newest missionRows.
	NeedsN, RunningN, FailedN int
	FailedFires               []failedFire
	Spent                     string // the last day's spend, in words
	Days                      []Bar
	PerAgent                  []CapRow
	Caps                      []CapRow
	Computers                 []computer.ProviderStatus
	Runners                   []missionRunner
	LocalRunner               string
}

// chartDays is how far back the cost charts go; missionRows is the most runs a list shows (the
// rest are a link to the runs list, filtered).
const (
	chartDays   = 14
	missionRows = 20
)

// appendUpTo appends r to list while it holds fewer than missionRows, and counts it either way.
func appendUpTo(list []*api.AgentRun, n *int, r *api.AgentRun) []*api.AgentRun {
	*n++
	if len(list) < missionRows {
		list = append(list, r)
	}
	return list
}

// parseCost reads a cost as the API writes it: the known amount, and whether part of it (an "at
// least") or all of it ("unknown") could not be priced.
func parseCost(s string) (m cost.Micros, partial, unknown bool) {
	s = strings.TrimSpace(s)
	if s == "" || strings.Contains(s, "unknown") {
		return 0, false, true
	}
	if rest, ok := strings.CutPrefix(s, "at least "); ok {
		s, partial = rest, true
	}
	m, err := cost.ParseUSD(s)
	if err != nil {
		return 0, false, true
	}
	return m, partial, false
}

// missionOf sorts runs (oldest first, as the store lists them) into what Mission Control shows.
func missionOf(runs []*api.AgentRun, now time.Time) *missionData {
	d := &missionData{}
	dayAgo := now.Add(-24 * time.Hour)
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
	first := today.AddDate(0, 0, -(chartDays - 1))
	d.Days = make([]Bar, chartDays)
	for i := range d.Days {
		day := first.AddDate(0, 0, i)
		d.Days[i].Label, d.Days[i].Tick = day.Format("Jan 2"), day.Format("2")
		if i == 0 || day.Day() == 1 {
			d.Days[i].Tick = day.Format("Jan 2")
		}
	}
	type agentSpend struct {
		m       cost.Micros
		partial bool
	}
	perAgent := map[string]*agentSpend{}
	var spent cost.Micros
	unknown := false
	for i := len(runs) - 1; i >= 0; i-- { // newest first
		run := runs[i]
		st := run.Status
		switch {
		case api.WaitingOnPerson(st.Phase, st.Reason):
			d.Needs = appendUpTo(d.Needs, &d.NeedsN, run)
		case st.Phase == api.PhaseRunning || st.Phase == api.PhaseQueued || st.Phase == api.PhaseWaiting:
			d.Running = appendUpTo(d.Running, &d.RunningN, run)
		case st.Phase == api.PhaseFailed && st.FinishedAt != nil && st.FinishedAt.After(dayAgo):
			d.Failed = appendUpTo(d.Failed, &d.FailedN, run)
		}
		created := run.Metadata.CreationTimestamp
		if created == nil {
			continue
		}
		var m cost.Micros
		var partial, unk bool
		if st.Cost != nil {
			m, partial, unk = parseCost(st.Cost.TotalUSD)
		} else {
			unk = false // nothing spent yet: no model call made
		}
		if created.After(dayAgo) {
			if len(d.Recent) < 20 {
				d.Recent = append(d.Recent, run)
			}
			spent += m
			if partial || unk {
				unknown = true
			}
		}
		if !created.Before(first) {
			cl := created.In(now.Location())
			// Rounded: a day across a clock change is 23 or 25 hours long.
			day := int(math.Round(time.Date(cl.Year(), cl.Month(), cl.Day(), 0, 0, 0, 0, now.Location()).Sub(first).Hours() / 24))
			if day >= 0 && day < chartDays {
				b := &d.Days[day]
				b.Count++
				b.Micros += m
				if partial || unk {
					b.Partial = true
				}
			}
			a := perAgent[run.Spec.Agent]
			if a == nil {
				a = &agentSpend{}
				perAgent[run.Spec.Agent] = a
			}
			a.m += m
			a.partial = a.partial || partial || unk
		}
		// Spend against caps: the runs still going that have a cap.
		if !api.Finished(st.Phase) && st.Cost != nil && st.Cost.LimitUSD != "" && len(d.Caps) < 10 {
			if capM, err := cost.ParseUSD(st.Cost.LimitUSD); err == nil && capM > 0 {
				d.Caps = append(d.Caps, CapRow{Label: run.Metadata.Name, Spent: m, Cap: capM, Partial: partial || unk, Href: "/runs/" + run.Metadata.Name})
			}
		}
	}
	// A day whose every run is unpriced is unknown, not $0.
	for i := range d.Days {
		if d.Days[i].Partial && d.Days[i].Micros == 0 {
			d.Days[i].Unknown, d.Days[i].Partial = true, false
		}
	}
	for name, a := range perAgent {
		d.PerAgent = append(d.PerAgent, CapRow{Label: name, Spent: a.m, Partial: a.partial, Href: "/agents/" + name})
	}
	sort.Slice(d.PerAgent, func(i, j int) bool {
		if d.PerAgent[i].Spent != d.PerAgent[j].Spent {
			return d.PerAgent[i].Spent > d.PerAgent[j].Spent
		}
		return d.PerAgent[i].Label < d.PerAgent[j].Label
	})
	if len(d.PerAgent) > 10 {
		d.PerAgent = d.PerAgent[:10]
	}
	d.Spent = "$" + spent.String()
	if unknown {
		d.Spent = "at least " + d.Spent + " (some costs could not be priced)"
	}
	return d
}

// missionRunner is a runner as Mission Control lists it.
type missionRunner struct {
	store.RunnerInfo
	Live  bool
	Since string // since its last heartbeat
}

// csrfToken is derived from the session, so a form carries proof it came from a page of this
// console (the session cookie alone is SameSite=Strict already).
func csrfToken(r *http.Request) string {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256([]byte("agentrun-console-csrf:" + ck.Value))
	return hex.EncodeToString(sum[:16])
}

// decide is POST /runs/NAME/approvals/ID from the run page's Approve and Deny buttons.
func (c *Console) decide(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	want := csrfToken(r)
	if want == "" || subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(want)) != 1 {
		http.Error(w, "the form is stale or did not come from this console: reload the page", http.StatusForbidden)
		return
	}
	name := r.PathValue("name")
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	decision := r.PostForm.Get("decision")
	if err != nil || (decision != "approve" && decision != "deny") || c.Approver == nil {
		http.Error(w, "bad approval", http.StatusBadRequest)
		return
	}
	user := c.user(r)
	if err := c.Approver.Decide(r.Context(), name, id, decision, r.PostForm.Get("reason"), user); err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	http.Redirect(w, r, "/runs/"+name, http.StatusSeeOther)
}

var missionTmpl = newPage("mission", `<div class="cards">
<a class="stat{{if .Needs}} wait-stat{{end}}" href="#needs"><span class="stat-value">{{.NeedsN}}</span><span class="stat-label">need you</span></a>
<a class="stat" href="#running"><span class="stat-value">{{.RunningN}}</span><span class="stat-label">running or queued</span></a>
<a class="stat{{if or .Failed .FailedFires}} bad-stat{{end}}" href="#failed"><span class="stat-value">{{.FailedN}}</span><span class="stat-label">failed in the last day</span></a>
<div class="stat"><span class="stat-value money" id="spent-day">{{.Spent}}</span><span class="stat-label">spent in the last day</span></div>
</div>
<p class="muted">The last day cost <b>{{.Spent}}</b>.</p>
<h2 id="needs">Needs you</h2>
{{if .Needs}}<table class="table"><thead><tr><th>Run</th><th>Agent</th><th>Waiting on</th><th>Since</th></tr></thead><tbody>
{{range .Needs}}<tr><td><a href="/runs/{{.Metadata.Name}}">{{.Metadata.Name}}</a></td><td>{{.Spec.Agent}}</td>
<td>{{pill .Status.Phase .Status.Reason}}{{with .Status.WaitingOn}}{{if .Question}} {{.Question}}{{else if .Detail}} {{.Detail}}{{end}}{{end}}</td><td>{{reltime .Metadata.CreationTimestamp}}</td></tr>{{end}}</tbody></table>
{{if gt .NeedsN (len .Needs)}}<p><a href="/runs?phase=Waiting">All {{.NeedsN}} waiting on you</a> (with the other waiting runs)</p>{{end}}
{{else}}{{empty "Nothing waits on you" "Approvals, questions and runs out of budget show up here."}}{{end}}
<h2 id="running">Running</h2>
{{if .Running}}<table class="table"><thead><tr><th>Run</th><th>Agent</th><th>Phase</th><th class="num">Cost</th><th>Started</th></tr></thead><tbody>
{{range .Running}}<tr><td><a href="/runs/{{.Metadata.Name}}">{{.Metadata.Name}}</a></td><td>{{.Spec.Agent}}</td><td>{{pill .Status.Phase .Status.Reason}}</td><td class="num">{{runCost .Status.Cost}}</td><td>{{reltime .Metadata.CreationTimestamp}}</td></tr>{{end}}</tbody></table>
{{if gt .RunningN (len .Running)}}<p><a href="/runs?phase=Running">All running runs</a> ({{.RunningN}} running, queued or waiting)</p>{{end}}
{{else}}{{empty "Nothing is running" (raw "Start a run from <a href=\"/templates\">Templates</a> or an agent's page.")}}{{end}}
<h2 id="failed">Failed in the last day</h2>
{{if or .Failed .FailedFires}}<table class="table"><thead><tr><th>Run</th><th>Agent</th><th>Why</th></tr></thead><tbody>
{{range .Failed}}<tr><td><a href="/runs/{{.Metadata.Name}}">{{.Metadata.Name}}</a>{{with index .Metadata.Labels "agentrun.dev/trigger"}} (trigger <a href="/triggers/{{.}}">{{.}}</a>){{end}}</td><td>{{.Spec.Agent}}</td><td>{{pill .Status.Phase .Status.Reason}} {{.Status.Message}}</td></tr>{{end}}
{{if gt .FailedN (len .Failed)}}<tr><td colspan="3"><a href="/runs?phase=Failed&amp;since=24h">All {{.FailedN}} failed runs of the last day</a></td></tr>{{end}}
{{range .FailedFires}}<tr><td>a fire of trigger <a href="/triggers/{{.Trigger}}">{{.Trigger}}</a> (no run)</td><td></td><td>{{.Source}} {{.Key}}: {{.Message}}</td></tr>{{end}}</tbody></table>
{{else}}{{empty "No failures" "Runs and trigger fires that failed in the last day show up here."}}{{end}}
<h2 id="cost">Cost</h2>
<p class="muted">By the day each run was created. A run whose cost could not be priced counts as unknown, never as $0: a dashed bar is a day of unknown cost, a pale one a day with some.</p>
<div class="grid-2">
{{barChart "Cost per day, last 14 days" .Days}}
{{if .PerAgent}}{{capChart "Spend per agent, last 14 days" .PerAgent}}{{else}}<div class="chart">{{empty "No spend per agent yet" "Runs of the last 14 days show here by agent."}}</div>{{end}}
</div>
{{if .Caps}}{{capChart "Spend against caps, runs still going" .Caps}}{{end}}
<h2>Recent runs</h2>
{{if .Recent}}<table class="table"><thead><tr><th>Run</th><th>Agent</th><th>Phase</th><th class="num">Cost</th><th>Created</th></tr></thead><tbody>
{{range .Recent}}<tr><td><a href="/runs/{{.Metadata.Name}}">{{.Metadata.Name}}</a>{{with index .Metadata.Labels "agentrun.dev/trigger"}} <span class="muted">(trigger {{.}})</span>{{end}}</td><td>{{.Spec.Agent}}</td><td class="phase">{{pill .Status.Phase .Status.Reason}}</td><td class="num">{{runCost .Status.Cost}}</td><td>{{reltime .Metadata.CreationTimestamp}}</td></tr>{{end}}</tbody></table>
<p><a href="/runs">All runs</a></p>
{{else}}{{empty "No runs in the last day" (raw "Open <a href=\"/templates\">Templates</a>, apply one and start a run, or run <code>agentrun runs start AGENT --body '{\"input\": {\"content\": \"...\"}}'</code>.")}}{{end}}
{{if .Runners}}<h2>Runners</h2>
<table id="runners" class="table"><thead><tr><th>Runner</th><th>State</th><th>Heartbeat</th><th class="num">Runs</th><th>Version</th><th>Host/PID</th></tr></thead><tbody>
{{range .Runners}}<tr><td>{{.Name}}{{if eq .Name $.LocalRunner}} (in this server){{end}}</td><td class="phase">{{if .Live}}{{pill "live"}}{{else}}{{pill "gone"}}{{end}}</td><td>{{.Since}} ago</td><td class="num">{{if .Live}}{{.RunsHeld}}{{else}}({{.RunsHeld}} at its last heartbeat){{end}}</td><td>{{.Version}}</td><td>{{.Host}}/{{.PID}}</td></tr>{{end}}</tbody></table>{{end}}
{{if .Computers}}<h2>Computers</h2>
<p class="muted">What this server's machine can make: a runner on another machine has its own.</p>
<table id="computers" class="table"><thead><tr><th>Provider</th><th>Makes</th><th>Here</th><th>Why</th></tr></thead><tbody>
{{range .Computers}}<tr><td>{{.Name}}</td><td>{{range $i, $k := .Kinds}}{{if $i}}, {{end}}{{$k}}{{end}}</td><td class="phase">{{if .Available}}{{pill "available"}}{{else}}{{pill "not available"}}{{end}}</td><td>{{.Reason}}</td></tr>{{end}}</tbody></table>{{end}}`)
