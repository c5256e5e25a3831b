package api

import (
	"errors"
	"fmt"
	"net/http"
)

// Error is an API error with a stable machine-readable code, the field it concerns (a path such as
// "spec.input") and the HTTP status it maps to. It is the JSON body of every failed request.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s (%s)", e.Code, e.Message, e.Field)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Stable error codes.
const (
	CodeInvalid          = "Invalid"
	CodeUnknownField     = "UnknownField"
	CodeWrongType        = "WrongType"
	CodeRequired         = "Required"
	CodeTooLarge         = "PayloadTooLarge"
	CodeNotFound         = "NotFound"
	CodeAlreadyExists    = "AlreadyExists"
	CodeConflict         = "Conflict"
	CodeAgentStopped     = "AgentStopped"
	CodeAgentNotFound    = "AgentNotFound"
	CodeAgentRunFinished = "AgentRunFinished"
	CodeUnauthorized     = "Unauthorized"
	CodeNotResolvable    = "NotResolvable"
	CodeInternal         = "Internal"
	// CodeStoreUnavailable: the store could not be reached (a database restarting); try again.
	CodeStoreUnavailable = "StoreUnavailable"
	// CodeRateLimited (429): too many sign-in attempts from this address (or for this user from
	// it); Retry-After says when to try again.
	CodeRateLimited = "RateLimited"
	// CodeTooManyRequests (429): too many sign-ins wait for a password check right now.
	CodeTooManyRequests = "TooManyRequests"
	// CodeTooManyStreams (429): the credential already holds the most event streams it may.
	CodeTooManyStreams = "TooManyStreams"
	// CodeStoreFull: the store's disk is full (HTTP 507); nothing was written.
	CodeStoreFull = "StoreFull"
)

// Errorf makes an *Error.
func Errorf(status int, code, field, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Invalid is a 422 for a bad field value.
func Invalid(field, format string, args ...any) *Error {
	return Errorf(http.StatusUnprocessableEntity, CodeInvalid, field, format, args...)
}

// NotFound is a 404.
func NotFound(kind, name string) *Error {
	return Errorf(http.StatusNotFound, CodeNotFound, "", "%s %q not found", kind, name)
}

// AsError extracts an *Error from err's chain.
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}
