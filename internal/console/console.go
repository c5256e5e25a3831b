// Package console is the web console, server-rendered and embedded in the binary: Mission
// Control, the runs and groups, and each run's page (the target of status.consoleURL) with its
// phase, what it waits on, its answer, its approvals (a person approves or denies there), its
// journal, its files and its live Timeline. The run page works without JavaScript (it then
// refreshes itself while the run is live); with it, static/console.js (embedded, served at
// /static/console.js, so the pages keep a CSP without inline script) follows the run through
// GET /runs/NAME/timeline, a server-sent event stream, appending timeline rows and updating the
// status line as they happen, and reloads the page once when the run reaches a phase that lays
// the page out differently. GET /runs/NAME/files/PATH serves a file of the run folder as saved in
// the store. A run whose browser this process keeps shows its Screen, which a person drives while
// the run waits on a takeover, and a run waiting on an answer takes it from the page's form
// (screen.go). A person signs in with their password (the first visit sets it with the one-time
// setup code the server printed) and gets an HttpOnly, SameSite=Strict session cookie, Secure when
// the request came over TLS; POST /logout ends the session server-side. Every page carries a CSP
// that allows only this origin's script and forbids framing.
package console

import (
	"context"
	"crypto/subtle"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/auth"
	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/store"
)

// Console serves the pages.
type Console struct {
	Store    store.Store
	Accounts *auth.Accounts
	// Approver lets the run page approve and deny tool calls.
	Approver Approver
	// Computers, when set, are listed on Mission Control with whether each works here and, for
	// one with a one-time setup (the docker sandbox's image), whether it is ready.
	Computers *computer.Registry
	// Screens, when set, shows the screens of the browsers this process's own runner keeps (the
	// runner inside agentrun serve), and Runner names that runner; a run whose browser is on
	// another runner gets a note saying so (see screen.go).
	Screens Screens
	Runner  string
	// MaxStreams bounds the live timelines open at once on this server (0: 64). A page refused
	// one retries a little later.
	MaxStreams int
	// TrustProxy believes X-Forwarded-For (sign-in limits) and X-Forwarded-Proto (Secure cookies).
	TrustProxy bool
	// Follow, when set, takes one of the live streams the request's session may hold; false when
	// it holds all it may.
	Follow func(r *http.Request) (release func(), ok bool)
	// Agents, when set, gives the agent pages the API's MCP tool lister and agent patch (agents.go).
	Agents Agents
	// Learning, when set, gives a learning agent's Learning tab the API's reads, retire and
	// restore (learning.go).
	Learning Learning

	streams   atomic.Int64  // live timelines open now
	heartbeat time.Duration // a comment on an idle stream this often (0: 15 s; tests shorten it)
}

const cookieName = "agentrun_session"

func (c *Console) signedIn(r *http.Request) bool {
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return false
	}
	_, ok := c.Accounts.Verify(ck.Value, time.Now())
	return ok
}

// Register adds the console's routes to mux.
func (c *Console) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", c.guard(c.mission))
	mux.HandleFunc("GET /runs", c.guard(c.runs))
	mux.HandleFunc("POST /runs/{name}/approvals/{id}", c.guard(c.decide))
	mux.HandleFunc("GET /runs/{name}", c.guard(c.run))
	mux.HandleFunc("GET /runs/{name}/timeline", c.guardStream(c.timeline))
	mux.HandleFunc("GET /runs/{name}/files/{path...}", c.guard(c.file))
	mux.HandleFunc("GET /runs/{name}/screen.jpg", c.guardStream(c.screenFrame))
	mux.HandleFunc("POST /runs/{name}/screen/{action}", c.guardJSON(c.screenAct))
	mux.HandleFunc("POST /runs/{name}/answer", c.guard(c.answer))
	mux.HandleFunc("GET /static/console.js", script)
	c.registerGroups(mux)
	c.registerTriggers(mux)
	c.registerAgents(mux)
	c.registerLearning(mux)
	mux.HandleFunc("GET /login", c.loginPage)
	mux.HandleFunc("POST /login", c.login)
	mux.HandleFunc("GET /logout", c.guard(c.logoutPage))
	mux.HandleFunc("POST /logout", c.logout)
}

// pageCSP allows this origin's script, styles and images only (the pages' style attributes
// included), no framing by anyone, and forms posting only here.
const pageCSP = "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

func securityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
}

func (c *Console) guard(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w)
		if !c.signedIn(r) {
			http.Redirect(w, r, "/login?next="+template.URLQueryEscaper(r.URL.Path), http.StatusSeeOther)
			return
		}
		h(w, r)
	}
}

// safeNext is where a sign-in may send the browser: a path of this origin, else "/". A browser
// reads "//host", "/\host" (and their percent-encoded forms once decoded) or "https://host" as
// another origin, so anything but a plain absolute path is refused.
func safeNext(next string) string {
	dec, err := url.PathUnescape(next)
	if err != nil || next == "" || next[0] != '/' || strings.ContainsAny(dec, "\\\x00\r\n\t") ||
		strings.HasPrefix(dec, "//") || strings.HasPrefix(next, "//") {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return "/"
	}
	for _, r := range dec {
		if r < 0x20 || r == 0x7f {
			return "/"
		}
	}
	return next
}

// guardStream is guard for a request a page's script makes: without a session it answers 401
// (there is no page to send a browser to).
func (c *Console) guardStream(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !c.signedIn(r) {
			http.Error(w, "not signed in: sign in to the console again", http.StatusUnauthorized)
			return
		}
		h(w, r)
	}
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	render(w, loginTmpl, map[string]any{"Next": safeNext(r.URL.Query().Get("next")), "Error": "", "Setup": !c.Accounts.HasPassword()})
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	securityHeaders(w)
	next := safeNext(r.PostForm.Get("next"))
	user, pw := r.PostForm.Get("user"), r.PostForm.Get("password")
	if user == "" {
		user = "admin"
	}
	addr := auth.ClientAddr(r, c.TrustProxy)
	var err error
	if !c.Accounts.HasPassword() {
		err = c.Accounts.SetupFrom(r.Context(), addr, r.PostForm.Get("setup_code"), user, pw)
	} else {
		err = c.Accounts.SignIn(r.Context(), addr, user, pw)
	}
	if err != nil {
		status := http.StatusUnauthorized
		var le *auth.LimitError
		switch {
		case errors.As(err, &le):
			status = http.StatusTooManyRequests
			w.Header().Set("Retry-After", strconv.Itoa(max(1, int((le.RetryAfter+time.Second-1)/time.Second))))
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			return // the browser left
		}
		w.WriteHeader(status)
		render(w, loginTmpl, map[string]any{"Next": next, "Error": err.Error(), "Setup": !c.Accounts.HasPassword()})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: c.Accounts.NewSession(user, time.Now()), Path: "/", HttpOnly: true,
		Secure: auth.SecureRequest(r, c.TrustProxy), SameSite: http.SameSiteStrictMode, MaxAge: int(auth.SessionTTL / time.Second)})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logoutPage is GET /logout: a form that signs out (a GET never changes anything).
func (c *Console) logoutPage(w http.ResponseWriter, r *http.Request) {
	render(w, logoutTmpl, map[string]any{"CSRF": csrfToken(r)})
}

// logout is POST /logout: the session ends server-side (a copied cookie stops working too) and
// the browser's cookie is cleared. It needs the page's CSRF token, as every console form does.
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	want := csrfToken(r)
	if want == "" || subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(want)) != 1 {
		http.Error(w, "the form is stale or did not come from this console: reload the page", http.StatusForbidden)
		return
	}
	ck, _ := r.Cookie(cookieName)
	if err := c.Accounts.Revoke(ck.Value, time.Now()); err != nil && !errors.Is(err, auth.ErrBadSession) {
		http.Error(w, "sign out: "+err.Error(), http.StatusInternalServerError)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", HttpOnly: true,
		Secure: auth.SecureRequest(r, c.TrustProxy), SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

func (c *Console) runs(w http.ResponseWriter, r *http.Request) {
	runs, err := c.Store.ListRuns(r.Context(), store.RunFilter{})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	// Newest first.
	for i, j := 0, len(runs)-1; i < j; i, j = i+1, j-1 {
		runs[i], runs[j] = runs[j], runs[i]
	}
	render(w, runsTmpl, map[string]any{"Runs": runs})
}

func (c *Console) run(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	run, err := c.Store.GetRun(r.Context(), name)
	if err != nil {
		http.Error(w, "no run "+name, http.StatusNotFound)
		return
	}
	steps, _ := c.Store.ListSteps(r.Context(), name)
	events, _ := c.Store.ListEvents(r.Context(), name, 0, 0)
	files, _ := c.Store.ListFileInfos(r.Context(), name)
	var approvals []Approval
	if c.Approver != nil {
		approvals, _ = c.Approver.Approvals(r.Context(), name)
	}
	streaming := !api.Finished(run.Status.Phase)
	answerOpen := answerable(run)
	// Without script: refresh the whole page, but not under a person writing an answer.
	refresh := streaming && !answerOpen
	for _, a := range approvals {
		if a.State == "pending" {
			refresh = false // no refresh while a person may be typing a reason
		}
	}
	var after int64
	if len(events) > 0 {
		after = events[len(events)-1].Seq
	}
	render(w, runTmpl, map[string]any{"Run": run, "Steps": steps, "Events": events, "After": after, "Files": fileRows(name, files),
		"Refresh": refresh, "Streaming": streaming, "View": pageView(run), "Script": scriptVersion,
		"Approvals": approvals, "CSRF": csrfToken(r), "Screen": c.screenSection(run, steps), "Keys": screenKeyButtons,
		"AnswerOpen": answerOpen, "Takeover": takingOver(run), "Learning": runLearningOf(run.Spec.Agent, events, approvals, run.Status.PayloadsPurgedAt),
		"Tree": c.workflowTree(r.Context(), run)})
}

func render(w http.ResponseWriter, t *template.Template, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := t.Execute(w, data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

var funcs = template.FuncMap{
	"ago": func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return time.Since(*t).Round(time.Second).String() + " ago"
	},
	"clock":    clock,
	"costText": costText,
	"dollars":  cost.Dollars,
}

const head = `<!doctype html><html><head><meta charset="utf-8"><title>agentrun</title>
<style>body{font:14px system-ui,sans-serif;margin:2em;max-width:70em}table{border-collapse:collapse}td,th{padding:.2em .6em;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}
.phase{font-weight:600}pre{background:#f6f6f6;padding:1em;white-space:pre-wrap}.wait{background:#fff4d6;padding:.6em}.live{color:#666;font-size:90%;margin-left:.6em}</style></head><body>
<p><a href="/">Mission Control</a> · <a href="/runs">runs</a> · <a href="/agents">agents</a> · <a href="/groups">groups</a> · <a href="/triggers">triggers</a> · <a href="/logout">sign out</a></p>`

var loginTmpl = template.Must(template.New("login").Parse(head + `<h1>Sign in</h1>
{{if .Error}}<p class="wait">{{.Error}}</p>{{end}}
<form method="post" action="/login"><input type="hidden" name="next" value="{{.Next}}">
{{if .Setup}}<p>First visit: choose a password. The setup code is printed where the server started.</p>
<p><label>Setup code <input name="setup_code" autofocus></label></p>{{end}}
<p><label>User <input name="user" value="admin"></label></p>
<p><label>Password <input type="password" name="password"></label></p>
<button>Sign in</button></form></body></html>`))

var logoutTmpl = template.Must(template.New("logout").Parse(head + `<h1>Sign out</h1>
<form method="post" action="/logout"><input type="hidden" name="csrf" value="{{.CSRF}}">
<p>This ends the session on the server: the console asks for the password again.</p>
<button id="logout">Sign out</button></form></body></html>`))

var runsTmpl = template.Must(template.New("runs").Funcs(funcs).Parse(head + `<h1>Runs</h1>
<table><tr><th>Run</th><th>Agent</th><th>Phase</th><th>Reason</th><th>Cost</th><th>Created</th></tr>
{{range .Runs}}<tr><td><a href="/runs/{{.Metadata.Name}}">{{.Metadata.Name}}</a></td><td>{{.Spec.Agent}}</td><td class="phase">{{.Status.Phase}}</td><td>{{.Status.Reason}}</td><td>{{with .Status.Cost}}{{dollars .TotalUSD}}{{end}}</td><td>{{ago .Metadata.CreationTimestamp}}</td></tr>
{{else}}<tr><td colspan="6">No runs yet. Start one with <code>agentrun runs start AGENT --body '{"input": {"content": "..."}}'</code>.</td></tr>{{end}}
</table></body></html>`))

var runTmpl = template.Must(template.New("run").Funcs(funcs).Parse(`{{define "refresh"}}{{if .Refresh}}<noscript><meta http-equiv="refresh" content="2"></noscript>{{end}}{{end}}` + head + `{{template "refresh" .}}
<div id="run" data-run="{{.Run.Metadata.Name}}" data-view="{{.View}}" data-streaming="{{.Streaming}}">
{{with .Run}}<h1>{{.Metadata.Name}}</h1>
<p>Agent <b>{{.Spec.Agent}}</b> (revision {{.Status.AgentRevision}}; <a href="/agents/{{.Spec.Agent}}/mcp">its MCP tools</a>) · <span class="phase" id="phase">{{.Status.Phase}}</span><span id="reason">{{if .Status.Reason}} ({{.Status.Reason}}){{end}}</span><span id="cost">{{with costText .Status.Cost}} · {{.}}{{end}}</span>{{if $.Streaming}}<span id="live" class="live" hidden></span>{{else}}<span id="live" class="live">ended</span>{{end}}</p>
<p class="wait" id="waiting"{{if not .Status.WaitingOn}} hidden{{end}}>{{with .Status.WaitingOn}}Waiting on: {{.Kind}}{{if .Question}}: <b>{{.Question}}</b>{{end}}{{if .StepKey}} (step {{.StepKey}}){{end}}{{if .Detail}} — {{.Detail}}{{end}}{{end}}</p>
<p id="status-message"{{if not .Status.Message}} hidden{{end}}>{{.Status.Message}}</p>
<p id="reload-note" class="wait" hidden></p>
{{end}}
{{with .Screen}}<div id="screen"{{if .Takeover}} class="wait"{{end}} data-control="{{.Control}}" data-csrf="{{$.CSRF}}">
<h2>Screen{{if .Control}}: the agent handed you its {{.What}}{{end}}</h2>
{{if .Live}}<p id="screen-about">{{if .Control}}Click on the screen to click there in the run's {{.What}}; type into the field in focus with the box below.
When you are done, <b>answer the run's question below</b>: that hands the {{.What}} back to the agent.{{else}}The run's {{.What}}, live. You get the controls when the agent asks you to take over.{{end}}</p>
{{if .Control}}<form id="screen-type"><input id="screen-text" autocomplete="off" size="40" placeholder="text to type into the {{.What}}"> <button type="submit">Type</button>
{{range $.Keys}} <button type="button" data-key="{{.Key}}">{{.Label}}</button>{{end}}</form>{{end}}
<p><img id="screen-img" src="/runs/{{$.Run.Metadata.Name}}/screen.jpg" alt="the screen of the run's {{.What}}" style="max-width:100%;border:1px solid #999{{if .Control}};cursor:crosshair{{end}}"></p>
<p id="screen-note" class="live"></p><p id="screen-state" class="wait" hidden></p><noscript><p>The screen stays still and takes no clicks without JavaScript.</p></noscript>
{{else}}<p id="screen-away">{{.Why}}{{if .Takeover}} You can still answer the run's question below; the agent then goes on without the takeover.{{end}}</p>{{end}}
</div>{{end}}
{{if .Streaming}}<form id="answer-form" method="post" action="/runs/{{.Run.Metadata.Name}}/answer"{{if not .AnswerOpen}} hidden{{end}}><input type="hidden" name="csrf" value="{{.CSRF}}">
<p><label for="answer-text">{{if .Takeover}}When you are done, answer here to hand the controls back to the agent:{{else}}Answer the run (the agent reads it as your reply):{{end}}</label><br>
<textarea id="answer-text" name="answer" rows="3" cols="70"></textarea><br><button>Answer</button></p></form>{{end}}
{{with .Run}}<h2>Input</h2><pre>{{.Spec.Input}}</pre>
{{with .Status.Answer}}<h2>Answer</h2><pre id="answer">{{.Preview}}</pre>{{if .Truncated}}<p>(first 4 KiB of {{.Bytes}} bytes; <code>agentrun runs answer</code> prints all of it)</p>{{end}}{{end}}
{{if .Status.Turns}}<h2>Turns</h2><table><tr><th>#</th><th>Model</th><th>Chosen by</th><th>In</th><th>Out</th><th>Cost</th></tr>
{{range .Status.Turns}}<tr><td>{{.Index}}</td><td>{{.Model}}</td><td>{{.ChosenBy}}</td><td>{{.InputTokens}}</td><td>{{.OutputTokens}}</td><td>{{dollars .CostUSD}}</td></tr>{{end}}</table>{{end}}
{{end}}
{{if .Approvals}}<h2>Approvals</h2><table><tr><th>#</th><th>Tool</th><th>Arguments</th><th>Reason</th><th>State</th><th></th></tr>
{{range .Approvals}}<tr id="approval-{{.ID}}"><td>{{.ID}}</td><td>{{.Tool}}</td><td><pre>{{.Input}}</pre></td><td>{{.Reason}}</td><td>{{.State}}{{if .DecidedBy}} by {{.DecidedBy}}{{end}}</td>
<td>{{if eq .State "pending"}}<form method="post" action="/runs/{{$.Run.Metadata.Name}}/approvals/{{.ID}}"><input type="hidden" name="csrf" value="{{$.CSRF}}">
<input name="reason" placeholder="reason (optional)"> <button name="decision" value="approve">Approve</button> <button name="decision" value="deny">Deny</button></form>{{end}}</td></tr>{{end}}</table>{{end}}
{{with .Learning}}{{template "learning" .}}{{end}}
{{with .Run.Status.Escalation}}<p id="escalation" class="wait">Escalated at <b>{{.Label}}</b> ({{.Kind}}, stage {{.Stage}}): {{.Summary}}</p>{{end}}
{{if .Tree}}<h2>Workflow</h2><table id="workflow-tree"><tr><th>Node</th><th>Kind</th><th>State</th><th>Value</th><th>Cost</th><th>Steps</th></tr>
{{range .Tree}}<tr data-key="{{.Key}}" data-state="{{.State}}"><td style="padding-left:{{.Depth}}.5em" title="{{.Key}}">{{.Label}}</td><td>{{.Kind}}</td><td class="node-{{.State}}">{{.State}}</td><td>{{.Value}}</td><td>{{.Cost}}</td><td>{{.Steps}}</td></tr>{{end}}</table>{{end}}
<h2>Steps</h2><table><tr><th>#</th><th>Key</th><th>Kind</th><th>State</th><th>Attempt</th><th>What</th></tr>
{{range .Steps}}<tr><td>{{.Seq}}</td><td>{{.Key}}</td><td>{{.Kind}}</td><td>{{.State}}{{if .Resolution}} ({{.Resolution}}){{end}}</td><td>{{.Attempt}}</td><td>{{.Title}}{{if .Error}}<br>{{.Error}}{{end}}</td></tr>{{end}}</table>
<h2>Files</h2>{{if .Files}}<table id="files"><tr><th>Path</th><th>Size</th><th>Modified</th></tr>
{{range .Files}}<tr><td><a href="{{.Href}}">{{.Path}}</a></td><td title="{{.Bytes}} bytes">{{.Size}}</td><td>{{.Modified}}</td></tr>{{end}}</table>
{{else}}<p id="files">The run folder has no saved files yet.</p>{{end}}
<h2>Timeline</h2><table><thead><tr><th>Time</th><th>Event</th><th>Step</th><th>Message</th></tr></thead>
<tbody id="timeline" data-after="{{.After}}">{{range .Events}}<tr data-seq="{{.Seq}}"><td>{{clock .Time}}</td><td>{{.Type}}</td><td>{{.StepKey}}</td><td>{{.Message}}</td></tr>{{end}}</tbody></table>
</div>
<script src="/static/console.js?v={{.Script}}" defer></script>
</body></html>`))
