package console

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/computer/computertest"
	"agentrun.dev/agentrun/internal/computer/remote"
	"agentrun.dev/agentrun/internal/secret"
	"agentrun.dev/agentrun/internal/store"
)

// Settings → Computers (/settings/computers), for a signed-in person only: every computer
// provider this server has and the kinds it makes, available here or why not; the remote
// vendors' keys (each a sealed secret named after the vendor holding the vendor's own variables,
// as `agentrun secrets set daytona DAYTONA_API_KEY` writes it; pasted, replaced or removed,
// never shown back); and a Test button for the local providers (local, docker) that runs the
// sandbox conformance checks (internal/computer/computertest, as `agentrun computer conformance`
// does) while the page shows each check's result as it ends. Each check closes the computers it
// made; the scratch folder goes when the test ends, and a browser that leaves ends the test.

// statusTimeout bounds asking the providers whether they work here.
const statusTimeout = 5 * time.Second

// testTimeout bounds one Test.
const testTimeout = 5 * time.Minute

// testable are the providers whose conformance checks the page runs, with the kind it tests.
var testable = map[string]computer.Kind{"local": computer.KindSandbox, "docker": computer.KindSandbox}

// computerTests admits one Test at a time on a server (each check makes computers).
var computerTests sync.Mutex

func (c *Console) registerComputers(mux *http.ServeMux) {
	mux.HandleFunc("GET /settings/computers", c.guardPerson(c.computersPage))
	mux.HandleFunc("POST /settings/computers/vendors/{vendor}", c.guardPerson(c.saveVendorKeys))
	mux.HandleFunc("POST /settings/computers/vendors/{vendor}/remove", c.guardPerson(c.removeVendorKeys))
	mux.HandleFunc("POST /settings/computers/test/{provider}", c.guardPerson(c.testComputer))
}

type providerRow struct {
	computer.ProviderStatus
	Testable bool
	TestKind computer.Kind
	Vendor   bool
}

type vendorForm struct {
	remote.Vendor
	Keys  []vendorKey
	Error map[string]string
	// Stored: the vendor's secret exists (so it can be removed).
	Stored bool
}

type vendorKey struct {
	Name string
	Set  bool
}

func (c *Console) computersPage(w http.ResponseWriter, r *http.Request) {
	note := ""
	q := r.URL.Query()
	if v, ok := vendorNamed(q.Get("saved")); ok {
		note = v.Title + " keys saved, sealed."
	} else if v, ok := vendorNamed(q.Get("removed")); ok {
		note = v.Title + " keys removed."
	}
	c.renderComputers(w, r, http.StatusOK, note, "", nil)
}

func vendorNamed(name string) (remote.Vendor, bool) {
	for _, v := range remote.Vendors {
		if v.Name == name {
			return v, true
		}
	}
	return remote.Vendor{}, false
}

func (c *Console) renderComputers(w http.ResponseWriter, r *http.Request, status int, note, vendor string, errs map[string]string) {
	var rows []providerRow
	var missing []computer.Kind
	if c.Computers != nil {
		ctx, cancel := context.WithTimeout(r.Context(), statusTimeout)
		for _, p := range c.Computers.Status(ctx) {
			_, isVendor := vendorNamed(p.Name)
			k, ok := testable[p.Name]
			rows = append(rows, providerRow{ProviderStatus: p, Testable: ok, TestKind: k, Vendor: isVendor})
		}
		cancel()
		for _, k := range []computer.Kind{computer.KindSandbox, computer.KindBrowser, computer.KindDesktop, computer.KindPhone} {
			if !c.Computers.Makes(k) {
				missing = append(missing, k)
			}
		}
	}
	list, err := c.Store.ListSecrets(r.Context())
	if err != nil {
		http.Error(w, "list secrets: "+err.Error(), http.StatusInternalServerError)
		return
	}
	have := map[string]map[string]bool{}
	for _, s := range list {
		have[s.Name] = map[string]bool{}
		for _, k := range s.Keys {
			have[s.Name][k] = true
		}
	}
	var vendors []vendorForm
	for _, v := range remote.Vendors {
		_, stored := have[v.Name]
		f := vendorForm{Vendor: v, Stored: stored}
		for _, k := range v.Keys {
			f.Keys = append(f.Keys, vendorKey{Name: k, Set: have[v.Name][k]})
		}
		if v.Name == vendor {
			f.Error = errs
		}
		vendors = append(vendors, f)
	}
	c.page(w, r, computersTmpl, Page{Title: "Settings: Computers", ID: "computers", Status: status,
		Description: "Where agents' tools run: each provider and the kinds it makes, whether it works here, vendor keys, and a test of the local ones.",
		Crumbs:      []Crumb{{"Settings", "/settings"}}, Tabs: settingsTabs("/settings/computers"), Data: map[string]any{"Providers": rows, "Missing": missing, "Vendors": vendors, "Note": note,
			"CSRF": csrfToken(r), "NoSeal": c.Seal == nil, "NoRegistry": c.Computers == nil}})
}

// saveVendorKeys is POST /settings/computers/vendors/VENDOR: each key pasted is sealed into the
// vendor's secret; a key left empty keeps the one stored.
func (c *Console) saveVendorKeys(w http.ResponseWriter, r *http.Request) {
	if !settingsForm(w, r) {
		return
	}
	v, ok := vendorNamed(r.PathValue("vendor"))
	if !ok {
		http.Error(w, "no computer vendor "+r.PathValue("vendor"), http.StatusNotFound)
		return
	}
	if c.Seal == nil {
		http.Error(w, "this server has no seal key, so it cannot keep a vendor key", http.StatusServiceUnavailable)
		return
	}
	data, err := (&secret.Opener{Box: c.Seal, Store: c.Store}).Open(r.Context(), v.Name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		data = map[string]string{}
	case errors.Is(err, secret.ErrOpen):
		c.renderComputers(w, r, http.StatusUnprocessableEntity, "", v.Name, map[string]string{"": "secret " + v.Name + " exists but does not open with this server's seal key: remove it first, then paste the keys again"})
		return
	case err != nil:
		http.Error(w, "read secret "+v.Name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	errs := map[string]string{}
	pasted := 0
	for _, k := range v.Keys {
		val := strings.TrimSpace(r.PostForm.Get(k))
		if val == "" {
			continue
		}
		if err := secret.CheckEntry(k, val); err != nil {
			errs[k] = err.Error()
			continue
		}
		data[k] = val
		pasted++
	}
	if pasted == 0 && len(errs) == 0 {
		errs[v.Keys[0]] = "paste a key: " + strings.Join(v.Keys, " and ") + " are empty"
	}
	if len(errs) > 0 {
		c.renderComputers(w, r, http.StatusUnprocessableEntity, "", v.Name, errs)
		return
	}
	if err := c.putSecret(r.Context(), v.Name, data); err != nil {
		http.Error(w, "save the "+v.Title+" keys: "+err.Error(), http.StatusInternalServerError)
		return
	}
	http.Redirect(w, r, "/settings/computers?saved="+v.Name, http.StatusSeeOther)
}

// removeVendorKeys is POST /settings/computers/vendors/VENDOR/remove: the vendor's secret goes.
func (c *Console) removeVendorKeys(w http.ResponseWriter, r *http.Request) {
	if !settingsForm(w, r) {
		return
	}
	v, ok := vendorNamed(r.PathValue("vendor"))
	if !ok {
		http.Error(w, "no computer vendor "+r.PathValue("vendor"), http.StatusNotFound)
		return
	}
	if err := c.Store.DeleteSecret(r.Context(), v.Name); err != nil && !errors.Is(err, store.ErrNotFound) {
		http.Error(w, "remove the "+v.Title+" keys: "+err.Error(), http.StatusInternalServerError)
		return
	}
	http.Redirect(w, r, "/settings/computers?removed="+v.Name, http.StatusSeeOther)
}

// testComputer is POST /settings/computers/test/PROVIDER: the provider's conformance checks,
// written to the page one row per check as each ends (the response is flushed after each).
func (c *Console) testComputer(w http.ResponseWriter, r *http.Request) {
	if !settingsForm(w, r) {
		return
	}
	name := r.PathValue("provider")
	kind, ok := testable[name]
	var p computer.Provider
	if ok && c.Computers != nil {
		p, ok = c.Computers.Get(name)
	}
	if !ok {
		http.Error(w, "the console tests the local providers only (local, docker), not "+name, http.StatusNotFound)
		return
	}
	if !computerTests.TryLock() {
		http.Error(w, "a computer test is running on this server already: wait for it to end", http.StatusConflict)
		return
	}
	defer computerTests.Unlock()
	ctx, cancel := context.WithTimeout(r.Context(), testTimeout)
	defer cancel()
	tmp, err := os.MkdirTemp("", "agentrun-console-test-")
	if err != nil {
		http.Error(w, "make a scratch folder: "+err.Error(), http.StatusInternalServerError)
		return
	}
	defer os.RemoveAll(tmp)

	w.Header().Set("X-Accel-Buffering", "no") // a proxy should pass each row on as it comes
	run := &computerTest{Provider: name, Kind: kind, Rows: make(chan testRow)}
	done := make(chan struct{})
	go func() { // owned by this handler, which waits for it below
		defer close(done)
		defer close(run.Rows)
		start := time.Now()
		failed, err := computertest.RunChecks(ctx, p, kind, tmp, func(res computertest.Result) {
			row := testRow{Name: res.Name, Seconds: fmt.Sprintf("%.2f s", res.Duration.Seconds()), Result: "passed"}
			var sk computertest.Skip
			switch {
			case res.Err == nil:
				run.Passed++
			case errors.As(res.Err, &sk):
				run.Skipped++
				row.Result, row.Detail = "skipped", sk.Reason
			default:
				row.Result, row.Detail = "failed", res.Err.Error()
			}
			select {
			case run.Rows <- row:
			case <-ctx.Done():
			}
		})
		run.Failed, run.Seconds = failed, fmt.Sprintf("%.1f", time.Since(start).Seconds())
		if err != nil {
			run.Error = err.Error()
		}
		if ctx.Err() != nil && r.Context().Err() == nil {
			run.Error = "the test took longer than " + testTimeout.String() + " and was stopped"
		}
	}()
	// The page is written as the checks end: the body ranges over run.Rows, and each write is
	// flushed to the browser.
	c.page(flushWriter{w}, r, testTmpl, Page{Title: "Test " + name + ": " + string(kind) + " conformance checks", ID: "test-title",
		Description: "Each check makes fresh " + string(kind) + " computers here and closes them when it ends; results appear as each check ends.",
		Crumbs:      []Crumb{{"Settings", "/settings"}, {"Computers", "/settings/computers"}}, Data: run})
	cancel()
	for range run.Rows {
	}
	<-done
	if r.Context().Err() != nil {
		slog.Info("console: computer test ended: the browser left", "provider", name)
	}
}

// computerTest is one Test as its page shows it; the totals are set before Rows closes.
type computerTest struct {
	Provider                string
	Kind                    computer.Kind
	Rows                    chan testRow
	Passed, Failed, Skipped int
	Seconds, Error          string
}

type testRow struct {
	Name, Result, Seconds, Detail string
}

// flushWriter sends every write on at once.
type flushWriter struct{ http.ResponseWriter }

func (f flushWriter) Write(b []byte) (int, error) {
	n, err := f.ResponseWriter.Write(b)
	if fl, ok := f.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
	return n, err
}

var testTmpl = agentPageOf("computer-test", `<table id="test-results" class="table"><thead><tr><th>Check</th><th>Result</th><th>Time</th><th>Detail</th></tr></thead><tbody>
{{range .Rows}}<tr data-result="{{.Result}}"><td>{{.Name}}</td><td>{{if eq .Result "passed"}}{{pill "Passed"}}{{else if eq .Result "failed"}}{{pill "Failed"}}{{else}}{{pill "Skipped"}}{{end}}</td><td>{{.Seconds}}</td><td>{{.Detail}}</td></tr>
{{end}}</tbody></table>
{{with .Error}}<p class="note warn" id="test-error" role="alert">The test could not run: {{.}}</p>{{end}}
<p id="test-done" role="status" class="note" data-failed="{{.Failed}}">{{.Provider}} {{.Kind}}: {{.Passed}} passed, {{.Failed}} failed, {{.Skipped}} skipped in {{.Seconds}} s. Each check closed what it made: nothing is left running.</p>
<p><a href="/settings/computers">Back to Computers</a></p>`)

var computersTmpl = agentPageOf("computers", `{{with .Note}}<p class="note" id="note" role="status">{{.}}</p>{{end}}
{{if .NoRegistry}}<p class="note warn">This console was started without the server's computer providers.</p>{{end}}
<h2>Providers</h2>
<table id="providers" class="table"><thead><tr><th scope="col">Provider</th><th scope="col">Kinds</th><th scope="col">Here</th><th scope="col">Test</th></tr></thead><tbody>
{{range .Providers}}<tr data-provider="{{.Name}}" data-available="{{.Available}}"><td>{{.Name}}</td><td>{{range $i, $k := .Kinds}}{{if $i}}, {{end}}{{$k}}{{end}}</td>
<td>{{if .Available}}{{pill "available"}}{{with .Reason}} {{.}}{{end}}{{range $k, $why := .KindsUnavailable}}<br>{{$k}} not available: {{$why}}{{end}}{{else}}{{pill "Unavailable"}} {{.Reason}}{{end}}</td>
<td>{{if .Testable}}{{if .Available}}<form method="post" action="/settings/computers/test/{{.Name}}" class="inline"><input type="hidden" name="csrf" value="{{$.CSRF}}"><button id="test-{{.Name}}">Test {{.Name}} {{.TestKind}}</button></form>{{else}}<span class="muted">fix the above to test it</span>{{end}}{{else if .Vendor}}<a href="#vendor-{{.Name}}">keys</a>{{end}}</td></tr>{{end}}
{{range .Missing}}<tr><td>—</td><td>{{.}}</td><td>{{pill "Unavailable"}} no provider built into this server makes {{.}} computers</td><td></td></tr>{{end}}
</tbody></table>
<h2>Vendor keys</h2>
<p>Each vendor's keys are one sealed secret named after the vendor; they are never shown again, only whether each is set.</p>
{{if .NoSeal}}<p class="note warn">This server has no seal key, so it cannot keep a vendor key.</p>{{end}}
{{range .Vendors}}<section id="vendor-{{.Name}}" class="card"><h3>{{.Title}} ({{range $i, $k := .Kinds}}{{if $i}}, {{end}}{{$k}}{{end}})</h3>
{{with index .Error ""}}<p class="note warn field-error" data-field="">{{.}}</p>{{end}}
<form method="post" action="/settings/computers/vendors/{{.Name}}" class="form"><input type="hidden" name="csrf" value="{{$.CSRF}}">{{$v := .}}
{{range .Keys}}<div class="field"><label for="{{$v.Name}}-{{.Name}}">{{.Name}}</label><input type="password" id="{{$v.Name}}-{{.Name}}" name="{{.Name}}" autocomplete="off" aria-describedby="{{$v.Name}}-{{.Name}}-help">
<small id="{{$v.Name}}-{{.Name}}-help" class="help key-state" data-key="{{.Name}}">{{if .Set}}set: paste a new value to replace it{{else}}missing{{end}}</small>{{$kn := .Name}}{{with index $v.Error .Name}}<span class="field-error" data-field="{{$kn}}">{{.}}</span>{{end}}</div>{{end}}
<p><button class="primary">Save {{.Title}} keys</button></p></form>
{{if .Stored}}<form method="post" action="/settings/computers/vendors/{{.Name}}/remove" class="inline"><input type="hidden" name="csrf" value="{{$.CSRF}}"><button class="danger">Remove the {{.Title}} keys</button></form>{{end}}</section>{{end}}`)
