package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// A person's session is kept in the data folder's session.json, for one server URL. When it
// matches the server the CLI talks to, requests carry it instead of the API token, so the CLI acts
// as that person (who may approve tool calls; the API token may not).
type sessionFile struct {
	URL     string `json:"url"`
	User    string `json:"user"`
	Session string `json:"session"`
}

// Login signs a person in (the first time, with the server's setup code, which sets the password)
// and returns the session.
func (c *Client) Login(ctx context.Context, user, password, setupCode string) (string, error) {
	var out struct {
		User    string `json:"user"`
		Session string `json:"session"`
	}
	body := map[string]string{"user": user, "password": password}
	if setupCode != "" {
		body["setupCode"] = setupCode
	}
	if _, _, err := c.call(ctx, request{method: http.MethodPost, path: "/v2/login", body: body}, &out); err != nil {
		return "", fmt.Errorf("sign in: %w", err)
	}
	return out.Session, nil
}

// SaveSession stores a person's session for this client's server, and uses it from now on.
func (c *Client) SaveSession(user, session string) error {
	dir, err := DataDir()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	b, _ := json.Marshal(sessionFile{URL: c.baseURL, User: user, Session: session})
	if err := os.WriteFile(filepath.Join(dir, "session.json"), b, 0o600); err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	c.token = session
	return nil
}

// sessionFor returns the saved person session for baseURL, if any. For the local server (found
// through the data folder's server.json) the folder's session is its own whatever port it is on
// now; the server checks the signature anyway.
func sessionFor(dir, baseURL string, local bool) (string, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "session.json"))
	if err != nil {
		return "", false
	}
	var f sessionFile
	if json.Unmarshal(b, &f) != nil || (!local && normalizeURL(f.URL) != baseURL) || !strings.HasPrefix(f.Session, "ars_") {
		return "", false
	}
	return f.Session, true
}

// Logout forgets the saved session.
func Logout() error {
	dir, err := DataDir()
	if err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, "session.json")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// Approval is a tool call that asked a person, as GET .../approvals lists it.
type Approval struct {
	ID        int64           `json:"id"`
	StepKey   string          `json:"stepKey"`
	Tool      string          `json:"tool"`
	Input     json.RawMessage `json:"input"`
	Reason    string          `json:"reason,omitempty"`
	Rule      string          `json:"rule,omitempty"`
	State     string          `json:"state"`
	DecidedBy string          `json:"decidedBy,omitempty"`
	Note      string          `json:"note,omitempty"`
}

// Approvals lists a run's approvals.
func (c *Client) Approvals(ctx context.Context, run string) ([]Approval, error) {
	var out struct {
		Items []Approval `json:"items"`
	}
	if _, _, err := c.call(ctx, request{method: http.MethodGet, path: "/v2/agentruns/" + run + "/approvals"}, &out); err != nil {
		return nil, fmt.Errorf("approvals of %s: %w", run, err)
	}
	return out.Items, nil
}

// Decide approves or denies approval id of a run (a signed-in person only).
func (c *Client) Decide(ctx context.Context, run string, id int64, decision, reason string) (*Approval, error) {
	var out Approval
	body := map[string]string{"decision": decision}
	if reason != "" {
		body["reason"] = reason
	}
	if _, _, err := c.call(ctx, request{method: http.MethodPost, path: fmt.Sprintf("/v2/agentruns/%s/approvals/%d", run, id), body: body}, &out); err != nil {
		return nil, fmt.Errorf("%s approval %d of %s: %w", decision, id, run, err)
	}
	return &out, nil
}
