package console

import (
	"context"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/secret"
	"agentrun.dev/agentrun/internal/store"
)

// Settings pages, for a signed-in person only (never the API token):
//   - Model keys (/settings): one form per provider to paste, replace or remove its key and base
//     URL, sealed into the secret secret.ModelKeys, which every runner's model.Config reads on each
//     call (so no restart); a key in the server's environment wins and the page says so. A paste
//     pokes the runs waiting ModelKeyMissing so they go on at once.
//   - Secrets (/settings/secrets): the sealed secrets by name and key names; paste a value under
//     a name (and key), replace it, or remove a secret.
// Values are never rendered back, logged or put on a timeline: a page says only "set".

func (c *Console) registerSettings(mux *http.ServeMux) {
	mux.HandleFunc("GET /settings", c.guardPerson(c.modelKeysPage))
	mux.HandleFunc("POST /settings/model-keys/{provider}", c.guardPerson(c.saveModelKey))
	mux.HandleFunc("POST /settings/model-keys/{provider}/remove", c.guardPerson(c.removeModelKey))
	mux.HandleFunc("GET /settings/secrets", c.guardPerson(c.secretsPage))
	mux.HandleFunc("POST /settings/secrets", c.guardPerson(c.saveSecret))
	mux.HandleFunc("POST /settings/secrets/{name}/remove", c.guardPerson(c.removeSecret))
}

// guardPerson is guard for pages only a person may use: a request with a bearer credential (the
// API token) or a form posted without a session is refused with 403 rather than sent to sign in.
func (c *Console) guardPerson(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w)
		if c.signedIn(r) {
			h(w, r)
			return
		}
		if r.Header.Get("Authorization") == "" && c.localSignIn(w, r) {
			return
		}
		if r.Header.Get("Authorization") != "" || r.Method != http.MethodGet {
			http.Error(w, "only a person signed in to the console may change settings; the API token cannot", http.StatusForbidden)
			return
		}
		http.Redirect(w, r, "/login?next="+template.URLQueryEscaper(r.URL.Path), http.StatusSeeOther)
	}
}

// settingsForm parses a settings form (bounded) and checks its CSRF token; false when it
// answered the request.
func settingsForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form (at most 64 KiB)", http.StatusBadRequest)
		return false
	}
	if !csrfValid(r, r.PostForm.Get("csrf")) {
		http.Error(w, "the form is stale or did not come from this console: reload the page", http.StatusForbidden)
		return false
	}
	return true
}

// providerForm is one provider's form on the Model keys page.
type providerForm struct {
	Name, Title     string
	KeyVar, BaseVar string
	// Env: the server's environment gives the key (it wins); Stored: a key was pasted here.
	Env, Stored bool
	BaseURL     string // the pasted base URL (not secret), shown so a save keeps it
	EnvBaseURL  string
	Error       map[string]string // by input name
}

// In use says which key serves the provider's calls.
func (p providerForm) InUse() string {
	switch {
	case p.Env && p.Stored:
		return "the server's environment (it wins over the key pasted here, which is kept unused)"
	case p.Env:
		return "the server's environment"
	case p.Stored:
		return "the key pasted here"
	}
	return ""
}

var providerTitles = map[string]string{"anthropic": "Anthropic", "openai": "OpenAI", "openrouter": "OpenRouter"}

// consoleVars are the inputs of each provider's form (OpenRouter's base URL is the
// environment's only).
func consoleVars(p model.ProviderVars) (keyVar, baseVar string) {
	if p.Name == "openrouter" {
		return p.KeyVar, ""
	}
	return p.KeyVar, p.BaseVar
}

// storedModelKeys opens the pasted model keys (none: an empty map).
func (c *Console) storedModelKeys(ctx context.Context) (map[string]string, error) {
	if c.Seal == nil {
		return map[string]string{}, nil
	}
	m, err := (&secret.Opener{Box: c.Seal, Store: c.Store}).Open(ctx, secret.ModelKeys)
	if errors.Is(err, store.ErrNotFound) {
		return map[string]string{}, nil
	}
	return m, err
}

func (c *Console) providerForms(stored map[string]string) []providerForm {
	var out []providerForm
	for _, p := range model.Known() {
		keyVar, baseVar := consoleVars(p)
		f := providerForm{Name: p.Name, Title: providerTitles[p.Name], KeyVar: keyVar, BaseVar: baseVar,
			Stored: strings.TrimSpace(stored[p.KeyVar]) != "", BaseURL: stored[p.BaseVar]}
		if c.Models != nil {
			f.Env = c.Models.Providers[p.Name] != nil
			f.EnvBaseURL = c.Models.BaseURL[p.Name]
		}
		out = append(out, f)
	}
	return out
}

func (c *Console) modelKeysPage(w http.ResponseWriter, r *http.Request) {
	stored, err := c.storedModelKeys(r.Context())
	if err != nil {
		http.Error(w, "read the model keys: "+err.Error(), http.StatusInternalServerError)
		return
	}
	c.renderModelKeys(w, r, http.StatusOK, c.providerForms(stored), "")
}

// modelKeysNote says what the last form did, from the query the form redirected to (codes, not
// text: a link cannot put words of its own on the page).
func (c *Console) modelKeysNote(q url.Values) string {
	if p, ok := knownProvider(q.Get("removed")); ok {
		return p.KeyVar + " removed."
	}
	p, ok := knownProvider(q.Get("saved"))
	if !ok {
		return ""
	}
	note := p.KeyVar + " saved, sealed."
	if c.Models != nil && c.Models.Providers[p.Name] != nil {
		note += " The server's environment also sets " + p.KeyVar + ", and that key stays in use."
	}
	switch n, _ := strconv.Atoi(q.Get("woke")); {
	case q.Get("woke") == "later":
		note += " The runs waiting for a model key go on at their next retry (within 15 s)."
	case n > 0:
		note += " " + strconv.Itoa(n) + " run(s) waiting for a model key go on now."
	}
	return note
}

func (c *Console) renderModelKeys(w http.ResponseWriter, r *http.Request, status int, forms []providerForm, note string) {
	if note == "" {
		note = c.modelKeysNote(r.URL.Query())
	}
	c.page(w, r, modelKeysTmpl, Page{Title: "Settings", ID: "model-keys", Description: "Model keys: the keys this server's runs call the model vendors with.",
		Tabs: settingsTabs("/settings"), Status: status, Data: map[string]any{"Providers": forms, "CSRF": csrfToken(r), "Note": note, "NoSeal": c.Seal == nil}})
}

// knownProvider is the provider named in the path, with its variables.
func knownProvider(name string) (model.ProviderVars, bool) {
	for _, p := range model.Known() {
		if p.Name == name {
			return p, true
		}
	}
	return model.ProviderVars{}, false
}

// saveModelKey is POST /settings/model-keys/PROVIDER: the pasted key (empty: keep the one
// stored) and base URL (empty: the vendor's own, or the environment's) are sealed; the runs
// waiting ModelKeyMissing are poked.
func (c *Console) saveModelKey(w http.ResponseWriter, r *http.Request) {
	if !settingsForm(w, r) {
		return
	}
	p, ok := knownProvider(r.PathValue("provider"))
	if !ok {
		http.Error(w, "no model provider "+r.PathValue("provider")+" (known: anthropic, openai, openrouter)", http.StatusNotFound)
		return
	}
	if c.Seal == nil {
		http.Error(w, "this server has no seal key, so it cannot keep a model key", http.StatusServiceUnavailable)
		return
	}
	keyVar, baseVar := consoleVars(p)
	stored, err := c.storedModelKeys(r.Context())
	if err != nil {
		http.Error(w, "read the model keys: "+err.Error(), http.StatusInternalServerError)
		return
	}
	key := strings.TrimSpace(r.PostForm.Get(keyVar))
	base := ""
	if baseVar != "" {
		base = strings.TrimSpace(r.PostForm.Get(baseVar))
	}
	errs := map[string]string{}
	switch {
	case key == "" && strings.TrimSpace(stored[keyVar]) == "":
		errs[keyVar] = "paste the key: " + keyVar + " is required"
	case strings.ContainsAny(key, " \t\r\n"):
		errs[keyVar] = keyVar + " has spaces or line breaks in it: paste the key alone"
	case len(key) > secret.MaxValue:
		errs[keyVar] = keyVar + " is longer than 16 KiB"
	}
	if base != "" {
		if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(base) > 2048 {
			errs[baseVar] = baseVar + " must be an http or https URL (like https://api.anthropic.com), or empty for the vendor's own"
		}
	}
	if len(errs) > 0 {
		forms := c.providerForms(stored)
		for i := range forms {
			if forms[i].Name == p.Name {
				forms[i].Error, forms[i].BaseURL = errs, base
			}
		}
		c.renderModelKeys(w, r, http.StatusUnprocessableEntity, forms, "")
		return
	}
	next := map[string]string{}
	for k, v := range stored {
		next[k] = v
	}
	if key != "" {
		next[keyVar] = key
	}
	if baseVar != "" {
		if base == "" {
			delete(next, baseVar)
		} else {
			next[baseVar] = base
		}
	}
	if err := c.putSecret(r.Context(), secret.ModelKeys, next); err != nil {
		http.Error(w, "save the model key: "+err.Error(), http.StatusInternalServerError)
		return
	}
	var woke string
	if n, err := c.Store.PokeWaiting(r.Context(), api.ReasonModelKeyMissing); err != nil {
		slog.Warn("console: poke the runs waiting for a model key", "err", err)
		woke = "later"
	} else {
		woke = strconv.Itoa(n)
	}
	http.Redirect(w, r, "/settings?saved="+p.Name+"&woke="+woke, http.StatusSeeOther)
}

// removeModelKey is POST /settings/model-keys/PROVIDER/remove: the pasted key and base URL go.
func (c *Console) removeModelKey(w http.ResponseWriter, r *http.Request) {
	if !settingsForm(w, r) {
		return
	}
	p, ok := knownProvider(r.PathValue("provider"))
	if !ok {
		http.Error(w, "no model provider "+r.PathValue("provider"), http.StatusNotFound)
		return
	}
	stored, err := c.storedModelKeys(r.Context())
	if err != nil {
		http.Error(w, "read the model keys: "+err.Error(), http.StatusInternalServerError)
		return
	}
	delete(stored, p.KeyVar)
	delete(stored, p.BaseVar)
	if len(stored) == 0 {
		err = c.Store.DeleteSecret(r.Context(), secret.ModelKeys)
		if errors.Is(err, store.ErrNotFound) {
			err = nil
		}
	} else {
		err = c.putSecret(r.Context(), secret.ModelKeys, stored)
	}
	if err != nil {
		http.Error(w, "remove the model key: "+err.Error(), http.StatusInternalServerError)
		return
	}
	http.Redirect(w, r, "/settings?removed="+p.Name, http.StatusSeeOther)
}

func (c *Console) putSecret(ctx context.Context, name string, data map[string]string) error {
	sealed, keys, err := c.Seal.SealMap(name, data)
	if err != nil {
		return err
	}
	return c.Store.PutSecret(ctx, name, sealed, keys)
}

// secretDefaultKey is the key a value pasted without one is kept under (secret:NAME/value).
const secretDefaultKey = "value"

func (c *Console) secretsPage(w http.ResponseWriter, r *http.Request) {
	c.renderSecrets(w, r, http.StatusOK, map[string]string{}, "", "", secretsNote(r.URL.Query()))
}

// secretsNote says what the last form did, from the query it redirected to: a secret's name and
// key, checked as the forms check them, so a link cannot put words of its own on the page.
func secretsNote(q url.Values) string {
	if n := q.Get("removed"); n != "" && api.ValidName("name", n) == nil {
		return "secret " + n + " removed."
	}
	name, key := q.Get("set"), q.Get("key")
	if name == "" || api.ValidName("name", name) != nil || secret.CheckEntry(key, "x") != nil {
		return ""
	}
	what := "set"
	if q.Get("replaced") == "1" {
		what = "replaced"
	}
	return "secret:" + name + "/" + key + " " + what + ", sealed."
}

func (c *Console) renderSecrets(w http.ResponseWriter, r *http.Request, status int, errs map[string]string, name, key, note string) {
	list, err := c.Store.ListSecrets(r.Context())
	if err != nil {
		http.Error(w, "list secrets: "+err.Error(), http.StatusInternalServerError)
		return
	}
	var shown []store.SecretInfo
	for _, s := range list {
		if secret.Listed(s.Name) {
			shown = append(shown, s)
		}
	}
	sort.Slice(shown, func(i, j int) bool { return shown[i].Name < shown[j].Name })
	c.page(w, r, secretsTmpl, Page{Title: "Settings", ID: "secrets", Description: "Secrets: sealed values agents name without seeing them.",
		Tabs: settingsTabs("/settings/secrets"), Status: status, Data: map[string]any{"Secrets": shown, "CSRF": csrfToken(r), "Error": errs, "Name": name, "Key": key,
			"Note": note, "DefaultKey": secretDefaultKey, "NoSeal": c.Seal == nil}})
}

// saveSecret is POST /settings/secrets: name, key (empty: "value") and value; the key is set in
// the secret (made if new), its other keys kept.
func (c *Console) saveSecret(w http.ResponseWriter, r *http.Request) {
	if !settingsForm(w, r) {
		return
	}
	if c.Seal == nil {
		http.Error(w, "this server has no seal key, so it cannot keep a secret", http.StatusServiceUnavailable)
		return
	}
	name := strings.TrimSpace(r.PostForm.Get("name"))
	key := strings.TrimSpace(r.PostForm.Get("key"))
	if key == "" {
		key = secretDefaultKey
	}
	value := r.PostForm.Get("value")
	errs := map[string]string{}
	if err := api.ValidName("name", name); err != nil {
		errs["name"] = err.Error()
	}
	if err := secret.CheckEntry(key, value); err != nil {
		field := "value"
		if strings.HasPrefix(err.Error(), "key") {
			field = "key"
		}
		errs[field] = err.Error()
	}
	var data map[string]string
	if len(errs) == 0 {
		var err error
		data, err = (&secret.Opener{Box: c.Seal, Store: c.Store}).Open(r.Context(), name)
		switch {
		case errors.Is(err, store.ErrNotFound):
			data = map[string]string{}
		case errors.Is(err, secret.ErrOpen):
			errs["name"] = "secret " + name + " exists but does not open with this server's seal key: remove it first, then paste it again"
		case err != nil:
			http.Error(w, "read secret "+name+": "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	if len(errs) > 0 {
		c.renderSecrets(w, r, http.StatusUnprocessableEntity, errs, name, key, "")
		return
	}
	_, replaced := data[key]
	data[key] = value
	if err := c.putSecret(r.Context(), name, data); err != nil {
		http.Error(w, "save secret "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	q := url.Values{"set": {name}, "key": {key}}
	if replaced {
		q.Set("replaced", "1")
	}
	http.Redirect(w, r, "/settings/secrets?"+q.Encode(), http.StatusSeeOther)
}

// removeSecret is POST /settings/secrets/NAME/remove.
func (c *Console) removeSecret(w http.ResponseWriter, r *http.Request) {
	if !settingsForm(w, r) {
		return
	}
	name := r.PathValue("name")
	if !secret.Listed(name) || api.ValidName("name", name) != nil {
		http.Error(w, "no secret "+name, http.StatusNotFound)
		return
	}
	if err := c.Store.DeleteSecret(r.Context(), name); err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, store.ErrNotFound) {
			status = http.StatusNotFound
		}
		http.Error(w, err.Error(), status)
		return
	}
	http.Redirect(w, r, "/settings/secrets?removed="+name, http.StatusSeeOther)
}

var modelKeysTmpl = newPage("model-keys", `<p>The keys this server's runs call the model vendors with. A key pasted here is sealed in the store and never shown again; every runner uses it from its next call, no restart. A key set in the server's environment wins over one pasted here.</p>
{{if .NoSeal}}<p class="wait">This server has no seal key, so it cannot keep a pasted key.</p>{{end}}
{{with .Note}}<p class="wait" id="note" role="status">{{.}}</p>{{end}}
{{range .Providers}}<section class="card" id="provider-{{.Name}}" data-state="{{if or .Env .Stored}}set{{else}}missing{{end}}"><h2>{{.Title}}</h2>
<p><b>{{.KeyVar}}</b>: <span class="key-state">{{if or .Env .Stored}}set{{else}}missing{{end}}</span>{{with .InUse}} · in use: <span class="key-source">{{.}}</span>{{end}}{{if .Env}}<br>The server's environment sets {{.KeyVar}}: that key is used, whatever is pasted here. Unset it and restart the server to use a pasted one.{{end}}</p>
<form method="post" action="/settings/model-keys/{{.Name}}" class="form"><input type="hidden" name="csrf" value="{{$.CSRF}}">
<p><label for="{{.KeyVar}}">{{.KeyVar}}</label><br><input type="password" id="{{.KeyVar}}" name="{{.KeyVar}}" autocomplete="off" size="50" placeholder="{{if .Stored}}set: paste a new key to replace it{{else}}paste the key{{end}}"></p>
{{if .BaseVar}}<p><label for="{{.BaseVar}}">{{.BaseVar}} (optional)</label><br><input type="url" id="{{.BaseVar}}" name="{{.BaseVar}}" value="{{.BaseURL}}" size="50" placeholder="{{if .EnvBaseURL}}{{.EnvBaseURL}} (the environment's){{else}}the vendor's own{{end}}"></p>{{end}}
{{range $field, $msg := .Error}}<p class="wait field-error" data-field="{{$field}}">{{$msg}}</p>{{end}}
<button class="primary">Save {{.Title}} key</button></form>
{{if .Stored}}<form method="post" action="/settings/model-keys/{{.Name}}/remove"><input type="hidden" name="csrf" value="{{$.CSRF}}"><button class="danger">Remove the pasted {{.Title}} key</button></form>{{end}}
</section>{{end}}`)

var secretsTmpl = newPage("secrets", `<p>Sealed values agents name without seeing them: an MCP server's <code>secret:NAME/KEY</code>, a bring-your-own-key agent's <code>apiKeySecret</code>, a vendor's computer key. Values are never shown again, only that they are set.</p>
{{if .NoSeal}}<p class="wait">This server has no seal key, so it cannot keep a secret.</p>{{end}}
{{with .Note}}<p class="wait" id="note" role="status">{{.}}</p>{{end}}
<h2>Stored secrets</h2>
{{if .Secrets}}<table id="secret-list" class="table"><tr><th>Name</th><th>Keys (values set, never shown)</th><th>Updated</th><th></th></tr>
{{range .Secrets}}<tr data-secret="{{.Name}}"><td>{{.Name}}</td><td>{{range $i, $k := .Keys}}{{if $i}}, {{end}}<code>{{$k}}</code>: set{{end}}</td><td>{{.UpdatedAt.Format "2006-01-02 15:04:05 MST"}}</td>
<td><form method="post" action="/settings/secrets/{{.Name}}/remove"><input type="hidden" name="csrf" value="{{$.CSRF}}"><button aria-label="Remove secret {{.Name}}">Remove</button></form></td></tr>{{end}}</table>
{{else}}<p id="secret-list">No secrets yet: paste one below.</p>{{end}}
<h2>Paste a secret</h2>
<p>A key of an existing secret is replaced; its other keys stay.</p>
<form method="post" action="/settings/secrets" id="secret-form" class="form card"><input type="hidden" name="csrf" value="{{.CSRF}}">
<p><label for="secret-name">Name</label><br><input id="secret-name" name="name" value="{{.Name}}" size="40" autocomplete="off" aria-describedby="secret-name-help"><br><small id="secret-name-help">lowercase letters, digits and '-' (like github)</small>{{with index .Error "name"}}<br><span class="wait field-error" data-field="name">{{.}}</span>{{end}}</p>
<p><label for="secret-key">Key (optional)</label><br><input id="secret-key" name="key" value="{{.Key}}" size="40" autocomplete="off" placeholder="{{.DefaultKey}}" aria-describedby="secret-key-help"><br><small id="secret-key-help">like GH_TOKEN; without one the value is kept under <code>{{.DefaultKey}}</code> (secret:NAME/{{.DefaultKey}})</small>{{with index .Error "key"}}<br><span class="wait field-error" data-field="key">{{.}}</span>{{end}}</p>
<p><label for="secret-value">Value</label><br><input type="password" id="secret-value" name="value" size="50" autocomplete="off">{{with index .Error "value"}}<br><span class="wait field-error" data-field="value">{{.}}</span>{{end}}</p>
<button class="primary">Save secret</button></form>`)
