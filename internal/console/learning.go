package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/learning"
)

// A learning agent's Learning tab: every note, skill file and workflow on its folder's main with
// its ETag and a Retire button (which sends that ETag, so a page older than main is refused with
// the API's 412 PreconditionFailed), the files main's history held that main does not, each with
// a Restore button and the commit to restore it from, and the log of commits. Reads, retire and
// restore go through the server (Learning), where the API's rules are.
//
// A run's page gets a Learning section made from its timeline: the commit and notes it was
// given, the notes it opened, and what became of each item of its proposal (kept, dropped by the
// grader or a person with the reason, refused by the code's checks, or waiting on a person's
// approval, linked to the approval on the same page).

// Learning gives the Learning tab the server's reads, retire and restore.
type Learning interface {
	// Folder is the agent's main with its ETags, its log and what it no longer holds; an
	// *api.Error (LearningOff, NotFound) when there is none.
	Folder(ctx context.Context, agent string) (LearningFolder, error)
	// Retire commits the removal of path if etag is its current ETag, as DELETE
	// /v2/agents/NAME/learning/files/PATH with If-Match does, by user.
	Retire(ctx context.Context, agent, path, etag, user string) (api.LearningChange, error)
	// Restore commits path as commit from held it, as POST /v2/agents/NAME/learning/restore.
	Restore(ctx context.Context, agent, path, from, user string) (api.LearningChange, error)
}

// LearningFolder is what the Learning tab shows.
type LearningFolder struct {
	List    api.LearningList
	Log     []learning.Commit
	Retired []learning.Retired
}

func (c *Console) registerLearning(mux *http.ServeMux) {
	mux.HandleFunc("GET /agents/{name}/learning", c.guard(c.learningTab))
	mux.HandleFunc("POST /agents/{name}/learning/retire", c.guard(c.learningChange))
	mux.HandleFunc("POST /agents/{name}/learning/restore", c.guard(c.learningChange))
}

// commitRow is one commit of the log as the tab shows it.
type commitRow struct {
	Hash, Short, Author, Subject string
	When                         time.Time
}

func (c *Console) learningTab(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var done string
	if p := q.Get("path"); p != "" {
		done = fmt.Sprintf("%s %s in commit %s.", map[string]string{"retire": "Retired", "restore": "Restored"}[q.Get("done")], p, shortHash(q.Get("commit")))
	}
	c.renderLearning(w, r, http.StatusOK, done, nil)
}

// renderLearning draws the tab with the outcome of a form sent: done says what was committed,
// failed is why a form was refused (the API's error, with its status).
func (c *Console) renderLearning(w http.ResponseWriter, r *http.Request, status int, done string, failed *api.Error) {
	name := r.PathValue("name")
	data := map[string]any{"Agent": name, "CSRF": csrfToken(r), "Done": done, "Failed": failed}
	if c.Learning == nil {
		data["Off"] = &api.Error{Code: api.CodeInternal, Message: "this console cannot read learning folders"}
	} else if f, err := c.Learning.Folder(r.Context(), name); err != nil {
		if errors.Is(err, context.Canceled) {
			return
		}
		e := apiErr(err)
		if failed == nil {
			status = e.Status
		}
		data["Off"] = e
	} else {
		subjects := map[string]string{}
		var log []commitRow
		for _, cm := range f.Log {
			subject, _, _ := strings.Cut(cm.Message, "\n")
			subjects[cm.Hash] = subject
			log = append(log, commitRow{Hash: cm.Hash, Short: shortHash(cm.Hash), Author: cm.Author, Subject: subject, When: cm.When})
		}
		data["Folder"], data["Log"], data["Subjects"] = f, log, subjects
	}
	base := "/agents/" + template.URLQueryEscaper(name)
	c.page(w, r, learningTmpl, Page{Title: "Learning", Description: "What agent " + name + " keeps between runs: its learning folder, retired files and log.",
		Crumbs: []Crumb{{"Agents", "/agents"}, {name, base}}, Tabs: agentTabsOf(name, base+"/learning"), Status: status, Data: data})
}

// learningChange is POST /agents/NAME/learning/retire (path, etag) or .../restore (path, from)
// from the tab's forms.
func (c *Console) learningChange(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	if !csrfValid(r, r.PostForm.Get("csrf")) {
		http.Error(w, "the form is stale or did not come from this console: reload the page", http.StatusForbidden)
		return
	}
	if c.Learning == nil {
		http.Error(w, "this console cannot change learning folders", http.StatusServiceUnavailable)
		return
	}
	user := c.user(r)
	name, path := r.PathValue("name"), r.PostForm.Get("path")
	if p, err := url.PathUnescape(path); err == nil {
		path = p // the forms send it escaped (pathq); a valid path has no '%' to undo
	}
	var ch api.LearningChange
	var err error
	done := "retire"
	if strings.HasSuffix(r.URL.Path, "/restore") {
		done = "restore"
		ch, err = c.Learning.Restore(r.Context(), name, path, r.PostForm.Get("from"), user)
	} else {
		ch, err = c.Learning.Retire(r.Context(), name, path, r.PostForm.Get("etag"), user)
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return // the browser left
		}
		e := apiErr(err)
		c.renderLearning(w, r, e.Status, "", e)
		return
	}
	http.Redirect(w, r, "/agents/"+url.PathEscape(name)+"/learning?"+url.Values{"done": {done}, "path": {ch.Path}, "commit": {ch.Commit}}.Encode(), http.StatusSeeOther)
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

var learningFuncs = template.FuncMap{
	"short": shortHash,
	// pathq is a path as a form carries it: %-escaped, since a browser turns a newline in a
	// field's value into CR LF (a bad path stored before paths were checked must still retire).
	"pathq": url.PathEscape,
	"when":  func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
}

var learningTmpl = newPage("learning", `{{with .Done}}<p id="done">{{.}}</p>{{end}}
{{with .Failed}}<p class="wait" id="refused">Not done: {{.Code}} (HTTP {{.Status}}){{if .Field}} on {{.Field}}{{end}}: {{.Message}}</p>{{end}}
{{with .Off}}<p class="wait" id="off">No learning folder to show: {{.Code}}{{if .Field}} on {{.Field}}{{end}}: {{.Message}}</p>
{{else}}{{with .Folder}}
<p>The learning folder is a git repository kept in the store; its branch <code>main</code> is what the agent's runs start from{{if .List.Main}} (now commit <code title="{{.List.Main}}">{{short .List.Main}}</code>){{end}}. Retiring is a commit that removes the file; restoring is a commit that brings it back as an earlier commit held it. <code>agentrun learning export {{$.Agent}}</code> gives it as a git bundle.</p>
<h2>On main</h2>
{{if .List.Items}}<table id="learned"><tr><th>Kind</th><th>Path</th><th>Name</th><th>Description</th><th>Type</th><th>ETag</th><th></th></tr>
{{range .List.Items}}<tr data-path="{{.Path}}"><td>{{.Kind}}</td><td>{{.Path}}</td><td>{{.Name}}</td><td>{{.Description}}</td><td>{{.Type}}</td><td><code title="{{.ETag}}">{{short .ETag}}</code></td>
<td>{{with .Problem}}<span class="wait" data-problem>Not offered to runs: {{.}}; retire it.</span>{{end}}<form method="post" action="/agents/{{$.Agent}}/learning/retire"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="path" value="{{pathq .Path}}"><input type="hidden" name="etag" value="{{.ETag}}">
<button data-retire="{{.Path}}">Retire</button></form></td></tr>
{{end}}</table>
{{else}}<p id="learned">Nothing yet: a run of this agent proposes what to keep when its job is done.</p>{{end}}
<h2>Retired</h2>
{{if .Retired}}<table id="retired"><tr><th>Path</th><th>Restore from</th></tr>
{{range .Retired}}<tr data-path="{{.Path}}"><td>{{.Path}}</td><td><form method="post" action="/agents/{{$.Agent}}/learning/restore"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="path" value="{{pathq .Path}}">
<select name="from" aria-label="the commit to restore {{.Path}} from">{{range .Commits}}<option value="{{.}}">{{short .}} {{index $.Subjects .}}</option>{{end}}</select>
<button data-restore="{{.Path}}">Restore</button></form></td></tr>
{{end}}</table>
{{else}}<p id="retired">Nothing retired: every file main's history held is on main.</p>{{end}}
{{end}}
<h2>Log</h2>
{{if .Log}}<table id="log"><tr><th>Commit</th><th>When</th><th>Author</th><th>What</th></tr>
{{range .Log}}<tr><td><code title="{{.Hash}}">{{.Short}}</code></td><td>{{when .When}}</td><td>{{.Author}}</td><td>{{.Subject}}</td></tr>
{{end}}</table>
{{else}}<p id="log">No commits yet.</p>{{end}}
{{end}}`, learningFuncs)

// runLearning is a learning run's record, as its timeline says it.
type runLearning struct {
	Agent string
	// Given: the commit the run started from ("" before its first commit) and the notes in its
	// instructions.
	Commit string
	Given  []string
	// Skills and Workflows are the learned ones it was offered; LeftOut what the folder held but
	// the run was not offered, and why.
	Skills, Workflows, LeftOut []string
	Opened                     []openedNote
	// Proposed: the run answered its proposal turn; Refused says why the whole proposal was.
	Proposed bool
	Refused  string
	Items    []learnItem
	// Committed is the commit of what the run kept ("" when it changed nothing).
	Committed, CommitText string
	Done                  bool
	// Purged is when retention purged the run's payloads, events' data included: the record
	// above is gone with it, and Said keeps what the learning events' messages still say.
	Purged string
	Said   []string
}

type openedNote struct{ Path, ETag, Step string }

// learnItem is one item of a proposal and what became of it.
type learnItem struct {
	Index      int
	What, Path string
	// Outcome is kept, dropped, refused, waiting (on a person's approval) or undecided.
	Outcome  string
	By       string
	Reason   string
	Approval int64
}

// runLearningOf reads a run's learning record from its events and approvals (nil: not a
// learning run). A drive taken up again says an item's outcome again; the last one holds. After
// retention purged the run's payloads (purgedAt) the events' data is gone: the record keeps only
// their messages, rather than read the missing data as "no notes" and "nothing proposed".
func runLearningOf(agent string, events []api.Event, approvals []Approval, purgedAt *time.Time) *runLearning {
	var rl *runLearning
	item := func(i int) *learnItem {
		for len(rl.Items) <= i {
			rl.Items = append(rl.Items, learnItem{Index: len(rl.Items), Outcome: "undecided"})
		}
		return &rl.Items[i]
	}
	for _, ev := range events {
		if !strings.HasPrefix(string(ev.Type), "learning.") {
			continue
		}
		if rl == nil {
			rl = &runLearning{Agent: agent}
		}
		if purgedAt != nil {
			rl.Purged = purgedAt.UTC().Format("2006-01-02 15:04:05 UTC")
			if ev.Message != "" {
				rl.Said = append(rl.Said, ev.Message)
			}
			continue
		}
		var d struct {
			Commit    string          `json:"commit"`
			Notes     []string        `json:"notes"`
			Skills    []string        `json:"skills"`
			Workflows []string        `json:"workflows"`
			LeftOut   []string        `json:"leftOut"`
			Note      string          `json:"note"`
			ETag      string          `json:"etag"`
			Items     []string        `json:"items"`
			Item      *int            `json:"item"`
			Path      string          `json:"path"`
			Code      string          `json:"code"`
			Reason    string          `json:"reason"`
			By        string          `json:"by"`
			Paths     json.RawMessage `json:"paths"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		switch ev.Type {
		case api.EventLearningGiven:
			rl.Commit, rl.Given, rl.Skills, rl.Workflows, rl.LeftOut = d.Commit, d.Notes, d.Skills, d.Workflows, d.LeftOut
		case api.EventLearningOpened:
			rl.Opened = append(rl.Opened, openedNote{Path: d.Note, ETag: d.ETag, Step: ev.StepKey})
		case api.EventLearningProposed:
			rl.Proposed = true
			for i, w := range d.Items {
				it := item(i)
				it.What = w
				if f := strings.Fields(w); len(f) > 0 {
					it.Path = f[len(f)-1]
				}
			}
		case api.EventLearningRefused:
			if d.Item == nil { // the whole proposal: not JSON, or not the shape asked for
				rl.Proposed, rl.Refused = true, ev.Message
				continue
			}
			it := item(*d.Item)
			it.Outcome, it.By, it.Reason = "refused", "the checks", d.Reason
			if d.Code != "" {
				it.Reason = d.Code + ": " + d.Reason
			}
		case api.EventLearningDropped:
			if d.Item == nil {
				continue
			}
			it := item(*d.Item)
			it.Outcome, it.By, it.Reason = "dropped", d.By, d.Reason
			if d.By == "person" && d.Reason == "" {
				it.Reason = "a person denied it"
			}
		case api.EventLearningKept:
			if d.Item == nil {
				continue
			}
			it := item(*d.Item)
			it.Outcome, it.By, it.Reason = "kept", "", d.Reason
		case api.EventLearningCommitted:
			rl.Done, rl.Committed, rl.CommitText = true, d.Commit, ev.Message
		}
	}
	if rl == nil {
		return nil
	}
	for _, a := range approvals {
		n, ok := strings.CutPrefix(a.StepKey, "learn/approval/")
		i, err := strconv.Atoi(n)
		if !ok || err != nil || i < 0 || i >= len(rl.Items) {
			continue
		}
		it := &rl.Items[i]
		it.Approval = a.ID
		if a.State == "pending" && (it.Outcome == "undecided" || it.Outcome == "waiting") {
			it.Outcome = "waiting"
		}
	}
	return rl
}

// runLearningTmpl is the Learning section of a run's page (runTmpl calls it).
var _ = template.Must(runTmpl.New("learning").Funcs(learningFuncs).Parse(`<h2 id="learning">Learning</h2>
{{if .Purged}}<p id="learning-purged">This run's recorded payloads were purged on {{.Purged}} (retention), and with them the details of its learning record (the notes it was given and opened, each item of its proposal). What its timeline still says:</p>
<ul id="learning-said">{{range .Said}}<li>{{.}}</li>{{end}}</ul>
{{else}}<p id="learning-given">Started from {{if .Commit}}commit <code title="{{.Commit}}">{{short .Commit}}</code>{{else}}an empty learning folder (no commit yet){{end}} of <a href="/agents/{{.Agent}}/learning">its agent's learning folder</a>, with {{len .Given}} notes in its instructions{{if .Given}}: {{range $i, $n := .Given}}{{if $i}}, {{end}}<code>{{$n}}</code>{{end}}{{end}}.{{if .Skills}} Learned skills offered: {{range $i, $n := .Skills}}{{if $i}}, {{end}}<code>{{$n}}</code>{{end}}.{{end}}{{if .Workflows}} Learned workflows offered: {{range $i, $n := .Workflows}}{{if $i}}, {{end}}<code>{{$n}}</code>{{end}}.{{end}}{{if .LeftOut}} Left out: {{range $i, $n := .LeftOut}}{{if $i}}; {{end}}{{$n}}{{end}}.{{end}}</p>
<p id="learning-opened">{{if .Opened}}It opened {{range $i, $o := .Opened}}{{if $i}}, {{end}}<code>{{$o.Path}}</code> (step {{$o.Step}}){{end}}.{{else}}It opened no note.{{end}}</p>
{{if .Refused}}<p class="wait" id="learning-refused">{{.Refused}}</p>
{{else if .Proposed}}<table id="proposal"><tr><th>#</th><th>Proposed</th><th>Outcome</th><th>Why</th></tr>
{{range .Items}}<tr data-item="{{.Index}}"><td>{{.Index}}</td><td>{{.What}}</td>
<td class="phase">{{if eq .Outcome "waiting"}}waiting on <a href="#approval-{{.Approval}}">approval {{.Approval}}</a>{{else if eq .Outcome "dropped"}}dropped{{if .By}} by the {{.By}}{{end}}{{if .Approval}} (<a href="#approval-{{.Approval}}">approval {{.Approval}}</a>){{end}}{{else if eq .Outcome "refused"}}refused by the checks{{else}}{{.Outcome}}{{if .Approval}} after <a href="#approval-{{.Approval}}">approval {{.Approval}}</a>{{end}}{{end}}</td><td>{{.Reason}}</td></tr>
{{else}}<tr><td colspan="4">It proposed nothing to keep.</td></tr>{{end}}</table>
{{with .CommitText}}<p id="learning-committed">{{.}}</p>{{end}}
{{else}}<p>It has not proposed what to keep yet: that is its last turn, once its job is done.</p>{{end}}{{end}}`))
