package console

// The layout every console page renders into, and the components pages share.
//
// # How a page renders into the layout (the Go API for page authors)
//
// Parse a page's body once, at package level, with newPage; it may define templates of its own
// and takes extra FuncMaps after the body:
//
//	var agentsTmpl = newPage("agents", `<table class="table">…{{range .Agents}}…{{end}}</table>`)
//
// and render it from the handler with c.page, giving what the layout draws around the body in
// a Page (the body's template data is p.Data, so `.` and `$` in the body are p.Data):
//
//	c.page(w, r, agentsTmpl, Page{
//		Title:       "Agents",                        // <title> and the page's <h1>
//		Description: "Every agent, its latest revision and its recent runs.", // one line under the title
//		Crumbs:      []Crumb{{"Agents", "/agents"}},  // below top level only; the current page (Title) is added last
//		Actions:     []Action{{Label: "New agent", Href: "/agents/new"}}, // top right; the first is the primary one
//		Data:        map[string]any{"Agents": as, "CSRF": csrfToken(r)},
//	})
//
// Page.Status sets the HTTP status (0: 200); Page.ID the <h1>'s id; Page.Refresh reloads the page
// every so many seconds while it is live: without script by a <noscript> meta refresh, with it by
// static/layout.js, which a person can pause and which waits while they type (a meta refresh
// with script on is an accessibility failure); Page.RefreshNoscript leaves out the script's
// reload, for a page whose own script keeps it live (the run page); Page.Scripts names scripts
// under static/ to load (deferred, versioned by their content: "console.js"); Page.Narrow lays
// the body out at form width (~640 px); Page.Nav names the navigation entry to mark current when
// the URL's first segment does not (mission, runs, agents, templates, triggers, groups, settings).
// Every file under static/ is served at /static/NAME (staticURL gives its versioned URL).
//
// The CSP forbids inline script and inline style attributes (style-src 'self'): style with the
// classes of static/console.css, and draw geometry as SVG attributes (x, y, width, height),
// which CSP does not count as style. Colours are CSS custom properties (--bg, --surface, --text,
// --muted, --border, --accent, and per tone --run, --wait, --ok, --bad, --off with a -bg each),
// set for light and dark; SVG takes them through classes (fill: var(--accent)).
//
// # Components (template funcs, available in every newPage body)
//
//	{{pill .Status.Phase .Status.Reason}}  status pill: icon + phase word + colour (+ reason), never colour alone
//	{{money .Status.Cost.TotalUSD}}         "$0.0421"; "" or "unknown" shows "unknown", never $0
//	{{runCost .Status.Cost}}                a run's cost (of its cap when it has one); none yet: "unknown"
//	{{reltime .Metadata.CreationTimestamp}} "5m ago" in a <time> with the exact time on hover
//	{{copyid .Metadata.Name}}               an id in <code> with a Copy button (static/layout.js)
//	{{empty "No runs yet" "Start one with …"}} an empty state saying what to do next (a template.HTML hint is kept as HTML)
//	{{barChart "Cost per day, last 14 days" .Bars}}  an SVG bar chart (role="img", named) with a "Show as table" table
//	{{capChart "Spend against caps" .Caps}}          spend bars with the cap marked, and its table
//	{{empty "No agents" (raw "Choose <a href=\"/agents/new\">New agent</a>.")}} raw: HTML written in the template, never data
//
// Page.Tabs draws a row of sibling pages under the title: settingsTabs(current) for Settings
// (Model keys, Secrets, Computers) and agentTabsOf(agent, current) for an agent's pages; add a
// tab there. Without accounts (serve --no-accounts) c.user(r) is "local"; use it, not the
// session cookie, for who did something.
//
// Tables: class="table" (sticky header, full width); forms: class="form"; buttons:
// class="button" (primary: "button primary", danger: "button danger"); notes: class="note"
// (warnings: "note warn"); cards: class="card"; a grid of cards: class="cards".

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"os"
	"path"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
)

// Page is what a handler gives the layout besides its body's data.
type Page struct {
	Title       string
	Description string
	Crumbs      []Crumb
	Actions     []Action
	Data        any
	Status      int
	ID          string
	Nav         string
	Refresh     int
	// RefreshNoscript puts the refresh in <noscript>: the page's script keeps it live otherwise.
	RefreshNoscript bool
	Scripts         []string
	Narrow          bool
	// Bare leaves the navigation out (the sign-in page, before anyone is signed in).
	Bare bool
	// Tabs are a row of sibling pages under the title (settingsTabs, agentTabsOf).
	Tabs []Tab
}

// Tab is one of a row of sibling pages; the current one is marked.
type Tab struct {
	Label, Href string
	Current     bool
}

// settingsTabs are the Settings pages; current is the Href of the one shown.
func settingsTabs(current string) []Tab {
	return tabsOf(current, Tab{Label: "Model keys", Href: "/settings"}, Tab{Label: "Secrets", Href: "/settings/secrets"},
		Tab{Label: "Computers", Href: "/settings/computers"}, Tab{Label: "Webhooks", Href: "/settings/webhooks"})
}

// agentTabsOf are an agent's pages; current is the Href of the one shown.
func agentTabsOf(agent, current string) []Tab {
	base := "/agents/" + template.URLQueryEscaper(agent)
	return tabsOf(current, Tab{Label: "Overview", Href: base}, Tab{Label: "MCP tools", Href: base + "/mcp"},
		Tab{Label: "Learning", Href: base + "/learning"})
}

func tabsOf(current string, tabs ...Tab) []Tab {
	for i := range tabs {
		tabs[i].Current = tabs[i].Href == current
	}
	return tabs
}

// Crumb is one step of the breadcrumbs.
type Crumb struct{ Label, Href string }

// Action is a link at the top right of a page, styled as a button.
type Action struct {
	Label, Href string
	// ID, when set, is the link's id (tests and scripts find it by it).
	ID string
}

type navItem struct {
	Key, Label, Href string
	Current          bool
}

var navItems = []navItem{
	{Key: "mission", Label: "Mission Control", Href: "/"},
	{Key: "runs", Label: "Runs", Href: "/runs"},
	{Key: "agents", Label: "Agents", Href: "/agents"},
	{Key: "templates", Label: "Templates", Href: "/templates"},
	{Key: "triggers", Label: "Triggers", Href: "/triggers"},
	{Key: "groups", Label: "Groups", Href: "/groups"},
	{Key: "settings", Label: "Settings", Href: "/settings"},
}

type layoutData struct {
	Page
	Server, User string
	NoAccounts   bool
	NavItems     []navItem
	CSS, JS      string
	ScriptURLs   []string
}

//go:embed static
var assets embed.FS

// assetVersions maps each file under static/ to a hash of its content, so a page names the
// version it was made with and browsers may cache it for good.
var assetVersions = func() map[string]string {
	out := map[string]string{}
	_ = fs.WalkDir(assets, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[strings.TrimPrefix(p, "static/")] = hex.EncodeToString(sum[:6])
		return nil
	})
	return out
}()

// staticURL is the versioned URL of a file under static/.
func staticURL(name string) string {
	return "/static/" + name + "?v=" + assetVersions[name]
}

// serveStatic is GET /static/NAME: the embedded files, the same for everyone (no session).
func serveStatic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	v, ok := assetVersions[name]
	if !ok || strings.Contains(name, "..") {
		http.NotFound(w, r)
		return
	}
	b, _ := assets.ReadFile("static/" + name)
	h := w.Header()
	switch path.Ext(name) {
	case ".css":
		h.Set("Content-Type", "text/css; charset=utf-8")
	case ".js":
		h.Set("Content-Type", "text/javascript; charset=utf-8")
	case ".svg":
		h.Set("Content-Type", "image/svg+xml")
	}
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("ETag", `"`+v+`"`)
	if r.URL.Query().Get("v") == v {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r, "", time.Time{}, strings.NewReader(string(b)))
}

// newPage parses a page body into a copy of the layout.
func newPage(name, body string, extra ...template.FuncMap) *template.Template {
	t := template.New(name).Funcs(funcs).Funcs(components)
	for _, fm := range extra {
		t.Funcs(fm)
	}
	template.Must(t.Parse(layoutHTML))
	template.Must(t.New("body").Parse(body))
	return t
}

// serverName is what the navigation calls this server.
func (c *Console) serverName() string {
	if c.Name != "" {
		return c.Name
	}
	if h, err := os.Hostname(); err == nil {
		return h
	}
	return "agentrun"
}

// page renders t's body into the layout.
func (c *Console) page(w http.ResponseWriter, r *http.Request, t *template.Template, p Page) {
	d := layoutData{Page: p, Server: c.serverName(), NoAccounts: c.NoAccounts, CSS: staticURL("console.css"), JS: staticURL("layout.js")}
	d.User = c.user(r)
	if !p.Bare {
		key := p.Nav
		if key == "" {
			seg := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)[0]
			key = seg
			if seg == "" {
				key = "mission"
			}
		}
		for _, it := range navItems {
			it.Current = it.Key == key
			d.NavItems = append(d.NavItems, it)
		}
	}
	for _, s := range p.Scripts {
		d.ScriptURLs = append(d.ScriptURLs, staticURL(s))
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	securityHeaders(w)
	if p.Status != 0 {
		w.WriteHeader(p.Status)
	}
	if err := t.Execute(w, d); err != nil && p.Status == 0 {
		// Headers may be out already: the page then ends where it failed.
		fmt.Fprintf(w, "\n<p>the page failed: %s</p>", template.HTMLEscapeString(err.Error()))
	}
}

// user is who is signed in ("" when no one is).
func (c *Console) user(r *http.Request) string {
	if c.NoAccounts {
		return localUser
	}
	ck, err := r.Cookie(cookieName)
	if err != nil || c.Accounts == nil {
		return ""
	}
	u, _ := c.Accounts.Verify(ck.Value, time.Now())
	return u
}

const layoutHTML = `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · agentrun</title>
{{if .Refresh}}<noscript><meta http-equiv="refresh" content="{{.Refresh}}"></noscript>{{end}}
<link rel="stylesheet" href="{{.CSS}}">
<script src="{{.JS}}"></script>
</head><body{{if .Bare}} class="bare"{{end}}{{if and .Refresh (not .RefreshNoscript)}} data-refresh="{{.Refresh}}"{{end}}>
<a class="skip" href="#main">Skip to content</a>
<div class="shell">
{{if not .Bare}}<header class="side"><div class="side-inner">
<div class="brand"><a href="/" class="logo">agentrun</a><span class="server" title="this server">{{.Server}}</span></div>
<nav aria-label="Main" class="nav"><ul>{{range .NavItems}}<li><a href="{{.Href}}"{{if .Current}} aria-current="page"{{end}}>{{.Label}}</a></li>{{end}}</ul></nav>
<div class="who">{{if .NoAccounts}}<span>No accounts: this machine only</span>{{else if .User}}<span>Signed in as <b id="signed-in">{{.User}}</b></span> <a href="/logout">Sign out</a>{{end}}
<button type="button" id="theme-toggle" class="button small" hidden>Theme: auto</button></div>
</div></header>{{end}}
<main id="main" tabindex="-1" class="main{{if .Narrow}} narrow{{end}}">
<div class="page-head">
{{if .Crumbs}}<nav aria-label="Breadcrumbs" class="crumbs"><ol>{{range .Crumbs}}<li><a href="{{.Href}}">{{.Label}}</a></li>{{end}}<li aria-current="page">{{.Title}}</li></ol></nav>{{end}}
<div class="title-row"><div class="titles"><h1{{with .ID}} id="{{.}}"{{end}}>{{.Title}}</h1>{{with .Description}}<p class="lede">{{.}}</p>{{end}}{{if and .Refresh (not .RefreshNoscript)}}<p class="live-note"><span id="live-state" role="status">Updates every {{.Refresh}} s.</span> <button type="button" id="live-pause" class="button small" hidden aria-pressed="false">Pause updates</button></p>{{end}}</div>
{{if .Actions}}<div class="actions">{{range $i, $a := .Actions}}<a class="button{{if eq $i 0}} primary{{end}}" href="{{$a.Href}}"{{with $a.ID}} id="{{.}}"{{end}}>{{$a.Label}}</a>{{end}}</div>{{end}}
</div>
{{if .Tabs}}<nav aria-label="{{.Title}} pages" class="tabs-nav"><ul class="tabs">{{range .Tabs}}<li><a href="{{.Href}}"{{if .Current}} aria-current="page"{{end}}>{{.Label}}</a></li>{{end}}</ul></nav>{{end}}
</div>
{{template "body" .Data}}
</main></div>
{{range .ScriptURLs}}<script src="{{.}}" defer></script>
{{end}}</body></html>`

// components are the template funcs every page body has.
var components = template.FuncMap{
	"pill":     pill,
	"money":    money,
	"runCost":  runCost,
	"reltime":  reltime,
	"copyid":   copyID,
	"empty":    emptyState,
	"barChart": barChart,
	"capChart": capChart,
	// raw keeps a string written in a template as HTML (for empty's hint): never data.
	"raw": func(s string) template.HTML { return template.HTML(s) },
}

// icons are the pills' shapes (SVG, so they draw the same with every font), each beside a word.
var icons = map[string]string{
	"run":   `<path d="M4 2.5l9 5.5-9 5.5z" fill="currentColor"/>`,
	"wait":  `<circle cx="8" cy="8" r="6.5" fill="none" stroke="currentColor" stroke-width="1.5"/><path d="M7.2 4h1.6v5H7.2zM7.2 10.4h1.6V12H7.2z" fill="currentColor"/>`,
	"queue": `<circle cx="8" cy="8" r="6.2" fill="none" stroke="currentColor" stroke-width="1.6"/><path d="M8 4.5V8l2.5 1.6" fill="none" stroke="currentColor" stroke-width="1.6"/>`,
	"pause": `<path d="M4 3h3v10H4zM9 3h3v10H9z" fill="currentColor"/>`,
	"ok":    `<path d="M2.5 8.5l3.5 3.5 7.5-8" fill="none" stroke="currentColor" stroke-width="2"/>`,
	"bad":   `<path d="M3.5 3.5l9 9M12.5 3.5l-9 9" fill="none" stroke="currentColor" stroke-width="2"/>`,
	"off":   `<circle cx="8" cy="8" r="6.2" fill="none" stroke="currentColor" stroke-width="1.6"/><path d="M3.6 12.4l8.8-8.8" stroke="currentColor" stroke-width="1.6"/>`,
	"dot":   `<circle cx="8" cy="8" r="3.5" fill="currentColor"/>`,
}

// tone is the colour family of a phase (run, wait: on a person, ok, bad, off, queue) and its icon.
func tone(phase, reason string) (tone, icon string) {
	if api.WaitingOnPerson(api.Phase(phase), api.Reason(reason)) {
		return "wait", "wait"
	}
	switch phase {
	case "Running", "Cancelling", "Evaluating":
		return "run", "run"
	case "Queued", "Pending", "Blocked":
		return "queue", "queue"
	case "Waiting":
		return "queue", "pause"
	case "Succeeded", "Completed", "Passed", "live", "available", "set":
		return "ok", "ok"
	case "Failed", "Error", "gone", "missing":
		return "bad", "bad"
	case "not available":
		return "off", "bad"
	case "Cancelled", "Stopped", "Suspended":
		return "off", "off"
	}
	return "off", "dot"
}

func iconSVG(name string) string {
	return `<svg class="icon" viewBox="0 0 16 16" aria-hidden="true" focusable="false">` + icons[name] + `</svg>`
}

// pill is a status pill: an icon and the phase word in the phase's colour, and the reason after
// it when there is one.
func pill(phase any, reason ...any) template.HTML {
	p := fmt.Sprint(phase)
	var why string
	if len(reason) > 0 && reason[0] != nil {
		why = fmt.Sprint(reason[0])
	}
	if p == "Succeeded" && why == "Completed" {
		why = "" // says nothing the phase does not
	}
	tn, icon := tone(p, why)
	s := `<span class="pill tone-` + tn + `" data-phase="` + template.HTMLEscapeString(p) + `">` + iconSVG(icon) + template.HTMLEscapeString(p) + `</span>`
	if why != "" {
		s += ` <span class="reason">` + template.HTMLEscapeString(why) + `</span>`
	}
	return template.HTML(s)
}

// money is a USD amount as the API writes it ("0.0421", "at least 0.01", "unknown"): unknown is
// said, never drawn as $0.
func money(usd any) template.HTML {
	s := strings.TrimSpace(fmt.Sprint(usd))
	if usd == nil || s == "" || s == "unknown" || s == "<nil>" {
		return `<span class="money unknown" title="the cost could not be priced or is not known yet">unknown</span>`
	}
	return template.HTML(`<span class="money">` + template.HTMLEscapeString(cost.Dollars(s)) + `</span>`)
}

// runCost is a run's cost, "of" its cap when it has one.
func runCost(c *api.RunCost) template.HTML {
	if c == nil {
		return money("")
	}
	out := money(c.TotalUSD)
	if c.LimitUSD != "" {
		out += template.HTML(` <span class="muted">of</span> `) + money(c.LimitUSD)
	}
	return out
}

// reltime is a time as "5m ago" (or "in 5m") with the exact time on hover.
func reltime(v any) template.HTML {
	var t time.Time
	switch x := v.(type) {
	case time.Time:
		t = x
	case *time.Time:
		if x == nil {
			return ""
		}
		t = *x
	default:
		return ""
	}
	if t.IsZero() {
		return ""
	}
	exact := t.UTC().Format("2006-01-02 15:04:05 UTC")
	return template.HTML(`<time datetime="` + t.UTC().Format(time.RFC3339) + `" title="` + exact + `">` + relText(time.Since(t)) + `</time>`)
}

func relText(d time.Duration) string {
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < 10*time.Second:
		return "just now"
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		s = fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%dh", int(d.Hours()))
	default:
		s = fmt.Sprintf("%dd", int(d.Hours()/24))
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// copyID is an id with a button that copies it (the button shows once the script runs).
func copyID(id any) template.HTML {
	s := template.HTMLEscapeString(fmt.Sprint(id))
	return template.HTML(`<span class="copyid"><code>` + s + `</code><button type="button" class="copy" data-copy="` + s + `" aria-label="Copy ` + s + `" hidden>Copy</button></span>`)
}

// emptyState says there is nothing here and what to do next.
func emptyState(title string, next any) template.HTML {
	var n string
	switch x := next.(type) {
	case template.HTML:
		n = string(x)
	case nil:
	default:
		n = template.HTMLEscapeString(fmt.Sprint(x))
	}
	return template.HTML(`<div class="empty"><p class="empty-title">` + template.HTMLEscapeString(title) + `</p>` + ifNotEmpty(n, `<p>`+n+`</p>`) + `</div>`)
}

func ifNotEmpty(s, out string) string {
	if s == "" {
		return ""
	}
	return out
}

// renderHTML is for handlers rendering a bare body (a 404 page) through the layout.
func (c *Console) notFound(w http.ResponseWriter, r *http.Request, title, msg string) {
	c.page(w, r, messageTmpl, Page{Title: title, Status: http.StatusNotFound, Data: msg})
}

var messageTmpl = newPage("message", `<p class="note warn">{{.}}</p>`)
