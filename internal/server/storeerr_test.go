package server

import (
	"fmt"
	"net/http"
	"testing"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/store"
)

// TestRuleErrors: a store rule's refusal reaches the API with the rule's code, field and message
// and the status its kind takes, also when it is about one item of a batch.
func TestRuleErrors(t *testing.T) {
	g := &api.AgentGroup{Spec: api.AgentGroupSpec{Agent: "a", Sealed: true}}
	g.Metadata.Name = "g"
	sealed := store.CheckMember(g, &api.AgentRun{Spec: api.AgentRunSpec{Agent: "a", Group: "g"}}, 0, nil)
	g.Spec.Sealed = false
	otherAgent := store.CheckMember(g, &api.AgentRun{Spec: api.AgentRunSpec{Agent: "b", Group: "g"}}, 0, nil)
	cases := []struct {
		name   string
		err    error
		status int
		code   api.Code
		field  string
	}{
		{"sealed group", fmt.Errorf("create runs: %w", &store.ItemError{Err: sealed}), http.StatusConflict, api.CodeGroupSealed, "spec.group"},
		{"missing group", store.GroupNotFound("nope"), http.StatusNotFound, api.CodeGroupNotFound, "spec.group"},
		{"other agent", otherAgent, http.StatusUnprocessableEntity, api.CodeInvalid, "spec.agent"},
		{"key reused", store.CheckBatchKey("k", "h1", "h2"), http.StatusUnprocessableEntity, api.CodeIdempotencyReused, "Idempotency-Key"},
	}
	for _, c := range cases {
		e := storeErr(c.err)
		if e.Status != c.status || e.Code != c.code || e.Field != c.field || e.Message == "" {
			t.Errorf("%s: %d %s %s %q, want %d %s %s", c.name, e.Status, e.Code, e.Field, e.Message, c.status, c.code, c.field)
		}
	}
	item, _ := api.AsError(itemErr(3, &store.ItemError{Index: 3, Err: sealed}))
	if item.Status != http.StatusConflict || item.Code != api.CodeGroupSealed || item.Field != "items[3].spec.group" {
		t.Errorf("a batch item's refusal: %+v", item)
	}
	if e := storeErr(store.ErrUnavailable); e.Code != api.CodeStoreUnavailable {
		t.Errorf("a store failure is not a rule's refusal: %+v", e)
	}
}
