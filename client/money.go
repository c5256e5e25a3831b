package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"agentrun.dev/agentrun/internal/api"
)

// CreditEntry is one line of the credits ledger.
type CreditEntry struct {
	Seq       int64  `json:"seq"`
	Time      string `json:"time"`
	Kind      string `json:"kind"` // "add" or "charge"
	AmountUSD string `json:"amountUSD"`
	Run       string `json:"run,omitempty"`
	StepKey   string `json:"stepKey,omitempty"`
	Note      string `json:"note,omitempty"`
}

// CreditReservation is credits held by a call in flight.
type CreditReservation struct {
	Run       string `json:"run"`
	StepKey   string `json:"stepKey"`
	Attempt   int    `json:"attempt"`
	AmountUSD string `json:"amountUSD"`
}

// Credits is GET /v2/credits: the server's credits balance and its recent ledger.
type Credits struct {
	Enforced        bool                `json:"enforced"`
	BalanceUSD      string              `json:"balanceUSD"`
	AddedUSD        string              `json:"addedUSD"`
	ChargedUSD      string              `json:"chargedUSD"`
	ReservedUSD     string              `json:"reservedUSD"`
	AvailableUSD    string              `json:"availableUSD"`
	UnpricedCharges int64               `json:"unpricedCharges"`
	Entries         []CreditEntry       `json:"entries"`
	Reservations    []CreditReservation `json:"reservations"`
}

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
func (c *Client) RaiseCap(ctx context.Context, run, maxCostUSD string) (*api.AgentRun, error) {
	var r api.AgentRun
	body := map[string]any{"spec": map[string]string{"maxCostUSD": maxCostUSD}}
	if _, _, err := c.call(ctx, request{method: http.MethodPatch, path: objectPath(AgentRuns, run), body: body,
		header: http.Header{"Content-Type": {"application/merge-patch+json"}}}, &r); err != nil {
		return nil, fmt.Errorf("raise the cap of agentrun %q: %w", run, err)
	}
	return &r, nil
}
