package e2e

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
)

// A count_tokens call the vendor refuses (the scripted model server has no such route: 404) is
// answered to the harness with the vendor's status and body, not as the 503 of a stopped run.
func TestClaudeCountTokensRefused(t *testing.T) {
	t.Parallel()
	e := newClaudeEnv(t, claudeScript)
	e.start()
	e.mustAgent("slow", `{"metadata":{"name":"slow"},"spec":{"harness":"claude-agent","tools":["write"]}}`)
	e.startRun("slow", "ct1", "Be slow")
	mcp, tok := mcpConf(t, e.dir, "ct1")
	base, _, _ := strings.Cut(mcp, "/v2/gateway/")
	req, _ := http.NewRequest("POST", base+"/v2/gateway/anthropic/v1/messages/count_tokens",
		bytes.NewReader([]byte(`{"model":"m","messages":[{"role":"user","content":"Say hello"}]}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", tok)
	req.Header.Set("X-Agentrun-Run", "ct1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || !strings.Contains(string(body), "no route for POST /v1/messages/count_tokens") {
		t.Errorf("count_tokens the vendor refuses: HTTP %d %s", resp.StatusCode, body)
	}
	e.mustCLI(0, "cancel", "agentrun/ct1")
	e.waitPhase("ct1", 20*time.Second, api.PhaseCancelled)
}
