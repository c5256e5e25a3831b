package e2etest

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
)

// With AGENTRUN_E2E_OPENAPI_LOG=FILE, every answer any e2e test receives through
// http.DefaultClient (Env.Do and most direct requests) is held against the document its server
// serves, and each mismatch is appended to FILE: a sweep of the whole suite's traffic, where
// TestOpenAPIResponses is the check that fails. SSE streams and the CLI's own requests are not
// seen.
func init() {
	if path := os.Getenv("AGENTRUN_E2E_OPENAPI_LOG"); path != "" {
		http.DefaultClient.Transport = &openAPISweep{log: path, docs: map[string]*OpenAPI{}}
	}
}

type openAPISweep struct {
	log  string
	mu   sync.Mutex
	docs map[string]*OpenAPI
}

func (s *openAPISweep) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || !strings.HasPrefix(req.URL.Path, "/v2/") || req.URL.Path == "/v2/openapi.json" ||
		strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp, err
	}
	d, derr := s.doc(req)
	if derr != nil {
		s.write(fmt.Sprintf("%s %s: no document: %v", req.Method, req.URL.Path, derr))
		return resp, err
	}
	body, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if rerr != nil {
		return resp, err
	}
	if cerr := d.Check(req.Method, req.URL.Path, resp.StatusCode, resp.Header.Get("Content-Type"), body); cerr != nil {
		s.write(cerr.Error())
	}
	return resp, err
}

// doc is the document of the server req went to, fetched once per server.
func (s *openAPISweep) doc(req *http.Request) (*OpenAPI, error) {
	base := req.URL.Scheme + "://" + req.URL.Host
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.docs[base]; d != nil {
		return d, nil
	}
	token := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
	d, err := FetchOpenAPI(&http.Client{Transport: http.DefaultTransport}, base, token)
	if err != nil {
		return nil, err
	}
	s.docs[base] = d
	return d, nil
}

func (s *openAPISweep) write(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := os.OpenFile(s.log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	fmt.Fprintf(f, "%s\n----\n", line)
	f.Close()
}
