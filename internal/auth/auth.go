// Package auth owns who is calling: the API bearer token (scripts), and people, who sign in with a
// password (stored as an argon2id hash in the data folder, set on first use with a one-time setup
// code the server prints) and get a signed session. Only a person may approve a tool call or write
// a secret; the API token and a run's own credentials never can.
package auth

import (
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
}

type accountsFile struct {
	Users map[string]string `json:"users"`
}

// Open loads the accounts of a data folder, creating the session key when missing. When no
// password is set yet it makes a one-time setup code (see SetupCode).
func Open(dir string) (*Accounts, error) {
	a := &Accounts{dir: dir, users: map[string]string{}}
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

// HasPassword reports whether a person account exists.
func (a *Accounts) HasPassword() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.users) > 0
}

// Setup sets the first account's password with the setup code.
func (a *Accounts) Setup(code, user, password string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.users) > 0 {
		return ErrAlreadySet
	}
	if a.setupCode == "" || subtle.ConstantTimeCompare([]byte(strings.ToUpper(strings.TrimSpace(code))), []byte(a.setupCode)) != 1 {
		return ErrBadSetupCode
	}
	if len(password) < 10 {
		return ErrWeakPassword
	}
	if user == "" {
		user = "admin"
	}
	a.users[user] = hashPassword(password)
	if err := a.save(); err != nil {
		delete(a.users, user)
		return err
	}
	a.setupCode = ""
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

// Check verifies a password.
func (a *Accounts) Check(user, password string) error {
	a.mu.Lock()
	enc, ok := a.users[user]
	n := len(a.users)
	a.mu.Unlock()
	if n == 0 {
		return ErrNoPassword
	}
	if !ok || !verifyPassword(enc, password) {
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
// what is signed, so changing the password ends every session.
func (a *Accounts) NewSession(user string, now time.Time) string {
	exp := strconv.FormatInt(now.Add(SessionTTL).Unix(), 10)
	payload := user + "|" + exp
	return "ars_" + base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + a.sign(payload, user)
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
	body, ok := strings.CutPrefix(token, "ars_")
	if !ok {
		return "", false
	}
	p64, sig, ok := strings.Cut(body, ".")
	if !ok {
		return "", false
	}
	pb, err := base64.RawURLEncoding.DecodeString(p64)
	if err != nil {
		return "", false
	}
	payload := string(pb)
	user, exp, ok := strings.Cut(payload, "|")
	if !ok {
		return "", false
	}
	a.mu.Lock()
	_, known := a.users[user]
	a.mu.Unlock()
	if !known || !hmac.Equal([]byte(sig), []byte(a.sign(payload, user))) {
		return "", false
	}
	e, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || now.Unix() > e {
		return "", false
	}
	return user, true
}
