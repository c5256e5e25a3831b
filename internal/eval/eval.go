// Package eval runs evaluation groups: Environments (built in or loaded, immutable per
// NAME@VERSION), the fixed batch of cases an evaluation group draws from one of their splits (the
// same seed draws the same tasks), the member runs that answer them (ordinary runs pinned to one
// agent revision, under the group's absolute deadline), and the graders that score completed
// answers. Its state lives in the group's stored status (status.evaluation, results included), so
// any server can carry on grading after a restart.
package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/computer"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/store"
)

// Evaluator prepares, starts and grades evaluation groups.
type Evaluator struct {
	Store   store.Store
	Log     *slog.Logger
	BaseURL string
	// Sandbox, if set and available, runs script graders (the local bubblewrap sandbox).
	Sandbox computer.Provider
	// Every is how often Run looks for cases to grade.
	Every time.Duration
	Now   func() time.Time

	mu       sync.Mutex
	inflight map[string]bool // group/run being graded by this server
	slots    chan struct{}
	// grading counts the gradings started; Run returns only after they have (they use the store).
	grading sync.WaitGroup
}

func (ev *Evaluator) now() time.Time {
	if ev.Now != nil {
		return ev.Now()
	}
	return time.Now()
}

// Environment resolves NAME@VERSION: a built-in one, or one loaded into the store.
func (ev *Evaluator) Environment(ctx context.Context, ref string) (*api.Environment, error) {
	name, version, ok := api.SplitEnvRef(ref)
	if !ok {
		return nil, api.Invalid("environment", "environment %q: give NAME@VERSION", ref)
	}
	for _, b := range Builtins() {
		if b.Metadata.Name == name && b.Spec.Version == version {
			api.ValidateEnvironment(b)
			b.Status.Builtin = true
			return b, nil
		}
	}
	e, err := ev.Store.GetEnvironment(ctx, name, version)
	if errors.Is(err, store.ErrNotFound) {
		return nil, api.Errorf(http.StatusNotFound, api.CodeEnvironmentNotFound, "spec.evaluation.environment", "environment %s is not built in or loaded (agentrun env list; agentrun env load DIR)", ref)
	}
	if err != nil {
		return nil, err
	}
	api.ValidateEnvironment(e)
	return e, nil
}

// Environments lists the built-in and loaded environments.
func (ev *Evaluator) Environments(ctx context.Context) ([]*api.Environment, error) {
	out := Builtins()
	for _, b := range out {
		api.ValidateEnvironment(b)
		b.Status.Builtin = true
	}
	stored, err := ev.Store.ListEnvironments(ctx)
	if err != nil {
		return nil, err
	}
	for _, e := range stored {
		api.ValidateEnvironment(e)
	}
	return append(out, stored...), nil
}

// Load stores an environment version (refusing built-in names and changed content).
func (ev *Evaluator) Load(ctx context.Context, e *api.Environment) (bool, error) {
	if err := api.ValidateEnvironment(e); err != nil {
		return false, err
	}
	for _, b := range Builtins() {
		if b.Metadata.Name == e.Metadata.Name && b.Spec.Version == e.Spec.Version {
			return false, api.Errorf(http.StatusConflict, api.CodeAlreadyExists, "metadata.name", "%s is built in; load another name or version", e.Ref())
		}
	}
	return ev.Store.PutEnvironment(ctx, e)
}

// caseKey is the task key of case n (0-based) of an evaluation group.
func caseKey(n int) string { return fmt.Sprintf("case-%03d", n+1) }

// Prepare checks an evaluation group before it is stored: the environment, split and batch size,
// and fixes its cases (the seed picks the tasks), its deadline and its grader version. The caller
// has pinned status.agentRevision.
func (ev *Evaluator) Prepare(ctx context.Context, g *api.AgentGroup) error {
	e := g.Spec.Evaluation
	env, err := ev.Environment(ctx, e.Environment)
	if err != nil {
		return err
	}
	tasks, ok := env.Spec.Splits[e.Split]
	if !ok {
		var names []string
		for n := range env.Spec.Splits {
			names = append(names, n)
		}
		sort.Strings(names)
		return api.Invalid("spec.evaluation.split", "environment %s has no split %q (it has %s)", env.Ref(), e.Split, strings.Join(names, ", "))
	}
	k := e.Tasks
	if k == 0 {
		k = min(len(tasks), api.MaxEvalCases/e.Repetitions)
	}
	if k > len(tasks) {
		return api.Invalid("spec.evaluation.tasks", "split %q of %s has %d tasks; %d asked", e.Split, env.Ref(), len(tasks), k)
	}
	if len(g.Metadata.Name)+len("-case-000") > 63 {
		return api.Invalid("metadata.name", "an evaluation group's name is at most %d characters (its runs are NAME-case-NNN)", 63-len("-case-000"))
	}
	timeout, _ := time.ParseDuration(e.Timeout)
	deadline := ev.now().Add(timeout).UTC().Truncate(time.Second)
	order := rand.New(rand.NewPCG(uint64(e.Seed), 0x6576616c)).Perm(len(tasks))[:k]
	var results []api.EvalCase
	for _, ti := range order {
		for rep := 1; rep <= e.Repetitions; rep++ {
			run := g.Metadata.Name + "-" + caseKey(len(results))
			results = append(results, api.EvalCase{TaskID: tasks[ti].ID, Repetition: rep, Run: run, State: api.CasePending,
				RunURL: strings.TrimRight(ev.BaseURL, "/") + "/runs/" + run})
		}
	}
	g.Status.Deadline = &deadline
	g.Status.Evaluation = &api.EvaluationStatus{Environment: env.Ref(), Split: e.Split, Seed: e.Seed, GraderVersion: GraderVersion(env),
		Cases: len(results), Pending: len(results), Tasks: k, Repetitions: e.Repetitions, Results: results}
	return nil
}

// Start creates the group's case runs (idempotent: a second call returns the first batch).
func (ev *Evaluator) Start(ctx context.Context, g *api.AgentGroup) error {
	st := g.Status.Evaluation
	if st == nil {
		return nil
	}
	env, err := ev.Environment(ctx, st.Environment)
	if err != nil {
		return ev.fail(ctx, g.Metadata.Name, err)
	}
	spec, err := ev.Store.GetAgentRevision(ctx, g.Spec.Agent, g.Status.AgentRevision)
	if err != nil {
		return ev.fail(ctx, g.Metadata.Name, err)
	}
	byID := map[string]api.Task{}
	for _, t := range env.Spec.Splits[st.Split] {
		byID[t.ID] = t
	}
	limit, _ := cost.ParseUSD(spec.PerRunMaxCostUSD)
	var runs []*api.AgentRun
	for i, c := range st.Results {
		t := byID[c.TaskID]
		r := &api.AgentRun{TypeMeta: api.TypeMeta{APIVersion: api.APIVersion, Kind: "AgentRun"},
			Metadata: api.ObjectMeta{Name: c.Run, Labels: map[string]string{api.EvalLabel: c.TaskID}},
			Spec: api.AgentRunSpec{Agent: g.Spec.Agent, Input: t.Prompt, Group: g.Metadata.Name, TaskKey: caseKey(i),
				MaxCostUSD: spec.PerRunMaxCostUSD, Deadline: g.Status.Deadline.Format(time.RFC3339)},
			Status: api.AgentRunStatus{Phase: api.PhaseQueued, AgentRevision: g.Status.AgentRevision, Deadline: g.Status.Deadline,
				ConsoleURL: c.RunURL, Cost: &api.RunCost{TotalUSD: cost.Micros(0).String(), LimitUSD: limit.String()}}}
		runs = append(runs, r)
	}
	if _, _, err := ev.Store.CreateRuns(ctx, runs, "eval:"+g.Metadata.UID, "eval"); err != nil {
		return ev.fail(ctx, g.Metadata.Name, err)
	}
	return nil
}

// fail records why the batch could not be created; its pending cases become unscored.
func (ev *Evaluator) fail(ctx context.Context, group string, cause error) error {
	g, err := ev.Store.GetGroup(ctx, group)
	if err != nil {
		return errors.Join(cause, err)
	}
	e := g.Status.Evaluation
	e.Error = cause.Error()
	for i := range e.Results {
		if e.Results[i].State == api.CasePending {
			e.Results[i].State, e.Results[i].Detail = api.CaseUnscored, "the evaluation could not create its runs: "+cause.Error()
		}
	}
	Summarize(e)
	ev.Store.SetGroupStatus(ctx, group, g.Metadata.ResourceVersion, g.Status)
	return cause
}

// Delete removes what a deleted evaluation group leaves outside it: its rubric grader runs (its
// results lived in the group). The server calls it after the store deleted the group.
func (ev *Evaluator) Delete(ctx context.Context, group string) {
	ev.deleteGraderRuns(ctx, group, api.MaxEvalCases)
}

// Run grades until ctx ends, and returns once the gradings it started have ended too.
func (ev *Evaluator) Run(ctx context.Context) {
	defer ev.grading.Wait()
	every := ev.Every
	if every <= 0 {
		every = 500 * time.Millisecond
	}
	for ctx.Err() == nil {
		ev.Pass(ctx)
		ev.Store.WaitWork(ctx, every)
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Pass grades what can be graded in every evaluation group with pending cases.
func (ev *Evaluator) Pass(ctx context.Context) {
	gs, err := ev.Store.ListGroups(ctx)
	if err != nil {
		if ctx.Err() == nil {
			ev.Log.Warn("evaluation: list groups", "err", err)
		}
		return
	}
	for _, g := range gs {
		if g.Spec.Evaluation == nil || g.Status.Evaluation == nil || g.Status.Evaluation.Pending == 0 {
			continue
		}
		if err := ev.passGroup(ctx, g); err != nil && ctx.Err() == nil {
			ev.Log.Warn("evaluation: grade", "group", g.Metadata.Name, "err", err)
		}
	}
}

// grace is how long past the deadline a run may take to be failed by its runner before its case
// is given up as an evaluation timeout.
const grace = time.Minute

func (ev *Evaluator) passGroup(ctx context.Context, g *api.AgentGroup) error {
	st := g.Status.Evaluation
	members, err := ev.Store.GroupMembers(ctx, g.Metadata.Name)
	if err != nil {
		return err
	}
	now := ev.now()
	deadline := now.Add(time.Hour)
	if g.Status.Deadline != nil {
		deadline = *g.Status.Deadline
	}
	if len(members) < len(st.Results) && st.Error == "" && now.Before(deadline) {
		// Created but its runs not (a server stopped in between): create them now.
		return ev.Start(ctx, g)
	}
	byName := map[string]store.Member{}
	for _, m := range members {
		byName[m.Name] = m
	}
	env, err := ev.Environment(ctx, st.Environment)
	if err != nil {
		return err
	}
	tasks := map[string]api.Task{}
	for _, t := range env.Spec.Splits[st.Split] {
		tasks[t.ID] = t
	}
	changed := false
	for i := range st.Results {
		c := &st.Results[i]
		if c.State != api.CasePending {
			continue
		}
		if g.Status.CancelRequested {
			// Cancelling the group ends its grading too: pending cases stay unscored and their
			// grader runs (rubric) are cancelled.
			c.State, c.Detail, changed = api.CaseUnscored, "the evaluation group was cancelled", true
			if env.Spec.Grader.Kind == "rubric" {
				ev.Store.RequestCancel(ctx, graderRun(c.Run))
			}
			continue
		}
		m, ok := byName[c.Run]
		if !ok {
			if now.After(deadline.Add(grace)) {
				c.State, c.Detail, changed = api.CaseTimeout, "the case's run was never created", true
			}
			continue
		}
		c.RunPhase = m.Phase
		if !api.Finished(m.Phase) {
			if now.After(deadline.Add(grace)) {
				c.State, c.Detail, changed = api.CaseTimeout, "the run had not finished at the deadline", true
			}
			continue
		}
		run, err := ev.Store.GetRun(ctx, c.Run)
		if err != nil {
			return err
		}
		if m.Phase != api.PhaseSucceeded {
			c.State, changed = api.CaseUnscored, true
			c.Detail = fmt.Sprintf("the run ended %s (%s): %s", run.Status.Phase, run.Status.Reason, run.Status.Message)
			continue
		}
		answer, ok, err := ev.answer(ctx, run)
		if err != nil {
			return err
		}
		if !ok {
			c.State, c.Detail, changed = api.CaseUnscored, "the run succeeded without an answer", true
			continue
		}
		if !now.Before(deadline) {
			c.State, c.Detail, changed = api.CaseTimeout, "the answer was not graded before the evaluation's deadline", true
			continue
		}
		ev.startGrading(ctx, g.Metadata.Name, *c, env, tasks[c.TaskID], answer, deadline)
	}
	if !changed {
		return nil
	}
	Summarize(st)
	_, err = ev.Store.SetGroupStatus(ctx, g.Metadata.Name, g.Metadata.ResourceVersion, g.Status)
	if errors.Is(err, store.ErrConflict) {
		return nil // the group changed meanwhile: the next pass looks again
	}
	return err
}

// maxGrading bounds the gradings one server runs at once.
const maxGrading = 16

// startGrading grades one case in the background (unless this server already is), so a slow
// grader holds up neither the other cases nor other groups; its verdict is recorded when done.
func (ev *Evaluator) startGrading(ctx context.Context, group string, c api.EvalCase, env *api.Environment, task api.Task, answer string, deadline time.Time) {
	key := group + "/" + c.Run
	ev.mu.Lock()
	if ev.inflight == nil {
		ev.inflight = map[string]bool{}
		ev.slots = make(chan struct{}, maxGrading)
	}
	if ev.inflight[key] {
		ev.mu.Unlock()
		return
	}
	ev.inflight[key] = true
	ev.mu.Unlock()
	ev.grading.Add(1)
	go func() {
		defer ev.grading.Done()
		defer func() {
			ev.mu.Lock()
			delete(ev.inflight, key)
			ev.mu.Unlock()
		}()
		select {
		case ev.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		defer func() { <-ev.slots }()
		var files []store.File
		if env.Spec.Grader.Kind == "script" {
			var err error
			if files, err = ev.Store.ListFiles(ctx, c.Run); err != nil {
				return // the next pass tries again
			}
		}
		gctx, cancel := context.WithDeadline(ctx, deadline)
		var v Verdict
		var gerr error
		if env.Spec.Grader.Kind == "rubric" {
			v, gerr = ev.gradeRubric(gctx, group, c, env.Spec.Grader, task, answer)
		} else {
			v, gerr = GradeIn(gctx, ev.Sandbox, env.Spec.Grader, task, answer, files)
		}
		// Read before cancel, which sets gctx.Err() whatever happened: only the deadline makes
		// a failed grading a timeout; any other failure is the grader's.
		timedOut := errors.Is(gctx.Err(), context.DeadlineExceeded)
		cancel()
		if ctx.Err() != nil {
			return
		}
		t := ev.now().UTC()
		c.GradedAt = &t
		switch {
		case gerr != nil && timedOut:
			c.State, c.Detail = api.CaseTimeout, "grading did not finish before the evaluation's deadline"
		case gerr != nil:
			c.State, c.Detail = api.CaseUnscored, clipBytes("grader failed: "+gerr.Error(), 2000)
		default:
			c.State, c.Evidence = api.CaseScored, clipBytes(v.Evidence, 2000)
			r := v.Reward
			c.Reward = &r
			c.Verdict = "fail"
			if v.Pass {
				c.Verdict = "pass"
			}
		}
		if err := ev.record(ctx, group, c); err != nil && ctx.Err() == nil {
			ev.Log.Warn("evaluation: record a verdict", "group", group, "run", c.Run, "err", err)
		}
	}()
}

// record writes one case's result into the group's status if the case is still pending there
// (another server may have graded it first), retrying on concurrent changes.
func (ev *Evaluator) record(ctx context.Context, group string, c api.EvalCase) error {
	for attempt := 0; attempt < 10; attempt++ {
		g, err := ev.Store.GetGroup(ctx, group)
		if errors.Is(err, store.ErrNotFound) {
			return nil // deleted meanwhile
		}
		if err != nil {
			return err
		}
		st := g.Status.Evaluation
		if st == nil {
			return nil
		}
		found := false
		for i := range st.Results {
			if st.Results[i].Run == c.Run && st.Results[i].State == api.CasePending {
				c.RunPhase = st.Results[i].RunPhase
				st.Results[i], found = c, true
			}
		}
		if !found {
			return nil
		}
		Summarize(st)
		_, err = ev.Store.SetGroupStatus(ctx, group, g.Metadata.ResourceVersion, g.Status)
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("group %s kept changing", group)
}

// answer is the run's full final answer (the answer event), or its preview.
func (ev *Evaluator) answer(ctx context.Context, run *api.AgentRun) (string, bool, error) {
	if run.Status.Answer == nil {
		return "", false, nil
	}
	evs, err := ev.Store.ListEvents(ctx, run.Metadata.Name, 0, 0)
	if err != nil {
		return "", false, err
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == "answer" {
			var d struct {
				Answer string `json:"answer"`
			}
			if json.Unmarshal(evs[i].Data, &d) == nil {
				return d.Answer, true, nil
			}
		}
	}
	return run.Status.Answer.Preview, true, nil
}

// Summarize recomputes the counts, pass rate, mean reward and per-task figures from the results.
// Pass rate and mean reward are over scored cases only: unscored cases (failed runs, missing
// answers, grader failures) and evaluation timeouts are left out, never counted as zero.
func Summarize(st *api.EvaluationStatus) {
	st.Pending, st.Scored, st.Passed, st.Unscored, st.TimedOut = 0, 0, 0, 0, 0
	var rewardSum float64
	type agg struct {
		scored, passed int
		rewards        []float64
	}
	per := map[string]*agg{}
	var order []string
	for _, c := range st.Results {
		a := per[c.TaskID]
		if a == nil {
			a = &agg{}
			per[c.TaskID] = a
			order = append(order, c.TaskID)
		}
		switch c.State {
		case api.CasePending:
			st.Pending++
		case api.CaseScored:
			st.Scored++
			a.scored++
			if c.Verdict == "pass" {
				st.Passed++
				a.passed++
			}
			if c.Reward != nil {
				rewardSum += *c.Reward
				a.rewards = append(a.rewards, *c.Reward)
			}
		case api.CaseTimeout:
			st.TimedOut++
		default:
			st.Unscored++
		}
	}
	st.PassRate, st.MeanReward = nil, nil
	if st.Scored > 0 {
		pr := float64(st.Passed) / float64(st.Scored)
		mr := rewardSum / float64(st.Scored)
		st.PassRate, st.MeanReward = &pr, &mr
	}
	st.PerTask = nil
	for _, id := range order {
		a := per[id]
		tr := api.TaskResult{TaskID: id, Scored: a.scored, Passed: a.passed}
		if a.scored > 0 {
			tr.PassAtK = map[string]float64{}
			for k := 1; k <= a.scored; k++ {
				tr.PassAtK[fmt.Sprint(k)] = passAtK(a.scored, a.passed, k)
			}
		}
		if len(a.rewards) > 0 {
			lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
			for _, r := range a.rewards {
				lo, hi, sum = math.Min(lo, r), math.Max(hi, r), sum+r
			}
			spread, mean := hi-lo, sum/float64(len(a.rewards))
			tr.RewardSpread, tr.MeanReward = &spread, &mean
		}
		st.PerTask = append(st.PerTask, tr)
	}
}

// passAtK is the unbiased estimate 1 - C(n-c, k) / C(n, k) of passing at least once in k tries,
// from n scored tries of which c passed.
func passAtK(n, c, k int) float64 {
	if n-c < k {
		return 1
	}
	p := 1.0
	for i := n - c + 1; i <= n; i++ {
		p *= 1 - float64(k)/float64(i)
	}
	return 1 - p
}
