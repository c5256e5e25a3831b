package gateway

import (
	"net/http/httptest"
	"testing"
)

// A harness given a wire's BaseURL reaches the gateway's endpoints for that wire with the paths
// its SDK adds (Anthropic's /v1/messages, OpenAI's /responses and /chat/completions): a wrong
// base is every model call a 404.
func TestWireBaseURLReachesItsEndpoints(t *testing.T) {
	g := New(nil)
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	for _, c := range []struct {
		wire       Wire
		sdk, path  string
		countToken bool
	}{
		{WireAnthropic, "/v1/messages", "/messages", false},
		{WireAnthropic, "/v1/messages/count_tokens", "/messages/count_tokens", true},
		{WireResponses, "/responses", "/responses", false},
		{WireChat, "/chat/completions", "/chat/completions", false},
	} {
		r := &recorder{}
		tok, release := g.Register("r1", c.wire, r, nil)
		st, out := post(t, c.wire.BaseURL(srv.URL)+c.sdk, tok, nil, []byte(`{"model":"m"}`))
		release()
		if st != 200 {
			t.Errorf("%s %s: HTTP %d %s", c.wire, c.sdk, st, out)
			continue
		}
		if got := len(r.bodies); c.countToken == (got != 0) {
			t.Errorf("%s %s: %d model calls reached the run", c.wire, c.sdk, got)
		}
	}
	if WireAnthropic.APIPath()+"/messages" != "/v2/gateway/anthropic/v1/messages" || WireChat.APIPath()+"/chat/completions" != "/v2/gateway/openai/v1/chat/completions" {
		t.Errorf("API paths %s, %s", WireAnthropic.APIPath(), WireChat.APIPath())
	}
}
