package secret

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
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
