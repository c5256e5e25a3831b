package server

import (
	"net/http"
	"strings"

	"agentrun.dev/agentrun/internal/api"
)

// routeMethods are the methods the API's routes use.
var routeMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// notFoundOrNotAllowed answers a request no route of mux took, where catchAll is the pattern that
// caught it. ServeMux would answer 405 itself, but the catch-all (which gives unknown paths a JSON
// 404) matches every method first, so the methods the path does have are looked up here.
func notFoundOrNotAllowed(mux *http.ServeMux, catchAll string, w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range routeMethods {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "" && pattern != catchAll {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeErr(w, api.Errorf(http.StatusMethodNotAllowed, api.CodeMethodNotAllowed, "", "%s %s is not a route; this path takes %s", r.Method, r.URL.Path, strings.Join(allow, ", ")))
		return
	}
	writeErr(w, api.Errorf(http.StatusNotFound, api.CodeNotFound, "", "no API route %s %s", r.Method, r.URL.Path))
}
