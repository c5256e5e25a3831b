package api

import (
	"bytes"
	"encoding/json"
)

// Approvals says which tool calls run, ask a person first, or are refused (spec.approvals). It is
// written as an object, or as the string "never-ask" (run unattended: every ask becomes allow; the
// server's deny set still holds).
type Approvals struct {
	NeverAsk bool           `json:"neverAsk,omitempty"`
	Default  string         `json:"default,omitempty"`
	Rules    []ApprovalRule `json:"rules,omitempty"`
}

// ApprovalRule maps tool calls matching Match ("write", "bash(go test *)", "write(docs/**)", "*")
// to an action: allow, ask or deny.
type ApprovalRule struct {
	Match  string `json:"match"`
	Action string `json:"action"`
}

// UnmarshalJSON accepts "never-ask" or the object form (unknown fields refused).
func (a *Approvals) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		if s != "never-ask" {
			return Invalid("spec.approvals", "approvals %q: write \"never-ask\" or an object {default, rules, neverAsk}", s)
		}
		*a = Approvals{NeverAsk: true}
		return nil
	}
	type plain Approvals
	var p plain
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if b = bytes.TrimSpace(b); len(b) == 0 || b[0] != '{' {
		return E(CodeWrongType, "spec.approvals", "approvals must be \"never-ask\" or an object {default, rules, neverAsk}")
	}
	if err := dec.Decode(&p); err != nil {
		return E(CodeInvalid, "spec.approvals", "approvals: %v", err)
	}
	*a = Approvals(p)
	return nil
}
