package auth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSetupLoginSessions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	code := a.SetupCode()
	if code == "" || a.HasPassword() {
		t.Fatalf("fresh accounts: code %q, has password %v", code, a.HasPassword())
	}
	if err := a.Check("admin", "whatever12"); err != ErrNoPassword {
		t.Errorf("check before setup: %v", err)
	}
	if err := a.Setup("WRONG", "admin", "correct horse battery"); err != ErrBadSetupCode {
		t.Errorf("wrong code: %v", err)
	}
	if err := a.Setup(code, "admin", "short"); err != ErrWeakPassword {
		t.Errorf("short password: %v", err)
	}
	if err := a.Setup(strings.ToLower(code), "admin", "correct horse battery"); err != nil {
		t.Fatalf("setup: %v", err)
	}
	if a.SetupCode() != "" {
		t.Error("the setup code still works after use")
	}
	if err := a.Setup(code, "eve", "another password!"); err != ErrAlreadySet {
		t.Errorf("second setup: %v", err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "accounts.json"))
	if !strings.Contains(string(b), "$argon2id$v=19$m=65536,t=3,p=2$") || strings.Contains(string(b), "correct horse") {
		t.Errorf("accounts.json does not hold an argon2id hash only: %s", b)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "accounts.json")); fi.Mode().Perm() != 0o600 {
		t.Errorf("accounts.json mode %o", fi.Mode().Perm())
	}
	if err := a.Check("admin", "correct horse battery"); err != nil {
		t.Errorf("right password: %v", err)
	}
	if err := a.Check("admin", "correct horse batter"); err != ErrBadPassword {
		t.Errorf("wrong password: %v", err)
	}
	now := time.Now()
	s := a.NewSession("admin", now)
	if u, ok := a.Verify(s, now); !ok || u != "admin" {
		t.Errorf("verify own session: %q %v", u, ok)
	}
	if _, ok := a.Verify(s, now.Add(SessionTTL+time.Minute)); ok {
		t.Error("an expired session verified")
	}
	if _, ok := a.Verify(s[:len(s)-2]+"xx", now); ok {
		t.Error("a tampered session verified")
	}
	// A reopened server (same data folder) keeps accounts and sessions.
	b2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := b2.Verify(s, now); !ok || b2.SetupCode() != "" {
		t.Errorf("after reopening: session ok=%v, setup code %q", ok, b2.SetupCode())
	}
	// Another server's key does not verify it.
	other, _ := Open(t.TempDir())
	if _, ok := other.Verify(s, now); ok {
		t.Error("another server accepted the session")
	}
}
