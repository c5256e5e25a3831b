package trigger

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Tolerance is how far a Standard Webhooks timestamp may be from now, either way.
const Tolerance = 5 * time.Minute

// MaxBody bounds a delivery's body.
const MaxBody = 1 << 20

// Why a delivery does not verify. The hook answers 401 for each and says nothing more; the
// server's log says which.
var (
	ErrNoSignature  = errors.New("the delivery is not signed (a signature header is missing)")
	ErrBadTimestamp = errors.New("webhook-timestamp is not a Unix time in seconds")
	ErrExpired      = errors.New("webhook-timestamp is more than 5 minutes from now (a replay, or a clock off)")
	ErrMismatch     = errors.New("no signature matches the trigger's secret")
	ErrLongID       = errors.New("webhook-id is longer than 256 characters")
)

// MaxID bounds a delivery id (webhook-id, X-GitHub-Delivery): it is stored with the fire.
const MaxID = 256

// secretKey decodes a Standard Webhooks secret: whsec_ then base64. A secret without the prefix
// that is not base64 is used as its bytes, as the reference libraries do.
func secretKey(secret string) []byte {
	s := strings.TrimPrefix(secret, "whsec_")
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b
	}
	return []byte(s)
}

// SignStandard is the Standard Webhooks signature of a delivery: "v1," then base64 of
// HMAC-SHA256 over id.timestamp.body under the secret's key.
func SignStandard(secret, id string, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, secretKey(secret))
	mac.Write([]byte(id + "." + strconv.FormatInt(timestamp, 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// VerifyStandard checks a Standard Webhooks delivery: the timestamp within Tolerance of now, and
// one of the space-separated signatures (several during a sender's rotation) made with one of
// secrets (ours during our rotation). Signatures compare in constant time.
func VerifyStandard(secrets []string, id, timestamp, signatures string, body []byte, now time.Time) error {
	if id == "" || timestamp == "" || signatures == "" {
		return ErrNoSignature
	}
	if len(id) > MaxID {
		return ErrLongID
	}
	sec, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return ErrBadTimestamp
	}
	if d := now.Sub(time.Unix(sec, 0)); d > Tolerance || d < -Tolerance {
		return ErrExpired
	}
	for _, secret := range secrets {
		mac := hmac.New(sha256.New, secretKey(secret))
		mac.Write([]byte(id + "." + timestamp + "."))
		mac.Write(body)
		want := mac.Sum(nil)
		for _, part := range strings.Fields(signatures) {
			version, sig, ok := strings.Cut(part, ",")
			if !ok || version != "v1" {
				continue
			}
			got, err := base64.StdEncoding.DecodeString(sig)
			if err == nil && hmac.Equal(got, want) {
				return nil
			}
		}
	}
	return ErrMismatch
}

// SignGitHub is GitHub's X-Hub-Signature-256: "sha256=" then hex of HMAC-SHA256 over the body.
func SignGitHub(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// GitHubKey is a GitHub delivery's fire key: the SHA-256 of its body, not its X-GitHub-Delivery
// header. GitHub signs the body alone (no id, no timestamp), so a captured delivery replayed
// under a new delivery id verifies; keyed by the body it is the same fire, answered with the
// first record (a redelivery keeps its body too). Every real delivery's payload differs (it
// carries the event's own ids and times), and, with no signed timestamp, there is no tolerance
// window after which a capture stops verifying: the body is deduped for as long as fires are kept.
func GitHubKey(body []byte) string {
	sum := sha256.Sum256(body)
	return "github:sha256:" + hex.EncodeToString(sum[:])
}

// VerifyGitHub checks X-Hub-Signature-256 against each of secrets, in constant time.
func VerifyGitHub(secrets []string, header string, body []byte) error {
	h, ok := strings.CutPrefix(strings.TrimSpace(header), "sha256=")
	if !ok {
		return ErrNoSignature
	}
	got, err := hex.DecodeString(h)
	if err != nil {
		return ErrMismatch
	}
	for _, secret := range secrets {
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		if hmac.Equal(got, mac.Sum(nil)) {
			return nil
		}
	}
	return ErrMismatch
}

// NewStandardSecret makes a Standard Webhooks secret: whsec_ and 32 random bytes in base64.
func NewStandardSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b), nil
}

// NewGitHubSecret makes a GitHub webhook secret: 32 random bytes in hex.
func NewGitHubSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}
