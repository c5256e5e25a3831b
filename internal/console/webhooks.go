package console

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/trigger"
	"agentrun.dev/agentrun/internal/webhook"
)

// Settings → Webhooks (/settings/webhooks), for a signed-in person: the outbound webhooks with
// their pending deliveries and newest one, a form to add one (its whsec_ signing secret made at
// once and shown once), and each webhook's page: its deliveries with every attempt, a test
// delivery, a new signing secret, removal. A webhook is checked as the API checks it
// (CheckWebhook: the address rule of serve --webhook-allow included) and stored as POST
// /v2/webhooks stores it; the secret is made as `agentrun webhooks rotate` makes it.

func (c *Console) registerWebhooks(mux *http.ServeMux) {
	mux.HandleFunc("GET /settings/webhooks", c.guardPerson(c.webhooksPage))
	mux.HandleFunc("POST /settings/webhooks", c.guardPerson(c.addWebhook))
	mux.HandleFunc("GET /settings/webhooks/{name}", c.guardPerson(c.webhookPage))
	mux.HandleFunc("POST /settings/webhooks/{name}/test", c.guardPerson(c.testWebhook))
	mux.HandleFunc("POST /settings/webhooks/{name}/rotate", c.guardPerson(c.rotateWebhook))
	mux.HandleFunc("POST /settings/webhooks/{name}/remove", c.guardPerson(c.removeWebhook))
}

// webhookRow is a webhook as the list shows it.
type webhookRow struct {
	W       *api.Webhook
	Pending int
	Last    *api.WebhookDelivery
}

// webhookForm is the add form's input, kept on a refusal so nothing typed is lost.
type webhookForm struct {
	Name, URL, Agents string
	Events            map[string]bool
	Error             map[string]string // by input name
}

func (c *Console) webhooksPage(w http.ResponseWriter, r *http.Request) {
	note := ""
	if n := r.URL.Query().Get("removed"); n != "" && api.ValidName("name", n) == nil {
		note = "webhook " + n + " removed, with its deliveries."
	}
	c.renderWebhooks(w, r, http.StatusOK, webhookForm{Events: map[string]bool{}}, note)
}

func (c *Console) renderWebhooks(w http.ResponseWriter, r *http.Request, status int, f webhookForm, note string) {
	ctx := r.Context()
	hs, err := c.Store.ListWebhooks(ctx)
	if err != nil {
		http.Error(w, "list webhooks: "+err.Error(), http.StatusInternalServerError)
		return
	}
	pending, err := c.Store.PendingDeliveries(ctx)
	if err != nil {
		http.Error(w, "count deliveries: "+err.Error(), http.StatusInternalServerError)
		return
	}
	var rows []webhookRow
	for _, h := range hs {
		ds, err := c.Store.ListDeliveries(ctx, h.Metadata.Name, 1)
		if err != nil {
			http.Error(w, "list deliveries: "+err.Error(), http.StatusInternalServerError)
			return
		}
		row := webhookRow{W: h, Pending: pending[h.Metadata.Name]}
		if len(ds) > 0 {
			row.Last = &ds[0]
		}
		rows = append(rows, row)
	}
	c.page(w, r, webhooksTmpl, Page{Title: "Settings", ID: "webhooks", Description: "Webhooks: signed notifications of runs and triggers sent to other systems.",
		Tabs: settingsTabs("/settings/webhooks"), Status: status, Data: map[string]any{"Webhooks": rows, "Form": f, "Events": api.WebhookEvents,
			"CSRF": csrfToken(r), "Note": note, "NoSeal": c.Seal == nil}})
}

// webhookField is the add form's input an API field path belongs to.
func webhookField(path string) string {
	switch {
	case path == "metadata.name":
		return "name"
	case path == "spec.url":
		return "url"
	case strings.HasPrefix(path, "spec.events"):
		return "events"
	case strings.HasPrefix(path, "spec.agents"):
		return "agents"
	}
	return "form"
}

// addWebhook is POST /settings/webhooks: name, url, events (checkboxes), agents (comma or space
// separated; empty: every agent). The webhook is stored with its signing secret in the sealed
// secret NAME-hook, made now and shown once on the page that answers.
func (c *Console) addWebhook(w http.ResponseWriter, r *http.Request) {
	if !settingsForm(w, r) {
		return
	}
	if c.Seal == nil {
		http.Error(w, "this server has no seal key, so it cannot keep a webhook's signing secret", http.StatusServiceUnavailable)
		return
	}
	ctx := r.Context()
	f := webhookForm{Name: strings.TrimSpace(r.PostForm.Get("name")), URL: strings.TrimSpace(r.PostForm.Get("url")),
		Agents: strings.TrimSpace(r.PostForm.Get("agents")), Events: map[string]bool{}, Error: map[string]string{}}
	wh := &api.Webhook{Metadata: api.ObjectMeta{Name: f.Name}, Spec: api.WebhookSpec{URL: f.URL, SecretRef: f.Name + "-hook"}}
	for _, e := range r.PostForm["events"] {
		f.Events[e] = true
		wh.Spec.Events = append(wh.Spec.Events, e)
	}
	wh.Spec.Agents = strings.FieldsFunc(f.Agents, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' })
	check := c.CheckWebhook
	if check == nil {
		check = api.DefaultAndValidateWebhook
	}
	err := check(wh)
	if err == nil {
		if _, gerr := c.Store.GetWebhook(ctx, f.Name); gerr == nil {
			err = api.E(api.CodeAlreadyExists, "metadata.name", "webhook %q already exists: pick another name, or remove it first", f.Name)
		} else if !errors.Is(gerr, store.ErrNotFound) {
			err = gerr
		}
	}
	if err == nil {
		err = c.Store.CreateWebhook(ctx, wh)
	}
	if err != nil {
		e, ok := api.AsError(err)
		if !ok {
			http.Error(w, "add webhook: "+err.Error(), http.StatusInternalServerError)
			return
		}
		f.Error[webhookField(e.Field)] = e.Message
		c.renderWebhooks(w, r, http.StatusUnprocessableEntity, f, "")
		return
	}
	rot, err := trigger.RotateSecret(ctx, c.Store, c.Seal, wh.Spec.SecretRef, false, 0, time.Now())
	if err != nil {
		// The webhook stays (its deliveries wait, unsigned, until a secret is made): its page
		// says the secret is missing and offers to make one.
		c.renderWebhook(w, r, wh.Metadata.Name, http.StatusOK, "webhook "+wh.Metadata.Name+" added, but its signing secret could not be made: "+err.Error(), "")
		return
	}
	c.renderWebhook(w, r, wh.Metadata.Name, http.StatusCreated, "webhook "+wh.Metadata.Name+" added.", rot.Secret)
}

func (c *Console) webhookPage(w http.ResponseWriter, r *http.Request) {
	note := ""
	if id := r.URL.Query().Get("tested"); id != "" && len(id) < 100 && !strings.ContainsAny(id, "<>&\"' ") {
		note = "test delivery " + id + " queued: it shows below once sent."
	}
	c.renderWebhook(w, r, r.PathValue("name"), http.StatusOK, note, "")
}

// renderWebhook is a webhook's page; secret, when set, is a signing secret just made, shown this
// once.
func (c *Console) renderWebhook(w http.ResponseWriter, r *http.Request, name string, status int, note, secretText string) {
	ctx := r.Context()
	wh, err := c.Store.GetWebhook(ctx, name)
	if err != nil {
		c.notFound(w, r, "No such webhook", "There is no webhook "+name+".")
		return
	}
	ds, err := c.Store.ListDeliveries(ctx, name, 20)
	if err != nil {
		http.Error(w, "list deliveries: "+err.Error(), http.StatusInternalServerError)
		return
	}
	_, serr := c.Store.GetSecret(ctx, wh.Spec.SecretRef)
	if serr != nil && !errors.Is(serr, store.ErrNotFound) {
		http.Error(w, "read secret "+wh.Spec.SecretRef+": "+serr.Error(), http.StatusInternalServerError)
		return
	}
	events := slices.Clone(wh.Spec.Events)
	c.page(w, r, webhookTmpl, Page{Title: wh.Metadata.Name, ID: "webhook", Description: "A webhook: where it sends, what, and each delivery with its attempts.",
		Crumbs: []Crumb{{"Settings", "/settings"}, {"Webhooks", "/settings/webhooks"}}, Status: status,
		Data: map[string]any{"W": wh, "Events": strings.Join(events, ", "), "Deliveries": ds, "SecretSet": serr == nil, "Secret": secretText,
			"Note": note, "CSRF": csrfToken(r), "NoSeal": c.Seal == nil}})
}

// webhookOf is the webhook a POST's path names, or false when it answered.
func (c *Console) webhookOf(w http.ResponseWriter, r *http.Request) (*api.Webhook, bool) {
	if !settingsForm(w, r) {
		return nil, false
	}
	wh, err := c.Store.GetWebhook(r.Context(), r.PathValue("name"))
	if err != nil {
		http.Error(w, "no webhook "+r.PathValue("name"), http.StatusNotFound)
		return nil, false
	}
	return wh, true
}

// testWebhook is POST /settings/webhooks/NAME/test: a webhook.test delivery queued to this
// webhook alone, sent by the dispatcher as any other.
func (c *Console) testWebhook(w http.ResponseWriter, r *http.Request) {
	wh, ok := c.webhookOf(w, r)
	if !ok {
		return
	}
	d, err := c.Store.EnqueueDelivery(r.Context(), wh.Metadata.Name, webhook.TestEvent(wh.Metadata.Name))
	if err != nil {
		http.Error(w, "queue a test delivery: "+err.Error(), http.StatusInternalServerError)
		return
	}
	http.Redirect(w, r, "/settings/webhooks/"+url.PathEscape(wh.Metadata.Name)+"?tested="+url.QueryEscape(d.ID), http.StatusSeeOther)
}

// rotateWebhook is POST /settings/webhooks/NAME/rotate: a new signing secret, shown once; the
// previous one keeps verifying for a day (receivers accept either meanwhile).
func (c *Console) rotateWebhook(w http.ResponseWriter, r *http.Request) {
	wh, ok := c.webhookOf(w, r)
	if !ok {
		return
	}
	rot, err := trigger.RotateSecret(r.Context(), c.Store, c.Seal, wh.Spec.SecretRef, false, 0, time.Now())
	if err != nil {
		http.Error(w, "make a signing secret: "+err.Error(), http.StatusInternalServerError)
		return
	}
	note := "a new signing secret is in secret " + rot.SecretRef + "."
	if rot.PreviousUntil != nil {
		note += " The previous one also signs until " + rot.PreviousUntil.UTC().Format("2006-01-02 15:04 MST") + ", so a receiver can switch meanwhile."
	}
	c.renderWebhook(w, r, wh.Metadata.Name, http.StatusOK, note, rot.Secret)
}

// removeWebhook is POST /settings/webhooks/NAME/remove: the webhook and its deliveries (its
// signing secret stays, in Secrets, until removed there).
func (c *Console) removeWebhook(w http.ResponseWriter, r *http.Request) {
	wh, ok := c.webhookOf(w, r)
	if !ok {
		return
	}
	if err := c.Store.DeleteWebhook(r.Context(), wh.Metadata.Name); err != nil {
		http.Error(w, "remove webhook: "+err.Error(), http.StatusInternalServerError)
		return
	}
	http.Redirect(w, r, "/settings/webhooks?removed="+url.QueryEscape(wh.Metadata.Name), http.StatusSeeOther)
}

var webhooksTmpl = newPage("webhooks", `<p>A webhook sends a signed POST (<a href="https://www.standardwebhooks.com/">Standard Webhooks</a>) to another system for each event it names: a run finished or waits on a person, a trigger's fire failed. Deliveries are retried with backoff for a day.</p>
{{if .NoSeal}}<p class="wait">This server has no seal key, so it cannot keep a webhook's signing secret.</p>{{end}}
{{with .Note}}<p class="wait" id="note" role="status">{{.}}</p>{{end}}
<h2>Webhooks</h2>
{{if .Webhooks}}<table id="webhook-list" class="table"><tr><th>Name</th><th>URL</th><th>Events</th><th>Agents</th><th class="num">Pending</th><th>Last delivery</th></tr>
{{range .Webhooks}}<tr data-webhook="{{.W.Metadata.Name}}"><td><a href="/settings/webhooks/{{.W.Metadata.Name}}">{{.W.Metadata.Name}}</a></td><td><code>{{.W.Spec.URL}}</code></td>
<td>{{range $i, $e := .W.Spec.Events}}{{if $i}}, {{end}}<code>{{$e}}</code>{{end}}</td><td>{{if .W.Spec.Agents}}{{range $i, $a := .W.Spec.Agents}}{{if $i}}, {{end}}<a href="/agents/{{$a}}">{{$a}}</a>{{end}}{{else}}every agent{{end}}</td>
<td class="num">{{.Pending}}</td><td>{{with .Last}}<code>{{.Type}}</code> {{.State}}{{if .Attempts}} after {{.Attempts}} attempt(s){{end}} · {{.Time.Format "2006-01-02 15:04:05 MST"}}{{else}}none yet{{end}}</td></tr>{{end}}</table>
{{else}}<p id="webhook-list">No webhooks yet: add one below.</p>{{end}}
<h2>Add a webhook</h2>
{{with .Form}}<form method="post" action="/settings/webhooks" id="webhook-form" class="form card"><input type="hidden" name="csrf" value="{{$.CSRF}}">
{{with index .Error "form"}}<p class="wait field-error" data-field="form" role="alert">{{.}}</p>{{end}}
<p><label for="webhook-name">Name</label><br><input id="webhook-name" name="name" value="{{.Name}}" size="40" autocomplete="off" aria-describedby="webhook-name-help"><br><small id="webhook-name-help">lowercase letters, digits and '-'; its signing secret is kept in the secret NAME-hook</small>{{with index .Error "name"}}<br><span class="wait field-error" data-field="name">{{.}}</span>{{end}}</p>
<p><label for="webhook-url">URL</label><br><input type="url" id="webhook-url" name="url" value="{{.URL}}" size="60" autocomplete="off" placeholder="https://hooks.example.com/agentrun">{{with index .Error "url"}}<br><span class="wait field-error" data-field="url">{{.}}</span>{{end}}</p>
<fieldset><legend>Events</legend>{{$f := .}}{{range $.Events}}<p><input type="checkbox" id="event-{{.Type}}" name="events" value="{{.Type}}"{{if index $f.Events .Type}} checked{{end}}> <label for="event-{{.Type}}"><code>{{.Type}}</code>: {{.Meaning}}</label></p>{{end}}
{{with index .Error "events"}}<span class="wait field-error" data-field="events">{{.}}</span>{{end}}</fieldset>
<p><label for="webhook-agents">Agents (optional)</label><br><input id="webhook-agents" name="agents" value="{{.Agents}}" size="60" autocomplete="off" aria-describedby="webhook-agents-help"><br><small id="webhook-agents-help">only these agents' runs and triggers, separated by commas; empty: every agent</small>{{with index .Error "agents"}}<br><span class="wait field-error" data-field="agents">{{.}}</span>{{end}}</p>
<button class="primary">Add webhook</button></form>{{end}}`)

var webhookTmpl = newPage("webhook", `{{with .Note}}<p class="wait" id="note" role="status">{{.}}</p>{{end}}
{{if .Secret}}<section class="card" id="new-secret"><h2>Signing secret</h2><p>Give this to the receiver now: it verifies each delivery's <code>webhook-signature</code> with it. It is sealed here and not shown again.</p>
<p><label for="secret-text">Secret</label><br><input id="secret-text" readonly size="60" value="{{.Secret}}"></p></section>{{end}}
{{with .W}}<dl class="facts"><div><dt>URL</dt><dd><code>{{.Spec.URL}}</code></dd></div><div><dt>Events</dt><dd>{{$.Events}}</dd></div>
<div><dt>Agents</dt><dd>{{if .Spec.Agents}}{{range $i, $a := .Spec.Agents}}{{if $i}}, {{end}}<a href="/agents/{{$a}}">{{$a}}</a>{{end}}{{else}}every agent{{end}}</dd></div>
<div><dt>Signing secret</dt><dd id="secret-state">secret <code>{{.Spec.SecretRef}}</code>: {{if $.SecretSet}}set{{else}}missing (deliveries wait until one is made){{end}}</dd></div></dl>
<p class="actions"><form method="post" action="/settings/webhooks/{{.Metadata.Name}}/test" class="inline"><input type="hidden" name="csrf" value="{{$.CSRF}}"><button id="test-webhook">Send a test delivery</button></form>
{{if not $.NoSeal}}<form method="post" action="/settings/webhooks/{{.Metadata.Name}}/rotate" class="inline"><input type="hidden" name="csrf" value="{{$.CSRF}}"><button id="rotate-webhook">{{if $.SecretSet}}Make a new signing secret{{else}}Make its signing secret{{end}}</button></form>{{end}}
<form method="post" action="/settings/webhooks/{{.Metadata.Name}}/remove" class="inline"><input type="hidden" name="csrf" value="{{$.CSRF}}"><button class="danger" id="remove-webhook">Remove webhook</button></form></p>{{end}}
<h2>Deliveries</h2>
<table id="deliveries" class="table"><tr><th>Time</th><th>Event</th><th>Run</th><th>State</th><th>Attempts</th><th>webhook-id</th></tr>
{{range .Deliveries}}<tr data-delivery="{{.ID}}" data-state="{{.State}}"><td>{{.Time.Format "2006-01-02 15:04:05 MST"}}</td><td><code>{{.Type}}</code></td><td>{{if .Run}}<a href="/runs/{{.Run}}">{{.Run}}</a>{{else if .Trigger}}<a href="/triggers/{{.Trigger}}">{{.Trigger}}</a>{{end}}</td>
<td>{{.State}}{{with .NextAttempt}}<br><small>next attempt {{.Format "15:04:05 MST"}}</small>{{end}}</td>
<td>{{range .History}}#{{.Attempt}} {{if .Delivered}}delivered{{else}}failed{{end}}{{if .StatusCode}} HTTP {{.StatusCode}}{{end}} · {{.DurationMS}} ms{{with .Error}} · {{.}}{{end}}<br>{{else}}none yet{{end}}</td><td><code>{{.ID}}</code></td></tr>
{{else}}<tr><td colspan="6">No deliveries yet: send a test delivery to see one.</td></tr>{{end}}</table>`)
