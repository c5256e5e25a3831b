package agent

import (
	"context"

	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/workflow"
)

// onHarness reports whether the agent names an external harness: its workflow's agent nodes run
// on it (the rest of the workflow runs in the server's engine whatever the harness).
func (d *drive) onHarness() bool { return d.spec.Harness != "" && d.spec.Harness != "builtin" }

// harnessAgent runs an agent node on the agent's harness (claude-agent, codex, pi, opencode),
// called with h.mu held: the harness is started for the node with the node's tools (served over
// MCP, through the run's approvals) and the run's system prompt, the node's instructions and
// state are its one user turn (a verify rejection its next), and its final text is the node's
// answer. Its model and tool calls are journal steps KEY/t{n}/model and KEY/t{n}/tool/{i}, taken
// under the workflow host's lock, so a drive after a crash starts the harness again and every
// call it completed is answered from the journal, byte for byte; one that differs parks the run
// (ReplayDiverged) as for a harness run.
func (h *wfHost) harnessAgent(ctx context.Context, key string, t workflow.Task, defs []model.ToolDef, prompt, modelID string) (string, error) {
	d := h.d
	drv, err := d.harnessDriver()
	if err != nil {
		return "", err
	}
	// The node's turn, before the harness starts (it may call the model as it starts).
	cur := d.newTurn(modelID, "workflow")
	hr, err := d.startHarness(ctx, drv, defs, key, &h.mu, cur)
	if err != nil {
		return "", err
	}
	defer hr.stop()
	for {
		// The harness's calls come back on the gateway's goroutines and take h.mu.
		h.mu.Unlock()
		text, err := hr.proc.Turn(hr.h.ctx, prompt)
		h.mu.Lock()
		if err := d.harnessTurnEnd(ctx, hr.h.err, err); err != nil {
			return "", err
		}
		if t.Review == nil {
			return text, nil
		}
		// verify: the answer is reviewed (a typed question through this host, so without its
		// lock); a rejected one goes back to the same harness session as its next user turn.
		h.mu.Unlock()
		ok, feedback, err := t.Review(ctx, text)
		h.mu.Lock()
		if err != nil || ok {
			return text, err
		}
		prompt = feedback
	}
}
