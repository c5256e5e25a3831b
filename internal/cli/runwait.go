package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"agentrun.dev/agentrun/client"
	"agentrun.dev/agentrun/internal/api"
)

// runView is the run JSON `runs start` and `runs wait` print: the AgentRun seed's shape.
type runView struct {
	RunID      string         `json:"run_id"`
	Agent      string         `json:"agent"`
	Status     string         `json:"status"`
	Phase      api.Phase      `json:"phase"`
	Reason     api.Reason     `json:"reason,omitempty"`
	Message    string         `json:"message,omitempty"`
	WaitingOn  *api.WaitingOn `json:"waiting_on,omitempty"`
	Question   string         `json:"question,omitempty"`
	Answer     *string        `json:"answer,omitempty"`
	ConsoleURL string         `json:"console_url,omitempty"`
	Cost       *api.RunCost   `json:"cost,omitempty"`
}

// statusWord maps a phase onto the seed's status words.
func statusWord(phase api.Phase) string {
	switch phase {
	case api.PhaseQueued:
		return "queued"
	case api.PhaseRunning:
		return "running"
	case api.PhaseWaiting:
		return "waiting"
	case api.PhaseNeedsResolution:
		return "needs_resolution"
	case api.PhaseSucceeded:
		return "completed"
	case api.PhaseFailed:
		return "failed"
	case api.PhaseCancelled:
		return "cancelled"
	}
	return strings.ToLower(string(phase))
}

// idleKeepAlive reports whether a run is a keep-alive run waiting for its next message.
func idleKeepAlive(r *api.AgentRun) bool {
	return r.Status.Phase == api.PhaseWaiting && r.Status.Reason == api.ReasonMessage
}

// hasAnswer reports whether the run's whole answer belongs in its view.
func hasAnswer(r *api.AgentRun) bool {
	return r.Status.Phase == api.PhaseSucceeded || idleKeepAlive(r)
}

// newRunView builds the view of r; answer is the whole answer, if fetched.
func newRunView(r *api.AgentRun, answer *string) runView {
	v := runView{
		RunID:      r.Metadata.Name,
		Agent:      r.Spec.Agent,
		Status:     statusWord(r.Status.Phase),
		Phase:      r.Status.Phase,
		Reason:     r.Status.Reason,
		Message:    r.Status.Message,
		WaitingOn:  r.Status.WaitingOn,
		ConsoleURL: r.Status.ConsoleURL,
		Cost:       r.Status.Cost,
	}
	if w := r.Status.WaitingOn; w != nil && w.Question != "" && (w.Kind == "question" || r.Status.Reason == api.ReasonQuestion) {
		v.Question = w.Question
	}
	if answer == nil && hasAnswer(r) && r.Status.Answer != nil && !r.Status.Answer.Truncated {
		p := r.Status.Answer.Preview
		answer = &p
	}
	if hasAnswer(r) {
		v.Answer = answer
	}
	return v
}

// viewRun builds the view of r, fetching the whole answer when it has one.
func viewRun(ctx context.Context, c *client.Client, r *api.AgentRun) runView {
	var answer *string
	if hasAnswer(r) {
		if a, err := c.Answer(ctx, r.Metadata.Name); err == nil {
			answer = &a
		}
	}
	return newRunView(r, answer)
}

// runOutcome says whether waiting on a run is over, and the exit code: 0 Succeeded or an idle
// keep-alive run (its turn is done), 1 Failed or Cancelled, 8 waiting on a person.
func runOutcome(phase api.Phase, reason api.Reason) (done bool, code int) {
	switch {
	case phase == api.PhaseSucceeded:
		return true, ExitOK
	case api.Finished(phase):
		return true, ExitFailure
	case api.WaitingOnPerson(phase, reason):
		return true, ExitWaitingOnPerson
	case phase == api.PhaseWaiting && reason == api.ReasonMessage:
		return true, ExitOK
	}
	return false, 0
}

// describeState says what a run is doing: "Waiting (Question): Which region?".
func describeState(r *api.AgentRun) string {
	s := string(r.Status.Phase)
	if s == "" {
		s = "(no phase yet)"
	}
	if r.Status.Reason != "" {
		s += " (" + string(r.Status.Reason) + ")"
	}
	detail := ""
	if w := r.Status.WaitingOn; w != nil {
		switch {
		case w.Question != "":
			detail = w.Question
		case w.Detail != "":
			detail = w.Detail
		case w.StepKey != "":
			detail = "step " + w.StepKey
		}
	}
	if detail == "" && r.Status.Reason == api.ReasonMaxCostReached && r.Status.Cost != nil && r.Status.Cost.NeededUSD != "" {
		detail = "needs at least $" + r.Status.Cost.NeededUSD
	}
	if e := r.Status.Escalation; detail == "" && e != nil {
		detail = fmt.Sprintf("escalated at %s (%s, stage %s): %s", e.Label, e.Kind, e.Stage, e.Summary)
	}
	if detail == "" && (r.Status.Phase == api.PhaseFailed || r.Status.Phase == api.PhaseQueued) {
		detail = r.Status.Message
	}
	if detail != "" {
		s += ": " + truncate(detail, 200)
	}
	return s
}

// phaseLine is the progress line printed on each change: "run notes-x7k2p: Running".
func phaseLine(r *api.AgentRun) string {
	return "run " + r.Metadata.Name + ": " + describeState(r)
}

// waitRun polls the run every 250ms until runOutcome says it is over, printing each change of state
// to progress. timeout 0 waits for ever. It returns the last run seen and the exit code; on timeout
// the code is 1 and err says what the run still waited on.
func waitRun(ctx context.Context, c *client.Client, name string, timeout time.Duration, progress io.Writer) (*api.AgentRun, int, error) {
	wctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var last *api.AgentRun
	lastLine := ""
	var lastErr error
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		r, err := c.GetAgentRun(wctx, name)
		switch {
		case err == nil:
			last, lastErr = r, nil
			if line := phaseLine(r); line != lastLine {
				fmt.Fprintln(progress, line)
				lastLine = line
			}
			if done, code := runOutcome(r.Status.Phase, r.Status.Reason); done {
				return r, code, nil
			}
		case wctx.Err() != nil:
			// fall through to the timeout below
		default:
			if _, ok := api.AsError(err); ok || last == nil {
				// A server error, or a server never reached: nothing to wait for.
				return last, ExitFailure, err
			}
			// The server may be restarting: say so once, and keep trying.
			if lastErr == nil {
				fmt.Fprintf(progress, "run %s: %v; retrying\n", name, err)
			}
			lastErr = err
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return last, ExitFailure, ctx.Err()
			}
			state := "not seen yet"
			if last != nil {
				state = "still " + describeState(last)
			}
			if lastErr != nil {
				state += " (last error: " + lastErr.Error() + ")"
			}
			return last, ExitFailure, fmt.Errorf("timed out after %s waiting for run %s: %s", timeout, name, state)
		case <-tick.C:
		}
	}
}

// finishWait prints the run's view on stdout and turns the outcome into the command's result.
func finishWait(ctx context.Context, c *client.Client, stdout io.Writer, r *api.AgentRun, code int, err error) error {
	if r != nil {
		if werr := writeJSON(stdout, viewRun(ctx, c, r)); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return &ExitError{Code: ExitFailure, Err: errors.New("interrupted")}
		}
		return failure(err)
	}
	if code != ExitOK {
		return &ExitError{Code: code}
	}
	return nil
}
