package console

import (
	"testing"

	"agentrun.dev/agentrun/internal/api"
)

// The qualifier comes before the dollar sign: "at least $0.01", not "$at least 0.01".
func TestCostTextQualified(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cost *api.RunCost
		want string
	}{
		{&api.RunCost{TotalUSD: "0.01"}, "cost $0.01"},
		{&api.RunCost{TotalUSD: "at least 0.01", LimitUSD: "1.00"}, "cost at least $0.01 of $1.00"},
		{&api.RunCost{TotalUSD: "unknown"}, "cost unknown"},
	} {
		if got := costText(c.cost); got != c.want {
			t.Errorf("costText(%+v) = %q, want %q", c.cost, got, c.want)
		}
	}
}
