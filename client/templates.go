package client

import (
	"context"
	"fmt"
	"net/http"

	"agentrun.dev/agentrun/internal/api"
)

// Template types: what POST /v2/templates/apply takes and answers.
type (
	TemplateApply   = api.TemplateApply
	TemplateApplied = api.TemplateApplied
	TemplateTrigger = api.TemplateTrigger
	// The trigger types a TemplateApply holds.
	Trigger         = api.Trigger
	TriggerSpec     = api.TriggerSpec
	TriggerStatus   = api.TriggerStatus
	TriggerSchedule = api.TriggerSchedule
	TriggerWebhook  = api.TriggerWebhook
	TriggerGitHub   = api.TriggerGitHub
	TriggerFire     = api.TriggerFire
	// Concurrency is spec.concurrency (the Concurrency* constants).
	Concurrency = api.Concurrency
)

// ApplyTemplate makes a template's agent, skills and triggers in one step (all or nothing); an
// error's field is under agent., skills[i]. or triggers[i]. of t.
func (c *Client) ApplyTemplate(ctx context.Context, t *TemplateApply) (*TemplateApplied, error) {
	var out TemplateApplied
	if _, _, err := c.call(ctx, request{method: http.MethodPost, path: "/v2/templates/apply", body: t}, &out); err != nil {
		return nil, fmt.Errorf("apply template %s: %w", t.Template, err)
	}
	return &out, nil
}
