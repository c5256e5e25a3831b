package api

import (
	"fmt"
	"strconv"
	"strings"
)

// Path is the path of a field in a document as errors name it (spec.tools[1],
// spec.mcpServers[0].env.TOKEN), built a step at a time like Kubernetes' field.Path so that no
// check spells a path by concatenating strings.
type Path struct{ s string }

// NewPath is the path of a top-level field and, optionally, fields below it:
// NewPath("spec", "model", "name") is spec.model.name.
func NewPath(name string, more ...string) Path {
	return Path{s: name}.Child("", more...)
}

// Child is the path of a field below p ("" adds nothing, for NewPath's sake).
func (p Path) Child(name string, more ...string) Path {
	var b strings.Builder
	b.WriteString(p.s)
	for _, n := range append([]string{name}, more...) {
		if n == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(n)
	}
	return Path{s: b.String()}
}

// Member is the path of key k of the object at p written as a field (spec.env.TOKEN), for a
// map whose keys are names. Unlike Child it keeps an empty key (spec.env.), so an error names the
// key that is wrong rather than the object that holds it.
func (p Path) Member(k string) Path {
	if p.s == "" {
		return Path{s: k}
	}
	return Path{s: p.s + "." + k}
}

// Index is the path of item i of the list at p: spec.tools[1].
func (p Path) Index(i int) Path { return Path{s: p.s + "[" + strconv.Itoa(i) + "]"} }

// Key is the path of key k of the map at p, quoted as labels are: metadata.labels["team"].
func (p Path) Key(k string) Path { return Path{s: p.s + "[" + strconv.Quote(k) + "]"} }

// String is the path as an error's field says it.
func (p Path) String() string { return p.s }

// FieldError is one problem of a list of errors (Error.Errors): what the error says of its
// first, for each.
type FieldError struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// ErrorList collects every problem a check finds in a document, so that a document with three
// mistakes is told all three at once, as the workflow validator does.
type ErrorList []*Error

// Add appends one problem.
func (l *ErrorList) Add(e *Error) {
	if e != nil {
		*l = append(*l, e)
	}
}

// AddErr appends what a check returned: nothing for nil, an API error with every problem of its
// own list, anything else (no check here returns one) as an internal error.
func (l *ErrorList) AddErr(err error) {
	if err == nil {
		return
	}
	e, ok := AsError(err)
	if !ok {
		l.Add(E(CodeInternal, "", "%v", err))
		return
	}
	if len(e.Errors) == 0 {
		l.Add(e)
		return
	}
	for _, fe := range e.Errors {
		// Each item takes the status of its code, as it would alone.
		l.Add(E(fe.Code, fe.Field, "%s", fe.Message))
	}
}

// Err is nil for no problem, else the first problem as the error's code, message, field and
// status (what a client that reads one error always read), with every problem in Errors.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	first := *l[0]
	first.Errors = make([]FieldError, len(l))
	for i, e := range l {
		first.Errors[i] = FieldError{Code: e.Code, Message: e.Message, Field: e.Field}
	}
	return &first
}

// describeList is the problems after the first, for Error's text.
func describeList(errs []FieldError) string {
	var b strings.Builder
	fmt.Fprintf(&b, "; and %d more:", len(errs)-1)
	for _, e := range errs[1:] {
		b.WriteString(" " + string(e.Code) + ": " + e.Message)
		if e.Field != "" {
			b.WriteString(" (" + e.Field + ")")
		}
		b.WriteString(";")
	}
	return strings.TrimSuffix(b.String(), ";")
}

// Join is the path of field (a path as an error names it) below p: a field of a batch's item or
// of a template's part (NewPath("items").Index(2).Join("spec.input") is items[2].spec.input). An
// empty field is p itself.
func (p Path) Join(field string) string {
	switch {
	case field == "":
		return p.s
	case p.s == "":
		return field
	case field[0] == '[':
		return p.s + field
	}
	return p.s + "." + field
}

// Under is e with its field, and every field of its list, nested under prefix: an error about a
// batch's item or a template's part as the whole document names it. e itself is not changed.
func (e *Error) Under(prefix Path) *Error {
	c := *e
	c.Field = prefix.Join(e.Field)
	if len(e.Errors) > 0 {
		c.Errors = make([]FieldError, len(e.Errors))
		for i, fe := range e.Errors {
			fe.Field = prefix.Join(fe.Field)
			c.Errors[i] = fe
		}
	}
	return &c
}

// Has reports whether a problem of the list is at field: a later check of the same field (one
// that compares it with a stored value, say) has nothing to add once its value was refused.
func (l ErrorList) Has(field string) bool {
	for _, e := range l {
		if e.Field == field {
			return true
		}
	}
	return false
}
