package app

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/pflag"

	"agentrun.dev/agentrun/internal/secret"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/tools/webfetch"
	"agentrun.dev/agentrun/internal/webhook"
)

// envWebhookRetryBase is --webhook-retry-base's default: the first retry's delay of a failed
// delivery (the end-to-end tests shorten it; an operator may too).
const envWebhookRetryBase = "AGENTRUN_WEBHOOK_RETRY_BASE"

// webhookOptions are the flags serve and runner share for outbound webhooks.
type webhookOptions struct {
	Allow     []string
	RetryBase time.Duration
	allow     []webfetch.Allow
}

func (o *webhookOptions) flags(f *pflag.FlagSet) {
	base := store.DefaultRetryBase
	if v := os.Getenv(envWebhookRetryBase); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			base = d
		}
	}
	f.StringArrayVar(&o.Allow, "webhook-allow", nil, "an address outbound webhooks may reach although it is loopback, private or link-local: ADDRESS, ADDRESS:PORT or PREFIX/BITS (repeatable)")
	f.DurationVar(&o.RetryBase, "webhook-retry-base", base, "a failed webhook delivery's first retry delay, doubling after each failure up to 1h, for a day (default $"+envWebhookRetryBase+" or 5s)")
}

func (o *webhookOptions) validate() error {
	if v := os.Getenv(envWebhookRetryBase); v != "" {
		if _, err := time.ParseDuration(v); err != nil {
			return fmt.Errorf("$%s %q: want a duration such as 5s", envWebhookRetryBase, v)
		}
	}
	if o.RetryBase <= 0 || o.RetryBase > time.Hour {
		return fmt.Errorf("--webhook-retry-base %v: want a duration above 0 and at most 1h", o.RetryBase)
	}
	o.allow = o.allow[:0]
	for _, a := range o.Allow {
		al, err := webfetch.ParseAllow(a)
		if err != nil {
			return fmt.Errorf("--webhook-allow: %w", err)
		}
		o.allow = append(o.allow, al)
	}
	return nil
}

// webhookDispatcher is a process's delivery loop for runParts. Every server and runner runs one;
// the store's claims make one of them deliver each event. retention 0 prunes nothing.
func webhookDispatcher(st store.Store, seal *secret.Box, o webhookOptions, retention time.Duration, log *slog.Logger) *webhook.Dispatcher {
	host, _ := os.Hostname()
	return &webhook.Dispatcher{Store: st, Seal: seal, Allow: o.allow, RetryBase: o.RetryBase, Retention: retention,
		Owner: fmt.Sprintf("%s/%d/%s", host, os.Getpid(), store.NewDeliveryID()[4:12]), Version: version, Log: log.With("part", "webhooks")}
}
