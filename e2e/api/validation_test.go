package api

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// TestStrictInputRefused sends the audit's bad inputs to the real server and CLI: bad and too
// many labels, duplicate keys in JSON and YAML, " 1" as money, a multi-document apply with a bad
// second document, and read-file paths that climb out of the run folder.
func TestStrictInputRefused(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, QuickstartScript)
	e.Start()

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
		st := e.Do(c.method, c.path, c.body, &got)
		if st != c.status || got.Code != c.code || got.Field != c.field {
			t.Errorf("%s: HTTP %d %+v, want %d %s on %s", c.what, st, got, c.status, c.code, c.field)
		}
	}
	if st := e.Do("GET", "/v2/agents/a1", nil, nil); st != 404 {
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
	res := e.CLI(e.Dir, "apply", "-f", WriteFile(t, e.Dir, "multi.yaml", multi))
	if res.Code == 0 || !strings.Contains(res.Stderr, "document 2") || !strings.Contains(res.Stderr, `metadata.labels["../x"]`) || !strings.Contains(res.Stderr, "nothing was applied") {
		t.Errorf("apply with a bad second document: exit %d\n%s", res.Code, res.Stderr)
	}
	if st := e.Do("GET", "/v2/agents/first", nil, nil); st != 404 {
		t.Errorf("the first document was applied although the second is bad: GET first = HTTP %d", st)
	}
	dup := "apiVersion: agentrun.dev/v1\nkind: Agent\nmetadata:\n  name: dup\n  name: other\nspec: {}\n"
	if res := e.CLI(e.Dir, "apply", "-f", WriteFile(t, e.Dir, "dup.yaml", dup)); res.Code == 0 || !strings.Contains(res.Stderr, "name") {
		t.Errorf("apply of YAML with a duplicate key: exit %d %s", res.Code, res.Stderr)
	}
	if st := e.Do("GET", "/v2/agents/dup", nil, nil); st != 404 {
		t.Errorf("YAML with a duplicate key was applied: HTTP %d", st)
	}
	// The same file made good applies both.
	e.MustCLI(0, "apply", "-f", WriteFile(t, e.Dir, "good.yaml", strings.Replace(multi, `labels: {"../x": "v"}`, `labels: {"app.kubernetes.io/name": "two"}`, 1)))

	// read-file: a path climbing out of the run folder is refused by the CLI, and by the server
	// when it arrives percent-encoded (the mux never cleans it).
	e.Do("POST", "/v2/agents", `{"definition": {"id": "notes", "tools": ["write", "ask_person"]}}`, nil)
	var run api.AgentRun
	e.Do("POST", "/v2/agents/notes/runs", `{"input": {"content": "Ask me which region to cover, then write region.md about it."}}`, &run)
	name := run.Metadata.Name
	e.WaitPhase(name, 20*time.Second, api.PhaseWaiting)
	for _, p := range []string{"../../../agents/first", "/etc/passwd", "a/./b"} {
		res := e.CLI(e.Dir, "runs", "read-file", name, p)
		if res.Code == 0 || strings.Contains(res.Stdout, "first") || !strings.Contains(res.Stderr, "relative to the run folder") {
			t.Errorf("read-file %q: exit %d stdout %q stderr %q", p, res.Code, res.Stdout, res.Stderr)
		}
	}
	req, _ := http.NewRequest("GET", e.URL+"/v2/agentruns/"+name+"/files/%2e%2e/%2e%2e/%2e%2e/agents/first", nil)
	req.Header.Set("Authorization", "Bearer "+e.Token)
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

// TestAgentEveryMistake: an agent with three mistakes (its name, its output limit, its approvals) is told
// all three at once with their field paths, over HTTP (the first as the error's own code and
// field, as before) and by `agentrun apply`; nothing is stored.
func TestAgentEveryMistake(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, QuickstartScript)
	e.Start()
	const body = `{"kind":"Agent","metadata":{"name":"Bad Name"},"spec":{"system":"hi","maxTokens":-5,"approvals":{"default":"maybe"}}}`
	want := []api.FieldError{
		{Code: api.CodeInvalid, Field: "metadata.name"},
		{Code: api.CodeInvalid, Field: "spec.maxTokens"},
		{Code: api.CodeInvalid, Field: "spec.approvals.default"},
	}
	var got api.Error
	st := e.Do("POST", "/v2/agents", body, &got)
	if st != 422 || got.Code != api.CodeInvalid || got.Field != "metadata.name" || len(got.Errors) != len(want) {
		t.Fatalf("POST /v2/agents with three mistakes: HTTP %d %+v, want 422 Invalid at metadata.name with %d errors", st, got, len(want))
	}
	if got.Message != got.Errors[0].Message {
		t.Errorf("the error's message %q is not its first item's %q", got.Message, got.Errors[0].Message)
	}
	for i, w := range want {
		if g := got.Errors[i]; g.Code != w.Code || g.Field != w.Field || g.Message == "" {
			t.Errorf("error %d: %+v, want %s at %s with a message", i, g, w.Code, w.Field)
		}
	}
	yaml := "apiVersion: agentrun.dev/v1\nkind: Agent\nmetadata: {name: Bad Name}\nspec:\n  system: hi\n  maxTokens: -5\n  approvals: {default: maybe}\n"
	res := e.CLI(e.Dir, "apply", "-f", WriteFile(t, e.Dir, "three.yaml", yaml))
	if res.Code == 0 || !strings.Contains(res.Stderr, "3 errors") || !strings.Contains(res.Stderr, "nothing was applied") {
		t.Errorf("apply of an agent with three mistakes: exit %d\n%s", res.Code, res.Stderr)
	}
	for _, w := range want {
		if !strings.Contains(res.Stderr, "field "+w.Field+")") {
			t.Errorf("apply does not name %s:\n%s", w.Field, res.Stderr)
		}
	}
	var list api.List[api.Agent]
	e.Do("GET", "/v2/agents", nil, &list)
	for _, a := range list.Items {
		if a.Metadata.Name == "Bad Name" || a.Metadata.Name == "bad-name" {
			t.Errorf("a refused agent was stored: %s", a.Metadata.Name)
		}
	}
}
