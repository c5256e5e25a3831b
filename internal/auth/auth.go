// Package auth owns who is calling: the API bearer token (scripts), and people, who sign in with a
// password (stored as an argon2id hash in the data folder, set on first use with a one-time setup
// code the server prints) and get a signed session. Only a person may approve a tool call or write
// a secret; the API token and a run's own credentials never can.
package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/argon2"
)

// Errors.
var (
	ErrNoPassword   = errors.New("no password is set yet: sign in once with the setup code the server printed")
	ErrBadSetupCode = errors.New("wrong setup code")
	ErrBadPassword  = errors.New("wrong user or password")
	ErrWeakPassword = errors.New("password too short: use at least 10 characters")
	ErrAlreadySet   = errors.New("a password is already set")
	ErrBadSession   = errors.New("not a valid session")
)

// SessionTTL is how long a person's session lasts.
const SessionTTL = 7 * 24 * time.Hour

// Accounts holds the person accounts of one server.
type Accounts struct {
	dir       string
	mu        sync.Mutex
	users     map[string]string // name -> encoded argon2id hash
	key       []byte            // signs sessions
	setupCode string
	// setupToken, when set, also sets the first password: the API token a platform generated
	// (AGENTRUN_TOKEN), which its operator can read where the log's setup code is harder to find.
	setupToken string
	guard      *guard
	// revoked holds the ids of sessions signed out before they expired, with their expiry (Unix
	// seconds), kept in sessions-revoked.json so a stolen cookie stays dead across restarts.
	revoked map[string]int64
}

type accountsFile struct {
	Users map[string]string `json:"users"`
}

// Open loads the accounts of a data folder, creating the session key when missing. When no
// password is set yet it makes a one-time setup code (see SetupCode).
func Open(dir string) (*Accounts, error) {
	a := &Accounts{dir: dir, users: map[string]string{}, guard: newGuard(Limits{}), revoked: map[string]int64{}}
	b, err := os.ReadFile(filepath.Join(dir, "accounts.json"))
	switch {
	case err == nil:
		var f accountsFile
		if err := json.Unmarshal(b, &f); err != nil {
			return nil, fmt.Errorf("read accounts.json: %w", err)
		}
		for k, v := range f.Users {
			a.users[k] = v
		}
	case !os.IsNotExist(err):
		return nil, fmt.Errorf("read accounts.json: %w", err)
	}
	keyPath := filepath.Join(dir, "session.key")
	if k, err := os.ReadFile(keyPath); err == nil && len(k) >= 32 {
		a.key = k
	} else {
		a.key = make([]byte, 32)
		rand.Read(a.key)
		if err := os.WriteFile(keyPath, a.key, 0o600); err != nil {
			return nil, fmt.Errorf("write session key: %w", err)
		}
	}
	switch b, err := os.ReadFile(filepath.Join(dir, revokedFile)); {
	case err == nil:
		if err := json.Unmarshal(b, &a.revoked); err != nil {
			return nil, fmt.Errorf("read %s: %w", revokedFile, err)
		}
	case !os.IsNotExist(err):
		return nil, fmt.Errorf("read %s: %w", revokedFile, err)
	}
	if len(a.users) == 0 {
		var c [5]byte
		rand.Read(c[:])
		a.setupCode = strings.ToUpper(hex.EncodeToString(c[:]))
	}
	return a, nil
}

// SetupCode is the one-time code that sets the first password ("" once a password is set).
func (a *Accounts) SetupCode() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.setupCode
}

// AcceptSetupToken lets token (AGENTRUN_TOKEN, case-sensitive) set the first password, as the
// setup code does; it is never accepted once a password is set.
func (a *Accounts) AcceptSetupToken(token string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.setupToken = token
}

// HasPassword reports whether a person account exists.
func (a *Accounts) HasPassword() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.users) > 0
}

// SetLimits replaces the sign-in bounds (tests shorten them); call it before serving.
func (a *Accounts) SetLimits(l Limits) { a.guard = newGuard(l) }

// Setup sets the first account's password with the setup code. It is not rate-limited: people
// signing in reach it through SetupFrom.
func (a *Accounts) Setup(code, user, password string) error {
	return a.setup(context.Background(), code, user, password)
}

// SetupFrom is Setup for a client at addr (see ClientAddr), within the sign-in limits: a wrong
// setup code counts as a failure of that address.
func (a *Accounts) SetupFrom(ctx context.Context, addr, code, user, password string) error {
	const setupUser = "\x00setup"
	if err := a.guard.admit(addr, setupUser, time.Now()); err != nil {
		return err
	}
	err := a.setup(ctx, code, user, password)
	if err == nil || errors.Is(err, ErrBadSetupCode) {
		a.guard.result(addr, setupUser, err == nil, time.Now())
	}
	return err
}

func (a *Accounts) setup(ctx context.Context, code, user, password string) error {
	if err := a.setupAllowed(code); err != nil {
		return err
	}
	if len(password) < 10 {
		return ErrWeakPassword
	}
	if user == "" {
		user = "admin"
	}
	// Hashed outside the lock (it takes ~0.2 s), in a slot like every other hash.
	release, err := a.guard.hashSlot(ctx)
	if err != nil {
		return err
	}
	enc := hashPassword(password)
	release()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.users) > 0 {
		return ErrAlreadySet
	}
	a.users[user] = enc
	if err := a.save(); err != nil {
		delete(a.users, user)
		return err
	}
	a.setupCode = ""
	return nil
}

func (a *Accounts) setupAllowed(code string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.users) > 0 {
		return ErrAlreadySet
	}
	if a.setupToken != "" && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(code)), []byte(a.setupToken)) == 1 {
		return nil
	}
	if a.setupCode == "" || subtle.ConstantTimeCompare([]byte(strings.ToUpper(strings.TrimSpace(code))), []byte(a.setupCode)) != 1 {
		return ErrBadSetupCode
	}
	return nil
}

func (a *Accounts) save() error {
	b, _ := json.MarshalIndent(accountsFile{Users: a.users}, "", "  ")
	tmp := filepath.Join(a.dir, "accounts.json.tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write accounts: %w", err)
	}
	return os.Rename(tmp, filepath.Join(a.dir, "accounts.json"))
}

// Check verifies a password. It is not rate-limited: people signing in reach it through SignIn.
func (a *Accounts) Check(user, password string) error {
	return a.check(context.Background(), user, password)
}

// SignIn is Check for a client at addr (see ClientAddr), within the sign-in limits: it may refuse
// with a *LimitError before checking anything, and a wrong password counts toward addr+user's
// lockout.
func (a *Accounts) SignIn(ctx context.Context, addr, user, password string) error {
	if err := a.guard.admit(addr, user, time.Now()); err != nil {
		return err
	}
	err := a.check(ctx, user, password)
	if err == nil || errors.Is(err, ErrBadPassword) {
		a.guard.result(addr, user, err == nil, time.Now())
	}
	return err
}

// dummyHash is checked for a user who does not exist, so that a wrong user name costs what a
// wrong password does (the same argon2id parameters) and its answer's time tells nothing.
var dummyHash = fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
	base64.RawStdEncoding.EncodeToString(make([]byte, 16)), base64.RawStdEncoding.EncodeToString(make([]byte, argonKeyLen)))

func (a *Accounts) check(ctx context.Context, user, password string) error {
	a.mu.Lock()
	enc, ok := a.users[user]
	n := len(a.users)
	a.mu.Unlock()
	if n == 0 {
		return ErrNoPassword
	}
	if !ok {
		enc = dummyHash
	}
	release, err := a.guard.hashSlot(ctx)
	if err != nil {
		return err
	}
	match := verifyPassword(enc, password)
	release()
	if !ok || !match {
		return ErrBadPassword
	}
	return nil
}

// Argon2id parameters (RFC 9106's second recommendation, memory-constrained).
const (
	argonTime    = 3
	argonMemory  = 64 * 1024
	argonThreads = 2
	argonKeyLen  = 32
)

func hashPassword(pw string) string {
	salt := make([]byte, 16)
	rand.Read(salt)
	key := argon2.IDKey([]byte(pw), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
}

func verifyPassword(enc, pw string) bool {
	parts := strings.Split(enc, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var m, t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil {
		return false
	}
	salt, err1 := base64.RawStdEncoding.DecodeString(parts[4])
	want, err2 := base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil {
		return false
	}
	got := argon2.IDKey([]byte(pw), salt, t, m, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// NewSession signs a session for user, valid until now+SessionTTL. The password hash is part of
// what is signed, so changing the password ends every session; its random id lets Revoke end it
// alone.
func (a *Accounts) NewSession(user string, now time.Time) string {
	exp := strconv.FormatInt(now.Add(SessionTTL).Unix(), 10)
	var id [16]byte
	rand.Read(id[:])
	payload := user + "|" + exp + "|" + base64.RawURLEncoding.EncodeToString(id[:])
	return "ars_" + base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + a.sign(payload, user)
}

const revokedFile = "sessions-revoked.json"

// Revoke ends a session before it expires (sign-out): Verify refuses it from now on, in this
// process and after a restart. Revoking an invalid session is ErrBadSession.
func (a *Accounts) Revoke(token string, now time.Time) error {
	_, id, exp, ok := a.verify(token, now)
	if !ok {
		return ErrBadSession
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.revoked[id] = exp
	for k, e := range a.revoked {
		if e < now.Unix() {
			delete(a.revoked, k) // expired: Verify refuses it anyway
		}
	}
	b, _ := json.Marshal(a.revoked)
	tmp := filepath.Join(a.dir, revokedFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write revoked sessions: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(a.dir, revokedFile)); err != nil {
		return fmt.Errorf("write revoked sessions: %w", err)
	}
	return nil
}

func (a *Accounts) sign(payload, user string) string {
	a.mu.Lock()
	enc := a.users[user]
	a.mu.Unlock()
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(payload + "|" + enc))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Verify checks a session and returns its user.
func (a *Accounts) Verify(token string, now time.Time) (string, bool) {
	user, _, _, ok := a.verify(token, now)
	return user, ok
}

// verify checks a session: signed by this server for a known user, not expired, not revoked.
func (a *Accounts) verify(token string, now time.Time) (user, id string, exp int64, ok bool) {
	body, ok := strings.CutPrefix(token, "ars_")
	if !ok {
		return "", "", 0, false
	}
	p64, sig, ok := strings.Cut(body, ".")
	if !ok {
		return "", "", 0, false
	}
	pb, err := base64.RawURLEncoding.DecodeString(p64)
	if err != nil {
		return "", "", 0, false
	}
	// user|exp|id, read from the right: a user name may hold "|". A session without an id (made
	// before sessions could be revoked) is refused: it could not be signed out.
	payload := string(pb)
	rest, id, ok1 := cutLast(payload, "|")
	user, expText, ok2 := cutLast(rest, "|")
	if !ok1 || !ok2 || id == "" {
		return "", "", 0, false
	}
	a.mu.Lock()
	_, known := a.users[user]
	_, revoked := a.revoked[id]
	a.mu.Unlock()
	if !known || revoked || !hmac.Equal([]byte(sig), []byte(a.sign(payload, user))) {
		return "", "", 0, false
	}
	exp, err = strconv.ParseInt(expText, 10, 64)
	if err != nil || now.Unix() > exp {
		return "", "", 0, false
	}
	return user, id, exp, true
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}
