package app

import (
	"context"
	"errors"
	"time"

	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/secret"
	"agentrun.dev/agentrun/internal/store"
)

// useStoredModelKeys makes models read the model keys pasted in the console (secret.ModelKeys)
// on each call, so the server's runner and every remote runner on the same store use a key the
// moment it is pasted, replaced or removed. Without a seal key nothing can have been pasted.
func useStoredModelKeys(models *model.Config, st store.Store, box *secret.Box) {
	if box == nil {
		return
	}
	o := &secret.Opener{Box: box, Store: st}
	models.Stored = func() (map[string]string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		m, err := o.Open(ctx, secret.ModelKeys)
		if errors.Is(err, store.ErrNotFound) {
			return map[string]string{}, nil
		}
		return m, err
	}
}
