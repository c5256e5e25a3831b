// Package client is the Go client for agentrun's HTTP API (/v2): every method mirrors one endpoint,
// takes a context and returns the API's resource types, named in this package (types.go: AgentRun,
// AgentGroup, ... are aliases of the module's internal API types, so a program outside this module
// can build and read them with this package alone). New makes a client for a known server; Discover finds the local server and its token the way the CLI does
// (AGENTRUN_URL and AGENTRUN_TOKEN, else server.json and token in the data folder, AGENTRUN_HOME or
// ~/.agentrun). A failed request returns an error wrapping an *Error (the server's code, message
// and field, plus the HTTP status); extract it with AsError or errors.As.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// Client talks to one agentrun server. It is safe for concurrent use.
type Client struct {
	// HTTPClient makes the requests; http.DefaultClient when nil. Give it no overall Timeout if you
	// follow event streams: use contexts instead.
	HTTPClient *http.Client

	mu      sync.Mutex
	baseURL string
	token   string
	// serverFile is the server.json the base URL was read from, if any: when the server cannot be
	// dialled the client reads it again, since a restarted server may listen on another port.
	serverFile string
}

// New returns a client for the server at baseURL (for example "http://127.0.0.1:7340") that sends
// token as its bearer token (none when empty).
func New(baseURL, token string) *Client {
	return &Client{baseURL: normalizeURL(baseURL), token: strings.TrimSpace(token)}
}

// BaseURL returns the server's base URL.
func (c *Client) BaseURL() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.baseURL
}

func normalizeURL(u string) string {
	u = strings.TrimSpace(u)
	if u != "" && !strings.Contains(u, "://") {
		u = "http://" + u
	}
	u = strings.TrimRight(u, "/")
	u = strings.TrimSuffix(u, "/v2")
	return u
}

func (c *Client) httpClient() *http.Client {
	if c.HTTPClient != nil {
		return c.HTTPClient
	}
	return http.DefaultClient
}

// request describes one API call.
type request struct {
	method string
	path   string // starting with /v2
	query  url.Values
	body   any // nil, []byte, json.RawMessage, string, io.Reader or a value to marshal
	header http.Header
}

func encodeBody(body any) ([]byte, error) {
	switch b := body.(type) {
	case nil:
		return nil, nil
	case []byte:
		return b, nil
	case json.RawMessage:
		return b, nil
	case string:
		return []byte(b), nil
	case io.Reader:
		return io.ReadAll(b)
	}
	return json.Marshal(body)
}

// do sends req and returns the response when its status is 2xx; otherwise it returns the server's
// error as an *Error. The caller closes the response body.
func (c *Client) do(ctx context.Context, req request) (*http.Response, error) {
	data, err := encodeBody(req.body)
	if err != nil {
		return nil, fmt.Errorf("encode request body: %w", err)
	}
	base := c.BaseURL()
	if base == "" {
		return nil, errors.New(noServerMessage)
	}
	for attempt := 0; ; attempt++ {
		u := base + req.path
		if len(req.query) > 0 {
			u += "?" + req.query.Encode()
		}
		var rd io.Reader
		if req.body != nil {
			rd = bytes.NewReader(data)
		}
		hr, err := http.NewRequestWithContext(ctx, req.method, u, rd)
		if err != nil {
			return nil, err
		}
		for k, vs := range req.header {
			hr.Header[k] = vs
		}
		if req.body != nil && hr.Header.Get("Content-Type") == "" {
			hr.Header.Set("Content-Type", "application/json")
		}
		if hr.Header.Get("Accept") == "" {
			hr.Header.Set("Accept", "application/json")
		}
		c.mu.Lock()
		token := c.token
		c.mu.Unlock()
		if token != "" {
			hr.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.httpClient().Do(hr)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// A request that could not even be dialled was never sent, so it is safe to send it
			// again once: a restarted local server may have moved to another port.
			if attempt == 0 && isDialError(err) {
				if nb, ok := c.rediscover(base); ok {
					base = nb
					continue
				}
			}
			return nil, &ConnError{URL: base, Err: err}
		}
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return resp, nil
		}
		defer resp.Body.Close()
		return nil, DecodeError(resp)
	}
}

// ConnError is returned when the server cannot be reached at all.
type ConnError struct {
	URL string
	Err error
}

func (e *ConnError) Error() string {
	return fmt.Sprintf("cannot reach the agentrun server at %s: %v (is it running? start one with `agentrun serve`)", e.URL, e.Err)
}

func (e *ConnError) Unwrap() error { return e.Err }

func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// rediscover reads server.json again when the base URL came from it and returns the new URL if it
// changed.
func (c *Client) rediscover(old string) (string, bool) {
	c.mu.Lock()
	file := c.serverFile
	c.mu.Unlock()
	if file == "" {
		return "", false
	}
	info, err := readServerFile(file)
	if err != nil || info.URL == "" {
		return "", false
	}
	nu := normalizeURL(info.URL)
	if nu == old {
		return "", false
	}
	c.mu.Lock()
	c.baseURL = nu
	c.mu.Unlock()
	return nu, true
}

// DecodeError turns a non-2xx response into an *Error: the JSON body {code, message, field} when
// there is one, else a code derived from the HTTP status and the body's text as the message. It reads
// but does not close the body.
func DecodeError(resp *http.Response) *Error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	e := &Error{}
	if err := json.Unmarshal(body, e); err != nil || (e.Code == "" && e.Message == "") {
		e = &Error{Message: strings.TrimSpace(string(body))}
	}
	e.Status = resp.StatusCode
	if e.Code == "" {
		e.Code = codeForStatus(resp.StatusCode)
	}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
		if e.Message == "" {
			e.Message = fmt.Sprintf("HTTP status %d", resp.StatusCode)
		}
	}
	return e
}

func codeForStatus(status int) Code {
	switch status {
	case http.StatusBadRequest:
		return CodeInvalid
	case http.StatusUnauthorized, http.StatusForbidden:
		return CodeUnauthorized
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusConflict:
		return CodeConflict
	case http.StatusRequestEntityTooLarge:
		return CodeTooLarge
	case http.StatusUnprocessableEntity:
		return CodeInvalid
	}
	if status >= 500 {
		return CodeInternal
	}
	return Code(fmt.Sprintf("HTTP%d", status))
}

// call sends req and decodes a JSON response into out (unless out is nil). It returns the response
// headers and status.
func (c *Client) call(ctx context.Context, req request, out any) (http.Header, int, error) {
	resp, err := c.do(ctx, req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Header, resp.StatusCode, nil
	}
	if raw, ok := out.(*json.RawMessage); ok {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return nil, 0, fmt.Errorf("read response: %w", err)
		}
		*raw = b
		return resp.Header, resp.StatusCode, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return nil, 0, fmt.Errorf("decode response of %s %s: %w", req.method, req.path, err)
	}
	return resp.Header, resp.StatusCode, nil
}

// objectPath is /v2/PLURAL/NAME (escaped).
func objectPath(plural, name string, sub ...string) string {
	p := "/v2/" + plural + "/" + url.PathEscape(name)
	for _, s := range sub {
		p += "/" + s
	}
	return p
}
