package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// Resource plurals, as they appear in /v2 paths.
const (
	Agents      = "agents"
	AgentRuns   = "agentruns"
	AgentGroups = "agentgroups"
)

// ApplyResult says what an apply did: "created", "configured" or "unchanged" (the server's
// X-Agentrun-Apply header).
type ApplyResult string

// Apply results.
const (
	Created    ApplyResult = "created"
	Configured ApplyResult = "configured"
	Unchanged  ApplyResult = "unchanged"
)

// ApplyHeader is the response header in which the server says what an apply did.
const ApplyHeader = "X-Agentrun-Apply"

// Capabilities returns GET /v2/capabilities as the server sent it.
func (c *Client) Capabilities(ctx context.Context) (json.RawMessage, error) {
	var raw json.RawMessage
	if _, _, err := c.call(ctx, request{method: http.MethodGet, path: "/v2/capabilities"}, &raw); err != nil {
		return nil, fmt.Errorf("server capabilities: %w", err)
	}
	return raw, nil
}

// Generic object calls, for any resource type (including those without Go types here). Bodies may be
// []byte or json.RawMessage (sent as they are) or any value to marshal as JSON.

// GetObject is GET /v2/PLURAL/NAME.
func (c *Client) GetObject(ctx context.Context, plural, name string) (json.RawMessage, error) {
	var raw json.RawMessage
	if _, _, err := c.call(ctx, request{method: http.MethodGet, path: objectPath(plural, name)}, &raw); err != nil {
		return nil, fmt.Errorf("get %s %q: %w", plural, name, err)
	}
	return raw, nil
}

// ListObjects is GET /v2/PLURAL?query: a list object {"apiVersion", "kind", "items"}.
func (c *Client) ListObjects(ctx context.Context, plural string, query url.Values) (json.RawMessage, error) {
	var raw json.RawMessage
	if _, _, err := c.call(ctx, request{method: http.MethodGet, path: "/v2/" + plural, query: query}, &raw); err != nil {
		return nil, fmt.Errorf("list %s: %w", plural, err)
	}
	return raw, nil
}

// CreateObject is POST /v2/PLURAL.
func (c *Client) CreateObject(ctx context.Context, plural string, body any) (json.RawMessage, error) {
	var raw json.RawMessage
	if _, _, err := c.call(ctx, request{method: http.MethodPost, path: "/v2/" + plural, body: body}, &raw); err != nil {
		return nil, fmt.Errorf("create %s: %w", plural, err)
	}
	return raw, nil
}

// ApplyObject is PUT /v2/PLURAL/NAME: server-side create-or-update.
func (c *Client) ApplyObject(ctx context.Context, plural, name string, body any) (json.RawMessage, ApplyResult, error) {
	var raw json.RawMessage
	hdr, status, err := c.call(ctx, request{method: http.MethodPut, path: objectPath(plural, name), body: body}, &raw)
	if err != nil {
		return nil, "", fmt.Errorf("apply %s %q: %w", plural, name, err)
	}
	res := ApplyResult(hdr.Get(ApplyHeader))
	if res == "" {
		res = Configured
		if status == http.StatusCreated {
			res = Created
		}
	}
	return raw, res, nil
}

// DryRunObject asks the server to check an apply (PUT /v2/PLURAL/NAME, or a create, POST
// /v2/PLURAL, when name is empty) with ?dryRun=All: decoded, validated and checked against what
// it names on the server as the real request would be, nothing stored. The result says what the
// real apply would do.
func (c *Client) DryRunObject(ctx context.Context, plural, name string, body any) (ApplyResult, error) {
	req := request{method: http.MethodPut, path: objectPath(plural, name), body: body, query: url.Values{"dryRun": {"All"}}}
	if name == "" {
		req.method, req.path = http.MethodPost, "/v2/"+plural
	}
	hdr, status, err := c.call(ctx, req, nil)
	if err != nil {
		if name == "" {
			return "", fmt.Errorf("check %s: %w", plural, err)
		}
		return "", fmt.Errorf("check %s %q: %w", plural, name, err)
	}
	if hdr.Get(DryRunHeader) != "All" {
		// A server without dry runs would have stored it: say so rather than report a check.
		return "", fmt.Errorf("check %s: the server did not answer as a dry run (an older server?)", plural)
	}
	res := ApplyResult(hdr.Get(ApplyHeader))
	if res == "" && status == http.StatusCreated {
		res = Created
	}
	return res, nil
}

// DryRunHeader marks the server's answer to a dry run.
const DryRunHeader = "X-Agentrun-Dry-Run"

// PatchObject is PATCH /v2/PLURAL/NAME with a JSON merge patch.
func (c *Client) PatchObject(ctx context.Context, plural, name string, patch any) (json.RawMessage, error) {
	var raw json.RawMessage
	req := request{method: http.MethodPatch, path: objectPath(plural, name), body: patch,
		header: http.Header{"Content-Type": {"application/merge-patch+json"}}}
	if _, _, err := c.call(ctx, req, &raw); err != nil {
		return nil, fmt.Errorf("patch %s %q: %w", plural, name, err)
	}
	return raw, nil
}

// DeleteObject is DELETE /v2/PLURAL/NAME.
func (c *Client) DeleteObject(ctx context.Context, plural, name string) error {
	if _, _, err := c.call(ctx, request{method: http.MethodDelete, path: objectPath(plural, name)}, nil); err != nil {
		return fmt.Errorf("delete %s %q: %w", plural, name, err)
	}
	return nil
}

// CancelObject is POST /v2/PLURAL/NAME/cancel.
func (c *Client) CancelObject(ctx context.Context, plural, name string) (json.RawMessage, error) {
	var raw json.RawMessage
	if _, _, err := c.call(ctx, request{method: http.MethodPost, path: objectPath(plural, name, "cancel")}, &raw); err != nil {
		return nil, fmt.Errorf("cancel %s %q: %w", plural, name, err)
	}
	return raw, nil
}

func decodeInto[T any](raw json.RawMessage, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	v := new(T)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, fmt.Errorf("decode response: %w", err)
	}
	return v, nil
}

// Agents.

// CreateAgent is POST /v2/agents. body is an *Agent, an SeedAgentBody ({"definition": ...})
// or raw JSON of either. An existing name fails with code AlreadyExists.
func (c *Client) CreateAgent(ctx context.Context, body any) (*Agent, error) {
	return decodeInto[Agent](c.CreateObject(ctx, Agents, body))
}

// ListAgents is GET /v2/agents.
func (c *Client) ListAgents(ctx context.Context) ([]Agent, error) {
	l, err := decodeInto[List[Agent]](c.ListObjects(ctx, Agents, nil))
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// GetAgent is GET /v2/agents/NAME.
func (c *Client) GetAgent(ctx context.Context, name string) (*Agent, error) {
	return decodeInto[Agent](c.GetObject(ctx, Agents, name))
}

// ApplyAgent is PUT /v2/agents/NAME with a.Metadata.Name as NAME.
func (c *Client) ApplyAgent(ctx context.Context, a *Agent) (*Agent, ApplyResult, error) {
	raw, res, err := c.ApplyObject(ctx, Agents, a.Metadata.Name, a)
	out, err := decodeInto[Agent](raw, err)
	return out, res, err
}

// PatchAgent is PATCH /v2/agents/NAME with a JSON merge patch.
func (c *Client) PatchAgent(ctx context.Context, name string, patch any) (*Agent, error) {
	return decodeInto[Agent](c.PatchObject(ctx, Agents, name, patch))
}

// DeleteAgent is DELETE /v2/agents/NAME.
func (c *Client) DeleteAgent(ctx context.Context, name string) error {
	return c.DeleteObject(ctx, Agents, name)
}

// Runs.

// StartRun is POST /v2/agents/AGENT/runs. body is an SeedRunBody ({"input": {"content": ...},
// "max_cost_usd", "keep_alive", "deadline", "name"}) or its raw JSON.
func (c *Client) StartRun(ctx context.Context, agent string, body any) (*AgentRun, error) {
	var r AgentRun
	if _, _, err := c.call(ctx, request{method: http.MethodPost, path: objectPath(Agents, agent, "runs"), body: body}, &r); err != nil {
		return nil, fmt.Errorf("start a run of agent %q: %w", agent, err)
	}
	return &r, nil
}

// CreateAgentRun is POST /v2/agentruns with an *AgentRun (or its raw JSON).
func (c *Client) CreateAgentRun(ctx context.Context, body any) (*AgentRun, error) {
	return decodeInto[AgentRun](c.CreateObject(ctx, AgentRuns, body))
}

// ListRunsOptions filters ListAgentRuns; empty fields do not filter.
type ListRunsOptions struct {
	Agent string
	Phase string
	// FieldSelector is "k=v[,k=v]", for example "spec.group=parallel-agents".
	FieldSelector string
}

func (o ListRunsOptions) query() url.Values {
	q := url.Values{}
	if o.Agent != "" {
		q.Set("agent", o.Agent)
	}
	if o.Phase != "" {
		q.Set("phase", o.Phase)
	}
	if o.FieldSelector != "" {
		q.Set("fieldSelector", o.FieldSelector)
	}
	return q
}

// ListAgentRuns is GET /v2/agentruns.
func (c *Client) ListAgentRuns(ctx context.Context, opts ListRunsOptions) ([]AgentRun, error) {
	l, err := decodeInto[List[AgentRun]](c.ListObjects(ctx, AgentRuns, opts.query()))
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// GetAgentRun is GET /v2/agentruns/NAME.
func (c *Client) GetAgentRun(ctx context.Context, name string) (*AgentRun, error) {
	return decodeInto[AgentRun](c.GetObject(ctx, AgentRuns, name))
}

// ApplyAgentRun is PUT /v2/agentruns/NAME with r.Metadata.Name as NAME.
func (c *Client) ApplyAgentRun(ctx context.Context, r *AgentRun) (*AgentRun, ApplyResult, error) {
	raw, res, err := c.ApplyObject(ctx, AgentRuns, r.Metadata.Name, r)
	out, err := decodeInto[AgentRun](raw, err)
	return out, res, err
}

// PatchAgentRun is PATCH /v2/agentruns/NAME with a JSON merge patch.
func (c *Client) PatchAgentRun(ctx context.Context, name string, patch any) (*AgentRun, error) {
	return decodeInto[AgentRun](c.PatchObject(ctx, AgentRuns, name, patch))
}

// DeleteAgentRun is DELETE /v2/agentruns/NAME.
func (c *Client) DeleteAgentRun(ctx context.Context, name string) error {
	return c.DeleteObject(ctx, AgentRuns, name)
}

// CancelAgentRun is POST /v2/agentruns/NAME/cancel.
func (c *Client) CancelAgentRun(ctx context.Context, name string) (*AgentRun, error) {
	return decodeInto[AgentRun](c.CancelObject(ctx, AgentRuns, name))
}

// MessageResult is the answer to SendMessage: the stored message, and whether this call created it
// (false: a message with the same key was already delivered).
type MessageResult struct {
	Message Message `json:"message"`
	Created bool    `json:"created"`
}

// SendMessage is POST /v2/agentruns/NAME/messages. A non-empty key makes the send idempotent. A
// finished run refuses it with code AgentRunFinished.
func (c *Client) SendMessage(ctx context.Context, run, payload, key string) (*MessageResult, error) {
	return c.SendMessageIfBusy(ctx, run, payload, key, "")
}

// SendMessageIfBusy is SendMessage saying what the message does if the run has a turn in flight:
// IfBusyEnqueue (wait for the turn's end), IfBusyReject (refused with code RunBusy, nothing
// stored), IfBusyInterrupt (stop the turn now) or IfBusyRollback (discard the turn); "" is the
// agent's spec.ifBusy, else enqueue. Message.IfBusy in the answer is set when the run was busy.
func (c *Client) SendMessageIfBusy(ctx context.Context, run, payload, key string, ifBusy IfBusy) (*MessageResult, error) {
	body := map[string]string{"payload": payload}
	if key != "" {
		body["messageKey"] = key
	}
	if ifBusy != "" {
		body["ifBusy"] = string(ifBusy)
	}
	var res MessageResult
	if _, _, err := c.call(ctx, request{method: http.MethodPost, path: objectPath(AgentRuns, run, "messages"), body: body}, &res); err != nil {
		return nil, fmt.Errorf("send a message to agentrun %q: %w", run, err)
	}
	return &res, nil
}

// Steps is GET /v2/agentruns/NAME/steps: the run's journal, in order.
func (c *Client) Steps(ctx context.Context, run string) ([]Step, error) {
	var l struct {
		Items []Step `json:"items"`
	}
	if _, _, err := c.call(ctx, request{method: http.MethodGet, path: objectPath(AgentRuns, run, "steps")}, &l); err != nil {
		return nil, fmt.Errorf("steps of agentrun %q: %w", run, err)
	}
	return l.Items, nil
}

// Nodes is GET /v2/agentruns/NAME/nodes: a workflow run's node tree (Root is nil for a run
// whose agent revision has no workflow).
func (c *Client) Nodes(ctx context.Context, run string) (*WorkflowTree, error) {
	var t WorkflowTree
	if _, _, err := c.call(ctx, request{method: http.MethodGet, path: objectPath(AgentRuns, run, "nodes")}, &t); err != nil {
		return nil, fmt.Errorf("nodes of agentrun %q: %w", run, err)
	}
	return &t, nil
}

// Answer is GET /v2/agentruns/NAME/answer: the whole final answer. A run with no answer yet fails
// with code NoAnswer (HTTP 404).
func (c *Client) Answer(ctx context.Context, run string) (string, error) {
	resp, err := c.do(ctx, request{method: http.MethodGet, path: objectPath(AgentRuns, run, "answer"),
		header: http.Header{"Accept": {"text/plain, application/json"}}})
	if err != nil {
		return "", fmt.Errorf("answer of agentrun %q: %w", run, err)
	}
	defer resp.Body.Close()
	b, err := readAll(resp)
	if err != nil {
		return "", fmt.Errorf("answer of agentrun %q: %w", run, err)
	}
	return string(b), nil
}

// ReadFile is GET /v2/agentruns/NAME/files/PATH: the bytes of a file in the run's folder. A missing
// file fails with code FileNotFound.
func (c *Client) ReadFile(ctx context.Context, run, path string) ([]byte, error) {
	if err := checkFilePath(path); err != nil {
		return nil, fmt.Errorf("read file of agentrun %q: %w", run, err)
	}
	resp, err := c.do(ctx, request{method: http.MethodGet, path: objectPath(AgentRuns, run, "files", escapePath(path)),
		header: http.Header{"Accept": {"*/*"}}})
	if err != nil {
		return nil, fmt.Errorf("read file %q of agentrun %q: %w", path, run, err)
	}
	defer resp.Body.Close()
	b, err := readAll(resp)
	if err != nil {
		return nil, fmt.Errorf("read file %q of agentrun %q: %w", path, run, err)
	}
	return b, nil
}

// ResolveRequest is the body of Resolve.
type ResolveRequest struct {
	// Action is "retry", "skip" or "complete".
	Action string `json:"action"`
	// StepKey names the interrupted step; empty means the one the run waits on.
	StepKey string `json:"stepKey,omitempty"`
	// Result is the step's result, for "complete".
	Result json.RawMessage `json:"result,omitempty"`
}

// Resolve actions.
const (
	ResolveRetry    = "retry"
	ResolveSkip     = "skip"
	ResolveComplete = "complete"
)

// Resolve is POST /v2/agentruns/NAME/resolve: decides what to do with an interrupted step of a run in
// NeedsResolution.
func (c *Client) Resolve(ctx context.Context, run string, req ResolveRequest) (*AgentRun, error) {
	var r AgentRun
	if _, _, err := c.call(ctx, request{method: http.MethodPost, path: objectPath(AgentRuns, run, "resolve"), body: req}, &r); err != nil {
		return nil, fmt.Errorf("resolve agentrun %q: %w", run, err)
	}
	return &r, nil
}

// Runner is a runner as GET /v2/runners lists it.
type Runner struct {
	Name           string    `json:"name"`
	Version        string    `json:"version"`
	Host           string    `json:"host"`
	PID            int       `json:"pid"`
	StartedAt      time.Time `json:"startedAt"`
	HeartbeatAt    time.Time `json:"heartbeatAt"`
	RunsHeld       int       `json:"runsHeld"`
	Live           bool      `json:"live"`
	SinceHeartbeat string    `json:"sinceHeartbeat"`
}

// Runners is GET /v2/runners.
func (c *Client) Runners(ctx context.Context) ([]Runner, error) {
	var out struct {
		Items []Runner `json:"items"`
	}
	if _, _, err := c.call(ctx, request{method: http.MethodGet, path: "/v2/runners"}, &out); err != nil {
		return nil, fmt.Errorf("list runners: %w", err)
	}
	return out.Items, nil
}
