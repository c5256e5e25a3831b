package e2etest

// HarnessWorkflowScript answers the agent nodes of the workflows the harness tests run
// (e2e/harnessext, e2e/harnessguard) and the questions around them.
const HarnessWorkflowScript = `
entries:
  - name: clnode
    match: "Research with claude"
    turns:
      - tool_calls:
          - name: mcp__agentrun__dev_count
            input: {label: "claude-node"}
      - text: '{"summary": "node done"}'
  - name: triage
    match: "Triage the ticket"
    turns:
      - text: '{"answer": {"urgent": false}, "confidence": 0.9}'
`
