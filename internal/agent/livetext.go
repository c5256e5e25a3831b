package agent

import (
	"context"
	"sync"

	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/secret"
)

// liveRedaction is a drive's redaction of the model's live text: the values the run was handed
// (its model key, its MCP servers' sealed values), found once per drive.
type liveRedaction struct {
	once   sync.Once
	redact func(string) string
	hold   int
}

// liveText is ctx carrying a sink that sends the text of model call key, as it streams, to the
// people watching the run (Engine.LiveText; livetext's Hub), and the function that ends it, to
// be called once the call returns. Without a hub, ctx is returned as it is.
func (d *drive) liveText(ctx context.Context, key string) (context.Context, func()) {
	if d.e.LiveText == nil {
		return ctx, func() {}
	}
	lr := &d.live
	lr.once.Do(func() {
		var det secret.Detector
		for _, v := range d.learnSecrets(ctx) {
			det.Add("secret", v)
		}
		if !det.Empty() {
			lr.redact = det.Redact
			// A value split by separators spans more than its own length in the text.
			lr.hold = 2*det.Longest() + 64
		}
	})
	c := d.e.LiveText.Call(d.run.Metadata.Name, key, lr.redact, lr.hold)
	return model.WithTextSink(ctx, c), c.Close
}
