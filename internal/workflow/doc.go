// Package workflow owns agentrun's workflow language (the AgentRun v2 document;
// docs/architecture.md, "Workflows"): parsing a document with the position of every value,
// validating it completely (every error with a stable code, its JSON pointer, line:column and a
// sentence to act on), and the engine that runs a valid document against a Host that performs its
// effects. The engine is deterministic given the host's answers, so a host that journals each
// effect under the key the engine gives it (the node's execution path) replays a run without
// repeating anything. Each node kind is one entry of a registry (kind.go), registered from its
// own file (kind_NAME.go), which validation, the plan, the engine and the tree consult.
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

// CountErrors is "1 error" or "N errors", as every summary of a list of errors says it.
func CountErrors(n int) string {
	if n == 1 {
		return "1 error"
	}
	return fmt.Sprintf("%d errors", n)
}

// Invalid is a document's list of errors.
type Invalid []Error

func (e Invalid) Error() string {
	var b strings.Builder
	b.WriteString("the workflow has " + CountErrors(len(e)))
	for i := range e {
		b.WriteString("\n  " + e[i].Error())
	}
	return b.String()
}

// The stable error codes of validation. They are the language's own diagnostics, one per
// mistake in a document, published as they are spelled here (docs/workflows.md; `agentrun
// workflows validate` and /v2/workflows:validate print them): a request that carries a bad
// workflow fails with the API's code Invalid (internal/api), its message listing these. They
// stay snake_case, apart from the API's PascalCase request codes, so that what users match on
// does not change; this package imports nothing of ours, so it declares them itself.
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
	CodeTooDeep           = "nesting_too_deep"
	CodeTooConcurrent     = "concurrency_too_high"
)

// The bounds of a document's maps, checked at validation; a run also holds its map items and
// parallel branches to MaxRunConcurrency goroutines at once, whatever the document says.
const (
	// MaxMapConcurrency is the most a map's maxConcurrency may be.
	MaxMapConcurrency = 256
	// MaxMapNesting is how many maps may nest, one inside another (named children included).
	MaxMapNesting = 8
	// MaxTotalConcurrency is the most items nested maps may run at once: the product of their
	// maxConcurrency (or its default, 4).
	MaxTotalConcurrency = 4096
)
