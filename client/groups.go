package client

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Environments is the plural of Environment in /v2 paths.
const Environments = "environments"

// AgentGroups and evaluations.

// CreateAgentGroup is POST /v2/agentgroups.
func (c *Client) CreateAgentGroup(ctx context.Context, g *AgentGroup) (*AgentGroup, error) {
	if g.Kind == "" {
		g.APIVersion, g.Kind = APIVersion, "AgentGroup"
	}
	return decodeInto[AgentGroup](c.CreateObject(ctx, AgentGroups, g))
}

// GetAgentGroup is GET /v2/agentgroups/NAME.
func (c *Client) GetAgentGroup(ctx context.Context, name string) (*AgentGroup, error) {
	return decodeInto[AgentGroup](c.GetObject(ctx, AgentGroups, name))
}

// PatchAgentGroup applies a JSON merge patch (maxActive, a higher cost cap, sealed: true).
func (c *Client) PatchAgentGroup(ctx context.Context, name string, patch any) (*AgentGroup, error) {
	return decodeInto[AgentGroup](c.PatchObject(ctx, AgentGroups, name, patch))
}

// SealAgentGroup says no more runs are coming.
func (c *Client) SealAgentGroup(ctx context.Context, name string) (*AgentGroup, error) {
	return c.PatchAgentGroup(ctx, name, map[string]any{"spec": map[string]any{"sealed": true}})
}

// CancelAgentGroup cancels every unfinished run of the group.
func (c *Client) CancelAgentGroup(ctx context.Context, name string) (*AgentGroup, error) {
	return decodeInto[AgentGroup](c.CancelObject(ctx, AgentGroups, name))
}

// DeleteAgentGroup removes the group with all its runs.
func (c *Client) DeleteAgentGroup(ctx context.Context, name string) error {
	return c.DeleteObject(ctx, AgentGroups, name)
}

// GroupFinished reports whether a group phase is terminal.
func GroupFinished(phase GroupPhase) bool {
	return phase == GroupSucceeded || phase == GroupFailed || phase == GroupCancelled
}

// WaitAgentGroup polls the group until it is Succeeded, Failed or Cancelled, or ctx ends.
func (c *Client) WaitAgentGroup(ctx context.Context, name string, poll time.Duration) (*AgentGroup, error) {
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	for {
		g, err := c.GetAgentGroup(ctx, name)
		if err != nil {
			return nil, err
		}
		if GroupFinished(g.Status.Phase) {
			return g, nil
		}
		select {
		case <-ctx.Done():
			return g, fmt.Errorf("wait for group %q: %w (now %s)", name, ctx.Err(), g.Status.Phase)
		case <-time.After(poll):
		}
	}
}

// EvalResults is an evaluation group's per-case results (GET /v2/agentgroups/NAME/results).
type EvalResults struct {
	Group      string            `json:"group"`
	Phase      string            `json:"phase"`
	Evaluation *EvaluationStatus `json:"evaluation"`
	Items      []EvalCase        `json:"items"`
}

// EvalResults returns an evaluation group's results.
func (c *Client) EvalResults(ctx context.Context, group string) (*EvalResults, error) {
	var out EvalResults
	if _, _, err := c.call(ctx, request{method: http.MethodGet, path: objectPath(AgentGroups, group, "results")}, &out); err != nil {
		return nil, fmt.Errorf("results of group %q: %w", group, err)
	}
	return &out, nil
}

// Evaluation is what Evaluate asks for: the seed's evaluation.py in one call.
type Evaluation struct {
	Name, Agent string
	MaxActive   int
	MaxCostUSD  string
	EvaluationSpec
	// Keep leaves the group in place (Evaluate deletes it otherwise, as the seed's example does).
	Keep bool
}

// Evaluate creates an evaluation group, waits for it to end (its timeout plus a minute), reads its
// results and deletes it (unless Keep): the seed's evaluation.py.
func (c *Client) Evaluate(ctx context.Context, e Evaluation) (*AgentGroup, *EvalResults, error) {
	spec := e.EvaluationSpec
	g := &AgentGroup{Metadata: ObjectMeta{Name: e.Name},
		Spec: AgentGroupSpec{Agent: e.Agent, Limits: GroupLimits{MaxActive: e.MaxActive, MaxCostUSD: e.MaxCostUSD}, Evaluation: &spec}}
	if _, err := c.CreateAgentGroup(ctx, g); err != nil {
		return nil, nil, err
	}
	if !e.Keep {
		defer c.DeleteAgentGroup(context.WithoutCancel(ctx), e.Name)
	}
	timeout := DefaultEvalTimeout
	if d, err := time.ParseDuration(spec.Timeout); err == nil {
		timeout = d
	}
	wctx, cancel := context.WithTimeout(ctx, timeout+time.Minute)
	defer cancel()
	status, err := c.WaitAgentGroup(wctx, e.Name, 0)
	if err != nil {
		return status, nil, err
	}
	res, err := c.EvalResults(ctx, e.Name)
	return status, res, err
}

// LoadEnvironment is POST /v2/environments: it stores NAME@VERSION (created or unchanged).
func (c *Client) LoadEnvironment(ctx context.Context, env *Environment) (*Environment, ApplyResult, error) {
	var out Environment
	hdr, status, err := c.call(ctx, request{method: http.MethodPost, path: "/v2/" + Environments, body: env}, &out)
	if err != nil {
		return nil, "", fmt.Errorf("load environment %s@%s: %w", env.Metadata.Name, env.Spec.Version, err)
	}
	res := ApplyResult(hdr.Get(ApplyHeader))
	if res == "" {
		res = Unchanged
		if status == http.StatusCreated {
			res = Created
		}
	}
	return &out, res, nil
}

// ListEnvironments lists the built-in and loaded environments (without hidden answers).
func (c *Client) ListEnvironments(ctx context.Context) ([]Environment, error) {
	l, err := decodeInto[List[Environment]](c.ListObjects(ctx, Environments, nil))
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// GetEnvironment returns NAME@VERSION (without hidden answers).
func (c *Client) GetEnvironment(ctx context.Context, ref string) (*Environment, error) {
	var out Environment
	// The name may hold a '/', which is part of the path here.
	if _, _, err := c.call(ctx, request{method: http.MethodGet, path: "/v2/" + Environments + "/" + strings.TrimPrefix(ref, "/")}, &out); err != nil {
		return nil, fmt.Errorf("get environment %s: %w", ref, err)
	}
	return &out, nil
}

// CreateAgentRuns posts an AgentRunList (at most 100): created all or nothing, in list order. A
// non-empty idempotencyKey makes a repeat return the first batch.
func (c *Client) CreateAgentRuns(ctx context.Context, runs []AgentRun, idempotencyKey string) ([]AgentRun, error) {
	body := List[AgentRun]{TypeMeta: TypeMeta{APIVersion: APIVersion, Kind: "AgentRunList"}, Items: runs}
	var hdr http.Header
	if idempotencyKey != "" {
		hdr = http.Header{"Idempotency-Key": {idempotencyKey}}
	}
	var out List[AgentRun]
	if _, _, err := c.call(ctx, request{method: http.MethodPost, path: "/v2/" + AgentRuns, body: body, header: hdr}, &out); err != nil {
		return nil, fmt.Errorf("create %d runs: %w", len(runs), err)
	}
	return out.Items, nil
}
