package console

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"html/template"
	"net/http"
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
// last day, and what the last day cost.
func (c *Console) mission(w http.ResponseWriter, r *http.Request) {
	runs, err := c.Store.ListRuns(r.Context(), store.RunFilter{})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var needs, running, failed, recent []*api.AgentRun
	var spent cost.Micros
	unknown := false
	dayAgo := time.Now().Add(-24 * time.Hour)
	for i := len(runs) - 1; i >= 0; i-- { // newest first
		run := runs[i]
		st := run.Status
		switch {
		case api.WaitingOnPerson(st.Phase, st.Reason):
			needs = append(needs, run)
		case st.Phase == api.PhaseRunning || st.Phase == api.PhaseQueued || st.Phase == api.PhaseWaiting:
			running = append(running, run)
		case st.Phase == api.PhaseFailed && st.FinishedAt != nil && st.FinishedAt.After(dayAgo):
			failed = append(failed, run)
		}
		if run.Metadata.CreationTimestamp != nil && run.Metadata.CreationTimestamp.After(dayAgo) {
			if len(recent) < 50 {
				recent = append(recent, run)
			}
			if st.Cost != nil {
				total := strings.TrimPrefix(st.Cost.TotalUSD, "at least ")
				if m, err := cost.ParseUSD(total); err == nil {
					spent += m
				}
				if strings.Contains(st.Cost.TotalUSD, "unknown") || strings.HasPrefix(st.Cost.TotalUSD, "at least") {
					unknown = true
				}
			}
		}
	}
	spentText := "$" + spent.String()
	if unknown {
		spentText = "at least " + spentText + " (some costs could not be priced)"
	}
	var computers []computer.ProviderStatus
	if c.Computers != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		computers = c.Computers.Status(ctx)
		cancel()
	}
	// The runners (a scale-out deployment has several): a listing that fails leaves the table out.
	var runners []missionRunner
	if rs, err := c.Store.ListRunners(r.Context()); err == nil {
		now := time.Now()
		for _, ri := range rs {
			runners = append(runners, missionRunner{RunnerInfo: ri, Live: ri.Live(now), Since: now.Sub(ri.HeartbeatAt).Round(time.Second).String()})
		}
	}
	render(w, missionTmpl, map[string]any{"Needs": needs, "Running": running, "Failed": failed, "FailedFires": c.failedFires(r.Context(), dayAgo), "Recent": recent, "Spent": spentText,
		"Computers": computers, "Runners": runners, "LocalRunner": c.Runner})
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
	ck, _ := r.Cookie(cookieName)
	user, _ := c.Accounts.Verify(ck.Value, time.Now())
	if err := c.Approver.Decide(r.Context(), name, id, decision, r.PostForm.Get("reason"), user); err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	http.Redirect(w, r, "/runs/"+name, http.StatusSeeOther)
}

var missionTmpl = template.Must(template.New("mission").Funcs(funcs).Parse(head + `<h1 id="mission">Mission Control</h1>
<p>The last day cost <b>{{.Spent}}</b>.</p>
<h2>Needs you</h2>
{{if .Needs}}<table><tr><th>Run</th><th>Agent</th><th>Waiting on</th><th>Since</th></tr>
{{range .Needs}}<tr><td><a href="/runs/{{.Metadata.Name}}">{{.Metadata.Name}}</a></td><td>{{.Spec.Agent}}</td>
<td class="wait">{{.Status.Phase}} {{.Status.Reason}}{{with .Status.WaitingOn}}{{if .Question}}: {{.Question}}{{else if .Detail}}: {{.Detail}}{{end}}{{end}}</td><td>{{ago .Metadata.CreationTimestamp}}</td></tr>{{end}}</table>
{{else}}<p>Nothing waits on you.</p>{{end}}
<h2>Running</h2>
{{if .Running}}<table><tr><th>Run</th><th>Agent</th><th>Phase</th><th>Cost</th></tr>
{{range .Running}}<tr><td><a href="/runs/{{.Metadata.Name}}">{{.Metadata.Name}}</a></td><td>{{.Spec.Agent}}</td><td>{{.Status.Phase}} {{.Status.Reason}}</td><td>{{with .Status.Cost}}{{dollars .TotalUSD}}{{end}}</td></tr>{{end}}</table>
{{else}}<p>Nothing is running.</p>{{end}}
<h2>Failed in the last day</h2>
{{if or .Failed .FailedFires}}<table><tr><th>Run</th><th>Agent</th><th>Why</th></tr>
{{range .Failed}}<tr><td><a href="/runs/{{.Metadata.Name}}">{{.Metadata.Name}}</a>{{with index .Metadata.Labels "agentrun.dev/trigger"}} (trigger <a href="/triggers/{{.}}">{{.}}</a>){{end}}</td><td>{{.Spec.Agent}}</td><td>{{.Status.Reason}}: {{.Status.Message}}</td></tr>{{end}}
{{range .FailedFires}}<tr><td>a fire of trigger <a href="/triggers/{{.Trigger}}">{{.Trigger}}</a> (no run)</td><td></td><td>{{.Source}} {{.Key}}: {{.Message}}</td></tr>{{end}}</table>
{{else}}<p>No failures.</p>{{end}}
<h2>Recent runs</h2>
<table><tr><th>Run</th><th>Agent</th><th>Phase</th><th>Cost</th><th>Created</th></tr>
{{range .Recent}}<tr><td><a href="/runs/{{.Metadata.Name}}">{{.Metadata.Name}}</a>{{with index .Metadata.Labels "agentrun.dev/trigger"}} (trigger {{.}}){{end}}</td><td>{{.Spec.Agent}}</td><td class="phase">{{.Status.Phase}}</td><td>{{with .Status.Cost}}{{dollars .TotalUSD}}{{end}}</td><td>{{ago .Metadata.CreationTimestamp}}</td></tr>
{{else}}<tr><td colspan="5">No runs in the last day. Start one with <code>agentrun runs start AGENT --body '{"input": {"content": "..."}}'</code>.</td></tr>{{end}}</table>
{{if .Runners}}<h2>Runners</h2>
<table id="runners"><tr><th>Runner</th><th>State</th><th>Heartbeat</th><th>Runs</th><th>Version</th><th>Host/PID</th></tr>
{{range .Runners}}<tr><td>{{.Name}}{{if eq .Name $.LocalRunner}} (in this server){{end}}</td><td class="phase">{{if .Live}}live{{else}}gone{{end}}</td><td>{{.Since}} ago</td><td>{{if .Live}}{{.RunsHeld}}{{else}}({{.RunsHeld}} at its last heartbeat){{end}}</td><td>{{.Version}}</td><td>{{.Host}}/{{.PID}}</td></tr>{{end}}</table>{{end}}
{{if .Computers}}<h2>Computers</h2>
<p>What this server's machine can make: a runner on another machine has its own.</p>
<table id="computers"><tr><th>Provider</th><th>Makes</th><th>Here</th><th></th></tr>
{{range .Computers}}<tr><td>{{.Name}}</td><td>{{range $i, $k := .Kinds}}{{if $i}}, {{end}}{{$k}}{{end}}</td><td class="phase">{{if .Available}}available{{else}}not available{{end}}</td><td>{{.Reason}}</td></tr>{{end}}</table>{{end}}
</body></html>`))
