package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/auth"
)

// Principal is who made a request: the API token (scripts) or a signed-in person.
type Principal struct {
	Kind string // "token" or "person"
	User string
}

type principalKey struct{}

// PrincipalOf returns the request's caller.
func PrincipalOf(ctx context.Context) Principal {
	p, _ := ctx.Value(principalKey{}).(Principal)
	return p
}

// requirePerson refuses callers that are not a signed-in person (the API token included).
func requirePerson(w http.ResponseWriter, r *http.Request, what string) (Principal, bool) {
	p := PrincipalOf(r.Context())
	if p.Kind != "person" {
		writeErr(w, api.Errorf(http.StatusForbidden, api.CodePersonRequired, "", "only a signed-in person may %s; the API token cannot (sign in with `agentrun login`)", what))
		return p, false
	}
	return p, true
}

// authenticate resolves the bearer credential: the API token, or a person's session.
func (s *Server) authenticate(r *http.Request) (Principal, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return Principal{}, false
	}
	tok = strings.TrimSpace(tok)
	if subtle.ConstantTimeCompare([]byte(tok), []byte(s.Token)) == 1 {
		return Principal{Kind: "token"}, true
	}
	if s.Accounts != nil {
		if user, ok := s.Accounts.Verify(tok, s.Now()); ok {
			return Principal{Kind: "person", User: user}, true
		}
	}
	return Principal{}, false
}

type loginBody struct {
	User      string `json:"user,omitempty"`
	Password  string `json:"password"`
	SetupCode string `json:"setupCode,omitempty"`
}

// login is POST /v2/login: a person signs in with a password (the first time, with the setup code
// the server printed, which sets the password). It answers with a session token.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, err)
		return
	}
	var b loginBody
	if err := api.DecodeStrict(body, &b); err != nil {
		writeErr(w, err)
		return
	}
	if b.User == "" {
		b.User = "admin"
	}
	if !s.Accounts.HasPassword() {
		if b.SetupCode == "" {
			writeErr(w, api.Errorf(http.StatusUnauthorized, api.CodeSetupRequired, "setupCode", "no password is set yet: send the setup code the server printed at start, with the password to set"))
			return
		}
		if err := s.Accounts.SetupFrom(r.Context(), auth.ClientAddr(r, s.TrustProxy), b.SetupCode, b.User, b.Password); err != nil {
			if signInRefused(w, err) {
				return
			}
			field := "setupCode"
			if errors.Is(err, auth.ErrWeakPassword) {
				field = "password"
			}
			writeErr(w, api.Errorf(http.StatusUnauthorized, api.CodeSetupFailed, field, "%v", err))
			return
		}
		s.Log.Info("person account created", "user", b.User)
	} else if err := s.Accounts.SignIn(r.Context(), auth.ClientAddr(r, s.TrustProxy), b.User, b.Password); err != nil {
		if !signInRefused(w, err) {
			writeErr(w, api.Errorf(http.StatusUnauthorized, api.CodeUnauthorized, "password", "%v", err))
		}
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"user": b.User, "session": s.Accounts.NewSession(b.User, s.Now())})
}

// signInRefused answers a sign-in the limits refused (429 with Retry-After) or whose caller left
// while it waited; false for any other error.
func signInRefused(w http.ResponseWriter, err error) bool {
	var le *auth.LimitError
	switch {
	case errors.As(err, &le):
		secs := max(1, int((le.RetryAfter+time.Second-1)/time.Second))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		code := api.CodeRateLimited
		if le.Busy {
			code = api.CodeTooManyRequests
		}
		writeErr(w, api.Errorf(http.StatusTooManyRequests, code, "", "%v", le))
		return true
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		writeErr(w, api.E(api.CodeClientClosed, "", "request cancelled"))
		return true
	}
	return false
}

// logout is POST /v2/logout: the person's session (the bearer) ends server-side, so a copy of it
// stops working too. The API token cannot be signed out (PersonRequired).
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if _, ok := requirePerson(w, r, "sign out"); !ok {
		return
	}
	tok := strings.TrimSpace(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	if err := s.Accounts.Revoke(tok, s.Now()); err != nil {
		writeErr(w, fmtErr("sign out: %w", err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, PrincipalOf(r.Context()))
}
