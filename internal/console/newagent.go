package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/catalog"
	"agentrun.dev/agentrun/internal/computer"
)

// New agent (/agents/new): a form whose fields make the Agent resource `agentrun apply` would
// (name, instructions, harness, model access, tools, computer, approval rules, cap, learning),
// stored through the API's own create (Agents.CreateAgent, the validation POST /v2/agents runs).
// The form does no checking of its own beyond reading its fields: a refusal comes back as the
// API's error (code, field path), shown beside the field that path belongs to, with every value
// kept, and nothing is stored.

func (c *Console) registerNewAgent(mux *http.ServeMux) {
	mux.HandleFunc("GET /agents/new", c.guard(c.newAgentPage))
	mux.HandleFunc("POST /agents/new", c.guard(c.newAgent))
}

// agentForm is the form's values, as typed.
type agentForm struct {
	Name, Instructions, Harness, Access, Model, Provider, APIKeySecret string
	Tools                                                              map[string]bool
	Computer                                                           string
	Network                                                            bool
	ApprovalDefault, Approvals                                         string
	Cap                                                                string
	Learning                                                           bool
}

func readAgentForm(f url.Values) agentForm {
	a := agentForm{Name: strings.TrimSpace(f.Get("name")), Instructions: f.Get("instructions"), Harness: f.Get("harness"),
		Access: f.Get("access"), Model: strings.TrimSpace(f.Get("model")), Provider: f.Get("provider"), APIKeySecret: strings.TrimSpace(f.Get("apiKeySecret")),
		Tools: map[string]bool{}, Computer: f.Get("computer"), Network: f.Get("network") != "",
		ApprovalDefault: f.Get("approvalDefault"), Approvals: f.Get("approvals"), Cap: strings.TrimSpace(f.Get("cap")), Learning: f.Get("learning") != ""}
	for _, t := range f["tools"] {
		a.Tools[t] = true
	}
	return a
}

// agent is the resource the form makes: what a person would write in agent.yaml for these
// answers (a blank field is left out, so the API's default applies).
func (f agentForm) agent(toolOrder []string) *api.Agent {
	a := &api.Agent{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "Agent"}, Metadata: api.ObjectMeta{Name: f.Name}}
	s := &a.Spec
	s.System = f.Instructions
	s.Harness = api.Harness(f.Harness)
	s.Model = api.ModelSpec{Access: api.Access(f.Access), Name: f.Model, Provider: api.ModelProvider(f.Provider), APIKeySecret: f.APIKeySecret}
	for _, t := range toolOrder {
		if f.Tools[t] {
			s.Tools = append(s.Tools, t)
		}
	}
	switch {
	case f.Computer != "":
		s.Computer = &api.ComputerSpec{Kind: computer.Kind(f.Computer), Network: f.Network}
	case f.Network:
		// The server's best sandbox, with network: a sandbox of no named provider picks the
		// same one.
		s.Computer = &api.ComputerSpec{Kind: computer.KindSandbox, Network: true}
	}
	rules := strings.TrimSpace(f.Approvals)
	if rules != "" || f.ApprovalDefault != "" {
		ap := &api.Approvals{Default: f.ApprovalDefault}
		for _, line := range strings.Split(rules, "\n") {
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			// ACTION MATCH: the API says what is wrong with either.
			action, match, _ := strings.Cut(line, " ")
			ap.Rules = append(ap.Rules, api.ApprovalRule{Action: action, Match: strings.TrimSpace(match)})
		}
		s.Approvals = ap
	}
	s.PerRunMaxCostUSD = f.Cap
	s.Learning = f.Learning
	return a
}

// formFieldOf is the form input an API error's field path belongs to ("" for the form as a whole).
func formFieldOf(path string) string {
	for _, m := range []struct{ prefix, input string }{
		{"metadata.name", "name"}, {"spec.system", "instructions"}, {"spec.harness", "harness"},
		{"spec.model.name", "model"}, {"spec.model.provider", "provider"}, {"spec.model.apiKeySecret", "apiKeySecret"},
		{"spec.model", "access"}, {"spec.tools", "tools"}, {"spec.computer", "computer"},
		{"spec.approvals.default", "approvalDefault"}, {"spec.approvals", "approvals"},
		{"spec.perRunMaxCostUSD", "cap"}, {"spec.learning", "learning"},
	} {
		if path == m.prefix || strings.HasPrefix(path, m.prefix+".") || strings.HasPrefix(path, m.prefix+"[") {
			return m.input
		}
	}
	return ""
}

// toolChoice is one tool's checkbox.
type toolChoice struct {
	Name, About, Comes string
}

// toolChoices are the tools an agent may list here, in catalog order.
func (c *Console) toolChoices() []toolChoice {
	extra := map[string]bool{}
	if c.Agents != nil {
		extra = c.Agents.ListableTools()
	}
	var out []toolChoice
	for _, e := range catalog.All() {
		// A tool a computer runs (bash, browser_*, desktop_*) comes with that computer: choosing
		// the computer is choosing them.
		if e.Computer != "" || (catalog.CheckListed(e.Name) != "" && !extra[e.Name]) {
			continue
		}
		tc := toolChoice{Name: e.Name, About: firstClause(e.Description)}
		if len(e.ComesWith) > 0 {
			tc.Comes = "comes with a " + strings.Join(e.ComesWith, " or ") + " anyway"
		}
		out = append(out, tc)
	}
	return out
}

// firstClause is a tool's description up to its first full stop, colon or bracket.
func firstClause(d string) string {
	for _, sep := range []string{". ", ": ", "; ", " ("} {
		if i := strings.Index(d, sep); i > 0 {
			d = d[:i]
		}
	}
	return strings.TrimSuffix(d, ".")
}

// computerChoice is one option of the computer select.
type computerChoice struct {
	Value, Label string
}

// computerChoices are the kinds, each saying which provider makes it here (or that none does).
func (c *Console) computerChoices(ctx context.Context) []computerChoice {
	out := []computerChoice{{"", "the server's best sandbox (as an agent without a computer setting)"}, {"none", "none: no computer"}}
	var status []computer.ProviderStatus
	if c.Computers != nil {
		ctx, cancel := context.WithTimeout(ctx, statusTimeout)
		status = c.Computers.Status(ctx)
		cancel()
	}
	for _, k := range []computer.Kind{computer.KindSandbox, computer.KindBrowser, computer.KindDesktop} {
		var here []string
		for _, p := range status {
			if _, bad := p.KindsUnavailable[k]; p.Available && !bad && containsKind(p.Kinds, k) {
				here = append(here, p.Name)
			}
		}
		label := string(k) + ": "
		if len(here) == 0 {
			label += "no provider makes one here"
		} else {
			label += "made here by " + strings.Join(here, ", ")
		}
		out = append(out, computerChoice{string(k), label})
	}
	return out
}

func containsKind(ks []computer.Kind, k computer.Kind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

func (c *Console) newAgentPage(w http.ResponseWriter, r *http.Request) {
	c.renderNewAgent(w, r, http.StatusOK, agentForm{Tools: map[string]bool{}}, nil)
}

func (c *Console) renderNewAgent(w http.ResponseWriter, r *http.Request, status int, f agentForm, failed *api.Error) {
	// Every problem the API found is shown: each beside the input its field path belongs to (a
	// second one at the same input after the first), the rest above the form.
	errs := map[string]*api.Error{}
	var formErrs []*api.Error
	if failed != nil {
		list := failed.Errors
		if len(list) == 0 {
			list = []api.FieldError{{Code: failed.Code, Message: failed.Message, Field: failed.Field}}
		}
		for _, fe := range list {
			in := formFieldOf(fe.Field)
			switch at := errs[in]; {
			case in == "":
				formErrs = append(formErrs, &api.Error{Code: fe.Code, Message: fe.Message, Field: fe.Field})
			case at == nil:
				errs[in] = &api.Error{Code: fe.Code, Message: fe.Message, Field: fe.Field}
			default:
				at.Message += "; " + string(fe.Code) + " at " + fe.Field + ": " + fe.Message
			}
		}
	}
	c.page(w, r, newAgentTmpl, Page{Title: "New agent", ID: "new-agent-title", Narrow: true, Status: status,
		Description: "Makes the same Agent resource agentrun apply -f agent.yaml would, checked the same way.",
		Crumbs:      []Crumb{{"Agents", "/agents"}},
		Data: map[string]any{"F": f, "Errors": errs, "FormErrors": formErrs, "CSRF": csrfToken(r),
			"Harnesses": api.Harnesses, "Tools": c.toolChoices(), "Computers": c.computerChoices(r.Context()),
			"Providers": api.ModelProviders, "Default": api.DefaultPerRunMaxCostUSD}})
}

// newAgent is POST /agents/new.
func (c *Console) newAgent(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, int64(api.MaxInputBytes)+64<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form (the instructions are too long?)", http.StatusBadRequest)
		return
	}
	if !csrfValid(r, r.PostForm.Get("csrf")) {
		http.Error(w, "the form is stale or did not come from this console: reload the page", http.StatusForbidden)
		return
	}
	if c.Agents == nil {
		http.Error(w, "this console cannot make agents", http.StatusServiceUnavailable)
		return
	}
	f := readAgentForm(r.PostForm)
	var order []string
	for _, t := range c.toolChoices() {
		order = append(order, t.Name)
	}
	for t := range f.Tools {
		if !containsString(order, t) {
			order = append(order, t) // a name the page did not offer: the API says why not
		}
	}
	a, err := c.Agents.CreateAgent(r.Context(), f.agent(order))
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return
		}
		e := apiErr(err)
		c.renderNewAgent(w, r, e.Status, f, e)
		return
	}
	http.Redirect(w, r, "/agents/"+url.PathEscape(a.Metadata.Name)+"?made=1", http.StatusSeeOther)
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

var newAgentTmpl = agentPageOf("new-agent", `<p>Only the name and the instructions are needed; the rest has defaults.</p>
{{range $i, $fe := .FormErrors}}<p class="note warn field-error" role="alert"{{if eq $i 0}} id="form-error"{{end}} data-field="" data-code="{{.Code}}">Not made: {{.Code}}{{if .Field}} at {{.Field}}{{end}}: {{.Message}}</p>{{end}}
{{with .Errors}}<p class="note warn" role="alert" id="form-refused">Not made: see the {{if gt (len .) 1}}{{len .}} fields{{else}}field{{end}} marked below. Nothing was stored.</p>{{end}}
<form method="post" action="/agents/new" id="new-agent-form" class="form"><input type="hidden" name="csrf" value="{{.CSRF}}">
{{$e := .Errors}}{{with .F}}
<div class="field"><label for="name">Name</label><input id="name" name="name" value="{{.Name}}" autocomplete="off" required aria-describedby="name-help{{if index $e "name"}} name-error{{end}}"{{if index $e "name"}} aria-invalid="true"{{end}}>
<small id="name-help" class="help">Lowercase letters, digits and '-', starting with a letter (like support-triage). Runs and triggers name the agent by it.</small>{{template "fieldError" (dict "F" "name" "E" $e)}}</div>
<div class="field"><label for="instructions">Instructions</label><textarea id="instructions" name="instructions" rows="8" aria-describedby="instructions-help{{if index $e "instructions"}} instructions-error{{end}}"{{if index $e "instructions"}} aria-invalid="true"{{end}}>{{.Instructions}}</textarea>
<small id="instructions-help" class="help">The agent's system prompt: what it is for, how to work, what to answer with.</small>{{template "fieldError" (dict "F" "instructions" "E" $e)}}</div>
<div class="field"><label for="harness">Harness</label><select id="harness" name="harness" aria-describedby="harness-help{{if index $e "harness"}} harness-error{{end}}">{{$h := .Harness}}{{range $.Harnesses}}<option value="{{.}}"{{if eq . $h}} selected{{end}}>{{.}}</option>{{end}}</select>
<small id="harness-help" class="help">What runs the agent's loop: builtin (this server's own), or an agent CLI the server installs.</small>{{template "fieldError" (dict "F" "harness" "E" $e)}}</div>
<div class="field"><label for="access">Model access</label><select id="access" name="access" aria-describedby="access-help{{if index $e "access"}} access-error{{end}}"><option value="Server"{{if ne .Access "BYOK"}} selected{{end}}>Server: this server's model keys, billed against the cap</option><option value="BYOK"{{if eq .Access "BYOK"}} selected{{end}}>BYOK: a key of yours, kept in a secret</option></select>
<small id="access-help" class="help">BYOK needs the model name and the secret holding the key, below.</small>{{template "fieldError" (dict "F" "access" "E" $e)}}</div>
<div class="field"><label for="provider">Model provider (optional)</label><select id="provider" name="provider" aria-describedby="provider-help">{{$p := .Provider}}<option value="">the server's default</option>{{range $.Providers}}<option value="{{.}}"{{if eq . $p}} selected{{end}}>{{.}}</option>{{end}}</select>
<small id="provider-help" class="help">Whose models: the key under Settings → Model keys serves them.</small>{{template "fieldError" (dict "F" "provider" "E" $e)}}</div>
<div class="field"><label for="model">Model name (optional)</label><input id="model" name="model" value="{{.Model}}" autocomplete="off" aria-describedby="model-help{{if index $e "model"}} model-error{{end}}">
<small id="model-help" class="help">A concrete model id; empty: the server's default model.</small>{{template "fieldError" (dict "F" "model" "E" $e)}}</div>
<div class="field"><label for="apiKeySecret">Key secret (BYOK only)</label><input id="apiKeySecret" name="apiKeySecret" value="{{.APIKeySecret}}" autocomplete="off" aria-describedby="apiKeySecret-help{{if index $e "apiKeySecret"}} apiKeySecret-error{{end}}">
<small id="apiKeySecret-help" class="help">The name of a secret under <a href="/settings/secrets">Settings → Secrets</a> holding your vendor key.</small>{{template "fieldError" (dict "F" "apiKeySecret" "E" $e)}}</div>
<fieldset id="tools" class="field" aria-describedby="tools-help{{if index $e "tools"}} tools-error{{end}}"><legend>Tools</legend>
{{$t := .Tools}}{{range $.Tools}}<div class="check"><input type="checkbox" name="tools" value="{{.Name}}" id="tool-{{.Name}}"{{if index $t .Name}} checked{{end}}><label for="tool-{{.Name}}"><code>{{.Name}}</code>: {{.About}}{{with .Comes}} <span class="muted">({{.}})</span>{{end}}</label></div>
{{end}}<small id="tools-help" class="help">An MCP server's tools are ticked on the agent's MCP page once it exists.</small>{{template "fieldError" (dict "F" "tools" "E" $e)}}</fieldset>
<div class="field"><label for="computer">Computer</label><select id="computer" name="computer" aria-describedby="computer-help{{if index $e "computer"}} computer-error{{end}}">{{$c := .Computer}}{{range $.Computers}}<option value="{{.Value}}"{{if eq .Value $c}} selected{{end}}>{{.Label}}</option>{{end}}</select>
<small id="computer-help" class="help">Where the agent's tools run. <a href="/settings/computers">Settings → Computers</a> says what each provider needs.</small>{{template "fieldError" (dict "F" "computer" "E" $e)}}</div>
<div class="field"><div class="check"><input type="checkbox" id="network" name="network" value="1"{{if .Network}} checked{{end}} aria-describedby="network-help"> <label for="network">The computer may reach the network</label></div>
<small id="network-help" class="help">Off: the sandbox has no network at all.</small></div>
<div class="field"><label for="approvalDefault">Approvals: a tool call no rule matches</label><select id="approvalDefault" name="approvalDefault" aria-describedby="approvalDefault-help{{if index $e "approvalDefault"}} approvalDefault-error{{end}}">{{$d := .ApprovalDefault}}<option value="">the server's default</option>{{range $a := (list "allow" "ask" "deny")}}<option value="{{$a}}"{{if eq $a $d}} selected{{end}}>{{$a}}</option>{{end}}</select>
<small id="approvalDefault-help" class="help">ask: the run waits for a person to approve or deny the call.</small>{{template "fieldError" (dict "F" "approvalDefault" "E" $e)}}</div>
<div class="field"><label for="approvals">Approval rules</label><textarea id="approvals" name="approvals" rows="4" aria-describedby="approvals-help{{if index $e "approvals"}} approvals-error{{end}}"{{if index $e "approvals"}} aria-invalid="true"{{end}}>{{.Approvals}}</textarea>
<small id="approvals-help" class="help">One rule a line, ACTION MATCH; the first that matches wins: <code>deny bash(git push*)</code>, <code>ask write(docs/**)</code>, <code>allow web_fetch</code>.</small>{{template "fieldError" (dict "F" "approvals" "E" $e)}}</div>
<div class="field"><label for="cap">Cap per run, in dollars</label><input id="cap" name="cap" value="{{.Cap}}" inputmode="decimal" autocomplete="off" placeholder="{{$.Default}}" aria-describedby="cap-help{{if index $e "cap"}} cap-error{{end}}"{{if index $e "cap"}} aria-invalid="true"{{end}}>
<small id="cap-help" class="help">A run pauses before a model call would take it past this (default ${{$.Default}}).</small>{{template "fieldError" (dict "F" "cap" "E" $e)}}</div>
<div class="field"><div class="check"><input type="checkbox" id="learning" name="learning" value="1"{{if .Learning}} checked{{end}} aria-describedby="learning-help"><label for="learning">Learning</label></div>
<small id="learning-help" class="help">The agent keeps notes in a folder of its own: each run starts from them and proposes what to keep.</small>{{template "fieldError" (dict "F" "learning" "E" $e)}}</div>
{{end}}<p><button class="primary" id="make-agent">Make the agent</button></p></form>`)
