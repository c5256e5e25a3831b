package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// A group limit left out takes its default; one given as 0 or less is refused with the field and
// the allowed range, like one above the range (it used to be taken for "left out").
func TestGroupLimitsExplicitZero(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, limits, field, want string
		active, pending           int
	}{
		{name: "absent", limits: `{}`, active: DefaultMaxActive, pending: DefaultMaxPending},
		{name: "no limits", limits: ``, active: DefaultMaxActive, pending: DefaultMaxPending},
		{name: "null", limits: `{"maxActive":null,"maxPending":null}`, active: DefaultMaxActive, pending: DefaultMaxPending},
		{name: "given", limits: `{"maxActive":4,"maxPending":7}`, active: 4, pending: 7},
		{name: "bounds", limits: `{"maxActive":1000,"maxPending":10000}`, active: 1000, pending: 10000},
		{name: "active 0", limits: `{"maxActive":0}`, field: "spec.limits.maxActive", want: "between 1 and 1000"},
		{name: "active -3", limits: `{"maxActive":-3}`, field: "spec.limits.maxActive", want: "between 1 and 1000"},
		{name: "active 1001", limits: `{"maxActive":1001}`, field: "spec.limits.maxActive", want: "between 1 and 1000"},
		{name: "pending 0", limits: `{"maxPending":0}`, field: "spec.limits.maxPending", want: "between 1 and 10000"},
		{name: "pending -1", limits: `{"maxActive":5,"maxPending":-1}`, field: "spec.limits.maxPending", want: "between 1 and 10000"},
		{name: "pending 10001", limits: `{"maxPending":10001}`, field: "spec.limits.maxPending", want: "between 1 and 10000"},
		{name: "unknown field", limits: `{"maxActiv":3}`, field: "spec.limits.maxActiv", want: "unknown field"},
		{name: "wrong type", limits: `{"maxActive":"3"}`, field: "spec.limits.maxActive", want: "integer"},
	}
	for _, c := range cases {
		body := `{"metadata":{"name":"g"},"spec":{"agent":"a"}}`
		if c.limits != "" {
			body = `{"metadata":{"name":"g"},"spec":{"agent":"a","limits":` + c.limits + `}}`
		}
		var g AgentGroup
		err := DecodeStrict([]byte(body), &g)
		if err == nil {
			err = DefaultAndValidateGroup(&g)
		}
		if c.field == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			} else if g.Spec.Limits.MaxActive != c.active || g.Spec.Limits.MaxPending != c.pending {
				t.Errorf("%s: limits %+v, want maxActive %d, maxPending %d", c.name, g.Spec.Limits, c.active, c.pending)
			}
			continue
		}
		e, ok := AsError(err)
		if !ok || e.Status != http.StatusUnprocessableEntity || e.Field != c.field || !strings.Contains(e.Message, c.want) {
			t.Errorf("%s: got %v, want 422 at %s saying %q", c.name, err, c.field, c.want)
		}
	}
}

// Stored limits (always filled in) read back as they were written.
func TestGroupLimitsRoundTrip(t *testing.T) {
	t.Parallel()
	in := GroupLimits{MaxActive: 3, MaxPending: 20, MaxCostUSD: "1.50"}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out GroupLimits
	if err := json.Unmarshal(b, &out); err != nil || out != in {
		t.Fatalf("round trip: %+v, %v", out, err)
	}
}
