package e2etest

import (
	"io"
	"net/http"
	"strings"

	"agentrun.dev/agentrun/internal/api"
)

// The seed's "Run agents in parallel" files, as written there.
const SeedGroupAgentYAML = `apiVersion: nodus.dev/v1
kind: Agent
metadata:
  name: parallel-agents-worker
spec:
  system: |
    Follow the task's requested answer format; otherwise answer in one short sentence.
  # Nodus's Claude, limited to Haiku so each run stays far below its cap.
  model:
    access: Nodus
    families: [haiku]
  maxTokens: 1024
  perRunMaxCostUSD: "0.10"
`

const SeedGroupYAML = `apiVersion: nodus.dev/v1
kind: AgentGroup
metadata:
  name: parallel-agents
spec:
  agent: parallel-agents-worker
  limits:
    maxActive: 2 # at most two runs go at once
    maxCostUSD: "0.60" # a run starts only while its own cap still fits under what is left
`

const SeedRunsYAML = `apiVersion: nodus.dev/v1
kind: AgentRun
metadata:
  name: parallel-agents-a
spec:
  agent: parallel-agents-worker
  group: parallel-agents
  taskKey: a
  input: "What is the capital of France?"
---
apiVersion: nodus.dev/v1
kind: AgentRun
metadata:
  name: parallel-agents-b
spec:
  agent: parallel-agents-worker
  group: parallel-agents
  taskKey: b
  input: "What is the capital of Japan?"
---
apiVersion: nodus.dev/v1
kind: AgentRun
metadata:
  name: parallel-agents-c
spec:
  agent: parallel-agents-worker
  group: parallel-agents
  taskKey: c
  dependsOn: [a, b] # c waits until a and b have succeeded
  input: "Say in one sentence that both questions have been answered."
`

func (e *Env) GetGroup(name string) api.AgentGroup {
	e.T.Helper()
	var g api.AgentGroup
	if st := e.Do("GET", "/v2/agentgroups/"+name, nil, &g); st != 200 {
		e.T.Fatalf("get group %s: HTTP %d", name, st)
	}
	return g
}

// Post sends body with extra headers and returns the status and the raw answer.
func (e *Env) Post(path, body string, hdr map[string]string) (int, []byte) {
	e.T.Helper()
	req, _ := http.NewRequest("POST", e.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e.Token)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.T.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}
