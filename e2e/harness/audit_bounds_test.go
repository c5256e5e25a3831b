package harness

import (
	. "agentrun.dev/agentrun/e2e/e2etest"
	"fmt"
	"strings"
	"testing"

	"agentrun.dev/agentrun/internal/agent"
	"agentrun.dev/agentrun/internal/api"
)

// Token counts are vendor calls the run's cap never sees (count_tokens is not billed): a harness
// may have the vendor answer at most agent.MaxCountsPerModelCall of them between two model calls.
// Past that it is answered 429 TokenCountLimit (in the vendor's error shape too, so it estimates
// the count itself) and the vendor is not asked; a count the journal answers stays free.
func TestCountTokensBoundedPerModelCall(t *testing.T) {
	t.Parallel()
	e := NewClaudeEnv(t, ClaudeScript)
	e.Start()
	e.MustAgent("slow", `{"metadata":{"name":"slow"},"spec":{"harness":"claude-agent","computer":{"kind":"none"},"tools":["write"]}}`)
	e.StartRun("slow", "cb1", "Be slow")
	mcp, tok := mcpConf(t, e.Dir, "cb1")
	base, _, _ := strings.Cut(mcp, "/v2/gateway/")
	body := func(i int) string {
		return fmt.Sprintf(`{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"count number %d"}]}`, i)
	}
	refused := -1
	for i := 0; i < 3*agent.MaxCountsPerModelCall && refused < 0; i++ {
		st, out := countCall(t, base, tok, "cb1", body(i))
		switch {
		case st == 429:
			if !strings.Contains(out, string(api.CodeTokenCountLimit)) || !strings.Contains(out, "rate_limit_error") {
				t.Fatalf("count %d refused: %s, want TokenCountLimit in the vendor's error shape", i, out)
			}
			refused = i
		case st != 200:
			t.Fatalf("count %d: HTTP %d %s", i, st, out)
		}
	}
	// A model call of the harness's own between the counts starts a new allowance; the vendor never
	// answers more than the bound per call.
	calls := e.Model.CountTurn("slow", 0)
	if refused < 0 {
		t.Fatalf("%d token counts all reached the vendor (%d counts there, %d model calls); want at most %d per model call", 3*agent.MaxCountsPerModelCall, counts(e), calls, agent.MaxCountsPerModelCall)
	}
	if n := counts(e); n > agent.MaxCountsPerModelCall*(1+calls) {
		t.Errorf("%d token counts reached the vendor beside %d model calls; want at most %d per model call", n, calls, agent.MaxCountsPerModelCall)
	}
	before := counts(e)
	// Past the bound, a count already in the journal is still answered, from the journal.
	if st, out := countCall(t, base, tok, "cb1", body(0)); st != 200 || !strings.Contains(out, `"input_tokens":`) {
		t.Errorf("a recorded count past the bound: HTTP %d %s, want the journal's answer", st, out)
	}
	if counts(e) != before {
		t.Errorf("the recorded count reached the vendor")
	}
	e.MustCLI(0, "cancel", "agentrun/cb1")
}
