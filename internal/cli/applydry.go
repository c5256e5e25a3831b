package cli

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"agentrun.dev/agentrun/client"
	"agentrun.dev/agentrun/internal/api"
)

// applySet is what an apply itself defines, so that the server's dry run of one document may
// name an agent, a group or a group's task that an earlier document of the same apply creates.
type applySet struct {
	agents, groups map[string]bool
	tasks          map[string]map[string]bool // group -> task keys
}

func newApplySet(plans [][]applyTarget) applySet {
	s := applySet{agents: map[string]bool{}, groups: map[string]bool{}, tasks: map[string]map[string]bool{}}
	for _, ts := range plans {
		for _, t := range ts {
			switch t.typ {
			case typeAgents:
				s.agents[t.name] = true
			case typeAgentGroups:
				s.groups[t.name] = true
			case typeAgentRuns:
				obj := docObject(t.body)
				if g, k := str(lookup(obj, "spec", "group")), str(lookup(obj, "spec", "taskKey")); g != "" && k != "" {
					if s.tasks[g] == nil {
						s.tasks[g] = map[string]bool{}
					}
					s.tasks[g][k] = true
				}
			}
		}
	}
	return s
}

func docObject(body []byte) map[string]any {
	var obj map[string]any
	if json.Unmarshal(body, &obj) != nil {
		return nil
	}
	return obj
}

// definedHere says whether the server's refusal of t is only that it names something the apply
// itself creates first (an AgentRun of an Agent in the same file): the server cannot see it yet,
// and the real apply sends the documents in order.
func (s applySet) definedHere(t applyTarget, err error) bool {
	e, ok := api.AsError(err)
	if !ok {
		return false
	}
	obj := docObject(t.body)
	switch {
	case e.Code == api.CodeAgentNotFound && e.Field == "spec.agent":
		return s.agents[str(lookup(obj, "spec", "agent"))]
	case e.Code == api.CodeGroupNotFound && e.Field == "spec.group":
		return s.groups[str(lookup(obj, "spec", "group"))]
	case e.Code == api.CodeInvalid && strings.HasPrefix(e.Field, "spec.dependsOn["):
		i, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(e.Field, "spec.dependsOn["), "]"))
		deps, _ := lookup(obj, "spec", "dependsOn").([]any)
		if err != nil || i < 0 || i >= len(deps) {
			return false
		}
		return s.tasks[str(lookup(obj, "spec", "group"))][str(deps[i])]
	}
	return false
}

// dryRunAll has the server check every target of every document (?dryRun=All) before any is
// applied: what only the server can refuse (an unknown agent, tool or computer) refuses the
// whole apply instead of leaving the documents before it applied. It returns how many failed.
func dryRunAll(ctx context.Context, c *client.Client, docs []applyDoc, plans [][]applyTarget, fail func(where, desc string, err error)) int {
	set := newApplySet(plans)
	failed := 0
	for i, ts := range plans {
		where := docs[i].where + " (document " + strconv.Itoa(i+1) + ")"
		for _, t := range ts {
			if _, err := c.DryRunObject(ctx, t.typ.plural, t.name, t.body); err != nil && !set.definedHere(t, err) {
				fail(where, t.desc, err)
				failed++
			}
		}
	}
	return failed
}
