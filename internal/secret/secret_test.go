package secret

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, where, err := Load(func(string) string { return "" }, dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("generated key file %s: %v %v", where, fi, err)
	}
	sealed, err := b.Seal("anthropic-key", []byte("sk-ant-123"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("sk-ant-123")) {
		t.Fatal("sealed value holds the plaintext")
	}
	if pt, err := b.Open("anthropic-key", sealed); err != nil || string(pt) != "sk-ant-123" {
		t.Fatalf("Open = %q, %v", pt, err)
	}
	if _, err := b.Open("other-name", sealed); err == nil {
		t.Error("a sealed value opened under another name")
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := b.Open("anthropic-key", sealed); err == nil {
		t.Error("a tampered value opened")
	}
	// The same data folder gives the same key; AGENTRUN_SEAL_KEY wins over it.
	b2, _, err := Load(func(string) string { return "" }, dir)
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := b.Seal("k", []byte("v"))
	if pt, err := b2.Open("k", s2); err != nil || string(pt) != "v" {
		t.Errorf("reloaded key does not open: %v", err)
	}
	env := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	b3, where, err := Load(func(k string) string { return map[string]string{EnvVar: env}[k] }, dir)
	if err != nil || where != EnvVar {
		t.Fatalf("Load with env: %q %v", where, err)
	}
	if _, err := b3.Open("k", s2); err == nil {
		t.Error("another key opened the value")
	}
	if _, _, err := Load(func(k string) string { return map[string]string{EnvVar: "short"}[k] }, dir); err == nil {
		t.Error("a short key was accepted")
	}
}

// Current reads the key a process would use and never generates one; Reseal moves a value from
// one key to another, keeping its name bound, and refuses a value the old key does not open.
func TestCurrentAndReseal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	none := func(string) string { return "" }
	if _, _, err := Current(none, dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Current with no key: %v, want ErrNotExist", err)
	}
	if _, err := os.Stat(filepath.Join(dir, KeyFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("Current generated a key file")
	}
	old, _, err := Load(none, dir)
	if err != nil {
		t.Fatal(err)
	}
	k, where, err := Current(none, dir)
	if err != nil || where != filepath.Join(dir, KeyFile) || len(k) != 32 {
		t.Fatalf("Current = %d bytes from %q, %v", len(k), where, err)
	}
	nk := bytes.Repeat([]byte{9}, 32)
	nb, _ := New(nk)
	if k2, where, err := Current(func(string) string { return hex.EncodeToString(nk) }, dir); err != nil || where != EnvVar || !bytes.Equal(k2, nk) {
		t.Fatalf("Current with %s = %q, %v", EnvVar, where, err)
	}
	sealed, _ := old.Seal("lead-hook", []byte(`{"WEBHOOK_SECRET":"whsec_x"}`))
	out, err := Reseal(old, nb)("lead-hook", sealed)
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := nb.Open("lead-hook", out); err != nil || string(pt) != `{"WEBHOOK_SECRET":"whsec_x"}` {
		t.Errorf("the new key opens %q, %v", pt, err)
	}
	if _, err := old.Open("lead-hook", out); err == nil {
		t.Error("the old key opens the resealed value")
	}
	if _, err := nb.Open("other", out); err == nil {
		t.Error("the resealed value opens under another name")
	}
	if _, err := Reseal(nb, old)("lead-hook", sealed); !errors.Is(err, ErrWrongOldKey) || !strings.Contains(err.Error(), "lead-hook") {
		t.Errorf("a wrong old key: %v, want ErrWrongOldKey naming the secret", err)
	}
}
