// Package webhook delivers outbound webhooks (docs/webhooks.md): the store's outbox rows
// (store.Webhooks), written in the transaction of the event they report, are claimed under a lease
// and POSTed to each webhook's URL signed the Standard Webhooks way (webhook-id, webhook-timestamp,
// webhook-signature v1 under the whsec_ secret its secretRef names), at least once and with the
// same webhook-id on every attempt, retried with exponential backoff for a day. Addresses are
// checked as web_fetch's are (webfetch.Refused): loopback, private and the like only when the
// server's --webhook-allow lists them. Every server and runner runs a Dispatcher; the claims make
// one of them deliver each row. internal/app starts it.
package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/secret"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/tools/webfetch"
	"agentrun.dev/agentrun/internal/trigger"
)

// Timeout bounds one attempt: connecting, sending, and the receiver's answer.
const Timeout = 5 * time.Second

// Tuning of the dispatcher.
const (
	batch     = 16
	inFlight  = 8
	poll      = 500 * time.Millisecond
	pruneEach = 10 * time.Minute
	// leaseTTL outlives an attempt by far, so one attempt is never made twice at once.
	leaseTTL = 6 * Timeout
	// maxErr bounds an attempt's error in the history.
	maxErr = 500
)

// Dispatcher claims due deliveries and makes their attempts. Run is its only goroutine (it starts
// one per delivery in flight and waits for them).
type Dispatcher struct {
	Store store.Store
	Seal  *secret.Box
	// Allow is --webhook-allow: addresses reached although loopback, private or link-local.
	Allow []webfetch.Allow
	// Owner names this process's claims (unique among the servers on one store).
	Owner string
	// RetryBase is the first retry's delay (doubling after, up to an hour); RetryFor how long
	// after its event a delivery is tried. Zero: the store's defaults.
	RetryBase, RetryFor time.Duration
	// Retention is how long delivered and given-up deliveries are kept (0: for ever).
	Retention time.Duration
	// Version goes in the User-Agent.
	Version string
	Log     *slog.Logger

	once   sync.Once
	client *http.Client
}

// Run delivers until ctx ends.
func (d *Dispatcher) Run(ctx context.Context) {
	lastPrune := time.Time{}
	for ctx.Err() == nil {
		if d.Retention > 0 && time.Since(lastPrune) > pruneEach {
			lastPrune = time.Now()
			if n, err := d.Store.PruneDeliveries(ctx, time.Now().Add(-d.Retention), 1000); err != nil && ctx.Err() == nil {
				d.Log.Warn("prune webhook deliveries", "err", err)
			} else if n > 0 {
				d.Log.Info("pruned webhook deliveries", "deliveries", n, "retention", d.Retention)
			}
		}
		n := d.Once(ctx)
		if n == 0 {
			select {
			case <-ctx.Done():
			case <-time.After(poll):
			}
		}
	}
}

// Once claims the deliveries due now, makes their attempts and returns how many it made.
func (d *Dispatcher) Once(ctx context.Context) int {
	ds, err := d.Store.ClaimDeliveries(ctx, d.Owner, batch, leaseTTL)
	if err != nil {
		if ctx.Err() == nil {
			d.Log.Warn("claim webhook deliveries", "err", err)
		}
		return 0
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, inFlight)
	for _, del := range ds {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			d.attempt(ctx, del)
		}()
	}
	wg.Wait()
	return len(ds)
}

// Payload is a delivery's body: {type, timestamp, data}, data with the run's agent added (the
// console link came with the event's run status). It is made the same on every attempt, by any
// process.
func Payload(del store.Delivery) []byte {
	data := map[string]any{}
	_ = json.Unmarshal(del.Data, &data)
	if del.Agent != "" {
		data["agent"] = del.Agent
	}
	b, _ := json.Marshal(map[string]any{"type": del.Type, "timestamp": del.Time.UTC().Format(time.RFC3339Nano), "data": data})
	return b
}

func (d *Dispatcher) attempt(ctx context.Context, del store.Delivery) {
	start := time.Now()
	a := api.WebhookAttempt{Attempt: del.Attempts + 1, Time: start.UTC()}
	code, err := d.post(ctx, del)
	a.DurationMS, a.StatusCode = time.Since(start).Milliseconds(), code
	if err != nil {
		a.Error = cut(err.Error())
	} else {
		a.Delivered = true
	}
	if ctx.Err() != nil && !a.Delivered {
		return // shutting down: the lease runs out and the delivery is tried again
	}
	var next *time.Time
	if !a.Delivered {
		if t, ok := store.NextAttempt(del.CreatedAt, a.Attempt, time.Now(), d.retryBase(), d.retryFor()); ok {
			next = &t
		}
	}
	ok, ferr := d.Store.FinishAttempt(context.WithoutCancel(ctx), d.Owner, del, a, next)
	switch {
	case ferr != nil:
		d.Log.Warn("record webhook attempt", "webhook", del.Webhook, "delivery", del.ID, "err", ferr)
	case !ok:
		d.Log.Warn("webhook delivery's claim ran out before its attempt was recorded", "webhook", del.Webhook, "delivery", del.ID)
	case a.Delivered:
		d.Log.Debug("webhook delivered", "webhook", del.Webhook, "delivery", del.ID, "type", del.Type, "attempt", a.Attempt)
	case next == nil:
		d.Log.Warn("webhook delivery given up", "webhook", del.Webhook, "delivery", del.ID, "type", del.Type, "attempts", a.Attempt, "err", a.Error)
	default:
		d.Log.Info("webhook attempt failed", "webhook", del.Webhook, "delivery", del.ID, "attempt", a.Attempt, "next", next.Format(time.RFC3339), "err", a.Error)
	}
}

// post makes one attempt: the receiver's status code (0: none) and why it failed (nil: 2xx).
func (d *Dispatcher) post(ctx context.Context, del store.Delivery) (int, error) {
	w, err := d.Store.GetWebhook(ctx, del.Webhook)
	if err != nil {
		return 0, fmt.Errorf("read webhook: %w", err)
	}
	secrets, err := trigger.SigningSecrets(ctx, d.Store, d.Seal, w.Spec.SecretRef, time.Now())
	if err != nil {
		return 0, fmt.Errorf("open signing secret %s: %w", w.Spec.SecretRef, err)
	}
	if len(secrets) == 0 {
		return 0, fmt.Errorf("the signing secret %s is not set: agentrun webhooks rotate %s", w.Spec.SecretRef, w.Metadata.Name)
	}
	u, err := url.Parse(w.Spec.URL)
	if err != nil {
		return 0, fmt.Errorf("url: %w", err)
	}
	if err := d.CheckLiteral(u); err != nil {
		return 0, err
	}
	body := Payload(del)
	ts := time.Now().Unix()
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "agentrun-webhooks/"+d.Version)
	req.Header.Set("webhook-id", del.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", trigger.SignStandard(secrets[0], del.ID, ts, body))
	resp, err := d.httpClient().Do(req)
	if err != nil {
		var be *blockedError
		if errors.As(err, &be) {
			return 0, be
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("no answer within %s", Timeout)
		}
		return 0, errors.New(strings.TrimPrefix(err.Error(), "Post "+strconv.Quote(u.String())+": "))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("the receiver answered %s", resp.Status)
	}
	return resp.StatusCode, nil
}

// blockedError is an address the webhooks do not reach.
type blockedError struct {
	addr netip.AddrPort
	why  string
}

func (e *blockedError) Error() string {
	return fmt.Sprintf("%s is %s, which webhooks do not reach (the server's --webhook-allow %s would allow it)", e.addr, e.why, e.addr)
}

// CheckLiteral refuses a URL whose host is an address literal the webhooks do not reach, before
// anything is dialled (and at apply). A name is checked where it is dialled, after DNS.
func (d *Dispatcher) CheckLiteral(u *url.URL) error {
	return CheckLiteral(d.Allow, u)
}

// CheckLiteral is Dispatcher.CheckLiteral for an allow list.
func CheckLiteral(allow []webfetch.Allow, u *url.URL) error {
	a, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]"))
	if err != nil {
		return nil
	}
	port := uint16(80)
	if u.Scheme == "https" {
		port = 443
	}
	if p, err := strconv.ParseUint(u.Port(), 10, 16); err == nil {
		port = uint16(p)
	}
	ap := netip.AddrPortFrom(a.Unmap(), port)
	if why := webfetch.Refused(allow, ap); why != "" {
		return &blockedError{addr: ap, why: why}
	}
	return nil
}

// httpClient dials only addresses webfetch.Refused lets through, after DNS, uses no proxy (a
// proxy would reach what the check refuses) and follows no redirect (a 3xx is a failed attempt).
func (d *Dispatcher) httpClient() *http.Client {
	d.once.Do(func() {
		dialer := &net.Dialer{Timeout: Timeout, Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("dial %s %s: not an address", network, address)
			}
			if why := webfetch.Refused(d.Allow, ap); why != "" {
				return &blockedError{addr: ap, why: why}
			}
			return nil
		}}
		d.client = &http.Client{
			Transport: &http.Transport{DialContext: dialer.DialContext, TLSHandshakeTimeout: Timeout, ResponseHeaderTimeout: Timeout,
				MaxResponseHeaderBytes: 64 << 10, MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	})
	return d.client
}

func (d *Dispatcher) retryBase() time.Duration {
	if d.RetryBase > 0 {
		return d.RetryBase
	}
	return store.DefaultRetryBase
}

func (d *Dispatcher) retryFor() time.Duration {
	if d.RetryFor > 0 {
		return d.RetryFor
	}
	return store.DefaultRetryFor
}

func cut(s string) string {
	if len(s) <= maxErr {
		return s
	}
	return s[:maxErr] + "…"
}

// TestEvent is the event `webhooks test` sends: a webhook.test delivery to one webhook.
func TestEvent(webhook string) store.OutboxEvent {
	id := store.NewDeliveryID()
	data, _ := json.Marshal(map[string]any{"webhook": webhook, "message": "a test delivery from agentrun webhooks test"})
	return store.OutboxEvent{ID: id, Type: api.WebhookTest, Key: "test:" + id, Time: time.Now().UTC(), Data: data}
}
