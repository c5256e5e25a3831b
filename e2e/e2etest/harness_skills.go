package e2etest

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// RecordingProxy serves the scripted model server through a proxy that keeps every request body.
func RecordingProxy(t *testing.T, e *Env) (url string, bodies func() [][]byte) {
	t.Helper()
	var mu sync.Mutex
	var got [][]byte
	p := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, b)
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		e.Model.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p.URL, func() [][]byte {
		mu.Lock()
		defer mu.Unlock()
		return append([][]byte(nil), got...)
	}
}
