package runs

import (
	"strings"
	"testing"

	. "agentrun.dev/agentrun/e2e/e2etest"
	"agentrun.dev/agentrun/internal/api"
)

// maxActive and maxPending given as 0 (or less) are refused, on create (CLI and YAML apply) and on
// a live patch; only a limit left out takes its default.
func TestGroupLimitsZeroRefused(t *testing.T) {
	t.Parallel()
	e := NewEnv(t, QuickstartScript)
	e.Start()
	if st := e.Do("PUT", "/v2/agents/worker", `{"metadata":{"name":"worker"},"spec":{"tools":["write"]}}`, nil); st != 201 {
		t.Fatalf("create agent: HTTP %d", st)
	}
	dir := t.TempDir()
	for _, c := range []struct {
		args  []string
		field string
	}{
		{[]string{"create", "agentgroup", "g0", "--agent", "worker", "--max-active", "0"}, "spec.limits.maxActive"},
		{[]string{"create", "agentgroup", "g0", "--agent", "worker", "--max-active", "-2"}, "spec.limits.maxActive"},
		{[]string{"create", "agentgroup", "g0", "--agent", "worker", "--max-pending", "0"}, "spec.limits.maxPending"},
		{[]string{"apply", "-f", WriteFile(t, dir, "g0.yaml", "apiVersion: agentrun.dev/v1\nkind: AgentGroup\nmetadata: {name: g0}\nspec:\n  agent: worker\n  limits: {maxActive: 0}\n")}, "spec.limits.maxActive"},
		{[]string{"apply", "-f", WriteFile(t, dir, "g1.yaml", "apiVersion: agentrun.dev/v1\nkind: AgentGroup\nmetadata: {name: g0}\nspec:\n  agent: worker\n  limits: {maxPending: 0}\n")}, "spec.limits.maxPending"},
	} {
		r := e.CLI(dir, c.args...)
		if r.Code == 0 || !strings.Contains(r.Stderr, c.field) || !strings.Contains(r.Stderr, "between 1 and") {
			t.Errorf("agentrun %s: exit %d, stderr %q; want a refusal naming %s and the range", strings.Join(c.args, " "), r.Code, r.Stderr, c.field)
		}
	}
	if st := e.Do("GET", "/v2/agentgroups/g0", nil, nil); st != 404 {
		t.Errorf("a refused group was stored: HTTP %d", st)
	}
	var got struct {
		Code, Field, Message string
	}
	if st := e.Do("POST", "/v2/agentgroups", `{"metadata":{"name":"g0"},"spec":{"agent":"worker","limits":{"maxActive":0}}}`, &got); st != 422 || got.Code != string(api.CodeInvalid) || got.Field != "spec.limits.maxActive" || !strings.Contains(got.Message, "between 1 and 1000") {
		t.Errorf("POST maxActive 0: HTTP %d %+v", st, got)
	}

	// Left out: the defaults.
	e.MustCLI(0, "create", "agentgroup", "g", "--agent", "worker", "--max-active", "4")
	var g api.AgentGroup
	if st := e.Do("GET", "/v2/agentgroups/g", nil, &g); st != 200 || g.Spec.Limits.MaxActive != 4 || g.Spec.Limits.MaxPending != api.DefaultMaxPending {
		t.Fatalf("group g: HTTP %d, limits %+v", st, g.Spec.Limits)
	}
	// A live patch to 0 is refused and leaves 4; a patch to 6 is taken.
	r := e.CLI(dir, "patch", "ag/g", "--patch", `{"spec":{"limits":{"maxActive":0}}}`)
	if r.Code == 0 || !strings.Contains(r.Stderr, "spec.limits.maxActive") {
		t.Errorf("patch maxActive 0: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if st := e.Do("PATCH", "/v2/agentgroups/g", `{"spec":{"limits":{"maxPending":0}}}`, &got); st != 422 || got.Field != "spec.limits.maxPending" {
		t.Errorf("PATCH maxPending 0: HTTP %d %+v", st, got)
	}
	e.Do("GET", "/v2/agentgroups/g", nil, &g)
	if g.Spec.Limits.MaxActive != 4 || g.Spec.Limits.MaxPending != api.DefaultMaxPending {
		t.Errorf("after refused patches: limits %+v, want maxActive 4", g.Spec.Limits)
	}
	e.MustCLI(0, "patch", "ag/g", "--patch", `{"spec":{"limits":{"maxActive":6}}}`)
	e.Do("GET", "/v2/agentgroups/g", nil, &g)
	if g.Spec.Limits.MaxActive != 6 {
		t.Errorf("after patch to 6: limits %+v", g.Spec.Limits)
	}
	// eval run refuses --max-active 0 before asking the server (it would be sent as "left out").
	if r := e.CLI(dir, "eval", "run", "ev", "--agent", "worker", "--environment", "x@1", "--max-active", "0"); r.Code != 2 || !strings.Contains(r.Stderr, "--max-active") {
		t.Errorf("eval run --max-active 0: exit %d, stderr %q", r.Code, r.Stderr)
	}
}
