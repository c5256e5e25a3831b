package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/catalog"
	"agentrun.dev/agentrun/internal/harness"
	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/policy"
	"agentrun.dev/agentrun/internal/tools"
	"agentrun.dev/agentrun/internal/tools/webfetch"
)

// The tools the runner itself runs for the model, outside any computer: web_fetch and skill.

// serverToolRefusal says why a call of web_fetch may not run on this agent ("" when it may), with
// the refusal's code and the URL refused: it reaches only what the agent's computer may reach, so
// a computer without the network has none.
func (d *drive) serverToolRefusal(name string, in catalog.Input) (why string, code api.Code, address string) {
	if name != catalog.WebFetchName {
		return "", "", ""
	}
	if d.spec.Computer == nil || !d.spec.Computer.Network {
		if wf, ok := in.Value.(*catalog.WebFetch); ok {
			address = wf.URL
		}
		return address + ": web_fetch reaches only what the agent's computer may reach, and " + noNetwork(d.spec.Computer), api.CodeFetchNetworkOff, address
	}
	return "", "", ""
}

// noNetwork says what the agent's definition has that keeps web_fetch off the network, and the
// field that lets it on. (An agent created without a computer is given one by the server, a
// sandbox when there is one, kind none otherwise: its definition then says which.)
func noNetwork(c *api.ComputerSpec) string {
	const set = "; to let web_fetch fetch, set spec.computer.network: true in the agent's definition"
	switch {
	case c == nil:
		return "the agent's definition names no computer (no spec.computer), so it has no network" + set
	case c.Kind == "" || c.Kind == "none":
		return "the agent has no computer (spec.computer.kind: none) and spec.computer.network is not true" + set
	}
	return fmt.Sprintf("the agent's computer (spec.computer.kind: %s) has no network: spec.computer.network is not true", c.Kind) + set + " (its computer then reaches the network too)"
}

// webFetch runs (or replays) a web_fetch call as a safe step: a completed fetch is replayed from
// the journal, never fetched again; one cut off by a crash is a GET or HEAD, fetched again.
func (d *drive) webFetch(ctx context.Context, key string, call model.Block, in catalog.Input) (journal.Outcome, error) {
	wf, ok := in.Value.(*catalog.WebFetch)
	if !ok {
		return journal.Outcome{}, fmt.Errorf("web_fetch: input is a %T", in.Value)
	}
	f := d.e.Fetch
	if f == nil {
		f = &webfetch.Fetcher{}
	}
	spec := journal.Spec{Key: key, Kind: api.StepKindTool, Title: call.Name + " " + summarize(in), Args: map[string]any{"tool": call.Name, "input": call.Input}, Safe: true, Concurrent: true}
	out, err := d.j.Do(ctx, spec, func(ctx context.Context) (any, *int64, error) {
		r, err := f.Fetch(ctx, wf, d.redirectAllowed)
		if err != nil {
			return nil, nil, err
		}
		// The timeline says what was refused (or cut) and its code, once: a replay does not
		// fetch, so it does not say it again.
		data := mustRaw(map[string]string{"tool": call.Name, "code": string(r.Code), "address": r.Address, "url": wf.URL})
		d.j.Locked(func() { // the fetch runs outside a workflow's drive lock (Concurrent)
			switch {
			case r.Code == api.CodeFetchCut:
				d.j.Emit(api.Event{Type: api.EventToolCut, StepKey: key, Message: fmt.Sprintf("web_fetch %s: cut at maxBytes (%s)", r.Address, r.Code), Data: data})
			case r.Code != "":
				d.j.Emit(api.Event{Type: api.EventToolRefused, StepKey: key, Message: fmt.Sprintf("web_fetch refused %s (%s)", r.Address, r.Code), Data: data})
			}
		})
		return tools.Result{Content: r.Content, IsError: r.IsError}, nil, nil
	})
	if err != nil {
		return journal.Outcome{}, err
	}
	return out, nil
}

// redirectAllowed decides a redirect's URL as the approvals would decide a web_fetch of it: a
// redirect is followed only where a call of its own would be allowed without asking.
func (d *drive) redirectAllowed(u string) error {
	raw, _ := json.Marshal(map[string]string{"url": u})
	in, err := catalog.Decode(catalog.WebFetchName, raw)
	if err != nil {
		return err
	}
	var spec api.Approvals
	if d.spec.Approvals != nil {
		spec = *d.spec.Approvals
	}
	dec := policy.DecideInput(spec, d.e.ServerDeny, catalog.WebFetchName, in)
	if dec.Action != policy.Allow {
		return errors.New("the approvals do not allow fetching it without a person (" + dec.Explain() + ")")
	}
	return nil
}

// skills loads the agent revision's skills, pinned as NAME@VERSION, once per drive.
func (d *drive) loadSkills(ctx context.Context) error {
	if d.skills != nil || len(d.spec.Skills) == 0 {
		return nil
	}
	d.skills = map[string]*api.Skill{}
	for _, ref := range d.spec.Skills {
		name, version, e := api.ParseSkillRef(ref)
		if e != nil {
			return &failure{api.ReasonInternalError, fmt.Sprintf("the agent revision names skill %q: %s", ref, e.Message)}
		}
		s, err := d.e.Store.GetSkill(ctx, name, version)
		if err != nil {
			return fmt.Errorf("load skill %s: %w", ref, err)
		}
		d.skills[name] = s
	}
	return nil
}

// system is the agent's instructions, then the skills it has: each one's name and description,
// so the model knows when to read one with the skill tool.
func (d *drive) system() string {
	if notes := d.learnedSystem(); notes != "" {
		if s := d.skillsSystem(); s != "" {
			return s + "\n\n" + notes
		}
		return notes
	}
	return d.skillsSystem()
}

// skillNames are the names of the run's skills, sorted.
func (d *drive) skillNames() []string { return slices.Sorted(maps.Keys(d.skills)) }

// skillsSystem is the agent's instructions and its skills.
func (d *drive) skillsSystem() string {
	if len(d.skills) == 0 {
		return d.spec.System
	}
	names := d.skillNames()
	var b strings.Builder
	b.WriteString(d.spec.System)
	if b.Len() > 0 {
		b.WriteString("\n\n")
	}
	b.WriteString("# Skills\n\nYou have these skills. When a task fits one, first read it with the skill tool (its name), then follow it:\n")
	for _, n := range names {
		learned := ""
		if d.learnedSkill(n) {
			learned = " (learned in an earlier run)"
		}
		fmt.Fprintf(&b, "- %s: %s%s\n", n, strings.Join(strings.Fields(d.skills[n].Spec.Description), " "), learned)
	}
	return b.String()
}

// harnessSkills are the run's skills (the agent's, pinned, and the learned ones) as the files a
// harness driver writes into the harness's own skill folder, by name.
func (d *drive) harnessSkills() []harness.Skill {
	names := d.skillNames()
	out := make([]harness.Skill, 0, len(names))
	for _, n := range names {
		hs := harness.Skill{Name: n}
		for _, f := range d.skills[n].Spec.Files {
			b, err := f.Bytes()
			if err != nil {
				continue // checked when stored; a file that does not decode is left out
			}
			hs.Files = append(hs.Files, harness.SkillFile{Path: f.Path, Content: b})
		}
		out = append(out, hs)
	}
	return out
}

// openHarnessSkill answers a harness's request to load one of the run's skills with its own
// skill tool (Claude Code's Skill reads the SKILL.md its driver wrote into its skill folder):
// allowed for a skill the run has, and recorded as skill.opened once, not again when the call is
// replayed (the journal holds the model call after it).
func (h *hostRun) openHarnessSkill(input json.RawMessage) (bool, string, error) {
	var in struct {
		Skill string `json:"skill"`
	}
	_ = json.Unmarshal(input, &in)
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.d
	s := d.skills[in.Skill]
	if s == nil {
		names := d.skillNames()
		return false, fmt.Sprintf("no skill %q in this run (its skills: %s)", in.Skill, strings.Join(names, ", ")), nil
	}
	turn := max(h.n-1, 0)
	if _, replayed := d.j.Lookup(h.prefix + fmt.Sprintf("t%d/model", turn+1)); !replayed {
		d.j.Emit(api.Event{Type: api.EventSkillOpened, Message: fmt.Sprintf("opened skill %s (%s, with %s's own %s tool)", d.skillRef(s), api.SkillFileName, h.name, harness.ClaudeSkillTool),
			Data: mustRaw(map[string]string{"skill": s.Metadata.Name, "ref": d.skillRef(s), "file": api.SkillFileName, "via": h.name})})
	}
	return true, "", nil
}

// readSkill answers a skill call with the skill's SKILL.md or one of its files, as a safe step;
// the timeline says which skill the run opened.
func (d *drive) readSkill(ctx context.Context, key string, call model.Block, in catalog.Input) (journal.Outcome, error) {
	sk, ok := in.Value.(*catalog.Skill)
	if !ok {
		return journal.Outcome{}, fmt.Errorf("skill: input is a %T", in.Value)
	}
	s := d.skills[sk.Name]
	file := api.SkillFileName
	if sk.File != nil && *sk.File != "" {
		file = strings.TrimPrefix(*sk.File, "./")
	}
	spec := journal.Spec{Key: key, Kind: api.StepKindTool, Title: "skill " + sk.Name + " " + file, Args: map[string]any{"tool": call.Name, "input": call.Input}, Safe: true}
	out, err := d.j.Do(ctx, spec, func(ctx context.Context) (any, *int64, error) {
		if s == nil {
			names := d.skillNames()
			return tools.Result{IsError: true, Content: fmt.Sprintf("skill %q is not one of yours (you have: %s)", sk.Name, strings.Join(names, ", "))}, nil, nil
		}
		content, ok := s.File(file)
		if !ok {
			var files []string
			for _, f := range s.Spec.Files {
				files = append(files, f.Path)
			}
			return tools.Result{IsError: true, Content: fmt.Sprintf("skill %s has no file %q (its files: %s)", d.skillRef(s), file, strings.Join(files, ", "))}, nil, nil
		}
		text := strings.ToValidUTF8(string(content), "\uFFFD")
		if file == api.SkillFileName && len(s.Spec.Files) > 1 {
			var files []string
			for _, f := range s.Spec.Files {
				if f.Path != api.SkillFileName {
					files = append(files, f.Path)
				}
			}
			text += "\n\n[skill " + d.skillRef(s) + " has these files beside SKILL.md, read with the skill tool's file: " + strings.Join(files, ", ") + "]"
		}
		return tools.Result{Content: text}, nil, nil
	})
	if err != nil {
		return journal.Outcome{}, err
	}
	if !out.Replayed && s != nil {
		d.j.Emit(api.Event{Type: api.EventSkillOpened, StepKey: key, Message: fmt.Sprintf("opened skill %s (%s)", d.skillRef(s), file),
			Data: mustRaw(map[string]string{"skill": s.Metadata.Name, "ref": d.skillRef(s), "file": file})})
	}
	return out, nil
}
