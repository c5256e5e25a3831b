package webhook

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/secret"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/store/sqlite"
	"agentrun.dev/agentrun/internal/tools/webfetch"
	"agentrun.dev/agentrun/internal/trigger"
)

type receiver struct {
	mu   sync.Mutex
	reqs []*http.Request
	body [][]byte
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.reqs, rc.body = append(rc.reqs, r), append(rc.body, b)
	rc.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// setup is a store with one webhook to the receiver's address named by "localhost" (a name, so
// apply's literal check does not apply: the dial-time check must), its secret set, and a
// delivery queued.
func setup(t *testing.T) (store.Store, *secret.Box, *receiver, string, string) {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "agentrun.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	box, err := secret.New(bytes.Repeat([]byte{3}, 32))
	if err != nil {
		t.Fatal(err)
	}
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	hookURL := "http://localhost:" + u.Port() + "/hook"
	ctx := context.Background()
	if err := st.CreateWebhook(ctx, &api.Webhook{Metadata: api.ObjectMeta{Name: "w"}, Spec: api.WebhookSpec{URL: hookURL, Events: []string{api.WebhookRunFailed}, SecretRef: "w-hook"}}); err != nil {
		t.Fatal(err)
	}
	rot, err := trigger.RotateSecret(ctx, st, box, "w-hook", false, 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.EnqueueDelivery(ctx, "w", TestEvent("w")); err != nil {
		t.Fatal(err)
	}
	return st, box, rc, rot.Secret, u.Port()
}

func history(t *testing.T, st store.Store) api.WebhookDelivery {
	t.Helper()
	ds, err := st.ListDeliveries(context.Background(), "w", 0)
	if err != nil || len(ds) != 1 {
		t.Fatalf("ListDeliveries = %+v, %v", ds, err)
	}
	return ds[0]
}

// A webhook to a loopback address is not dialled without --webhook-allow, even named by a name
// that resolves there; the attempt's error says why and what would allow it.
func TestLoopbackNeedsTheAllowFlag(t *testing.T) {
	st, box, rc, _, _ := setup(t)
	d := &Dispatcher{Store: st, Seal: box, Owner: "test", RetryBase: time.Hour, Log: slog.New(slog.DiscardHandler)}
	if n := d.Once(context.Background()); n != 1 {
		t.Fatalf("Once made %d attempts, want 1", n)
	}
	if len(rc.reqs) != 0 {
		t.Fatalf("the receiver on loopback got %d requests", len(rc.reqs))
	}
	h := history(t, st)
	if h.State != api.DeliveryPending || len(h.History) != 1 || !strings.Contains(h.History[0].Error, "loopback") || !strings.Contains(h.History[0].Error, "--webhook-allow") {
		t.Fatalf("history %+v", h)
	}
}

// With the address allowed the delivery is made, signed Standard Webhooks style under the secret,
// and recorded delivered; the payload and webhook-id are what the history names.
func TestDeliveredSigned(t *testing.T) {
	st, box, rc, sec, _ := setup(t)
	d := &Dispatcher{Store: st, Seal: box, Owner: "test", Allow: []webfetch.Allow{{Prefix: netip.MustParsePrefix("127.0.0.0/8")}, {Prefix: netip.MustParsePrefix("::1/128")}},
		Log: slog.New(slog.DiscardHandler)}
	if n := d.Once(context.Background()); n != 1 {
		t.Fatalf("Once made %d attempts, want 1", n)
	}
	if len(rc.reqs) != 1 {
		t.Fatalf("the receiver got %d requests", len(rc.reqs))
	}
	r, body := rc.reqs[0], rc.body[0]
	h := history(t, st)
	if r.Header.Get("webhook-id") != h.ID {
		t.Errorf("webhook-id %q, history %q", r.Header.Get("webhook-id"), h.ID)
	}
	if err := trigger.VerifyStandard([]string{sec}, r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature"), body, time.Now()); err != nil {
		t.Errorf("signature: %v", err)
	}
	if !bytes.Contains(body, []byte(`"type":"webhook.test"`)) || bytes.Contains(body, []byte(sec)) {
		t.Errorf("body %s", body)
	}
	if h.State != api.DeliveryDelivered || len(h.History) != 1 || !h.History[0].Delivered || h.History[0].StatusCode != 204 {
		t.Errorf("history %+v", h)
	}
	if n := d.Once(context.Background()); n != 0 {
		t.Errorf("a delivered delivery was attempted again")
	}
}

// A secret not set yet fails the attempt with the command that sets it, and nothing is sent.
func TestNoSecretYet(t *testing.T) {
	st, box, rc, _, _ := setup(t)
	if err := st.DeleteSecret(context.Background(), "w-hook"); err != nil {
		t.Fatal(err)
	}
	d := &Dispatcher{Store: st, Seal: box, Owner: "test", RetryBase: time.Hour, Allow: []webfetch.Allow{{Prefix: netip.MustParsePrefix("127.0.0.0/8")}}, Log: slog.New(slog.DiscardHandler)}
	d.Once(context.Background())
	h := history(t, st)
	if len(rc.reqs) != 0 || len(h.History) != 1 || !strings.Contains(h.History[0].Error, "agentrun webhooks rotate w") {
		t.Fatalf("requests %d, history %+v", len(rc.reqs), h)
	}
}
