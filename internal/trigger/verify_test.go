package trigger

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

// The Standard Webhooks specification's published test vector (the reference libraries' tests).
const (
	vecSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vecID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vecTS     = "1614265330"
	vecBody   = `{"test": 2432232314}`
	vecSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

// flipBit changes one bit of a v1 signature's MAC.
func flipBit(t *testing.T, sig string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(sig[3:])
	if err != nil {
		t.Fatal(err)
	}
	b[7] ^= 0x10
	return "v1," + base64.StdEncoding.EncodeToString(b)
}

func TestStandardWebhooksVector(t *testing.T) {
	at := time.Unix(1614265330, 0)
	if got := SignStandard(vecSecret, vecID, 1614265330, []byte(vecBody)); got != vecSig {
		t.Errorf("SignStandard = %s, want the published %s", got, vecSig)
	}
	if err := VerifyStandard([]string{vecSecret}, vecID, vecTS, vecSig, []byte(vecBody), at); err != nil {
		t.Errorf("the published vector does not verify: %v", err)
	}
	// Several signatures (the sender rotating): one good one is enough.
	if err := VerifyStandard([]string{vecSecret}, vecID, vecTS, "v1,bm9wZQ== v2,xyz "+vecSig, []byte(vecBody), at); err != nil {
		t.Errorf("the vector among other signatures does not verify: %v", err)
	}
	// Several secrets (our rotation): the old one still verifies after a new one.
	if err := VerifyStandard([]string{"whsec_" + base64.StdEncoding.EncodeToString([]byte("another key")), vecSecret}, vecID, vecTS, vecSig, []byte(vecBody), at); err != nil {
		t.Errorf("the vector under the previous secret does not verify: %v", err)
	}
	for name, c := range map[string]struct {
		id, ts, sig, body string
		now               time.Time
		want              error
	}{
		"one bit of the signature":      {vecID, vecTS, flipBit(t, vecSig), vecBody, at, ErrMismatch},
		"one bit of the body":           {vecID, vecTS, vecSig, `{"test": 2432232315}`, at, ErrMismatch},
		"another id":                    {"msg_p5jXN8AQM9LWM0D4loKWxJel", vecTS, vecSig, vecBody, at, ErrMismatch},
		"a v2 label":                    {vecID, vecTS, "v2" + vecSig[2:], vecBody, at, ErrMismatch},
		"no signature":                  {vecID, vecTS, "", vecBody, at, ErrNoSignature},
		"no id":                         {"", vecTS, vecSig, vecBody, at, ErrNoSignature},
		"an id of 257 characters":       {strings.Repeat("m", 257), vecTS, vecSig, vecBody, at, ErrLongID},
		"a timestamp in milliseconds":   {vecID, "1614265330000", vecSig, vecBody, at, ErrExpired},
		"not a number":                  {vecID, "yesterday", vecSig, vecBody, at, ErrBadTimestamp},
		"5 minutes and 1 second later":  {vecID, vecTS, vecSig, vecBody, at.Add(Tolerance + time.Second), ErrExpired},
		"5 minutes and 1 second before": {vecID, vecTS, vecSig, vecBody, at.Add(-Tolerance - time.Second), ErrExpired},
	} {
		if err := VerifyStandard([]string{vecSecret}, c.id, c.ts, c.sig, []byte(c.body), c.now); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", name, err, c.want)
		}
	}
	// Exactly at the tolerance it still verifies.
	if err := VerifyStandard([]string{vecSecret}, vecID, vecTS, vecSig, []byte(vecBody), at.Add(Tolerance)); err != nil {
		t.Errorf("at 5 minutes: %v", err)
	}
}

// GitHub's published example ("Validating webhook deliveries").
func TestGitHubExampleSignature(t *testing.T) {
	const secret, body = "It's a Secret to Everybody", "Hello, World!"
	const want = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	if got := SignGitHub(secret, []byte(body)); got != want {
		t.Errorf("SignGitHub = %s, want the published %s", got, want)
	}
	if err := VerifyGitHub([]string{secret}, want, []byte(body)); err != nil {
		t.Errorf("the published example does not verify: %v", err)
	}
	bad := want[:len(want)-1] + "6" // ...3e17 -> ...3e16: one bit
	if err := VerifyGitHub([]string{secret}, bad, []byte(body)); !errors.Is(err, ErrMismatch) {
		t.Errorf("one bit changed: %v", err)
	}
	if err := VerifyGitHub([]string{secret}, want, []byte("Hello, World?")); !errors.Is(err, ErrMismatch) {
		t.Errorf("another body: %v", err)
	}
	if err := VerifyGitHub([]string{secret}, "sha1=abc", []byte(body)); !errors.Is(err, ErrNoSignature) {
		t.Errorf("a sha1 header: %v", err)
	}
}

func TestNewSecretsVerify(t *testing.T) {
	s, err := NewStandardSecret()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	sig := SignStandard(s, "msg_1", now.Unix(), []byte("{}"))
	if err := VerifyStandard([]string{s}, "msg_1", itoa(now.Unix()), sig, []byte("{}"), now); err != nil {
		t.Errorf("a new secret's signature does not verify: %v", err)
	}
	g, err := NewGitHubSecret()
	if err != nil || VerifyGitHub([]string{g}, SignGitHub(g, []byte("x")), []byte("x")) != nil {
		t.Errorf("a new GitHub secret does not verify: %v", err)
	}
}
