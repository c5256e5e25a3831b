package server

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sync"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/httpserve"
)

// HTTPOptions, HTTPServer and NewHTTPServer are httpserve's: the API's listener and the model
// gateway's share its bounds.
type (
	HTTPOptions = httpserve.Options
	HTTPServer  = httpserve.Server
)

// NewHTTPServer makes the server for h with o's bounds.
func NewHTTPServer(h http.Handler, o HTTPOptions) *HTTPServer { return httpserve.New(h, o) }

// streamWriteWindow is how long a stream's client may take to read one write (streams write at
// least a keepalive every 15 s).
const streamWriteWindow = time.Minute

// streamDeadlines exempts a streaming response from the server's ReadTimeout and WriteTimeout:
// the read deadline is cleared (its expiry would cancel the request's context) and the returned
// func pushes the write deadline streamWriteWindow ahead; call it before each write.
func streamDeadlines(w http.ResponseWriter) (extend func()) {
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Time{})
	extend = func() { rc.SetWriteDeadline(time.Now().Add(streamWriteWindow)) }
	extend()
	return extend
}

// defaultMaxFollowers bounds the event streams one credential (the API token, or one person's
// session) holds open at once.
const defaultMaxFollowers = 32

// followers counts the streams open per credential.
type followers struct {
	mu sync.Mutex
	n  map[string]int
}

// acquire takes a stream for the request's credential; ok is false when it holds max already.
func (f *followers) acquire(r *http.Request, max int) (release func(), ok bool) {
	if max <= 0 {
		max = defaultMaxFollowers
	}
	k := credentialKey(r)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[string]int{}
	}
	if f.n[k] >= max {
		return nil, false
	}
	f.n[k]++
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.n[k]--; f.n[k] <= 0 {
				delete(f.n, k)
			}
		})
	}, true
}

// credentialKey names the credential a request carries (a digest, so no secret is kept): its
// bearer, else its console session cookie.
func credentialKey(r *http.Request) string {
	cred := r.Header.Get("Authorization")
	if cred == "" {
		if ck, err := r.Cookie("agentrun_session"); err == nil {
			cred = "cookie:" + ck.Value
		}
	}
	sum := sha256.Sum256([]byte(cred))
	return hex.EncodeToString(sum[:12])
}

// tooManyStreams answers a stream refused by the per-credential bound.
func tooManyStreams(w http.ResponseWriter, max int) {
	if max <= 0 {
		max = defaultMaxFollowers
	}
	w.Header().Set("Retry-After", "5")
	writeErr(w, api.Errorf(http.StatusTooManyRequests, api.CodeTooManyStreams, "", "this credential already follows %d event streams, the most it may: close one", max))
}
