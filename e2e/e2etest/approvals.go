package e2etest

import (
	"encoding/json"
	"regexp"
	"time"
)

const ApprovalsScript = `
entries:
  - name: careful
    match: "Count carefully"
    turns:
      - text: "I need to count this once."
        tool_calls:
          - name: write
            input: {path: "docs/plan.md", content: "plan"}
          - name: write
            input: {path: "secret.txt", content: "leak"}
          - name: dev_count
            input: {label: "{{last_user}}"}
      - text: "result: {{last_tool_result}}"
`

const ApprovalsAgent = `{"metadata":{"name":"careful"},"spec":{"tools":["write","dev_count"],
  "approvals":{"default":"allow","rules":[{"match":"write(docs/**)","action":"allow"},{"match":"dev_count","action":"ask"}]}}}`

// SetupCode reads the one-time setup code the server printed.
func (e *Env) SetupCode() string {
	e.T.Helper()
	// The server answers before it has printed the whole start-up block: wait for the line.
	re := regexp.MustCompile(`setup code: ([0-9A-F]+)`)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(e.Stderr.String()); m != nil {
			return m[1]
		}
		if time.Now().After(deadline) {
			e.T.Fatalf("the server printed no setup code:\n%s", e.Stderr.String())
		}
	}
}

func JSONNumber(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
