package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/runfolder"
)

// The workflow host's durable clock, its timer and the run folder's files (internal/workflow's
// polled calls and file artifacts).

// Clock records the time now as step key (kind "clock") the first time, and answers the recorded
// time on a replay: a polled call's waits are computed from these, so a run restarted in the middle
// of a wait waits only for what is left of it.
func (h *wfHost) Clock(ctx context.Context, key, title string) (time.Time, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	raw, err := h.d.j.Record(ctx, journal.Spec{Key: key, Kind: api.StepKindClock, Title: title}, map[string]any{"at": time.Now().UTC()})
	if err != nil {
		return time.Time{}, err
	}
	var v struct {
		At time.Time `json:"at"`
	}
	if err := json.Unmarshal(raw, &v); err != nil || v.At.IsZero() {
		return time.Time{}, fmt.Errorf("workflow step %s: the recorded time is not readable: %s", key, api.FirstLine(string(raw), 80))
	}
	return v.At, nil
}

// Sleep puts what the run waits on, and until when, on its timeline (committed at once), then
// waits without holding the host, so a map's other items go on meanwhile.
func (h *wfHost) Sleep(ctx context.Context, key string, until time.Time, what string) error {
	d := time.Until(until)
	if d <= 0 {
		return nil
	}
	h.mu.Lock()
	h.d.j.Emit(api.Event{Type: api.EventRunWaiting, StepKey: key, Message: fmt.Sprintf("waiting %s for %s", d.Round(time.Millisecond), what)})
	_, err := h.d.j.Commit(ctx, nil, false, nil)
	h.mu.Unlock()
	if err != nil {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Stat is the size of a run-folder file, reached without following links.
func (h *wfHost) Stat(ctx context.Context, rel string) (int64, error) {
	dir, err := runfolder.Open(h.d.folder)
	if err != nil {
		return 0, err
	}
	defer dir.Close()
	return dir.Size(rel)
}

// A learned workflow's host (keyedHost, its steps under the tool call's key) keeps time and sees
// the run folder as the run's own does.

func (k *keyedHost) Clock(ctx context.Context, key, title string) (time.Time, error) {
	return k.h.Clock(ctx, k.under+"/"+key, title)
}

func (k *keyedHost) Sleep(ctx context.Context, key string, until time.Time, what string) error {
	return k.h.Sleep(ctx, k.under+"/"+key, until, what)
}

func (k *keyedHost) Stat(ctx context.Context, rel string) (int64, error) { return k.h.Stat(ctx, rel) }
