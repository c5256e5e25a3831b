package client

import (
	"context"
	"fmt"
	"net/http"

	"agentrun.dev/agentrun/internal/api"
)

// ForkRequest is the body of ForkRun: the step to fork at, and the new run's name, first
// message and cap (each optional).
type ForkRequest = api.ForkRequest

// ForkRun is POST /v2/agentruns/NAME/fork: a new run holding the run's completed steps up to and
// including req.AtStep and its folder as that step left it, which goes on live from there. It is
// refused with StepNotFound, StepNotCompleted or RunPurged; the run itself is not changed.
func (c *Client) ForkRun(ctx context.Context, run string, req ForkRequest) (*AgentRun, error) {
	var r AgentRun
	if _, _, err := c.call(ctx, request{method: http.MethodPost, path: objectPath(AgentRuns, run, "fork"), body: req}, &r); err != nil {
		return nil, fmt.Errorf("fork agentrun %q at %s: %w", run, req.AtStep, err)
	}
	return &r, nil
}
