// Package console is the web console, server-rendered and embedded in the binary: Mission
// Control, the runs and groups, and each run's page (the target of status.consoleURL) with its
// phase, what it waits on, its answer, its approvals (a person approves or denies there), its
// journal, its files and its live Timeline. The run page works without JavaScript (it then
// refreshes itself while the run is live); with it, static/console.js (embedded, served at
// /static/console.js, so the pages keep a CSP without inline script) follows the run through
// GET /runs/NAME/timeline, a server-sent event stream, appending timeline rows and updating the
// status line as they happen, and reloads the page once when the run reaches a phase that lays
// the page out differently. GET /runs/NAME/files/PATH serves a file of the run folder as saved in
// the store. Settings (settings.go) takes model keys and secrets from a signed-in person, sealed,
// never shown back. A run whose browser this process keeps shows its Screen, which a person drives while
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
	"agentrun.dev/agentrun/internal/livetext"
	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/secret"
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
	// Seal seals what the Settings pages keep (model keys, secrets); nil: they can keep nothing.
	// Models, when set, says which model keys the server's environment gives (settings.go).
	Seal   *secret.Box
	Models *model.Config
	// Runs, when set, lets the runs list cancel and re-run many runs (runs.go).
	Runs Runs
	// Name is what the navigation calls this server ("": the machine's host name).
	Name string
	// NoAccounts (serve --no-accounts, on loopback only) needs no password: every request from
	// this machine is the one person, given a session without signing in (see noAccounts).
	NoAccounts bool
	// LiveText, when set, is the hub of the model's text while calls stream: the run page shows
	// it as it arrives (live.go).
	LiveText *livetext.Hub
	// RaiseCap, when set, lets the run page raise a run's cap (the API's rule).
	RaiseCap CapRaiser
	// Fork, when set, lets the run page fork a run from a completed step (fork.go).
	Fork Forker
	// CheckWebhook checks a webhook as the API does (the address rule of --webhook-allow
	// included); nil: its form only (api.DefaultAndValidateWebhook).
	CheckWebhook func(*api.Webhook) error

	local     localSession  // the one session without accounts
	streams   atomic.Int64  // live timelines open now
	heartbeat time.Duration // a comment on an idle stream this often (0: 15 s; tests shorten it)
}

const cookieName = "agentrun_session"

func (c *Console) signedIn(r *http.Request) bool {
	if c.NoAccounts {
		return c.localSignedIn(r)
	}
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
	mux.HandleFunc("POST /runs/bulk", c.guard(c.bulk))
	mux.HandleFunc("POST /runs/{name}/approvals/{id}", c.guard(c.decide))
	mux.HandleFunc("GET /runs/{name}", c.guard(c.run))
	mux.HandleFunc("GET /runs/{name}/timeline", c.guardStream(c.timeline))
	mux.HandleFunc("GET /runs/{name}/steps/{key...}", c.guardStream(c.stepJSON))
	mux.HandleFunc("GET /runs/{name}/part/{which}", c.guardStream(c.runPart))
	mux.HandleFunc("POST /runs/{name}/cap", c.guard(c.raiseCap))
	mux.HandleFunc("POST /runs/{name}/fork", c.guard(c.fork))
	mux.HandleFunc("GET /runs/{name}/files/{path...}", c.guard(c.file))
	mux.HandleFunc("GET /runs/{name}/screen.jpg", c.guardStream(c.screenFrame))
	mux.HandleFunc("POST /runs/{name}/screen/{action}", c.guardJSON(c.screenAct))
	mux.HandleFunc("POST /runs/{name}/answer", c.guard(c.answer))
	mux.HandleFunc("GET /static/console.js", script)
	mux.HandleFunc("GET /static/{file}", serveStatic)
	c.registerGroups(mux)
	c.registerTriggers(mux)
	c.registerAgents(mux)
	c.registerLearning(mux)
	c.registerSettings(mux)
	c.registerWebhooks(mux)
	mux.HandleFunc("GET /login", c.loginPage)
	mux.HandleFunc("POST /login", c.login)
	mux.HandleFunc("GET /logout", c.guard(c.logoutPage))
	mux.HandleFunc("POST /logout", c.logout)
}

// pageCSP allows this origin's script, styles and images only (no inline script or style
// attributes: static/console.css styles the pages), no framing by anyone, and forms posting only here. Images may also be blob: URLs,
// which only the page's own script makes: the run page's Screen shows each frame it fetched
// (static/console.js) from one, and without it every frame after the page's first failed to
// load ("the frame could not be decoded").
const pageCSP = "default-src 'self'; style-src 'self'; img-src 'self' blob:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

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
			if c.localSignIn(w, r) {
				return
			}
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
	if c.NoAccounts {
		// No password to ask for: the console itself, once this browser has the session.
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	c.page(w, r, loginTmpl, c.loginPageOf(safeNext(r.URL.Query().Get("next")), "", 0))
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if c.NoAccounts {
		http.Error(w, "this console has no accounts (serve --no-accounts): there is no password to sign in with", http.StatusNotFound)
		return
	}
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
		c.page(w, r, loginTmpl, c.loginPageOf(next, err.Error(), status))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: c.Accounts.NewSession(user, time.Now()), Path: "/", HttpOnly: true,
		Secure: auth.SecureRequest(r, c.TrustProxy), SameSite: http.SameSiteStrictMode, MaxAge: int(auth.SessionTTL / time.Second)})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logoutPage is GET /logout: a form that signs out (a GET never changes anything).
func (c *Console) logoutPage(w http.ResponseWriter, r *http.Request) {
	c.page(w, r, logoutTmpl, Page{Title: "Sign out", Description: "End this session on the server.", Narrow: true, Data: map[string]any{"CSRF": csrfToken(r)}})
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
	if c.NoAccounts {
		http.Error(w, "this console has no accounts (serve --no-accounts): there is no session to end", http.StatusNotFound)
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

func boolInt(b bool, n int) int {
	if b {
		return n
	}
	return 0
}

// loginPageOf is the sign-in page (first visit: set the password with the setup code).
func (c *Console) loginPageOf(next, errText string, status int) Page {
	setup := !c.Accounts.HasPassword()
	p := Page{Title: "Sign in", Description: "Sign in to this agentrun server's console.", Bare: true, Status: status,
		Data: map[string]any{"Next": next, "Error": errText, "Setup": setup}}
	if setup {
		p.Title, p.Description = "Set a password", "First visit: choose the password this console asks for from now on."
	}
	return p
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
	"phaseTone": func(p api.Phase, r api.Reason) string {
		t, _ := tone(string(p), string(r))
		return t
	},
	"depthClass": func(d int) string {
		if d > 9 {
			return "depth-deep"
		}
		return "depth-" + strconv.Itoa(d)
	},
}

var loginTmpl = newPage("login", `<div class="card">
{{if .Error}}<p class="note warn" role="alert">{{.Error}}</p>{{end}}
<form method="post" action="/login" class="form"><input type="hidden" name="next" value="{{.Next}}">
{{if .Setup}}<p class="help">The setup code is printed where the server started.</p>
<div class="field"><label for="setup_code">Setup code</label><input id="setup_code" name="setup_code" autocomplete="one-time-code" autofocus></div>{{end}}
<div class="field"><label for="user">User</label><input id="user" name="user" value="admin" autocomplete="username"></div>
<div class="field"><label for="password">Password</label><input id="password" type="password" name="password" autocomplete="{{if .Setup}}new-password{{else}}current-password{{end}}"{{if not .Setup}} autofocus{{end}}></div>
<button class="primary">{{if .Setup}}Set password and sign in{{else}}Sign in{{end}}</button></form></div>`)

var logoutTmpl = newPage("logout", `<form method="post" action="/logout" class="form card"><input type="hidden" name="csrf" value="{{.CSRF}}">
<p>This ends the session on the server: the console asks for the password again.</p>
<button id="logout" class="primary">Sign out</button></form>`)
