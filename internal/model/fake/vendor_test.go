package fake

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// A server standing in for one vendor answers that vendor's paths and refuses every other with
// the vendor's own 404: OpenAI's "Invalid URL (POST /v1/messages)" for a Messages call.
func TestOnlyVendorPaths(t *testing.T) {
	t.Parallel()
	sc, err := ParseScript([]byte("entries:\n  - match: \"*\"\n    turns: [{text: hi}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	srv, url, err := Start(sc)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	anthropic := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"x"}]}`
	chat := `{"model":"m","messages":[{"role":"user","content":"x"}]}`
	responses := `{"model":"m","input":"x"}`
	post := func(path, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if strings.Contains(body, "max_tokens") && !strings.HasPrefix(path, "/api/") {
			req.Header.Set("x-api-key", "k")
		} else {
			req.Header.Set("Authorization", "Bearer k") // OpenRouter takes a bearer on every API
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		vendor, path, body string
		want               int
		says               string
	}{
		{VendorAnthropic, "/v1/messages", anthropic, 200, ""},
		{VendorAnthropic, "/v1/chat/completions", chat, 404, "not_found_error"},
		{VendorAnthropic, "/v1/responses", responses, 404, "not_found_error"},
		{VendorOpenAI, "/v1/chat/completions", chat, 200, ""},
		{VendorOpenAI, "/v1/responses", responses, 200, ""},
		{VendorOpenAI, "/v1/messages", anthropic, 404, "Invalid URL (POST /v1/messages)"},
		{VendorOpenAI, "/chat/completions", chat, 404, "Invalid URL"},
		{VendorOpenRouter, "/api/v1/chat/completions", chat, 200, ""},
		{VendorOpenRouter, "/api/v1/responses", responses, 200, ""},
		{VendorOpenRouter, "/api/v1/messages", anthropic, 200, ""},
		{VendorOpenRouter, "/v1/messages", anthropic, 404, "Not Found"},
	} {
		srv.Only(c.vendor)
		code, body := post(c.path, c.body)
		if code != c.want || !strings.Contains(body, c.says) {
			t.Errorf("%s: POST %s = %d %s, want %d saying %q", c.vendor, c.path, code, body, c.want, c.says)
		}
	}
	want := []string{"POST /v1/chat/completions", "POST /v1/responses", "POST /v1/messages", "POST /chat/completions", "POST /v1/messages"}
	if got := srv.Refused(); !slices.Equal(got, want) {
		t.Errorf("refused = %q, want %q", got, want)
	}
	srv.Only("")
	if code, _ := post("/v1/messages", anthropic); code != 200 {
		t.Errorf("with no vendor set a Messages call = %d", code)
	}
}
