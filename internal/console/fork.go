package console

import (
	"context"
	"crypto/subtle"
	"net/http"
	"net/url"

	"agentrun.dev/agentrun/internal/api"
)

// Forker forks a run at a completed step the way the API does (the server implements it) and
// returns the new run's name.
type Forker func(ctx context.Context, run, atStep string) (string, error)

// forkAction is each completed step's "Fork from here" on the run page (a POST form, so it
// works without JavaScript): a new run with the steps up to this one and the folder as it left it.
const forkAction = `{{define "forkAction"}}{{if eq .State "Completed"}}<form class="fork-form" method="post" action="/runs/{{.Run}}/fork"><input type="hidden" name="csrf" value="{{.CSRF}}"><input type="hidden" name="atStep" value="{{.Key}}"><button class="button small" title="a new run with the steps up to this one and the folder as it left it">Fork from here<span class="sr-only"> (step {{.Key}})</span></button></form>{{end}}{{end}}`

// fork is POST /runs/NAME/fork from a step's "Fork from here": it makes the fork and shows it.
func (c *Console) fork(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	want := csrfToken(r)
	if want == "" || subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(want)) != 1 {
		http.Error(w, "the form is stale or did not come from this console: reload the page", http.StatusForbidden)
		return
	}
	if c.Fork == nil {
		http.Error(w, "this console cannot fork runs", http.StatusNotImplemented)
		return
	}
	name, err := c.Fork(r.Context(), r.PathValue("name"), r.PostForm.Get("atStep"))
	if err != nil {
		status := http.StatusConflict
		if ae, ok := err.(*api.Error); ok && ae.Status != 0 {
			status = ae.Status
		}
		http.Error(w, err.Error(), status)
		return
	}
	http.Redirect(w, r, "/runs/"+url.PathEscape(name), http.StatusSeeOther)
}
