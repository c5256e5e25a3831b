package agent

import (
	"context"
	"errors"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/model"
)

// modelKeyRetry is how often a run waiting for a model key is looked at again: a server started
// again with the key picks it up within this (a key pasted in the console pokes the waiting runs
// at once: Store.PokeWaiting).
const modelKeyRetry = 15 * time.Second

// waitForModelKey parks a run when this server has no key for the model provider its agent uses
// (a server started before a key was pasted, or restarted without its keys): the run waits with
// a reason naming the key, and is tried again every modelKeyRetry or when a key is pasted in the
// console, instead of failing for good on a condition of the server's configuration. BYOK runs
// take their key from a secret and keep their own errors.
func (d *drive) waitForModelKey(ctx context.Context) error {
	if d.spec.Model.Access == api.AccessBYOK || d.e.Models == nil {
		return nil
	}
	provider := string(d.spec.Model.Provider)
	if provider == "" {
		provider = d.e.Models.Default()
	}
	// Only the provider matters here; the model is resolved later as it always is.
	_, _, err := d.e.Models.Resolve(provider, "any")
	if !errors.Is(err, model.ErrNoKey) {
		return nil
	}
	msg := "this server has no model key for the run's provider (" + err.Error() + "); the run goes on once the key is pasted in the console (Settings → Model keys) or a server with it in its environment picks the run up"
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
