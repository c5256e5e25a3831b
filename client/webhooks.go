package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// Webhooks: the calls beyond the resource verbs (GetObject, ApplyObject, ... with "webhooks").

// WebhookDeliveries is GET /v2/webhooks/NAME/deliveries: the webhook's deliveries with their
// attempts, newest first (limit 0: all).
func (c *Client) WebhookDeliveries(ctx context.Context, name string, limit int) (json.RawMessage, error) {
	var raw json.RawMessage
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if _, _, err := c.call(ctx, request{method: http.MethodGet, path: objectPath("webhooks", name) + "/deliveries", query: q}, &raw); err != nil {
		return nil, fmt.Errorf("webhook %s history: %w", name, err)
	}
	return raw, nil
}

// TestWebhook is POST /v2/webhooks/NAME/test: a webhook.test delivery to this webhook, queued.
func (c *Client) TestWebhook(ctx context.Context, name string) (json.RawMessage, error) {
	return c.webhookPost(ctx, name, "test", map[string]any{})
}

// RotateWebhook is POST /v2/webhooks/NAME/rotate (a signed-in person only): a new whsec_ signing
// secret, answered once; the old one is kept as the previous one for hold ("": a day).
func (c *Client) RotateWebhook(ctx context.Context, name, hold string) (json.RawMessage, error) {
	body := map[string]any{}
	if hold != "" {
		body["hold"] = hold
	}
	return c.webhookPost(ctx, name, "rotate", body)
}

func (c *Client) webhookPost(ctx context.Context, name, verb string, body any) (json.RawMessage, error) {
	var raw json.RawMessage
	if _, _, err := c.call(ctx, request{method: http.MethodPost, path: objectPath("webhooks", name) + "/" + verb, body: body}, &raw); err != nil {
		return nil, fmt.Errorf("webhook %s %s: %w", name, verb, err)
	}
	return raw, nil
}
