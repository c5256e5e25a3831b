package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// GetCredits is GET /v2/credits with the last limit ledger entries (0: all).
func (c *Client) GetCredits(ctx context.Context, limit int) (*Credits, error) {
	var out Credits
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if _, _, err := c.call(ctx, request{method: http.MethodGet, path: "/v2/credits", query: q}, &out); err != nil {
		return nil, fmt.Errorf("credits: %w", err)
	}
	return &out, nil
}

// AddCredits is POST /v2/credits: adds amountUSD (a decimal string) to the server's credits; runs
// waiting on credits continue.
func (c *Client) AddCredits(ctx context.Context, amountUSD, note string) (*Credits, error) {
	var out Credits
	body := map[string]string{"amountUSD": amountUSD}
	if note != "" {
		body["note"] = note
	}
	if _, _, err := c.call(ctx, request{method: http.MethodPost, path: "/v2/credits", body: body}, &out); err != nil {
		return nil, fmt.Errorf("add credits: %w", err)
	}
	return &out, nil
}

// RaiseCap is PATCH /v2/agentruns/NAME {"spec": {"maxCostUSD": ...}}: raises a run's own cap (it
// cannot be lowered); a run waiting with MaxCostReached continues.
func (c *Client) RaiseCap(ctx context.Context, run, maxCostUSD string) (*AgentRun, error) {
	var r AgentRun
	body := map[string]any{"spec": map[string]string{"maxCostUSD": maxCostUSD}}
	if _, _, err := c.call(ctx, request{method: http.MethodPatch, path: objectPath(AgentRuns, run), body: body,
		header: http.Header{"Content-Type": {"application/merge-patch+json"}}}, &r); err != nil {
		return nil, fmt.Errorf("raise the cap of agentrun %q: %w", run, err)
	}
	return &r, nil
}

// ListSecrets is GET /v2/secrets.
func (c *Client) ListSecrets(ctx context.Context) ([]SecretInfo, error) {
	var out struct {
		Items []SecretInfo `json:"items"`
	}
	if _, _, err := c.call(ctx, request{method: http.MethodGet, path: "/v2/secrets"}, &out); err != nil {
		return nil, fmt.Errorf("list secrets: %w", err)
	}
	return out.Items, nil
}

// PutSecret is PUT /v2/secrets/NAME: only a signed-in person may (see Login); the API token gets
// code PersonRequired.
func (c *Client) PutSecret(ctx context.Context, name string, data map[string]string) error {
	if _, _, err := c.call(ctx, request{method: http.MethodPut, path: "/v2/secrets/" + url.PathEscape(name), body: map[string]any{"data": data}}, nil); err != nil {
		return fmt.Errorf("set secret %q: %w", name, err)
	}
	return nil
}

// DeleteSecret is DELETE /v2/secrets/NAME (a signed-in person only).
func (c *Client) DeleteSecret(ctx context.Context, name string) error {
	if _, _, err := c.call(ctx, request{method: http.MethodDelete, path: "/v2/secrets/" + url.PathEscape(name)}, nil); err != nil {
		return fmt.Errorf("delete secret %q: %w", name, err)
	}
	return nil
}
