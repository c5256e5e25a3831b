package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/secret"
	"agentrun.dev/agentrun/internal/store"
	tmpl "agentrun.dev/agentrun/internal/template"
	"agentrun.dev/agentrun/internal/trigger"
)

// Templates (/templates, /templates/NAME): the templates embedded in the binary
// (internal/template), each with what it does, its tools and computer, triggers and cap, and an
// Apply form on the same screen that asks for what the template needs: the agent's name, the
// template's parameters, and each trigger's signing secret (a password input; a secret already
// stored is not asked for). The form is read into the same request `agentrun template apply`
// sends (template.Load) and made through the code of POST /v2/templates/apply
// (Agents.ApplyTemplate): all or nothing, the pasted secrets included. MCP servers a template
// names are granted no tool until a person ticks them on the agent's MCP page. After apply the
// page links to the agent and its triggers, says what is left to do, and offers Start a run.

func (c *Console) registerTemplates(mux *http.ServeMux) {
	mux.HandleFunc("GET /templates", c.guard(c.templateList))
	mux.HandleFunc("GET /templates/{name}", c.guard(c.templatePage))
	mux.HandleFunc("POST /templates/{name}/apply", c.guard(c.applyTemplate))
	mux.HandleFunc("GET /templates/{name}/applied", c.guard(c.appliedPage))
}

// templateView is one template as the pages show it.
type templateView struct {
	T        *tmpl.Template
	Name     string
	Tools    []string
	Computer string
	Cap      string
	Triggers []templateTrigger
	MCP      []string
}

// templateTrigger is one trigger of a template, with the secret it verifies deliveries with.
type templateTrigger struct {
	File, Name, Kind, What string
	// Secret is the secret the trigger's deliveries are signed with ("" for none); Stored: it
	// exists already, so the form does not ask for it.
	Secret string
	Stored bool
	// Input is the form input the secret is pasted into.
	Input string
}

// triggerStem is a template trigger's file name without triggers/ and .yaml.
func triggerStem(file string) string {
	return strings.TrimSuffix(strings.TrimPrefix(file, tmpl.TriggersDir+"/"), ".yaml")
}

func triggerWhat(t *api.Trigger) string {
	switch s := t.Spec; {
	case s.Schedule != nil:
		z := s.Schedule.TimeZone
		if z == "" {
			z = "the server's time zone"
		}
		return "on the schedule " + s.Schedule.Cron + " (" + z + ")"
	case s.GitHub != nil:
		what := "GitHub " + strings.Join(s.GitHub.Events, ", ")
		if len(s.GitHub.Actions) > 0 {
			what += " (" + strings.Join(s.GitHub.Actions, ", ") + ")"
		}
		if len(s.GitHub.Repositories) > 0 {
			what += " of " + strings.Join(s.GitHub.Repositories, ", ")
		}
		return what
	case s.Webhook != nil:
		return "a signed webhook delivery (Standard Webhooks)"
	}
	return "by hand"
}

// shown holds each embedded template loaded with its defaults, as the pages show it (the binary's
// templates do not change while it runs; the pages only read them).
var shown sync.Map

// loadTemplate loads embedded template name with the form's choices.
func loadTemplate(name string, opt tmpl.Options) (*tmpl.Template, error) {
	def := opt.Name == "" && opt.Set == nil && opt.Now.IsZero()
	if t, ok := shown.Load(name); ok && def {
		return t.(*tmpl.Template), nil
	}
	t, err := loadFresh(name, opt)
	if err == nil && def {
		shown.Store(name, t)
	}
	return t, err
}

func loadFresh(name string, opt tmpl.Options) (*tmpl.Template, error) {
	f, ok := tmpl.Embedded(name)
	if !ok {
		return nil, api.E(api.CodeNotFound, "template", "no template %q (there are: %s)", name, strings.Join(tmpl.Names(), ", "))
	}
	return tmpl.Load(f, opt)
}

func (c *Console) viewOf(ctx context.Context, t *tmpl.Template) (templateView, error) {
	a := t.Apply.Agent
	v := templateView{T: t, Name: t.Manifest.Name, Tools: api.OfferedTools(&a.Spec), Computer: computerText(a.Spec.Computer), Cap: a.Spec.PerRunMaxCostUSD}
	for _, s := range a.Spec.MCPServers {
		v.MCP = append(v.MCP, s.Name)
	}
	for i := range t.Apply.Triggers {
		tr := &t.Apply.Triggers[i]
		tt := templateTrigger{File: t.TriggerFiles[i], Name: tr.Metadata.Name, Kind: tr.Spec.Kind(), What: triggerWhat(tr), Secret: tr.Spec.SigningSecret()}
		tt.Input = "secret-" + triggerStem(tt.File)
		if tt.Secret != "" {
			_, err := c.Store.GetSecret(ctx, tt.Secret)
			switch {
			case err == nil:
				tt.Stored = true
			case !errors.Is(err, store.ErrNotFound):
				return v, err
			}
		}
		v.Triggers = append(v.Triggers, tt)
	}
	return v, nil
}

func (c *Console) templateList(w http.ResponseWriter, r *http.Request) {
	var views []templateView
	for _, n := range tmpl.Names() {
		t, err := loadTemplate(n, tmpl.Options{})
		if err != nil {
			http.Error(w, "template "+n+": "+err.Error(), http.StatusInternalServerError)
			return
		}
		v, err := c.viewOf(r.Context(), t)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		views = append(views, v)
	}
	c.page(w, r, templateListTmpl, Page{Title: "Templates", ID: "templates-title",
		Description: "Ready-made agents this server ships: open one to see what it needs, apply it in one step, then start a run.",
		Data:        map[string]any{"Templates": views}})
}

// templateForm is the Apply form's values as typed (secrets are never put back).
type templateForm struct {
	Name   string
	Params map[string]string
}

type paramRow struct {
	Key, Description, Value, Input string
}

func (c *Console) templatePage(w http.ResponseWriter, r *http.Request) {
	c.renderTemplate(w, r, http.StatusOK, templateForm{}, nil)
}

// renderTemplate draws a template's page with its Apply form; errs are the form's errors by
// input name ("" for the form as a whole).
func (c *Console) renderTemplate(w http.ResponseWriter, r *http.Request, status int, f templateForm, errs map[string]*api.Error) {
	name := r.PathValue("name")
	t, err := loadTemplate(name, tmpl.Options{})
	if err != nil {
		e := apiErr(err)
		if e.Code == api.CodeNotFound {
			http.Error(w, e.Message, http.StatusNotFound)
		} else {
			http.Error(w, "template "+name+": "+err.Error(), http.StatusInternalServerError)
		}
		return
	}
	v, err := c.viewOf(r.Context(), t)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if f.Name == "" {
		f.Name = t.Manifest.Name
	}
	var params []paramRow
	for k, p := range t.Manifest.Params {
		val, ok := f.Params[k]
		if !ok {
			val = p.Default
		}
		params = append(params, paramRow{Key: k, Description: p.Description, Value: val, Input: "param-" + k})
	}
	sort.Slice(params, func(i, j int) bool { return params[i].Key < params[j].Key })
	if errs == nil {
		errs = map[string]*api.Error{}
	}
	c.page(w, r, templateTmpl, Page{Title: "Template " + name, ID: "template-title", Description: t.Manifest.Description + ".",
		Crumbs: []Crumb{{"Templates", "/templates"}}, Actions: []Action{{Label: "Apply", Href: "#apply"}}, Status: status,
		Data: map[string]any{"V": v, "F": f, "Params": params, "Errors": errs, "FormError": errs[""], "CSRF": csrfToken(r)}})
}

// templateErrInput is the Apply form's input an error of the apply belongs to ("" for the form):
// the agent's name, or a parameter's.
func templateErrInput(e *api.Error) string {
	switch f := e.Field; {
	case f == "metadata.name", f == "agent.metadata.name":
		return "name"
	}
	return ""
}

// applyTemplate is POST /templates/NAME/apply.
func (c *Console) applyTemplate(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form (at most 64 KiB)", http.StatusBadRequest)
		return
	}
	if !csrfValid(r, r.PostForm.Get("csrf")) {
		http.Error(w, "the form is stale or did not come from this console: reload the page", http.StatusForbidden)
		return
	}
	if c.Agents == nil {
		http.Error(w, "this console cannot apply templates", http.StatusServiceUnavailable)
		return
	}
	name := r.PathValue("name")
	base, err := loadTemplate(name, tmpl.Options{})
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	f := templateForm{Name: strings.TrimSpace(r.PostForm.Get("name")), Params: map[string]string{}}
	for k := range base.Manifest.Params {
		if v, ok := r.PostForm["param-"+k]; ok {
			f.Params[k] = strings.TrimSpace(v[0])
		}
	}
	refuse := func(e *api.Error) {
		in := templateErrInput(e)
		st := e.Status
		if st == 0 {
			st = http.StatusUnprocessableEntity
		}
		c.renderTemplate(w, r, st, f, map[string]*api.Error{in: e})
	}
	t, err := loadTemplate(name, tmpl.Options{Name: f.Name, Set: f.Params, Now: time.Now()})
	if err != nil {
		var te *tmpl.Error
		if errors.As(err, &te) {
			e := *te.Err
			e.Message = te.File + ": " + e.Message
			refuse(&e)
			return
		}
		refuse(apiErr(err))
		return
	}
	v, err := c.viewOf(r.Context(), t)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	// Each signing secret not stored yet must be pasted: the form asks for it, so a trigger
	// never starts suspended for want of one.
	secrets := map[string]map[string]string{}
	errs := map[string]*api.Error{}
	for _, tt := range v.Triggers {
		if tt.Secret == "" || tt.Stored {
			continue
		}
		val := r.PostForm.Get(tt.Input)
		if strings.TrimSpace(val) == "" {
			errs[tt.Input] = api.E(api.CodeRequired, "", "paste the secret %s signs deliveries with (the trigger %s verifies each delivery with it)", tt.Secret, tt.Name)
			continue
		}
		if err := secret.CheckEntry(trigger.SecretKey, val); err != nil {
			errs[tt.Input] = api.Invalid("", "the signing secret of %s: %v", tt.Name, err)
			continue
		}
		secrets[tt.Secret] = map[string]string{trigger.SecretKey: val}
	}
	if len(errs) > 0 {
		c.renderTemplate(w, r, http.StatusUnprocessableEntity, f, errs)
		return
	}
	out, err := c.Agents.ApplyTemplate(r.Context(), &t.Apply, secrets)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return
		}
		refuse(apiErr(err))
		return
	}
	http.Redirect(w, r, "/templates/"+url.PathEscape(name)+"/applied?agent="+url.QueryEscape(out.Agent.Metadata.Name), http.StatusSeeOther)
}

// appliedPage is GET /templates/NAME/applied?agent=AGENT, where an apply sends the browser: the
// agent made, its triggers as they are now, what is left for the person, and Start a run.
func (c *Console) appliedPage(w http.ResponseWriter, r *http.Request) {
	name, agent := r.PathValue("name"), r.URL.Query().Get("agent")
	a, err := c.Store.GetAgent(r.Context(), agent)
	if err != nil || a.Metadata.Labels[api.TemplateLabel] != name {
		http.Error(w, "no agent "+agent+" made from the template "+name, http.StatusNotFound)
		return
	}
	t, err := loadTemplate(name, tmpl.Options{Name: agent})
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	v, err := c.viewOf(r.Context(), t)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	ts, err := c.Store.ListTriggers(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var rows []triggerRow
	for _, tr := range ts {
		if tr.Spec.Agent == agent {
			row, err := c.triggerRowOf(r, tr, 0)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			rows = append(rows, row)
		}
	}
	c.page(w, r, appliedTmpl, Page{Title: "Applied " + name, ID: "applied-title", Description: "What the template made, what is left for you, and its first run.",
		Crumbs: []Crumb{{"Templates", "/templates"}, {name, "/templates/" + url.PathEscape(name)}},
		Data:   map[string]any{"V": v, "Agent": agent, "Triggers": rows, "Skills": a.Spec.Skills, "Needs": t.Manifest.Needs, "CSRF": csrfToken(r)}})
}

var templateListTmpl = agentPageOf("templates", `<table id="templates" class="table"><thead><tr><th scope="col">Template</th><th scope="col">What it does</th><th scope="col">Tools and computer</th><th scope="col">Triggers</th><th scope="col" class="num">Cap per run</th></tr></thead><tbody>
{{range .Templates}}<tr data-template="{{.Name}}"><td><a href="/templates/{{pathEscape .Name}}">{{.Name}}</a></td><td>{{.T.Manifest.Description}}</td>
<td>{{range $i, $t := .Tools}}{{if $i}}, {{end}}<code>{{$t}}</code>{{end}}<br><small class="muted">computer: {{.Computer}}</small></td><td>{{range .Triggers}}{{.Kind}}: {{.What}}<br>{{else}}<span class="muted">none</span>{{end}}</td><td class="num">{{money .Cap}}</td></tr>{{end}}
</tbody></table>`)

var templateTmpl = agentPageOf("template", `{{with .V}}<table id="template-summary" class="table"><tbody>
<tr><th scope="row">Tools</th><td>{{range $i, $t := .Tools}}{{if $i}}, {{end}}<code>{{$t}}</code>{{end}}</td></tr>
<tr><th scope="row">Computer</th><td>{{.Computer}}</td></tr>
<tr><th scope="row">Triggers</th><td>{{range .Triggers}}<code>{{.Name}}</code>: {{.Kind}}, {{.What}}<br>{{else}}none: runs start by hand or from the API{{end}}</td></tr>
<tr><th scope="row">Cap per run</th><td>{{money .Cap}}</td></tr>
<tr><th scope="row">Learning</th><td>{{if .T.Apply.Agent.Spec.Learning}}on: it keeps notes between runs{{else}}off{{end}}</td></tr>
<tr><th scope="row">Approvals</th><td>{{with .T.Apply.Agent.Spec.Approvals}}{{range .Rules}}{{.Action}} <code>{{.Match}}</code><br>{{end}}otherwise {{with .Default}}{{.}}{{else}}the default{{end}}{{else}}the server's default{{end}}</td></tr>
<tr><th scope="row">MCP servers</th><td>{{range .MCP}}{{.}} {{else}}none{{end}}</td></tr>
</tbody></table>
<details><summary>README</summary><pre id="readme">{{.T.Readme}}</pre></details>{{end}}
<h2 id="apply">Apply</h2>
<p>Makes the agent{{if .V.Triggers}} and its triggers{{end}} in one step, as <code>agentrun template apply {{.V.Name}}</code> does: everything is checked first, and nothing is made if any part is refused.</p>
{{with .FormError}}<p class="note warn field-error" role="alert" id="form-error" data-field="" data-code="{{.Code}}">Not applied: {{.Code}}{{if .Field}} at {{.Field}}{{end}}: {{.Message}}</p>{{end}}
{{$e := .Errors}}{{if and $e (not .FormError)}}<p class="note warn" role="alert" id="form-refused">Not applied: see the field marked below. Nothing was made.</p>{{end}}
<form method="post" action="/templates/{{pathEscape .V.Name}}/apply" id="apply-form" class="form card"><input type="hidden" name="csrf" value="{{.CSRF}}">
<div class="field"><label for="name">Agent name</label><input id="name" name="name" value="{{.F.Name}}" autocomplete="off" required aria-describedby="name-help{{if index $e "name"}} name-error{{end}}"{{if index $e "name"}} aria-invalid="true"{{end}}>
<small id="name-help" class="help">The agent's name{{if .V.Triggers}}; its triggers are named after it{{end}}.</small>{{template "fieldError" (dict "F" "name" "E" $e)}}</div>
{{range .Params}}<div class="field"><label for="{{.Input}}">{{.Key}}</label><input id="{{.Input}}" name="{{.Input}}" value="{{.Value}}" autocomplete="off" aria-describedby="{{.Input}}-help">
<small id="{{.Input}}-help" class="help">{{.Description}}</small>{{template "fieldError" (dict "F" .Input "E" $e)}}</div>{{end}}
{{range .V.Triggers}}{{if .Secret}}{{if .Stored}}<p id="{{.Input}}-stored" class="note">Trigger {{.Name}} verifies deliveries with the secret <code>{{.Secret}}</code>, which is stored already.</p>
{{else}}<div class="field"><label for="{{.Input}}">Signing secret of the trigger {{.Name}}</label><input type="password" id="{{.Input}}" name="{{.Input}}" autocomplete="off" aria-describedby="{{.Input}}-help{{if index $e .Input}} {{.Input}}-error{{end}}"{{if index $e .Input}} aria-invalid="true"{{end}}>
<small id="{{.Input}}-help" class="help">The secret the sender signs each delivery with ({{.What}}), kept sealed as <code>secret:{{.Secret}}</code> and never shown again. Paste it again after a refusal.</small>{{template "fieldError" (dict "F" .Input "E" $e)}}</div>{{end}}{{end}}{{end}}
{{if .V.MCP}}<p id="mcp-note" class="note">MCP servers ({{join .V.MCP ", "}}): no tool is granted until you tick it on the agent's MCP page after apply.</p>{{end}}
<p><button class="primary" id="apply-template">Apply {{.V.Name}}</button></p></form>`)

var appliedTmpl = agentPageOf("template-applied", `<p id="applied" role="status" class="note">Made the agent <a href="/agents/{{pathEscape .Agent}}" id="made-agent">{{.Agent}}</a>{{with .Skills}} with the skills {{join . ", "}}{{end}}{{if .Triggers}} and its triggers{{end}}.</p>
{{with .Triggers}}<ul id="made-triggers">{{range .}}<li><a href="/triggers/{{pathEscape .T.Metadata.Name}}">{{.T.Metadata.Name}}</a> ({{.Kind}}): {{if .T.Spec.Suspend}}{{pill "Suspended"}}{{else}}active{{end}}{{with .URL}}; deliveries go to {{copyid .}}{{end}}{{with .Schedule}}; {{.}}{{end}}</li>{{end}}</ul>{{end}}
{{if or .Needs .V.MCP}}<h2>Left for you</h2><ul id="needs">{{range .Needs}}<li>{{.What}}{{with .Command}}: <code>{{.}}</code>{{end}}</li>{{end}}{{if .V.MCP}}<li>Tick the MCP tools the agent may use on <a href="/agents/{{pathEscape .Agent}}/mcp">its MCP page</a>: none is granted yet.</li>{{end}}</ul>{{end}}
<h2>Start a run</h2>
{{template "startRun" (dict "Agent" .Agent "CSRF" .CSRF "Input" "" "Failed" nil)}}`)
