package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/catalog"
	"agentrun.dev/agentrun/internal/journal"
	"agentrun.dev/agentrun/internal/learning"
	"agentrun.dev/agentrun/internal/model"
	"agentrun.dev/agentrun/internal/store"
	"agentrun.dev/agentrun/internal/tools"
)

// learnState is a learning run's view of its agent's folder: the commit it started from (pinned
// by the learning/base step, so a replay sees the same notes even after other runs committed).
type learnState struct {
	base  string
	notes []learning.File
	index string
	// skills are the learned skills offered beside the agent's own (by name; the agent's own
	// skill of the same name wins); workflows the learned workflows offered as tools.
	skills    map[string]*api.Skill
	workflows []learning.Workflow
}

// loadLearning pins the commit of main the run starts from and reads its notes.
func (d *drive) loadLearning(ctx context.Context) error {
	if !d.spec.Learning || d.learn != nil {
		return nil
	}
	agent := d.run.Spec.Agent
	out, err := d.j.Do(ctx, journal.Spec{Key: "learning/base", Kind: api.StepKindLearning, Title: "start from the learning folder's main", Safe: true},
		func(ctx context.Context) (any, *int64, error) {
			main, err := d.e.Store.LearningMain(ctx, agent)
			if err != nil {
				return nil, nil, err
			}
			return map[string]string{"commit": main}, nil, nil
		})
	if err != nil {
		return err
	}
	var base struct {
		Commit string `json:"commit"`
	}
	if err := json.Unmarshal(out.Result, &base); err != nil {
		return fmt.Errorf("learning/base: %w", err)
	}
	ls := &learnState{base: base.Commit}
	var left []string // what the folder holds that the run is not offered, and why
	if base.Commit != "" {
		repo, err := learning.Open(ctx, d.e.Store, agent)
		if err != nil {
			return err
		}
		files, err := repo.Files(plumbing.NewHash(base.Commit))
		if err != nil {
			return fmt.Errorf("learning folder of %s: %w", agent, err)
		}
		// A file at a path the folder does not allow (stored before paths were checked) is
		// left out, not the run's failure: a person retires it.
		files, bad := learning.Usable(files)
		left = append(left, bad...)
		for _, f := range files {
			if strings.HasPrefix(f.Path, "notes/") {
				ls.notes = append(ls.notes, f)
			}
		}
		ls.index = learning.Index(files)
		skills, badSkills := learning.Skills(files)
		workflows, badWorkflows := learning.Workflows(files)
		left = append(left, badSkills...)
		left = append(left, badWorkflows...)
		ls.skills = map[string]*api.Skill{}
		for _, s := range skills {
			if _, own := d.skills[s.Metadata.Name]; own {
				left = append(left, fmt.Sprintf("skills/%s: the agent has its own skill of that name", s.Metadata.Name))
				continue
			}
			ls.skills[s.Metadata.Name] = s
		}
		for _, w := range workflows {
			if len(d.spec.Workflow) > 0 {
				// Its engine gates the journal on its own lock from its nodes' goroutines: a
				// workflow called from one of its agent nodes could not run its effects under it.
				left = append(left, fmt.Sprintf("%s: an agent that runs a workflow of its own is not offered learned workflows", w.Path))
				continue
			}
			if d.allowed(w.Tool) {
				left = append(left, fmt.Sprintf("%s: its tool name %s is one of the agent's tools", w.Path, w.Tool))
				continue
			}
			ls.workflows = append(ls.workflows, w)
		}
	}
	d.learn = ls
	if len(ls.skills) > 0 && d.skills == nil {
		d.skills = map[string]*api.Skill{}
	}
	for n, s := range ls.skills {
		d.skills[n] = s
	}
	if !out.Replayed {
		var names, skills, workflows []string
		for _, f := range ls.notes {
			names = append(names, f.Path)
		}
		for n := range ls.skills {
			skills = append(skills, n)
		}
		slices.Sort(skills)
		for _, w := range ls.workflows {
			workflows = append(workflows, w.Tool)
		}
		msg := fmt.Sprintf("started from learning commit %s with %d notes, %d skills and %d workflows", short(base.Commit), len(names), len(skills), len(workflows))
		if len(left) > 0 {
			msg += "; left out: " + strings.Join(left, "; ")
		}
		d.j.Emit(api.Event{Type: api.EventLearningGiven, Message: msg,
			Data: mustRaw(map[string]any{"commit": base.Commit, "notes": names, "skills": skills, "workflows": workflows, "leftOut": left})})
	}
	return nil
}

// learnedSkill reports whether the run's skill name is a learned one (not the agent's own).
func (d *drive) learnedSkill(name string) bool {
	if d.learn == nil {
		return false
	}
	_, ok := d.learn.skills[name]
	return ok
}

// skillRef names a skill on the timeline: NAME@VERSION for the agent's own, NAME@learning:COMMIT
// for a learned one (pinned to the commit the run started from).
func (d *drive) skillRef(s *api.Skill) string {
	if d.learnedSkill(s.Metadata.Name) {
		return s.Metadata.Name + "@learning:" + short(d.learn.base)
	}
	return s.Ref()
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	if h == "" {
		return "(none yet)"
	}
	return h
}

// learnedNote is the text of the note at path on the commit the run started from ("" if none).
func (d *drive) learnedNote(path string) string {
	if d.learn == nil {
		return ""
	}
	for _, f := range d.learn.notes {
		if f.Path == path {
			return f.Content
		}
	}
	return ""
}

// learnedSystem is the notes index a learning run's instructions carry.
func (d *drive) learnedSystem() string {
	if d.learn == nil || d.learn.index == "" {
		return ""
	}
	return "# Notes\n\nYou learned these in earlier runs (name, file, what it is about). Open one with the note tool when it bears on the task:\n" + d.learn.index
}

// readNote answers a note call with the note's whole text, from the commit the run started from.
func (d *drive) readNote(ctx context.Context, key string, call model.Block, in catalog.Input) (journal.Outcome, error) {
	n, ok := in.Value.(*catalog.Note)
	if !ok {
		return journal.Outcome{}, fmt.Errorf("note: input is a %T", in.Value)
	}
	var found *learning.File
	if d.learn != nil {
		for i, f := range d.learn.notes {
			if f.Path == n.Name || f.Path == "notes/"+n.Name+".md" || f.Path == "notes/"+n.Name {
				found = &d.learn.notes[i]
			} else if nt, err := learning.ParseNote(f.Content); err == nil && nt.Name == n.Name && found == nil {
				found = &d.learn.notes[i]
			}
		}
	}
	spec := journal.Spec{Key: key, Kind: api.StepKindTool, Title: "note " + n.Name, Args: map[string]any{"tool": call.Name, "input": call.Input}, Safe: true}
	out, err := d.j.Do(ctx, spec, func(ctx context.Context) (any, *int64, error) {
		if found == nil {
			return tools.Result{IsError: true, Content: fmt.Sprintf("no note %q in your notes", n.Name)}, nil, nil
		}
		return tools.Result{Content: found.Content}, nil, nil
	})
	if err != nil {
		return journal.Outcome{}, err
	}
	if !out.Replayed && found != nil {
		d.j.Emit(api.Event{Type: api.EventLearningOpened, StepKey: key, Message: "opened note " + found.Path,
			Data: mustRaw(map[string]string{"note": found.Path, "etag": found.ETag})})
	}
	return out, nil
}

// proposeShape describes the proposal's items, for both ways of asking for it.
const proposeShape = `{"items": [
  {"kind": "note", "action": "add" | "change" | "retire", "path": "notes/NAME.md",
   "content": "---\nname: NAME\ndescription: one line on what it is about\ntype: user | feedback | project | reference\n---\nThe fact, in a few lines."},
  {"kind": "skill", "path": "skills/NAME", "files": [{"path": "SKILL.md", "content": "---\nname: NAME\ndescription: ...\n---\n..."}]},
  {"kind": "workflow", "path": "workflows/NAME.json", "content": "a workflow document: JSON, {\"v\": 2, \"name\": ..., \"schemas\": ..., \"input\": ..., \"output\": ..., \"root\": ...}"}
]}
A note holds one fact that will help later runs (at most 4 KiB). At most one skill, only if you finished the job. A workflow you keep is offered to later runs as the tool workflow_NAME. Never write a key, token, password or other secret. Keep nothing that is not useful: {"items": []} is a fine answer.`

// proposePrompt asks the built-in loop's model for the proposal, through the forced tool.
const proposePrompt = "Your job is done. Before the run ends, say what later runs of this agent should keep in its learning folder, by calling the tool " + learning.ProposeTool + " once with:\n" + proposeShape

// harnessProposePrompt asks a harness, whose model the server cannot force to call a tool: its
// answer is read as JSON text, checked against the same schema.
const harnessProposePrompt = "Your job is done. Before the run ends, say what later runs of this agent should keep in its learning folder.\nAnswer with one JSON object and nothing else:\n" + proposeShape

const gradePrompt = `You grade what an agent proposed to keep in its learning folder for later runs. Keep an item only if it is true to what the run did, useful later, one clear fact or procedure, and safe. Say too whether it is a rule: "rule": true when any part of it (its name, description or text) tells later runs how to behave rather than stating a fact: what to do or never do, what to run, what to approve, ask about or skip, how to treat their instructions, approvals or permissions; a person then decides whether to keep it. Answer by calling the tool ` + learning.GradeTool + ` once: {"verdicts": [{"item": N, "keep": true | false, "rule": true | false, "reason": "..."}]}, one verdict per item, N its number.`

// learnCall is one model call of the learning turn (the proposal or the grade): billed to the
// run and held to its cap like any other, its cost added to the run's.
func (d *drive) learnCall(ctx context.Context, key, title string, req *model.Request) (*model.Response, error) {
	hash, size := digestRequest(req)
	if err := d.guard(ctx, key, req, size, req.Model); err != nil {
		return nil, err
	}
	mr, err := d.modelStep(ctx, key, title, d.acc.provider, req, hash, len(req.Messages), false, func(mr modelResult, c *int64) {
		d.spent.total.Add(micros(c))
		d.spent.vendor.Add(micros(mr.VendorMicros))
		d.updateCost(nil)
	})
	if err != nil {
		return nil, err
	}
	return &mr.Response, nil
}

// learnStructured asks for a structured answer of the learning turn (model.Structured): the
// call is step key, its corrective retry, if the first answer is wrong, step KEY/retry, each a
// billed model call. fresh is set when one of them had not completed before this drive.
func (d *drive) learnStructured(ctx context.Context, key, title string, req *model.Request, s *model.Schema, fresh *bool) (json.RawMessage, error) {
	return model.Structured(ctx, func(ctx context.Context, attempt int, r *model.Request) (*model.Response, error) {
		k, t := key, title
		if attempt > 0 {
			k, t = key+"/retry", title+" (corrective retry)"
		}
		if !d.j.Completed(k) {
			*fresh = true
		}
		return d.learnCall(ctx, k, t, r)
	}, req, s)
}

// secrets are the values the run was handed that no proposal may carry: its model key, the
// sealed values its MCP servers are started with.
func (d *drive) learnSecrets(ctx context.Context) []string {
	var out []string
	if d.spec.Model.Access == api.AccessBYOK && d.e.Secrets != nil {
		if keys, err := d.e.Secrets.Open(ctx, d.spec.Model.APIKeySecret); err == nil {
			for _, v := range keys {
				out = append(out, strings.TrimSpace(v))
			}
		}
	} else if kv, ok := model.KeyVar(d.acc.provider.Name()); ok {
		out = append(out, strings.TrimSpace(os.Getenv(kv)))
	}
	for _, s := range d.spec.MCPServers {
		for _, m := range []map[string]string{s.Env, s.Headers} {
			for _, v := range m {
				name, key, isRef, err := api.ParseSecretRef(v)
				if !isRef || err != nil || d.e.Secrets == nil {
					continue
				}
				if keys, err := d.e.Secrets.Open(ctx, name); err == nil {
					out = append(out, keys[key])
				}
			}
		}
	}
	return out
}

// learnModel is the model of the run's last turn (the one that did the job).
func (d *drive) learnModel() string {
	if n := len(d.status.Turns); n > 0 && d.status.Turns[n-1].Model != "" {
		return d.status.Turns[n-1].Model
	}
	return d.acc.model
}

type verdict struct {
	Item int  `json:"item"`
	Keep bool `json:"keep"`
	// Rule: the grader reads the item as a rule for later runs, so a person decides it.
	Rule   bool   `json:"rule,omitempty"`
	Reason string `json:"reason"`
}

// learnTurn is the run's last turn on a learning agent: it proposes what to keep, code checks
// the proposal, one grader call judges what passed, a person approves what is risky, and what is
// kept is committed to main in one step.
func (d *drive) learnTurn(ctx context.Context, conv []model.Message, succeeded bool) error {
	maxTokens := d.maxTokens()
	return d.learnFrom(ctx, succeeded, func(ctx context.Context, fresh *bool) (json.RawMessage, error) {
		msgs := append(slices.Clone(conv), userText(proposePrompt))
		return d.learnStructured(ctx, "learn/propose", "proposal of what to keep", &model.Request{Model: d.learnModel(), System: d.system(), Messages: lastImages(msgs, maxImages), MaxTokens: maxTokens, Stream: true},
			learning.ProposalSchema, fresh)
	})
}

// learnFrom is the learning turn of every loop: propose makes the proposal, a JSON value valid
// against learning.ProposalSchema (the built-in loop: a structured model call, step
// learn/propose; a harness: its next user turn, recorded as learn/propose, read as that JSON or,
// failing that, structured by the server's own call), then the same checks, grader,
// risky-approval wait and commit judge and keep it. A proposal the model got wrong twice is
// refused.
func (d *drive) learnFrom(ctx context.Context, succeeded bool, propose func(ctx context.Context, fresh *bool) (json.RawMessage, error)) error {
	if !d.spec.Learning {
		return nil
	}
	if err := d.loadLearning(ctx); err != nil {
		return err
	}
	maxTokens := d.maxTokens()
	// Events go out with the step they follow, once: not again when the step is replayed.
	var freshPropose, freshGrade bool
	freshEnd := !d.j.Completed("learn/commit")
	emitIf := func(fresh bool, ev api.Event) {
		if fresh {
			d.j.Emit(ev)
		}
	}
	raw, err := propose(ctx, &freshPropose)
	var se *model.StructuredError
	if errors.As(err, &se) {
		emitIf(freshPropose, api.Event{Type: api.EventLearningRefused, Message: "the proposal was refused: " + se.Error(), Data: mustRaw(map[string]string{"schema": se.Tool, "problem": se.Problem})})
		return nil
	}
	if err != nil {
		return err
	}
	p, perr := learning.DecodeProposal(raw)
	if perr != nil {
		emitIf(freshPropose, api.Event{Type: api.EventLearningRefused, Message: "the proposal was refused: " + perr.Error()})
		return nil
	}
	secrets := d.learnSecrets(ctx)
	emitIf(freshPropose, api.Event{Type: api.EventLearningProposed, Message: fmt.Sprintf("proposed %d items to keep", len(p.Items)), Data: mustRaw(map[string]any{"items": itemPaths(p.Items, secrets)})})
	okIdx, refused := learning.Check(p, secrets, succeeded)
	for _, r := range refused {
		// The reason names the rule, never the content.
		emitIf(freshPropose, api.Event{Type: api.EventLearningRefused, Message: fmt.Sprintf("%s refused: %s", shownPath(r.Path), r.Reason), Data: mustRaw(r)})
	}
	if len(okIdx) == 0 {
		return nil
	}
	var b strings.Builder
	for _, i := range okIdx {
		one, _ := json.Marshal(p.Items[i])
		fmt.Fprintf(&b, "Item %d: %s\n", i, one)
	}
	graw, err := d.learnStructured(ctx, "learn/grade", "grade of the proposal", &model.Request{Model: d.learnModel(), System: gradePrompt,
		Messages: []model.Message{userText("The run's task was:\n" + d.run.Spec.Input + "\n\nIts answer:\n" + d.status.Answer.Preview + "\n\nIt proposes:\n" + b.String())}, MaxTokens: maxTokens, Stream: true},
		learning.GradeSchema, &freshGrade)
	noVerdict := "the grader gave no verdict"
	if errors.As(err, &se) {
		// Nothing is kept that the grader did not judge.
		noVerdict, err = "the grader gave no verdict: "+se.Error(), nil
	}
	if err != nil {
		return err
	}
	var g struct {
		Verdicts []verdict `json:"verdicts"`
	}
	if graw != nil {
		_ = json.Unmarshal(graw, &g) // the schema held its shape
	}
	var kept []learning.Item
	for _, i := range okIdx {
		it := p.Items[i]
		v := verdict{Item: i, Reason: noVerdict}
		for _, gv := range g.Verdicts {
			if gv.Item == i {
				v = gv
			}
		}
		if !v.Keep {
			emitIf(freshGrade, api.Event{Type: api.EventLearningDropped, Message: fmt.Sprintf("%s dropped by the grader: %s", it.Path, v.Reason), Data: mustRaw(map[string]any{"item": i, "path": it.Path, "by": "grader", "reason": v.Reason})})
			continue
		}
		risky, why := learning.Risky(it, d.learnedNote(it.Path))
		if !risky && v.Rule {
			risky, why = true, "the grader reads it as a rule for later runs: "+v.Reason
		}
		if risky {
			ok, err := d.learnApproval(ctx, i, it, why)
			if err != nil {
				return err
			}
			if !ok {
				emitIf(freshEnd, api.Event{Type: api.EventLearningDropped, Message: it.Path + " dropped: a person denied it", Data: mustRaw(map[string]any{"item": i, "path": it.Path, "by": "person"})})
				continue
			}
		}
		emitIf(freshEnd, api.Event{Type: api.EventLearningKept, Message: fmt.Sprintf("%s kept: %s", it.Path, v.Reason), Data: mustRaw(map[string]any{"item": i, "path": it.Path, "reason": v.Reason})})
		kept = append(kept, it)
	}
	if len(kept) == 0 {
		return nil
	}
	return d.learnCommit(ctx, kept)
}

// harnessProposal is a harness run's proposal: the harness's next user turn asks it, and its
// answer is recorded as step learn/propose. A harness's model cannot be forced to call a tool
// (the CLIs offer no tool_choice), so its answer is read as JSON text and checked against
// learning.ProposalSchema; an answer that is not that JSON is given, with what is wrong with it,
// to the server's own structured call (steps learn/propose/structure and, if needed, its
// corrective retry), which turns what the harness said into the proposal or fails clearly.
// After a crash the turn is replayed from the journal like the ones before it (so its calls are
// accounted again), and the recorded answer is the one judged.
func (d *drive) harnessProposal(ctx context.Context, harnessName string, turn func(prompt string) (string, error), fresh *bool) (json.RawMessage, error) {
	if !d.j.Completed("learn/propose") {
		*fresh = true
	}
	text, err := turn(harnessProposePrompt)
	if err != nil {
		return nil, err
	}
	out, err := d.j.Record(ctx, journal.Spec{Key: "learn/propose", Kind: api.StepKindLearning, Title: "proposal of what to keep (" + harnessName + "'s last turn)"}, map[string]string{"text": text})
	if err != nil {
		return nil, err
	}
	var rec struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(out, &rec); err != nil {
		return nil, fmt.Errorf("learn/propose: %w", err)
	}
	raw, problem := learning.ProposalSchema.Text(learning.JSONSpan(rec.Text))
	if problem == "" {
		return raw, nil
	}
	msg := fmt.Sprintf("Structure an agent's proposal of what to keep. The agent (%s) was asked, at the end of a run whose task was:\n%s\n\nwhat later runs should keep, and answered:\n%s\n\nThat answer is not the proposal asked for: %s.\n\n%s",
		harnessName, d.run.Spec.Input, model.Clip(rec.Text, 64<<10), problem, proposePrompt)
	return d.learnStructured(ctx, "learn/propose/structure", "proposal of what to keep, structured from "+harnessName+"'s answer",
		&model.Request{Model: d.learnModel(), Messages: []model.Message{userText(msg)}, MaxTokens: d.maxTokens(), Stream: true}, learning.ProposalSchema, fresh)
}

// shownPath is a proposed path as a timeline message shows it: quoted when it holds a newline, a
// NUL or another character a message should not carry raw (a newline would forge a line).
func shownPath(p string) string {
	if q := strconv.Quote(p); q != `"`+p+`"` {
		return q
	}
	return p
}

// itemPaths names each proposed item for the timeline; a path holding a secret is not shown.
func itemPaths(items []learning.Item, secrets []string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		p := it.Path
		if learning.HoldsSecret(p, secrets) {
			p = learning.HiddenPath
		}
		out[i] = it.Kind + " " + it.Action + " " + p
	}
	return out
}

// learnApproval waits for a person's OK of a risky item, as a tool call's approval waits: the
// same approval step kind, so the same API and console decide it, only a signed-in person.
func (d *drive) learnApproval(ctx context.Context, i int, it learning.Item, why string) (bool, error) {
	key := fmt.Sprintf("learn/approval/%d", i)
	input, _ := json.Marshal(it)
	res, done, err := d.j.Await(ctx, journal.Spec{Key: key, Kind: api.StepKindApproval, Title: "approval to keep " + it.Path,
		Args: map[string]any{"tool": "learning", "input": json.RawMessage(input), "reason": why, "rule": "learning: risky change", "why": why}})
	if err != nil {
		return false, err
	}
	if !done {
		d.status.Phase, d.status.Reason = api.PhaseWaiting, api.ReasonApproval
		d.status.Message = fmt.Sprintf("keeping %s asks for approval (%s)", it.Path, why)
		d.status.WaitingOn = &api.WaitingOn{Kind: "approval", StepKey: key, Detail: "learning " + it.Path}
		return false, d.park(ctx, &api.Event{Type: api.EventRunApproval, StepKey: key, Message: fmt.Sprintf("%s asks for approval to keep %s: %s", d.run.Metadata.Name, it.Path, why)})
	}
	var r struct {
		Decision string `json:"decision"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return false, fmt.Errorf("approval %s: decode the decision: %w", key, err)
	}
	d.status.Phase, d.status.Reason, d.status.Message, d.status.WaitingOn = api.PhaseRunning, "", "", nil
	return r.Decision == "approve", nil
}

// learnCommit commits the kept items to main in one step. The step is safe to repeat: a commit
// whose message names this run is already on main, so a replay after a crash finds it instead
// of committing twice; and the store moves main with the commit's objects in one transaction,
// so main has the whole proposal or none of it. When another run moved main first, the items
// are applied again on the new main (a retire of a note that is gone is left out).
func (d *drive) learnCommit(ctx context.Context, kept []learning.Item) error {
	agent, run := d.run.Spec.Agent, d.run.Metadata.Name
	var paths []string
	for _, it := range kept {
		paths = append(paths, it.Action+" "+it.Path)
	}
	msg := fmt.Sprintf("run %s kept %s\n\nRun: %s\n", run, strings.Join(paths, ", "), run)
	out, err := d.j.Do(ctx, journal.Spec{Key: "learn/commit", Kind: api.StepKindLearning, Title: "commit what the run kept", Args: map[string]any{"paths": paths}, Safe: true},
		func(ctx context.Context) (any, *int64, error) {
			for attempt := 0; ; attempt++ {
				repo, err := learning.Open(ctx, d.e.Store, agent)
				if err != nil {
					return nil, nil, err
				}
				log, err := repo.Log()
				if err != nil {
					return nil, nil, err
				}
				for _, c := range log {
					if strings.Contains(c.Message, "\nRun: "+run+"\n") {
						return map[string]string{"commit": c.Hash}, nil, nil
					}
				}
				files, err := repo.Files(repo.Main)
				if err != nil {
					return nil, nil, err
				}
				var changes []learning.Change
				for _, ch := range learning.Changes(kept) {
					if ch.Delete && !slices.ContainsFunc(files, func(f learning.File) bool { return f.Path == ch.Path }) {
						continue
					}
					changes = append(changes, ch)
				}
				h, err := repo.Commit(ctx, changes, agent, msg, time.Now())
				switch {
				case errors.Is(err, learning.ErrNoChange):
					return map[string]string{"commit": ""}, nil, nil
				case errors.Is(err, store.ErrConflict) && attempt < 20:
					continue // another run committed first: again on its main
				case err != nil:
					return nil, nil, err
				}
				return map[string]string{"commit": h.String()}, nil, nil
			}
		})
	if err != nil {
		return err
	}
	var res struct {
		Commit string `json:"commit"`
	}
	_ = json.Unmarshal(out.Result, &res)
	if !out.Replayed {
		m := "nothing changed in the learning folder"
		if res.Commit != "" {
			m = fmt.Sprintf("committed %s to main: %s", short(res.Commit), strings.Join(paths, ", "))
		}
		d.j.Emit(api.Event{Type: api.EventLearningCommitted, Message: m, Data: mustRaw(map[string]any{"commit": res.Commit, "paths": paths})})
	}
	return nil
}
