package agent

import (
	"context"
	"encoding/json"
	"fmt"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/store"
)

// forkMessage puts a fork's message (POST /v2/agentruns/NAME/fork with "message") into the
// conversation at the fork point: before the fork's first model call of its own, model call n,
// as a text block after what the last user message holds (the tool results of the turn the fork
// continues). It is journal step t{n}/message, so every later drive puts it in the same place. A
// fork made at the end of a turn takes the message as its next message instead (answered), before
// any model call, so this finds none pending.
func (d *drive) forkMessage(ctx context.Context, n int, c *conversation) error {
	key := fmt.Sprintf("t%d/message", n)
	var m api.Message
	if st, ok := d.j.Lookup(key); ok && st.State == api.StepCompleted {
		if err := json.Unmarshal(st.Result, &m); err != nil {
			return fmt.Errorf("replay message step %s: %w", key, err)
		}
	} else {
		if d.forkChecked || !d.j.Forked() || d.j.Completed(fmt.Sprintf("t%d/model", n)) {
			return nil
		}
		d.forkChecked = true
		msgs, err := d.e.Store.ListMessages(ctx, d.run.Metadata.Name, d.lastMsg)
		if err != nil {
			return err
		}
		if len(msgs) == 0 || msgs[0].Key != store.ForkMessageKey(d.run.Metadata.Name) {
			return nil
		}
		m = msgs[0]
		if _, err := d.j.Record(ctx, journal.Spec{Key: key, Kind: api.StepKindMessage, Title: "message at the fork point: " + api.FirstLine(m.Payload, 80), Args: map[string]int64{"after": d.lastMsg}}, m); err != nil {
			return err
		}
	}
	d.forkChecked = true
	d.lastMsg = m.Seq
	text := model.Block{Type: model.BlockText, Text: m.Payload}
	if last := len(c.messages) - 1; last >= 0 && c.messages[last].Role == "user" {
		c.messages[last].Content = append(c.messages[last].Content[:len(c.messages[last].Content):len(c.messages[last].Content)], text)
	} else {
		c.messages = append(c.messages, model.Message{Role: "user", Content: []model.Block{text}})
	}
	return nil
}
