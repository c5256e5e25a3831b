package fake

import (
	"net/http"
	"slices"
	"strings"
)

// Vendors a server can stand in for alone (Only), each serving only its real paths: a client
// pointed at one vendor that calls another's API gets that vendor's own 404, as it would from
// the real one.
const (
	VendorAnthropic  = "anthropic"  // POST /v1/messages (+ /count_tokens)
	VendorOpenAI     = "openai"     // POST /v1/chat/completions, /v1/responses
	VendorOpenRouter = "openrouter" // POST /api/v1/chat/completions, /api/v1/responses, /api/v1/messages
)

// vendorPaths are the model paths each vendor serves, as the server's own routes.
var vendorPaths = map[string][]string{
	VendorAnthropic:  {"/v1/messages", "/v1/messages/count_tokens"},
	VendorOpenAI:     {"/v1/chat/completions", "/v1/responses"},
	VendorOpenRouter: {"/v1/chat/completions", "/v1/responses", "/v1/messages"},
}

// VendorBase is the base URL a client of vendor is given for a server at url (OpenRouter's API
// is under /api/v1, OpenAI's clients take theirs with /v1, Anthropic's without).
func VendorBase(vendor, url string) string {
	switch vendor {
	case VendorOpenAI:
		return url + "/v1"
	case VendorOpenRouter:
		return url + "/api/v1"
	}
	return url
}

// Only makes the server answer only vendor's paths ("" serves every format again); any other
// request (the server's own /_fake/ endpoints aside) is refused with the vendor's 404 and listed
// by Refused.
func (s *Server) Only(vendor string) {
	if _, ok := vendorPaths[vendor]; !ok && vendor != "" {
		panic("fake: unknown vendor " + vendor)
	}
	s.mu.Lock()
	s.vendor = vendor
	s.mu.Unlock()
}

// Refused lists the requests ("POST /v1/messages") refused because the vendor Only names does
// not serve them.
func (s *Server) Refused() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.refused)
}

// vendorRoute is the server route of a request to vendor, or false when vendor does not serve it.
func vendorRoute(vendor string, r *http.Request) (string, bool) {
	path := r.URL.Path
	if vendor == VendorOpenRouter {
		var ok bool
		if path, ok = strings.CutPrefix(path, "/api"); !ok {
			return "", false
		}
	}
	return path, r.Method == http.MethodPost && slices.Contains(vendorPaths[vendor], path)
}

// refuse answers a request vendor does not serve as vendor does.
func (s *Server) refuse(vendor string, w http.ResponseWriter, r *http.Request) {
	what := r.Method + " " + r.URL.Path
	s.mu.Lock()
	s.refused = append(s.refused, what)
	s.mu.Unlock()
	switch vendor {
	case VendorAnthropic:
		_ = writeJSON(w, http.StatusNotFound, map[string]any{"type": "error", "error": map[string]any{"type": "not_found_error", "message": "Not Found"}})
	case VendorOpenAI:
		_ = writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{"message": "Invalid URL (" + what + ")", "type": "invalid_request_error", "param": nil, "code": nil}})
	default:
		_ = writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{"message": "Not Found", "code": 404}})
	}
}
