package protocols

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

type mcpCall struct {
	IsError    bool     `json:"isError"`
	Text       []string `json:"text"`
	Structured struct {
		RunID      string  `json:"run_id"`
		Agent      string  `json:"agent"`
		Phase      string  `json:"phase"`
		Reason     string  `json:"reason"`
		Waiting    bool    `json:"waiting"`
		Answer     *string `json:"answer"`
		ConsoleURL string  `json:"console_url"`
		Note       string  `json:"note"`
		WaitingOn  *struct {
			Kind     string `json:"kind"`
			Question string `json:"question"`
		} `json:"waiting_on"`
		Runs []struct {
			RunID string `json:"run_id"`
			Agent string `json:"agent"`
		} `json:"runs"`
	} `json:"structured"`
	Progress []string `json:"progress"`
}

// TestMCPTypeScriptSDK: the official MCP TypeScript SDK's client lists a tool per agent (and ours),
// calls an agent's tool with progress and gets its answer and run_id, gets back a run that waits
// for an approval as waiting (the approval not skipped), answers a run's question with
// send-message, reads runs with get-run and list-runs, and hears tools/list_changed when an agent
// is added and removed through the REST API.
func TestMCPTypeScriptSDK(t *testing.T) {
	t.Parallel()
	dir := client(t, "mcp-sdk")
	e := newServer(t)
	var out struct {
		Unauthenticated string `json:"unauthenticated"`
		ListChanged     bool   `json:"listChanged"`
		Tools           []struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			InputSchema map[string]any `json:"inputSchema"`
		} `json:"tools"`
		Hello, Careful, Asks, Answered, GetRun, ListRuns, BadInput, MissingRun mcpCall
		Greeted, GreetedAsText                                                 mcpCall
		PutStatus, DeleteStatus                                                int
		ChangedAfterAdd, ChangedAfterDelete                                    int
		ToolsAfterAdd, ToolsAfterDelete                                        []string
	}
	runNode(t, e, dir, "mcp.mjs", &out)

	if !strings.Contains(out.Unauthenticated, "Unauthorized") {
		t.Errorf("a client without the token: %q, want Unauthorized", out.Unauthenticated)
	}
	var names []string
	for _, tl := range out.Tools {
		names = append(names, tl.Name)
		if tl.Name == "notes" && !strings.HasPrefix(tl.Description, "Takes notes on a region, after asking which.") {
			t.Errorf("notes' description %q: want its spec.description", tl.Description)
		}
		if tl.Name == "hello_agent" {
			if !strings.Contains(tl.Description, "Hello") || !strings.Contains(tl.Description, "You greet people.") || strings.Contains(tl.Description, "Be brief") {
				t.Errorf("hello_agent's description %q: want its display name and its instructions' first line", tl.Description)
			}
			props, _ := tl.InputSchema["properties"].(map[string]any)
			if in, _ := props["input"].(map[string]any); in["type"] != "string" {
				t.Errorf("hello_agent's input schema %v: want an input string", tl.InputSchema)
			}
		}
	}
	for _, want := range []string{"hello_agent", "notes", "careful", "get-run", "send-message", "list-runs"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}
	if !out.ListChanged {
		t.Error("the server does not announce tools.listChanged")
	}

	h := out.Hello
	if h.IsError || len(h.Text) == 0 || h.Text[0] != "Hello from the scripted model." || h.Structured.Phase != "Succeeded" || h.Structured.RunID == "" {
		t.Errorf("hello_agent: %+v", h)
	}
	if len(h.Progress) < 3 || !slices.ContainsFunc(h.Progress, func(p string) bool { return strings.HasPrefix(p, "run.started") }) {
		t.Errorf("hello_agent's progress %q: want the run's timeline (run.started, ...)", h.Progress)
	}
	if got := waitPhase(t, e, h.Structured.RunID); got != "Succeeded/Completed" {
		t.Errorf("the run hello_agent started is %s", got)
	}

	c := out.Careful.Structured
	if !c.Waiting || c.Phase != "Waiting" || c.Reason != "Approval" || c.WaitingOn == nil || c.WaitingOn.Kind != "approval" ||
		!strings.Contains(out.Careful.Text[0], c.ConsoleURL) || !strings.Contains(c.ConsoleURL, "/runs/"+c.RunID) {
		t.Errorf("careful: %+v, want a run waiting for an approval, naming the console URL", out.Careful)
	}
	if got := waitPhase(t, e, c.RunID); got != "Waiting/Approval" {
		t.Errorf("the run careful started is %s: the approval must not be skipped", got)
	}

	a := out.Asks.Structured
	if !a.Waiting || a.Reason != "Question" || a.WaitingOn == nil || a.WaitingOn.Question != "Which region should I cover?" {
		t.Errorf("notes: %+v, want a run waiting on its question", out.Asks)
	}
	if out.Answered.IsError || out.Answered.Text[0] != "Covering eu-west." || out.Answered.Structured.RunID != a.RunID {
		t.Errorf("send-message with the answer: %+v", out.Answered)
	}
	if g := out.GetRun; g.Structured.Answer == nil || *g.Structured.Answer != "Hello from the scripted model." || g.Structured.RunID != h.Structured.RunID {
		t.Errorf("get-run: %+v", g)
	}
	if l := out.ListRuns.Structured.Runs; len(l) != 1 || l[0].RunID != h.Structured.RunID {
		t.Errorf("list-runs for hello-agent: %+v", l)
	}
	// A workflow agent's tool takes its input schema's fields, or the input as JSON text.
	for _, tl := range out.Tools {
		if tl.Name == "greeter" {
			props, _ := tl.InputSchema["properties"].(map[string]any)
			if props["who"] == nil || props["input"] == nil {
				t.Errorf("greeter's input schema %v: want the workflow's field who, and input", tl.InputSchema)
			}
		}
	}
	if g := out.Greeted; g.IsError || g.Structured.Phase != "Succeeded" || !strings.Contains(g.Text[0], `"hello":"Ada"`) {
		t.Errorf("greeter with its fields: %+v", g)
	}
	if g := out.GreetedAsText; g.IsError || !strings.Contains(g.Text[0], `"hello":"Lin"`) {
		t.Errorf("greeter with input as JSON text: %+v", g)
	}
	if b := out.BadInput; !b.IsError || !strings.Contains(strings.Join(b.Text, " "), "input") {
		t.Errorf("an input that is not a string: %+v, want an error naming input", b)
	}
	if m := out.MissingRun; !m.IsError || !strings.Contains(m.Text[0], "NotFound") {
		t.Errorf("get-run of no run: %+v", m)
	}

	if out.PutStatus != 201 || out.DeleteStatus != 200 {
		t.Fatalf("PUT/DELETE the late agent: %d %d", out.PutStatus, out.DeleteStatus)
	}
	if out.ChangedAfterAdd == 0 || !slices.Contains(out.ToolsAfterAdd, "late_comer") {
		t.Errorf("after adding late-comer: %d list_changed, tools %v", out.ChangedAfterAdd, out.ToolsAfterAdd)
	}
	if out.ChangedAfterDelete == 0 || slices.Contains(out.ToolsAfterDelete, "late_comer") {
		t.Errorf("after deleting late-comer: %d list_changed, tools %v", out.ChangedAfterDelete, out.ToolsAfterDelete)
	}
}

// TestMCPInspectorCLI: the MCP Inspector's CLI lists the tools and calls an agent's tool.
func TestMCPInspectorCLI(t *testing.T) {
	t.Parallel()
	dir := client(t, "mcp-inspector")
	e := newServer(t)
	bin := filepath.Join(dir, "node_modules", ".bin", "mcp-inspector")
	inspect := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--cli", e.URL + "/v2/mcp", "--transport", "http", "--header", "Authorization: Bearer " + e.Token}, args...)...)
		cmd.Dir = dir
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("mcp-inspector --cli %v: %v\n%s", args, err, b)
		}
		return b
	}
	var listed struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	b := inspect("--method", "tools/list")
	if err := json.Unmarshal(b[strings.Index(string(b), "{"):], &listed); err != nil {
		t.Fatalf("tools/list printed %s: %v", b, err)
	}
	var names []string
	for _, tl := range listed.Tools {
		names = append(names, tl.Name)
	}
	for _, want := range []string{"hello_agent", "notes", "careful", "get-run", "send-message", "list-runs"} {
		if !slices.Contains(names, want) {
			t.Errorf("the inspector lists %v, without %s", names, want)
		}
	}
	b = inspect("--method", "tools/call", "--tool-name", "hello_agent", "--tool-arg", "input=Say hello")
	if !strings.Contains(string(b), "Hello from the scripted model.") || !strings.Contains(string(b), "run_id") {
		t.Errorf("tools/call hello_agent printed %s", b)
	}
}
