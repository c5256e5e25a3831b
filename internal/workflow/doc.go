// Package workflow owns agentrun's workflow language (the AgentRun v2 document, design.md section
// 14): parsing a document with the position of every value, validating it completely (every
// error with a stable code, its JSON pointer, line:column and a sentence to act on), and the
// engine that runs a valid document against a Host that performs its effects. The engine is
// deterministic given the host's answers, so a host that journals each effect under the key the
// engine gives it (the node's execution path) replays a run without repeating anything.
package workflow

import (
	"fmt"
	"strings"
)

// Error is one problem with a document.
type Error struct {
	Code    string `json:"code"`
	Pointer string `json:"pointer"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	ptr := e.Pointer
	if ptr == "" {
		ptr = "/"
	}
	return fmt.Sprintf("%d:%d %s %s: %s", e.Line, e.Column, ptr, e.Code, e.Message)
}

// Invalid is a document's list of errors.
type Invalid []Error

func (e Invalid) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the workflow has %d errors", len(e))
	for i := range e {
		b.WriteString("\n  " + e[i].Error())
	}
	return b.String()
}

// The stable error codes of validation.
const (
	CodeJSONSyntax        = "json_syntax"
	CodeDuplicateKey      = "duplicate_key"
	CodeUnknownField      = "unknown_field"
	CodeLegacyField       = "legacy_field"
	CodeUnknownKind       = "unknown_kind"
	CodeMissingField      = "missing_field"
	CodeWrongType         = "wrong_type"
	CodeOutOfBounds       = "out_of_bounds"
	CodeInvalidValue      = "invalid_value"
	CodeVersion           = "version_unsupported"
	CodeSchemaUnknown     = "schema_unknown"
	CodeSchemaInvalid     = "schema_invalid"
	CodeSchemaRef         = "schema_ref_invalid"
	CodeQuestionSchema    = "question_schema_invalid"
	CodeUnknownPredicate  = "unknown_predicate"
	CodePathUnwritten     = "path_unwritten"
	CodeDuplicateLabel    = "duplicate_label"
	CodeReservedKey       = "reserved_key"
	CodeTerminalNotLast   = "terminal_not_last"
	CodeTerminalInside    = "terminal_inside"
	CodeTerminalTwice     = "terminal_twice"
	CodeFieldNotForVia    = "field_not_for_via"
	CodeParallelConflict  = "parallel_write_conflict"
	CodeParallelSibling   = "parallel_sibling_read"
	CodeParallelOpenWrite = "parallel_unknown_writes"
	CodeChildNoInput      = "child_input_missing"
	CodeChildAcceptsNone  = "child_output_accepts_nothing"
	CodeChildCycle        = "child_cycle"
	CodeChildUnresolved   = "child_unresolved"
	CodeCodeInvalid       = "code_invalid"
	CodeBranchUnknown     = "branch_unknown"
	CodeNotRunnable       = "kind_not_runnable"
	CodeToolUnavailable   = "tool_unavailable"
)
