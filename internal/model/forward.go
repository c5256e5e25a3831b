package model

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
)

// Forwarder sends a request body as it is to the vendor's endpoint path (under its /v1:
// "/messages", "/responses", "/chat/completions") with the provider's own key, for the harness
// gateway, which forwards what harnesses send (fields no SDK knows) instead of re-encoding it.
type Forwarder interface {
	Forward(ctx context.Context, path string, header http.Header, body []byte) (*http.Response, error)
}

// forwardHeaders are the request headers a harness sends that the vendor needs (the API version,
// beta features, accept); never its credentials, which are the run's gateway token.
var forwardHeaders = []string{"anthropic-version", "anthropic-beta", "accept", "content-type", "openai-beta"}

func forward(ctx context.Context, hc *http.Client, url string, in http.Header, body []byte, auth func(http.Header)) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	for _, k := range forwardHeaders {
		if v := in.Values(k); len(v) > 0 {
			req.Header[http.CanonicalHeaderKey(k)] = v
		}
	}
	if req.Header.Get("content-type") == "" {
		req.Header.Set("content-type", "application/json")
	}
	auth(req.Header)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, transportError(ctx, "gateway", "send request", err)
	}
	return resp, nil
}

func (a *anthropic) Forward(ctx context.Context, path string, h http.Header, body []byte) (*http.Response, error) {
	return forward(ctx, a.hc, a.base+"/v1"+path, h, body, func(out http.Header) {
		if out.Get("anthropic-version") == "" {
			out.Set("anthropic-version", anthropicVersion)
		}
		if a.key != "" {
			out.Set("x-api-key", a.key)
		}
	})
}

func (o *openAI) Forward(ctx context.Context, path string, h http.Header, body []byte) (*http.Response, error) {
	return forward(ctx, o.hc, o.base+path, h, body, func(out http.Header) {
		if o.key != "" {
			out.Set("Authorization", "Bearer "+o.key)
		}
	})
}
