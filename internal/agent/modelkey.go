package agent

import (
	"context"
	"errors"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/model"
)

// modelKeyRetry is how often a run waiting for a model key is looked at again: a server started
// again with the key picks it up within this.
const modelKeyRetry = 15 * time.Second

// waitForModelKey parks a run that has work recorded when this server has no key for the model
// provider its agent uses (a server restarted without its keys): the run waits with a reason
// naming the key, and is tried again every modelKeyRetry, instead of failing for good on a
// condition of the server's configuration. A run that has done nothing yet still fails at once
// (ModelError), so a server set up without keys says so on the first run. BYOK runs take their
// key from a secret and keep their own errors.
func (d *drive) waitForModelKey(ctx context.Context) error {
	if d.spec.Model.Access == api.AccessBYOK || d.j.Steps() == 0 || d.e.Models == nil {
		return nil
	}
	provider := d.spec.Model.Provider
	if provider == "" {
		provider = d.e.Models.DefaultProvider
	}
	// Only the provider matters here; the model is resolved later as it always is.
	_, _, err := d.e.Models.Resolve(provider, "any")
	if !errors.Is(err, model.ErrNoKey) {
		return nil
	}
	msg := "this server has no model key for the run's provider (" + err.Error() + "); the run goes on when a server with the key picks it up"
	already := d.status.Phase == api.PhaseWaiting && d.status.Reason == api.ReasonModelKeyMissing
	d.status.Phase, d.status.Reason, d.status.Message = api.PhaseWaiting, api.ReasonModelKeyMissing, msg
	d.status.WaitingOn = &api.WaitingOn{Kind: "model", Detail: err.Error()}
	if !already {
		d.j.Emit(api.Event{Type: api.EventRunWaiting, Message: msg})
	}
	wake := time.Now().Add(modelKeyRetry)
	if d.status.Deadline != nil && d.status.Deadline.Before(wake) {
		wake = *d.status.Deadline
	}
	if _, err := d.j.Commit(ctx, &d.status, true, &wake); err != nil {
		return err
	}
	d.parked = true
	return errParked
}
