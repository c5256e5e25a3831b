package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/model/fake"
)

// vendorRun forwards every model call to the scripted model server as the host does (the body as
// the harness sent it), so what reaches the vendor stand-in is what the gateway let through.
type vendorRun struct {
	recorder
	base    string
	refused []string
}

func (v *vendorRun) Refused(msg string) { v.refused = append(v.refused, msg) }

func (v *vendorRun) ModelCall(ctx context.Context, c Call) (Reply, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, v.base+"/v1"+c.Path, bytes.NewReader(c.Body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", "vendor-key")
	req.Header.Set("Authorization", "Bearer vendor-key")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Reply{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return Reply{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: b}, nil
}

// A call asking the vendor to act on its own (a tool it runs: web search, web fetch, code
// execution, file search, its MCP connector; content it fetches by URL; Chat's web search and
// OpenRouter's plugins) is refused 400 naming the field, and not one byte of it reaches the
// vendor; the tools harnesses send (functions, Codex's namespaces, Anthropic's client tool types)
// and inline content go through. The run is told why (it stops with it).
func TestGatewayRefusesVendorSideTools(t *testing.T) {
	sc, err := fake.ParseScript([]byte("entries:\n  - match: \"*\"\n    turns: [{text: hi}, {text: again}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	vendor, url, err := fake.Start(sc)
	if err != nil {
		t.Fatal(err)
	}
	defer vendor.Close()
	g := New(nil)
	if err := g.Start(); err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	endpoint := map[Wire]string{WireAnthropic: "/v2/gateway/anthropic/v1/messages", WireResponses: "/v2/gateway/openai/v1/responses", WireChat: "/v2/gateway/openai/v1/chat/completions"}
	tokens, runs := map[Wire]string{}, map[Wire]*vendorRun{}
	for wire := range endpoint {
		runs[wire] = &vendorRun{base: url}
		tok, release := g.Register("run-"+string(wire), wire, runs[wire], nil)
		defer release()
		tokens[wire] = tok
	}
	const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
	ant := func(extra string) string {
		return `{"model":"m","max_tokens":10` + extra + `}`
	}
	antMsg := func(content string) string {
		return ant(`,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":"ok"},{"role":"user","content":` + content + `}]`)
	}
	user := `,"messages":[{"role":"user","content":"hi"}]`
	resp := func(extra string) string { return `{"model":"m","input":"hi"` + extra + `}` }
	respIn := func(content string) string {
		return `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"hi"},` + content + `]}]}`
	}
	chat := func(extra string) string {
		return `{"model":"m","messages":[{"role":"user","content":"hi"}]` + extra + `}`
	}
	chatIn := func(content string) string {
		return `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi"},` + content + `]}]}`
	}
	for _, c := range []struct {
		wire        Wire
		body, field string // field: "" when the call goes through
	}{
		{WireAnthropic, ant(user + `,"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":5}]`), "tools[0].type"},
		{WireAnthropic, ant(user + `,"tools":[{"name":"write","input_schema":{"type":"object"}},{"type":"web_fetch_20250910","name":"web_fetch"}]`), "tools[1].type"},
		{WireAnthropic, ant(user + `,"tools":[{"type":"code_execution_20250825","name":"code_execution"}]`), "tools[0].type"},
		{WireAnthropic, ant(user + `,"mcp_servers":[{"type":"url","url":"https://attacker.example/mcp","name":"x"}],"tools":[{"type":"mcp_toolset","mcp_server_name":"x"}]`), "mcp_servers"},
		{WireAnthropic, antMsg(`[{"type":"image","source":{"type":"url","url":"https://attacker.example/a.png"}}]`), "messages[2].content[0].source"},
		{WireAnthropic, antMsg(`[{"type":"tool_result","tool_use_id":"t","content":[{"type":"document","source":{"type":"url","url":"https://attacker.example/d.pdf"}}]}]`), "messages[2].content[0].content[0].source"},
		{WireAnthropic, ant(user + `,"tools":[{"name":"write","input_schema":{"type":"object"}},{"type":"custom","name":"c","input_schema":{"type":"object"}},{"type":"bash_20250124","name":"bash"},{"type":"computer_20250124","name":"computer","display_width_px":1024,"display_height_px":768}]`), ""},
		{WireAnthropic, antMsg(`[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + png + `"}}]`), ""},
		{WireResponses, resp(`,"tools":[{"type":"web_search"}]`), "tools[0].type"},
		{WireResponses, resp(`,"tools":[{"type":"web_search_preview"}]`), "tools[0].type"},
		{WireResponses, resp(`,"tools":[{"type":"file_search","vector_store_ids":["vs_1"]}]`), "tools[0].type"},
		{WireResponses, resp(`,"tools":[{"type":"mcp","server_label":"x","server_url":"https://attacker.example/mcp"}]`), "tools[0].type"},
		{WireResponses, resp(`,"tools":[{"type":"namespace","name":"mcp__agentrun__","tools":[{"type":"function","name":"write","parameters":{"type":"object"}},{"type":"code_interpreter","container":{"type":"auto"}}]}]`), "tools[0].tools[1].type"},
		{WireResponses, respIn(`{"type":"input_image","image_url":"https://attacker.example/a.png"}`), "input[0].content[1].image_url"},
		{WireResponses, respIn(`{"type":"input_file","file_url":"http://attacker.example/d.pdf"}`), "input[0].content[1].file_url"},
		{WireResponses, resp(`,"tools":[{"type":"function","name":"write","parameters":{"type":"object"}},{"type":"namespace","name":"mcp__agentrun__","tools":[{"type":"function","name":"ls","parameters":{"type":"object"}}]}]`), ""},
		{WireResponses, respIn(`{"type":"input_image","image_url":"data:image/png;base64,` + png + `"}`), ""},
		{WireChat, chat(`,"web_search_options":{}`), "web_search_options"},
		{WireChat, chat(`,"plugins":[{"id":"web"}]`), "plugins"},
		{WireChat, chat(`,"tools":[{"type":"web_search"}]`), "tools[0].type"},
		{WireChat, chatIn(`{"type":"image_url","image_url":{"url":"https://attacker.example/a.png"}}`), "messages[0].content[1].image_url.url"},
		{WireChat, chat(`,"tools":[{"type":"function","function":{"name":"write","parameters":{"type":"object"}}}]`), ""},
		{WireChat, chatIn(`{"type":"image_url","image_url":{"url":"data:image/png;base64,` + png + `"}}`), ""},
	} {
		vendor.Reset()
		runs[c.wire].refused = nil
		st, out := post(t, g.URL()+endpoint[c.wire], tokens[c.wire], map[string]string{"Content-Type": "application/json"}, []byte(c.body))
		calls := vendor.Calls()
		if c.field == "" {
			if st != 200 || len(calls) != 1 {
				t.Errorf("%s %s: HTTP %d %s, %d calls reached the vendor; want it forwarded", c.wire, c.body, st, out, len(calls))
			}
			continue
		}
		var e struct{ Code, Message string }
		json.Unmarshal([]byte(out), &e)
		if st != 400 || e.Code != "InvalidRequest" || !strings.Contains(e.Message, c.field+":") {
			t.Errorf("%s %s: HTTP %d %s; want 400 naming %s", c.wire, c.body, st, out, c.field)
		}
		if len(calls) != 0 {
			t.Errorf("%s %s: %d calls reached the vendor", c.wire, c.body, len(calls))
		}
		if r := runs[c.wire].refused; len(r) != 1 || r[0] != e.Message {
			t.Errorf("%s %s: the run was told %q, want the refusal once", c.wire, c.body, r)
		}
	}
}
