package server

import (
	"net/http"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// ruleErr maps a store rule's refusal (a *store.RuleError) onto an API error: its code, field and
// message as the rule wrote them, with the status its kind of refusal takes.
func ruleErr(err error) (*api.Error, bool) {
	re, ok := store.AsRuleError(err)
	if !ok {
		return nil, false
	}
	status := http.StatusConflict // store.RefusedState
	switch re.Refusal {
	case store.RefusedMissing:
		status = http.StatusNotFound
	case store.RefusedInvalid:
		status = http.StatusUnprocessableEntity
	}
	return &api.Error{Status: status, Code: re.Code, Field: re.Field, Message: re.Message}, true
}
