package api

import (
	"errors"
	"fmt"
)

// Error is an API error with a stable machine-readable code, the field it concerns (a path such as
// "spec.input") and the HTTP status it maps to. It is the JSON body of every failed request.
type Error struct {
	Status  int    `json:"-"`
	Code    Code   `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	// Errors is every problem a check found (ErrorList), the first being the error itself;
	// empty for an error that is one problem by nature.
	Errors []FieldError `json:"errors,omitempty"`
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s", e.Code, e.Message)
	if e.Field != "" {
		s = fmt.Sprintf("%s: %s (%s)", e.Code, e.Message, e.Field)
	}
	if len(e.Errors) > 1 {
		s += describeList(e.Errors)
	}
	return s
}

// Errorf makes an *Error with a status other than the one the registry gives its code (Invalid
// for a body that is not JSON is 400); E is the usual way.
func Errorf(status int, code Code, field, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// Invalid is a 422 for a bad field value.
func Invalid(field, format string, args ...any) *Error {
	return E(CodeInvalid, field, format, args...)
}

// AsError extracts an *Error from err's chain.
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}
