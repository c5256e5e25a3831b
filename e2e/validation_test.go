package e2e

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"agentrun.dev/agentrun/internal/api"
)

// TestStrictInputRefused sends the audit's bad inputs to the real server and CLI: bad and too
// many labels, duplicate keys in JSON and YAML, " 1" as money, a multi-document apply with a bad
// second document, and read-file paths that climb out of the run folder.
func TestStrictInputRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, quickstartScript)
	e.start()

	var many strings.Builder
	many.WriteString(`{`)
	for i := 0; i < 20000; i++ {
		if i > 0 {
			many.WriteString(",")
		}
		many.WriteString(`"l` + strconv.Itoa(i) + `":"v"`)
	}
	many.WriteString(`}`)
	cases := []struct {
		what, method, path, body string
		status                   int
		code                     api.Code
		field                    string
	}{
		{"label ../x", "PUT", "/v2/agents/a1", `{"metadata":{"name":"a1","labels":{"../x":"v"}},"spec":{}}`, 422, api.CodeInvalidLabel, `metadata.labels["../x"]`},
		{"empty label key", "PUT", "/v2/agents/a1", `{"metadata":{"name":"a1","labels":{"":"v"}},"spec":{}}`, 422, api.CodeInvalidLabel, `metadata.labels[""]`},
		{"20000 labels", "PUT", "/v2/agents/a1", `{"metadata":{"name":"a1","labels":` + many.String() + `},"spec":{}}`, 422, api.CodeInvalidLabel, "metadata.labels"},
		{"run label value", "POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"r1","labels":{"ok":"not ok"}},"spec":{"agent":"a1","input":"hi"}}`, 422, api.CodeInvalidLabel, `metadata.labels["ok"]`},
		{"duplicate name", "PUT", "/v2/agents/a1", `{"metadata":{"name":"a","name":"b"},"spec":{}}`, 400, api.CodeDuplicateKey, "metadata.name"},
		{"duplicate in a merge patch", "PATCH", "/v2/agents/a1", `{"spec":{"system":"x","system":"y"}}`, 400, api.CodeDuplicateKey, "spec.system"},
		{"money with a space", "PUT", "/v2/agents/a1", `{"metadata":{"name":"a1"},"spec":{"perRunMaxCostUSD":" 1"}}`, 422, api.CodeInvalid, "spec.perRunMaxCostUSD"},
		{"run cap with a space", "POST", "/v2/agentruns", `{"kind":"AgentRun","metadata":{"name":"r1"},"spec":{"agent":"a1","input":"hi","maxCostUSD":" 1"}}`, 422, api.CodeInvalid, "spec.maxCostUSD"},
	}
	for _, c := range cases {
		var got api.Error
		st := e.do(c.method, c.path, c.body, &got)
		if st != c.status || got.Code != c.code || got.Field != c.field {
			t.Errorf("%s: HTTP %d %+v, want %d %s on %s", c.what, st, got, c.status, c.code, c.field)
		}
	}
	if st := e.do("GET", "/v2/agents/a1", nil, nil); st != 404 {
		t.Errorf("an agent was stored from refused requests: GET a1 = HTTP %d", st)
	}

	// apply -f: the second document is bad, so nothing is applied; the error names it and its field.
	multi := `apiVersion: agentrun.dev/v1
kind: Agent
metadata: {name: first}
spec: {system: "one"}
---
apiVersion: agentrun.dev/v1
kind: Agent
metadata:
  name: second
  labels: {"../x": "v"}
spec: {system: "two"}
`
	res := e.cli(e.dir, "apply", "-f", writeFile(t, e.dir, "multi.yaml", multi))
	if res.code == 0 || !strings.Contains(res.stderr, "document 2") || !strings.Contains(res.stderr, `metadata.labels["../x"]`) || !strings.Contains(res.stderr, "nothing was applied") {
		t.Errorf("apply with a bad second document: exit %d\n%s", res.code, res.stderr)
	}
	if st := e.do("GET", "/v2/agents/first", nil, nil); st != 404 {
		t.Errorf("the first document was applied although the second is bad: GET first = HTTP %d", st)
	}
	dup := "apiVersion: agentrun.dev/v1\nkind: Agent\nmetadata:\n  name: dup\n  name: other\nspec: {}\n"
	if res := e.cli(e.dir, "apply", "-f", writeFile(t, e.dir, "dup.yaml", dup)); res.code == 0 || !strings.Contains(res.stderr, "name") {
		t.Errorf("apply of YAML with a duplicate key: exit %d %s", res.code, res.stderr)
	}
	if st := e.do("GET", "/v2/agents/dup", nil, nil); st != 404 {
		t.Errorf("YAML with a duplicate key was applied: HTTP %d", st)
	}
	// The same file made good applies both.
	e.mustCLI(0, "apply", "-f", writeFile(t, e.dir, "good.yaml", strings.Replace(multi, `labels: {"../x": "v"}`, `labels: {"app.kubernetes.io/name": "two"}`, 1)))

	// read-file: a path climbing out of the run folder is refused by the CLI, and by the server
	// when it arrives percent-encoded (the mux never cleans it).
	e.do("POST", "/v2/agents", `{"definition": {"id": "notes", "tools": ["write", "ask_person"]}}`, nil)
	var run api.AgentRun
	e.do("POST", "/v2/agents/notes/runs", `{"input": {"content": "Ask me which region to cover, then write region.md about it."}}`, &run)
	name := run.Metadata.Name
	e.waitPhase(name, 20*time.Second, api.PhaseWaiting)
	for _, p := range []string{"../../../agents/first", "/etc/passwd", "a/./b"} {
		res := e.cli(e.dir, "runs", "read-file", name, p)
		if res.code == 0 || strings.Contains(res.stdout, "first") || !strings.Contains(res.stderr, "relative to the run folder") {
			t.Errorf("read-file %q: exit %d stdout %q stderr %q", p, res.code, res.stdout, res.stderr)
		}
	}
	req, _ := http.NewRequest("GET", e.url+"/v2/agentruns/"+name+"/files/%2e%2e/%2e%2e/%2e%2e/agents/first", nil)
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), `"field": "path"`) {
		t.Errorf("encoded .. to the file API: HTTP %d %s", resp.StatusCode, body)
	}
}
