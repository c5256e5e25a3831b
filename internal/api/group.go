package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"time"

	"agentrun.dev/agentrun/internal/cost"
)

// Group limits and defaults (the Nodus seed's "Run agents in parallel").
const (
	DefaultMaxActive  = 10
	MaxMaxActive      = 1000
	DefaultMaxPending = 10000
	// MaxBatch is how many runs one AgentRunList may create.
	MaxBatch = 100
	// MaxEvalCases bounds an evaluation batch, repetitions included.
	MaxEvalCases = 100
	// DefaultEvalTimeout is an evaluation's absolute deadline when none is given; 1m..24h.
	DefaultEvalTimeout = 30 * time.Minute
	MinEvalTimeout     = time.Minute
	MaxEvalTimeout     = 24 * time.Hour
)

// GroupPhase is an AgentGroup's status.phase.
type GroupPhase string

// Group phases (AgentGroup status.phase).
const (
	GroupRunning    GroupPhase = "Running"
	GroupSucceeded  GroupPhase = "Succeeded"
	GroupFailed     GroupPhase = "Failed"
	GroupCancelling GroupPhase = "Cancelling"
	GroupCancelled  GroupPhase = "Cancelled"
)

// Reasons of member runs and groups.
const (
	ReasonDependencyWait      Reason = "DependencyWait"
	ReasonGroupWait           Reason = "GroupWait"
	ReasonMaxActiveReached    Reason = "MaxActiveReached"
	ReasonDependencyFailed    Reason = "DependencyFailed"
	ReasonDependencyCancelled Reason = "DependencyCancelled"
	ReasonRunsFailed          Reason = "RunsFailed"
	ReasonEvaluationTimeout   Reason = "EvaluationTimeout"
)

// AgentGroup runs many runs of one agent, at most limits.maxActive at once and together under
// limits.maxCostUSD.
type AgentGroup struct {
	TypeMeta `json:",inline"`
	Metadata ObjectMeta       `json:"metadata"`
	Spec     AgentGroupSpec   `json:"spec"`
	Status   AgentGroupStatus `json:"status,omitempty"`
}

// AgentGroupSpec is what a user writes for a group.
type AgentGroupSpec struct {
	Agent  string      `json:"agent"`
	Limits GroupLimits `json:"limits,omitempty"`
	// MaxCostUSD is accepted as an alias of limits.maxCostUSD (the seed's prose calls it
	// spec.maxCostUSD); validation moves it into limits.
	MaxCostUSD string `json:"maxCostUSD,omitempty"`
	// Sealed: no more runs are coming. Irreversible; a sealed group refuses new runs (409).
	Sealed     bool            `json:"sealed,omitempty"`
	Evaluation *EvaluationSpec `json:"evaluation,omitempty"`
}

// GroupLimits bound a group.
type GroupLimits struct {
	// MaxActive is how many members may be started and unfinished at once (default 10, 1..1000).
	MaxActive int `json:"maxActive,omitempty"`
	// MaxPending is how many unfinished members the group takes (default 10000).
	MaxPending int `json:"maxPending,omitempty"`
	// MaxCostUSD is the group's spend cap (decimal string); empty means no group cap. It can be
	// raised on a live group, never lowered.
	MaxCostUSD string `json:"maxCostUSD,omitempty"`
}

// UnmarshalJSON decodes limits strictly and refuses an explicit maxActive or maxPending below 1:
// only a field left out takes the default (0 would otherwise be read as "left out").
func (l *GroupLimits) UnmarshalJSON(b []byte) error {
	type plain GroupLimits
	var raw any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return Errorf(statusBadRequest, CodeInvalid, "spec.limits", "limits: %v", err)
	}
	if err := checkShape(raw, reflect.TypeOf(plain{}), "spec.limits"); err != nil {
		return err
	}
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return E(CodeInvalid, "spec.limits", "limits: %v", err)
	}
	if obj, ok := raw.(map[string]any); ok {
		if v, given := obj["maxActive"]; given && v != nil && p.MaxActive < 1 {
			return Invalid("spec.limits.maxActive", "maxActive must be between 1 and %d, not %d (leave it out for the default %d)", MaxMaxActive, p.MaxActive, DefaultMaxActive)
		}
		if v, given := obj["maxPending"]; given && v != nil && p.MaxPending < 1 {
			return Invalid("spec.limits.maxPending", "maxPending must be between 1 and %d, not %d (leave it out for the default %d)", DefaultMaxPending, p.MaxPending, DefaultMaxPending)
		}
	}
	*l = GroupLimits(p)
	return nil
}

// EvaluationSpec makes a group an evaluation batch of an Environment's tasks.
type EvaluationSpec struct {
	// Environment is NAME@VERSION.
	Environment string `json:"environment"`
	Split       string `json:"split,omitempty"`
	// Tasks is how many tasks to draw from the split (0: all, up to the batch limit).
	Tasks       int   `json:"tasks,omitempty"`
	Repetitions int   `json:"repetitions,omitempty"`
	Seed        int64 `json:"seed,omitempty"`
	// Timeout is the absolute deadline from group creation (1m..24h, default 30m).
	Timeout string `json:"timeout,omitempty"`
}

// AgentGroupStatus is written by the system (derived from the members on every read).
type AgentGroupStatus struct {
	Phase   GroupPhase `json:"phase,omitempty"`
	Reason  Reason     `json:"reason,omitempty"`
	Message string     `json:"message,omitempty"`
	// Counts splits the members: queued (not admitted yet), active (admitted: queued for a
	// runner or running), waiting (for a message, a person or funds), and the finished ones.
	Counts GroupCounts `json:"counts"`
	// BlockedReasons counts queued members by why they have not started: DependencyWait,
	// MaxActiveReached, MaxCostReached.
	BlockedReasons map[Reason]int `json:"blockedReasons,omitempty"`
	Cost           *RunCost       `json:"cost,omitempty"`
	// AgentRevision is the revision every member of an evaluation group is pinned to.
	AgentRevision int64 `json:"agentRevision,omitempty"`
	// Deadline is an evaluation group's absolute deadline.
	Deadline        *time.Time        `json:"deadline,omitempty"`
	CancelRequested bool              `json:"cancelRequested,omitempty"`
	Evaluation      *EvaluationStatus `json:"evaluation,omitempty"`
}

// GroupCounts splits a group's members by state.
type GroupCounts struct {
	Queued    int `json:"queued"`
	Active    int `json:"active"`
	Waiting   int `json:"waiting"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
}

// EvaluationStatus summarises an evaluation group's results.
type EvaluationStatus struct {
	Environment string `json:"environment,omitempty"`
	Split       string `json:"split,omitempty"`
	Seed        int64  `json:"seed"`
	// GraderVersion identifies the grader that scored the cases.
	GraderVersion string `json:"graderVersion,omitempty"`
	Cases         int    `json:"cases"`
	// Pending is how many cases are neither scored nor unscored yet.
	Pending int `json:"pending"`
	Scored  int `json:"scored"`
	Passed  int `json:"passed"`
	// Unscored counts cases with no score: failed runs, missing answers, grader failures.
	Unscored int `json:"unscored"`
	// TimedOut counts completed answers not graded by the deadline ("evaluation timeout").
	TimedOut int `json:"timedOut"`
	// PassRate and MeanReward are over scored cases only; absent while none is scored.
	PassRate   *float64     `json:"passRate,omitempty"`
	MeanReward *float64     `json:"meanReward,omitempty"`
	PerTask    []TaskResult `json:"perTask,omitempty"`
	// Tasks and Repetitions are the batch's shape.
	Tasks       int `json:"tasks"`
	Repetitions int `json:"repetitions"`
	// Error says why the batch could not be created (the group then fails).
	Error string `json:"error,omitempty"`
	// Results holds every case (GET /v2/agentgroups/NAME/results shows them; the group's own
	// status leaves them out).
	Results []EvalCase `json:"results,omitempty"`
}

// Evaluation case states.
const (
	CasePending  = "pending"
	CaseScored   = "scored"
	CaseUnscored = "unscored"
	CaseTimeout  = "evaluation timeout"
)

// EvalLabel marks the runs an evaluation group creates for its cases (reserved).
const EvalLabel = "agentrun.dev/evaluation-case"

// TaskResult is one task's results across its repetitions.
type TaskResult struct {
	TaskID string `json:"taskId"`
	Scored int    `json:"scored"`
	Passed int    `json:"passed"`
	// PassAtK is the unbiased pass@k estimate for k = 1..repetitions, over scored repetitions.
	PassAtK map[string]float64 `json:"passAtK,omitempty"`
	// RewardSpread is max-min of the scored rewards across repetitions.
	RewardSpread *float64 `json:"rewardSpread,omitempty"`
	MeanReward   *float64 `json:"meanReward,omitempty"`
}

// EvalCase is one evaluation case's result (agentrun eval results).
type EvalCase struct {
	TaskID     string `json:"taskId"`
	Repetition int    `json:"repetition"`
	Run        string `json:"run"`
	// State is pending, running, scored, unscored or timeout.
	State   string   `json:"state"`
	Verdict string   `json:"verdict,omitempty"`
	Reward  *float64 `json:"reward,omitempty"`
	// Evidence is what the grader saw and decided (never the hidden answer to the agent).
	Evidence string `json:"evidence,omitempty"`
	// Detail explains an unscored case (run failed, no answer, grader failed).
	Detail   string     `json:"detail,omitempty"`
	RunPhase Phase      `json:"runPhase,omitempty"`
	RunURL   string     `json:"runURL,omitempty"`
	GradedAt *time.Time `json:"gradedAt,omitempty"`
}

// DefaultAndValidateGroup fills defaults and checks a group as a user submitted it, reporting
// every problem it finds (ErrorList), the first as the error's own code and field.
func DefaultAndValidateGroup(g *AgentGroup) error {
	var errs ErrorList
	errs.AddErr(checkTypeMeta(&g.TypeMeta, "AgentGroup"))
	errs.AddErr(ValidName("metadata.name", g.Metadata.Name))
	errs.AddErr(ValidLabels("metadata.labels", g.Metadata.Labels))
	s := &g.Spec
	spec := NewPath("spec")
	limits := spec.Child("limits")
	errs.AddErr(ValidName(spec.Child("agent").String(), s.Agent))
	if s.MaxCostUSD != "" {
		if s.Limits.MaxCostUSD != "" && s.Limits.MaxCostUSD != s.MaxCostUSD {
			errs.Add(Invalid(spec.Child("maxCostUSD").String(), "spec.maxCostUSD and spec.limits.maxCostUSD differ; give one"))
		} else {
			s.Limits.MaxCostUSD, s.MaxCostUSD = s.MaxCostUSD, ""
		}
	}
	// A limit left out is 0 here and takes its default; an explicit 0 was refused when decoded
	// (see GroupLimits.UnmarshalJSON).
	if s.Limits.MaxActive == 0 {
		s.Limits.MaxActive = DefaultMaxActive
	}
	if s.Limits.MaxActive < 1 || s.Limits.MaxActive > MaxMaxActive {
		errs.Add(Invalid(limits.Child("maxActive").String(), "maxActive must be between 1 and %d, not %d", MaxMaxActive, s.Limits.MaxActive))
	}
	if s.Limits.MaxPending == 0 {
		s.Limits.MaxPending = DefaultMaxPending
	}
	if s.Limits.MaxPending < 1 || s.Limits.MaxPending > DefaultMaxPending {
		errs.Add(Invalid(limits.Child("maxPending").String(), "maxPending must be between 1 and %d, not %d", DefaultMaxPending, s.Limits.MaxPending))
	}
	if s.Limits.MaxCostUSD != "" && s.MaxCostUSD == "" {
		if m, err := cost.ParseUSDStrict(s.Limits.MaxCostUSD); err != nil {
			errs.Add(Invalid(limits.Child("maxCostUSD").String(), "%v", err))
		} else {
			s.Limits.MaxCostUSD = m.String()
		}
	}
	if e := s.Evaluation; e != nil {
		errs.AddErr(defaultAndValidateEvaluation(e, spec.Child("evaluation")))
		// An evaluation generates its own runs and seals itself.
		s.Sealed = true
	}
	return errs.Err()
}

// defaultAndValidateEvaluation fills an evaluation's defaults and checks it (at p).
func defaultAndValidateEvaluation(e *EvaluationSpec, p Path) error {
	var errs ErrorList
	env := p.Child("environment").String()
	if e.Environment == "" {
		errs.Add(E(CodeRequired, env, "an evaluation names its environment as NAME@VERSION"))
	} else if _, _, ok := SplitEnvRef(e.Environment); !ok {
		errs.Add(Invalid(env, "environment %q: give an explicit version, NAME@VERSION", e.Environment))
	}
	if e.Split == "" {
		e.Split = "test"
	}
	if e.Repetitions == 0 {
		e.Repetitions = 1
	}
	if e.Repetitions < 1 || e.Tasks < 0 {
		errs.Add(Invalid(p.String(), "tasks and repetitions must be positive"))
	} else if e.Tasks*e.Repetitions > MaxEvalCases {
		errs.Add(Invalid(p.Child("tasks").String(), "%d tasks x %d repetitions is %d cases; an evaluation batch is at most %d", e.Tasks, e.Repetitions, e.Tasks*e.Repetitions, MaxEvalCases))
	}
	if e.Timeout == "" {
		e.Timeout = DefaultEvalTimeout.String()
	}
	if d, err := time.ParseDuration(e.Timeout); err != nil || d < MinEvalTimeout || d > MaxEvalTimeout {
		errs.Add(Invalid(p.Child("timeout").String(), "timeout %q: a duration from 1m to 24h", e.Timeout))
	}
	return errs.Err()
}

// SplitEnvRef splits NAME@VERSION.
func SplitEnvRef(ref string) (name, version string, ok bool) {
	for i := len(ref) - 1; i >= 0; i-- {
		if ref[i] == '@' {
			name, version = ref[:i], ref[i+1:]
			return name, version, name != "" && version != ""
		}
	}
	return "", "", false
}

// ValidateGroupUpdate checks a change of a live group's spec: the agent and the evaluation stay,
// sealing cannot be undone, and the cost cap can only rise (a group created without a cap keeps
// having none: a cap added later could already be below what it spent).
func ValidateGroupUpdate(old, new *AgentGroupSpec) error {
	var errs ErrorList
	if new.Agent != old.Agent {
		errs.Add(Invalid("spec.agent", "a group's agent cannot change (it is %q)", old.Agent))
	}
	if !sameEval(old.Evaluation, new.Evaluation) {
		errs.Add(Invalid("spec.evaluation", "a group's evaluation cannot change"))
	}
	if old.Sealed && !new.Sealed {
		errs.Add(Invalid("spec.sealed", "a sealed group cannot be unsealed"))
	}
	if old.Limits.MaxCostUSD != new.Limits.MaxCostUSD {
		const field = "spec.limits.maxCostUSD"
		o, _ := cost.ParseUSD(old.Limits.MaxCostUSD)
		n, _ := cost.ParseUSD(new.Limits.MaxCostUSD)
		switch {
		case old.Limits.MaxCostUSD == "":
			errs.Add(Invalid(field, "a group created without a cost cap cannot get one later"))
		case new.Limits.MaxCostUSD == "":
			errs.Add(Invalid(field, "the cost cap cannot be removed; it can only be raised"))
		case n < o:
			errs.Add(Invalid(field, "the cost cap can only be raised (it is %s)", old.Limits.MaxCostUSD))
		}
	}
	return errs.Err()
}

func sameEval(a, b *EvaluationSpec) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// validateMember checks the group fields of a run (the store checks them against the group):
// the name defaults to GROUP-TASKKEY and must be exactly that. Every problem is told
// (ErrorList).
func validateMember(r *AgentRun) error {
	var errs ErrorList
	if _, ok := r.Metadata.Labels[EvalLabel]; ok {
		errs.Add(Invalid("metadata.labels", "label %s is reserved for the runs evaluation groups create", EvalLabel))
	}
	s := &r.Spec
	if s.Group == "" {
		if s.TaskKey != "" {
			errs.Add(Invalid("spec.taskKey", "a task key needs spec.group"))
		}
		if len(s.DependsOn) > 0 {
			errs.Add(Invalid("spec.dependsOn", "dependencies need spec.group"))
		}
		return errs.Err()
	}
	gerr, terr := ValidName("spec.group", s.Group), ValidName("spec.taskKey", s.TaskKey)
	errs.AddErr(gerr)
	errs.AddErr(terr)
	if gerr == nil && terr == nil {
		want := s.Group + "-" + s.TaskKey
		if r.Metadata.Name == "" {
			r.Metadata.Name = want
		}
		if r.Metadata.Name != want {
			errs.Add(Invalid("metadata.name", "a run of group %q with task key %q is named %q; leave metadata.name out or set exactly that", s.Group, s.TaskKey, want))
		}
	}
	seen := map[string]bool{}
	for i, d := range s.DependsOn {
		f := NewPath("spec", "dependsOn").Index(i).String()
		switch {
		case ValidName(f, d) != nil:
			errs.AddErr(ValidName(f, d))
		case d == s.TaskKey:
			errs.Add(Invalid(f, "a run cannot depend on itself"))
		case seen[d]:
			errs.Add(Invalid(f, "task %q is listed twice", d))
		}
		seen[d] = true
	}
	return errs.Err()
}
