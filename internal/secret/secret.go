// Package secret seals secrets (model keys and the like) under one key, AGENTRUN_SEAL_KEY, with
// AES-256-GCM. The key is 32 bytes, given as base64 or hex; when the variable is unset it is
// generated into the data folder's seal.key (mode 0600) on first use. A sealed value is
// version byte || 12-byte nonce || ciphertext+tag, and its secret's name is bound to it as
// additional data, so a sealed value moved to another name does not open.
package secret

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// EnvVar names the seal key's variable.
const EnvVar = "AGENTRUN_SEAL_KEY"

// KeyFile is the generated key's file in the data folder.
const KeyFile = "seal.key"

const version = 1

// Box seals and opens values under one key.
type Box struct {
	aead cipher.AEAD
}

// ParseKey decodes a 32-byte key written as base64 (standard or URL, padded or not) or hex.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil && len(b) == 32 {
		return b, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == 32 {
			return b, nil
		}
	}
	return nil, fmt.Errorf("%s must be 32 bytes as base64 or hex (for example: openssl rand -base64 32)", EnvVar)
}

// New returns a box for a 32-byte key.
func New(key []byte) (*Box, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("seal key must be 32 bytes, got %d", len(key))
	}
	blk, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("seal key: %w", err)
	}
	aead, err := cipher.NewGCM(blk)
	if err != nil {
		return nil, fmt.Errorf("seal key: %w", err)
	}
	return &Box{aead: aead}, nil
}

// Current returns the key a process started now would seal under: AGENTRUN_SEAL_KEY (getenv), or
// the key in dir/seal.key, and says which. When neither is there it returns an error wrapping
// os.ErrNotExist (Load then generates seal.key; Current never does).
func Current(getenv func(string) string, dir string) ([]byte, string, error) {
	if v := getenv(EnvVar); strings.TrimSpace(v) != "" {
		k, err := ParseKey(v)
		return k, EnvVar, err
	}
	path := filepath.Join(dir, KeyFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "", fmt.Errorf("no seal key: %s is unset and %s does not exist: %w", EnvVar, path, os.ErrNotExist)
	}
	if err != nil {
		return nil, "", fmt.Errorf("read seal key: %w", err)
	}
	k, err := ParseKey(string(data))
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	return k, path, nil
}

// Load returns the box for AGENTRUN_SEAL_KEY (getenv), or for the key in dir/seal.key, generating
// that file (mode 0600) when it does not exist. It says where the key came from.
func Load(getenv func(string) string, dir string) (*Box, string, error) {
	if k, where, err := Current(getenv, dir); !errors.Is(err, os.ErrNotExist) {
		if err != nil {
			return nil, "", err
		}
		b, err := New(k)
		return b, where, err
	}
	path := filepath.Join(dir, KeyFile)
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return nil, "", fmt.Errorf("generate seal key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return Load(getenv, dir) // another process made it first
	}
	if err != nil {
		return nil, "", fmt.Errorf("write seal key: %w", err)
	}
	if _, err := f.WriteString(base64.StdEncoding.EncodeToString(k) + "\n"); err != nil {
		f.Close()
		return nil, "", fmt.Errorf("write seal key: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, "", fmt.Errorf("write seal key: %w", err)
	}
	b, err := New(k)
	return b, path + " (generated)", err
}

// Seal encrypts plaintext for the secret called name.
func (b *Box) Seal(name string, plaintext []byte) ([]byte, error) {
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	out := append([]byte{version}, nonce...)
	return b.aead.Seal(out, nonce, plaintext, []byte(name)), nil
}

// ErrOpen is returned when a sealed value does not open: another seal key, or tampering.
var ErrOpen = errors.New("sealed value does not open with this seal key (was it sealed under another AGENTRUN_SEAL_KEY?)")

// Open decrypts a value sealed for the secret called name.
func (b *Box) Open(name string, sealed []byte) ([]byte, error) {
	n := b.aead.NonceSize()
	if len(sealed) < 1+n || sealed[0] != version {
		return nil, ErrOpen
	}
	pt, err := b.aead.Open(nil, sealed[1:1+n], sealed[1+n:], []byte(name))
	if err != nil {
		return nil, ErrOpen
	}
	return pt, nil
}

// SealMap seals a secret's key/value pairs and returns them with the sorted key names.
func (b *Box) SealMap(name string, data map[string]string) ([]byte, []string, error) {
	pt, err := json.Marshal(data)
	if err != nil {
		return nil, nil, err
	}
	sealed, err := b.Seal(name, pt)
	if err != nil {
		return nil, nil, err
	}
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return sealed, keys, nil
}

// Opener opens secrets from a store (agent.Secrets).
type Opener struct {
	Box   *Box
	Store interface {
		GetSecret(ctx context.Context, name string) ([]byte, error)
	}
}

// Open returns a secret's key/value pairs.
func (o *Opener) Open(ctx context.Context, name string) (map[string]string, error) {
	sealed, err := o.Store.GetSecret(ctx, name)
	if err != nil {
		return nil, err
	}
	pt, err := o.Box.Open(name, sealed)
	if err != nil {
		return nil, fmt.Errorf("secret %s: %w", name, err)
	}
	var m map[string]string
	if err := json.Unmarshal(pt, &m); err != nil {
		return nil, fmt.Errorf("secret %s: %w", name, err)
	}
	return m, nil
}

// Reseal returns the rotation of one sealed value from the box from to the box to: the value is
// opened with from (its name bound as before) and sealed again under to. A value that does not
// open with from is an error naming the secret, so a wrong old key is found before anything is
// written.
func Reseal(from, to *Box) func(name string, sealed []byte) ([]byte, error) {
	return func(name string, sealed []byte) ([]byte, error) {
		pt, err := from.Open(name, sealed)
		if err != nil {
			return nil, fmt.Errorf("secret %s does not open with the old key: %w", name, ErrWrongOldKey)
		}
		out, err := to.Seal(name, pt)
		if err != nil {
			return nil, fmt.Errorf("secret %s: %w", name, err)
		}
		return out, nil
	}
}

// ErrWrongOldKey is returned by Reseal for a value the old key does not open.
var ErrWrongOldKey = errors.New("it is not the key this secret was sealed under")

// Unopened opens each named secret (read with get) with b and returns the names of those that do
// not open (another key, or tampering). A process checks its key with it at start.
func Unopened(ctx context.Context, b *Box, names []string, get func(ctx context.Context, name string) ([]byte, error)) ([]string, error) {
	var bad []string
	for _, n := range names {
		sealed, err := get(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("check seal key: %w", err)
		}
		if _, err := b.Open(n, sealed); err != nil {
			bad = append(bad, n)
		}
	}
	return bad, nil
}

// ModelKeys names the sealed secret holding the model keys a signed-in person pasted in the
// console (Settings → Model keys), by variable (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, ...).
// It is no DNS label, so no agent can name it (spec.model.apiKeySecret, secret:NAME/KEY) and no
// one can write it through PUT /v2/secrets; the secret listings leave it out (Listed).
const ModelKeys = "agentrun:model-keys"

// Listed says whether a secret of this name is listed to people: every one but ModelKeys.
func Listed(name string) bool { return name != ModelKeys }

var keyName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// MaxValue bounds one value of a secret.
const MaxValue = 16 << 10

// CheckEntry says what is wrong with one key and value of a secret, or nil: the key is letters,
// digits and '_' (at most 128), the value non-empty and at most 16 KiB. Never the value itself.
func CheckEntry(key, value string) error {
	if !keyName.MatchString(key) || len(key) > 128 {
		return fmt.Errorf("key %q must be letters, digits and '_' (like ANTHROPIC_API_KEY), at most 128", key)
	}
	if strings.TrimSpace(value) == "" || len(value) > MaxValue {
		return errors.New("value must be non-empty and at most 16 KiB")
	}
	return nil
}
