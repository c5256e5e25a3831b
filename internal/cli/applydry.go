package cli

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"agentrun.dev/agentrun/client"
	"agentrun.dev/agentrun/internal/api"
)

// applySet is what the documents before the one being checked create, so that the server's dry
// run of a document may name an agent, a group or a group's task an earlier document of the same
// apply creates: the real apply sends the documents in order.
type applySet struct {
	agents map[string]bool
	groups map[string]string          // group -> its spec.agent
	tasks  map[string]map[string]bool // group -> task keys
}

func docObject(body []byte) map[string]any {
	var obj map[string]any
	if json.Unmarshal(body, &obj) != nil {
		return nil
	}
	return obj
}

// add records what t creates, once it has been checked.
func (s applySet) add(t applyTarget) {
	obj := docObject(t.body)
	switch t.typ {
	case typeAgents:
		s.agents[t.name] = true
	case typeAgentGroups:
		s.groups[t.name] = str(lookup(obj, "spec", "agent"))
	case typeAgentRuns:
		if g, k := str(lookup(obj, "spec", "group")), str(lookup(obj, "spec", "taskKey")); g != "" && k != "" {
			if s.tasks[g] == nil {
				s.tasks[g] = map[string]bool{}
			}
			s.tasks[g][k] = true
		}
	}
}

// judge takes the server's refusal of t and says what is left of it once what the earlier
// documents create is counted: nil when the refusal is only that the server cannot see those yet.
// A member of a group the apply creates is checked here as the store would check it (its agent
// is the group's, the tasks it depends on come before it), since the server has no group to
// check it against.
func (s applySet) judge(t applyTarget, err error) error {
	e, ok := api.AsError(err)
	if !ok {
		return err
	}
	obj := docObject(t.body)
	group := str(lookup(obj, "spec", "group"))
	deps, _ := lookup(obj, "spec", "dependsOn").([]any)
	switch {
	case e.Code == api.CodeAgentNotFound && e.Field == "spec.agent" && s.agents[str(lookup(obj, "spec", "agent"))],
		e.Code == api.CodeGroupNotFound && e.Field == "spec.group" && s.groups[group] != "":
		// The server stopped there, so a member of a group the apply creates is checked here.
		if t.typ != typeAgentRuns || group == "" || s.groups[group] == "" {
			return nil
		}
		if agent := str(lookup(obj, "spec", "agent")); agent != s.groups[group] {
			return api.Invalid("spec.agent", "group %q runs agent %q; a member's spec.agent must match it (got %q)", group, s.groups[group], agent)
		}
		for i, d := range deps {
			if !s.tasks[group][str(d)] {
				return api.Invalid(api.NewPath("spec", "dependsOn").Index(i).String(), "task %q is not in group %q: create the runs a run depends on first (earlier in the same file)", str(d), group)
			}
		}
		return nil
	}
	return err
}

// withoutEarlierTasks is t's body without the dependsOn entries that earlier documents create, for
// the server to check the others against the group's runs; ok is false when none is left out.
func (s applySet) withoutEarlierTasks(t applyTarget) (body []byte, ok bool) {
	obj := docObject(t.body)
	spec, _ := obj["spec"].(map[string]any)
	deps, _ := spec["dependsOn"].([]any)
	tasks := s.tasks[str(spec["group"])]
	var kept []any
	for _, d := range deps {
		if !tasks[str(d)] {
			kept = append(kept, d)
		}
	}
	if len(kept) == len(deps) {
		return nil, false
	}
	spec["dependsOn"] = kept
	b, err := json.Marshal(obj)
	return b, err == nil
}

// dryRunAll has the server check every target of every document (?dryRun=All) before any is
// applied: what only the server can refuse (an unknown agent, tool or computer) refuses the
// whole apply instead of leaving the documents before it applied. It returns how many failed.
func dryRunAll(ctx context.Context, c *client.Client, docs []applyDoc, plans [][]applyTarget, fail func(where, desc string, err error)) int {
	set := applySet{agents: map[string]bool{}, groups: map[string]string{}, tasks: map[string]map[string]bool{}}
	failed := 0
	for i, ts := range plans {
		where := docs[i].where + " (document " + strconv.Itoa(i+1) + ")"
		for _, t := range ts {
			if !hasDryRun(t.typ) {
				set.add(t)
				continue
			}
			_, err := c.DryRunObject(ctx, t.typ.plural, t.name, t.body)
			if e, ok := api.AsError(err); ok && e.Code == api.CodeInvalid && strings.HasPrefix(e.Field, "spec.dependsOn[") {
				// The server lacks a task an earlier document creates: check the rest without those.
				if body, ok := set.withoutEarlierTasks(t); ok {
					_, err = c.DryRunObject(ctx, t.typ.plural, t.name, body)
				}
			}
			if err != nil {
				if err := set.judge(t, err); err != nil {
					fail(where, t.desc, err)
					failed++
					continue
				}
			}
			set.add(t)
		}
	}
	return failed
}

// hasDryRun says whether the server checks this type's apply with ?dryRun=All (agents, runs,
// groups, triggers and webhooks; an environment is checked by its own load, immutable per version).
func hasDryRun(typ resType) bool {
	switch typ {
	case typeAgents, typeAgentRuns, typeAgentGroups, typeTriggers, typeWebhooks:
		return true
	}
	return false
}
