package store

import (
	"errors"
	"fmt"

	"agentrun.dev/agentrun/internal/api"
)

// Refusal is the way a store rule refuses a request; the HTTP layer maps it to a status.
type Refusal int

const (
	// RefusedState: what is stored does not allow it now (a cancelled or sealed group, a full
	// queue, a task key taken).
	RefusedState Refusal = iota + 1
	// RefusedMissing: something the request names does not exist (the group of a member).
	RefusedMissing
	// RefusedInvalid: a value in the request is wrong (an agent that is not the group's, a
	// dependency not in the group, an idempotency key used for another batch).
	RefusedInvalid
)

// RuleError is a request a store rule refused, with the stable API code and the field it names.
type RuleError struct {
	Refusal Refusal
	Code    api.Code
	Field   string
	Message string
}

func (e *RuleError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s (%s)", e.Code, e.Message, e.Field)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func refuse(r Refusal, code api.Code, field, format string, args ...any) *RuleError {
	return &RuleError{Refusal: r, Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// AsRuleError extracts a *RuleError from err's chain.
func AsRuleError(err error) (*RuleError, bool) {
	var e *RuleError
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}
