package server

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/trigger"
	"agentrun.dev/agentrun/internal/webhook"
)

// Webhooks: /v2/webhooks (the resource, its deliveries, test, rotate). Deliveries are made by
// internal/webhook's dispatcher, which every server runs (docs/webhooks.md).

func (s *Server) webhookRoutes(v2 *http.ServeMux) {
	rs := s.webhooks()
	v2.HandleFunc("GET /v2/webhooks", rs.listAll)
	v2.HandleFunc("POST /v2/webhooks", rs.createOne)
	v2.HandleFunc("GET /v2/webhooks/{name}", rs.getOne)
	v2.HandleFunc("PUT /v2/webhooks/{name}", rs.applyOne)
	v2.HandleFunc("DELETE /v2/webhooks/{name}", rs.deleteOne)
	// A webhook's history: its deliveries, newest first, each with its attempts.
	v2.HandleFunc("GET /v2/webhooks/{name}/deliveries", history(rs, "webhook", s.Store.ListDeliveries))
	v2.HandleFunc("POST /v2/webhooks/{name}/test", s.testWebhook)
	v2.HandleFunc("POST /v2/webhooks/{name}/rotate", s.rotateWebhook)
}

// webhookView fills a webhook's derived status: its pending deliveries and its newest one.
func (s *Server) webhookView(ctx context.Context, wh *api.Webhook, pending map[string]int) (*api.Webhook, error) {
	ds, err := s.Store.ListDeliveries(ctx, wh.Metadata.Name, 1)
	if err != nil {
		return nil, err
	}
	wh.Status = api.WebhookStatus{Pending: pending[wh.Metadata.Name]}
	if len(ds) > 0 {
		wh.Status.LastDelivery = &ds[0]
	}
	return wh, nil
}

// webhooks is the webhook resource's handlers (resource.go). A read shows each webhook's pending
// deliveries; the answer to a write does not count them.
func (s *Server) webhooks() resource[api.Webhook] {
	return resource[api.Webhook]{kind: "webhook", listKind: "WebhookList",
		meta: func(wh *api.Webhook) *api.ObjectMeta { return &wh.Metadata },
		spec: func(wh *api.Webhook) any { return wh.Spec },
		decode: func(body []byte) (*api.Webhook, error) {
			var wh api.Webhook
			if err := api.DecodeStrict(body, &wh); err != nil {
				return nil, err
			}
			wh.Status = api.WebhookStatus{} // derived, never stored
			return &wh, nil
		},
		check: func(_ context.Context, wh *api.Webhook) error { return s.checkWebhook(wh) },
		get:   s.Store.GetWebhook, list: allOf(s.Store.ListWebhooks), create: s.Store.CreateWebhook, update: s.Store.UpdateWebhook, delete: only(s.Store.DeleteWebhook),
		viewer: func(ctx context.Context, read bool) (func(*api.Webhook) (*api.Webhook, error), error) {
			var pending map[string]int
			if read {
				var err error
				if pending, err = s.Store.PendingDeliveries(ctx); err != nil {
					return nil, err
				}
			}
			return func(wh *api.Webhook) (*api.Webhook, error) { return s.webhookView(ctx, wh, pending) }, nil
		}}
}

// checkWebhook validates a webhook, and refuses a URL whose host is an address literal the
// dispatcher would not reach (a name is checked where it is dialled, after DNS).
func (s *Server) checkWebhook(wh *api.Webhook) error {
	var errs api.ErrorList
	errs.AddErr(api.DefaultAndValidateWebhook(wh))
	if errs.Has("spec.url") {
		return errs.Err()
	}
	// A well-formed URL's address is told with the document's other mistakes.
	if u, err := url.Parse(wh.Spec.URL); err != nil {
		errs.Add(api.Invalid("spec.url", "%q is not a URL", wh.Spec.URL))
	} else if err := webhook.CheckLiteral(s.WebhookAllow, u); err != nil {
		errs.Add(api.E(api.CodeWebhookBlocked, "spec.url", "%v", err))
	}
	return errs.Err()
}

// testWebhook queues a webhook.test delivery to this webhook alone; the dispatcher sends it as
// any other (history shows its attempts).
func (s *Server) testWebhook(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	d, err := s.Store.EnqueueDelivery(r.Context(), name, webhook.TestEvent(name))
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, d)
}

// rotateWebhook makes a new whsec_ signing secret in the secret spec.secretRef names (only a
// signed-in person may) and answers it once, as a trigger's rotate does.
func (s *Server) rotateWebhook(w http.ResponseWriter, r *http.Request) {
	if _, ok := requirePerson(w, r, "rotate a webhook's signing secret"); !ok {
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		writeErr(w, err)
		return
	}
	var rb rotateBody
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := api.DecodeStrict(body, &rb); err != nil {
			writeErr(w, err)
			return
		}
	}
	var hold time.Duration
	if rb.Hold != "" {
		if hold, err = time.ParseDuration(rb.Hold); err != nil || hold <= 0 || hold > 30*24*time.Hour {
			writeErr(w, api.Invalid("hold", "hold %q: want a duration up to 720h, such as 24h", rb.Hold))
			return
		}
	}
	wh, err := s.Store.GetWebhook(r.Context(), r.PathValue("name"))
	if err != nil {
		writeErr(w, err)
		return
	}
	rot, err := trigger.RotateSecret(r.Context(), s.Store, s.Seal, wh.Spec.SecretRef, false, hold, s.Now())
	if err != nil {
		writeErr(w, err)
		return
	}
	s.Log.Info("webhook secret rotated", "webhook", wh.Metadata.Name, "secret", rot.SecretRef)
	writeJSON(w, http.StatusOK, rot)
}
