package cli

import (
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/policy"
	"agentrun.dev/agentrun/internal/trigger"
)

// checkTarget validates one object of an apply on this side, before anything of the apply is
// sent: the strict decoding the server does (unknown fields, wrong types, duplicate keys) and the
// checks that need no server state (names, labels, money values, deadlines, approvals). What only
// the server knows (its tools and computers, whether the agent exists) it still checks itself.
func checkTarget(t applyTarget) error {
	switch t.typ {
	case typeAgents:
		var a api.Agent
		if err := api.DecodeStrict(t.body, &a); err != nil {
			return err
		}
		// Tool names are the server's to judge (it offers more than the built-in ones).
		tools := map[string]bool{}
		for _, name := range a.Spec.Tools {
			tools[name] = true
		}
		// Every mistake at once, as the server tells them.
		var errs api.ErrorList
		errs.AddErr(api.DefaultAndValidateAgent(&a, tools))
		errs.AddErr(policy.Check(a.Spec.Approvals))
		return errs.Err()
	case typeAgentRuns:
		var r api.AgentRun
		if err := api.DecodeStrict(t.body, &r); err != nil {
			return err
		}
		if r.Metadata.Name == "" {
			r.Metadata.Name = "unnamed" // the server names it
		}
		return api.DefaultAndValidateRun(&r, time.Now())
	case typeAgentGroups:
		var g api.AgentGroup
		if err := api.DecodeStrict(t.body, &g); err != nil {
			return err
		}
		return api.DefaultAndValidateGroup(&g)
	case typeTriggers:
		var tr api.Trigger
		if err := api.DecodeStrict(t.body, &tr); err != nil {
			return err
		}
		return trigger.DefaultAndValidate(&tr, time.Now())
	case typeWebhooks:
		var w api.Webhook
		if err := api.DecodeStrict(t.body, &w); err != nil {
			return err
		}
		return api.DefaultAndValidateWebhook(&w)
	}
	return nil
}
