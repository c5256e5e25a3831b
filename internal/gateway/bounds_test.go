package gateway

import (
	"bytes"
	"strings"
	"testing"
)

// A gateway body nesting deeper than api.MaxJSONDepth is refused before the run or the MCP SDK
// decodes it: the harness gets a 413 naming the limit, and nothing reaches the run.
func TestGatewayDeepBody(t *testing.T) {
	g := New(nil)
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	r := &recorder{}
	tok, release := g.Register("run-a", WireAnthropic, r, []Tool{{Name: "write"}})
	defer release()
	deep := []byte(`{"model":"x","messages":` + strings.Repeat("[", 100<<10))
	for _, path := range []string{"/v2/gateway/anthropic/v1/messages", "/v2/gateway/anthropic/v1/messages/count_tokens", "/v2/gateway/runs/run-a/mcp"} {
		st, out := post(t, g.URL()+path, tok, map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}, deep)
		if st != 413 || !strings.Contains(out, "PayloadTooLarge") || !strings.Contains(out, "deeper than 128 levels") {
			t.Errorf("%s with 100 KB of '[': %d %s, want 413 PayloadTooLarge naming the 128 levels", path, st, out)
		}
	}
	if len(r.bodies) != 0 || len(r.tools) != 0 {
		t.Errorf("the run got %d bodies and %d tool calls", len(r.bodies), len(r.tools))
	}
	// A body within the bound (128 levels, the object included) still passes byte for byte.
	ok := []byte(`{"model":"x","messages":` + strings.Repeat("[", 127) + strings.Repeat("]", 127) + `}`)
	if st, _ := post(t, g.URL()+"/v2/gateway/anthropic/v1/messages", tok, nil, ok); st != 200 || len(r.bodies) != 1 || !bytes.Equal(r.bodies[0], ok) {
		t.Errorf("128 levels: %d, bodies %d", st, len(r.bodies))
	}
}
