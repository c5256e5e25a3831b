package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"agentrun.dev/agentrun/internal/store"
)

// retentionBatch bounds the runs one pass purges, so a first pass over a large old store does not
// hold the writer for long; the next pass goes on where it stopped.
const retentionBatch = 500

// retentionPart is the background job that purges finished runs' payloads once they ended more
// than retention ago (store.Retention), for runParts. It never touches an unfinished run: the
// store checks store.PurgeDue inside each run's transaction. Under the test hooks with
// AGENTRUN_DEV_CLOCK_FILE set it takes now from that file and looks every 100 ms, so a test can
// move a month ahead.
func retentionPart(st store.Store, retention time.Duration, devHooks bool, log *slog.Logger) func(context.Context) {
	now, every := time.Now, 10*time.Minute
	if path := os.Getenv(envDevClockFile); path != "" && devHooks {
		log.Warn(envDevClockFile + " is set: the retention job's clock reads it (test hooks)")
		now, every = fileClock(path), 100*time.Millisecond
	}
	log = log.With("part", "retention")
	return func(ctx context.Context) {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			for ctx.Err() == nil {
				n := now()
				purged, err := st.PurgePayloads(ctx, n.Add(-retention), n, retentionBatch)
				if err != nil && ctx.Err() == nil {
					log.Warn("purge finished runs' payloads", "err", err)
				}
				if len(purged) > 0 {
					log.Info("purged finished runs' payloads", "runs", len(purged), "retention", retention)
				}
				if len(purged) < retentionBatch {
					break
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}
}

// checkRetention refuses a negative --retention; 0 keeps payloads for ever.
func checkRetention(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("--retention %v: want a duration of 0 or more (0 keeps payloads for ever; default %v)", d, store.DefaultRetention)
	}
	return nil
}
