package console

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"strings"
	"sync"
)

// Without accounts (serve --no-accounts, a launcher on a laptop; the server listens on loopback
// only) the console asks for no password: a browser on this machine gets this process's one
// session cookie on its first page and is the one person from then on (its forms carry the CSRF
// token derived from it, as with accounts). A request naming any host but a loopback one is
// refused, so a web page elsewhere cannot reach it through a name it points at 127.0.0.1 (DNS
// rebinding).

// localUser is who a console without accounts says is signed in (approvals record person:local).
const localUser = "local"

type localSession struct {
	once  sync.Once
	token string
}

func (l *localSession) get() string {
	l.once.Do(func() {
		var b [24]byte
		rand.Read(b[:])
		l.token = "arl_" + base64.RawURLEncoding.EncodeToString(b[:])
	})
	return l.token
}

// localHost says whether the request names this machine (localhost or a loopback address).
func localHost(r *http.Request) bool {
	h := r.Host
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.Trim(h, "[]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// localSignedIn is signedIn without accounts.
func (c *Console) localSignedIn(r *http.Request) bool {
	if !localHost(r) {
		return false
	}
	ck, err := r.Cookie(cookieName)
	return err == nil && subtle.ConstantTimeCompare([]byte(ck.Value), []byte(c.local.get())) == 1
}

// localSignIn answers a page request without the cookie, without accounts: a GET from this
// machine gets the cookie and comes back to the same URL; anything else is refused. It reports
// whether it answered.
func (c *Console) localSignIn(w http.ResponseWriter, r *http.Request) bool {
	if !c.NoAccounts {
		return false
	}
	if !localHost(r) {
		http.Error(w, "this console serves this machine only (serve --no-accounts): open it at http://127.0.0.1 on its port", http.StatusForbidden)
		return true
	}
	if r.Method != http.MethodGet || r.Header.Get("Authorization") != "" {
		http.Error(w, "the form is stale or did not come from this console: reload the page", http.StatusForbidden)
		return true
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: c.local.get(), Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, safeNext(r.URL.RequestURI()), http.StatusSeeOther)
	return true
}
