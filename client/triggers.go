package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// Triggers: the calls beyond the resource verbs (GetObject, ApplyObject, ... with "triggers").

// TriggerFires is GET /v2/triggers/NAME/fires: the trigger's fires, newest first (limit 0: all).
func (c *Client) TriggerFires(ctx context.Context, name string, limit int) (json.RawMessage, error) {
	var raw json.RawMessage
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if _, _, err := c.call(ctx, request{method: http.MethodGet, path: objectPath("triggers", name) + "/fires", query: q}, &raw); err != nil {
		return nil, fmt.Errorf("trigger %s history: %w", name, err)
	}
	return raw, nil
}

// TestTrigger is POST /v2/triggers/NAME/test: the input rendered over payload (nil: the
// trigger's test payload) and the run a fire would start; nothing is started.
func (c *Client) TestTrigger(ctx context.Context, name string, payload json.RawMessage) (json.RawMessage, error) {
	return c.triggerPost(ctx, name, "test", payloadBody(payload))
}

// FireTrigger is POST /v2/triggers/NAME/fire: one fire now.
func (c *Client) FireTrigger(ctx context.Context, name string, payload json.RawMessage) (json.RawMessage, error) {
	return c.triggerPost(ctx, name, "fire", payloadBody(payload))
}

// RotateTrigger is POST /v2/triggers/NAME/rotate (a signed-in person only): a new signing secret,
// answered once; the old one verifies for hold ("" : a day).
func (c *Client) RotateTrigger(ctx context.Context, name, hold string) (json.RawMessage, error) {
	body := map[string]any{}
	if hold != "" {
		body["hold"] = hold
	}
	return c.triggerPost(ctx, name, "rotate", body)
}

func payloadBody(p json.RawMessage) map[string]any {
	if len(p) == 0 {
		return map[string]any{}
	}
	return map[string]any{"payload": p}
}

func (c *Client) triggerPost(ctx context.Context, name, verb string, body any) (json.RawMessage, error) {
	var raw json.RawMessage
	if _, _, err := c.call(ctx, request{method: http.MethodPost, path: objectPath("triggers", name) + "/" + verb, body: body}, &raw); err != nil {
		return nil, fmt.Errorf("trigger %s %s: %w", name, verb, err)
	}
	return raw, nil
}
