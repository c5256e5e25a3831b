package client

import (
	"fmt"

	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/computer"
)

// The API's types, for callers outside this module: package internal/api cannot be imported from
// another module, so every type the client's methods take or return, and every named type
// reachable from their fields, is named here too. Each is an alias (the same type, not a copy), so
// a value built with these is what the methods take:
//
//	runs := []client.AgentRun{{Metadata: client.ObjectMeta{Name: "a"}, Spec: client.AgentRunSpec{Agent: "notes", Input: "hi"}}}
//	created, err := c.CreateAgentRuns(ctx, runs, "batch-1")
//
// TestAliasesCoverTheAPI fails when a method reaches an api type that has no alias here.

// Objects and their metadata.
type (
	TypeMeta   = api.TypeMeta
	ObjectMeta = api.ObjectMeta
	// List is an API list (AgentRunList, AgentList, ...): TypeMeta and Items.
	List[T any] = api.List[T]
	// Error is an API error: Status, Code (the Code* constants), Message and Field, and in
	// Errors every problem a check found (the first being the error itself).
	Error      = api.Error
	FieldError = api.FieldError
	// Path is the path of a field as an error names it (Error.Under takes one).
	Path = api.Path
)

// Agents.
type (
	Agent       = api.Agent
	AgentSpec   = api.AgentSpec
	AgentStatus = api.AgentStatus
	ModelSpec   = api.ModelSpec
	// Access is spec.model.access: AccessServer or AccessBYOK.
	Access = api.Access
	// ModelProvider is spec.model.provider (ModelProviders), Harness spec.harness (Harnesses),
	// Kind a computer's kind, spec.computer.kind (ComputerKinds).
	ModelProvider = api.ModelProvider
	Harness       = api.Harness
	Kind          = computer.Kind
	ComputerSpec  = api.ComputerSpec
	// Approvals say which tool calls run, ask a person first, or are refused (spec.approvals).
	Approvals    = api.Approvals
	ApprovalRule = api.ApprovalRule
)

// Runs and what they did.
type (
	// Phase is a run's status.phase (the Phase* constants), Reason its status.reason (Reason*).
	Phase  = api.Phase
	Reason = api.Reason
	// StepState is a step's state (Step*); Resolution a person's decision on a step (Resolve*).
	StepState  = api.StepState
	Resolution = api.Resolution
	// StepKind is what a journal step does (the StepKind* constants).
	StepKind = api.StepKind
	// EventType is a timeline event's type (Event*; EventTypes lists them all).
	EventType      = api.EventType
	EventTypeInfo  = api.EventTypeInfo
	AgentRun       = api.AgentRun
	AgentRunSpec   = api.AgentRunSpec
	AgentRunStatus = api.AgentRunStatus
	WaitingOn      = api.WaitingOn
	Answer         = api.Answer
	Escalation     = api.Escalation
	RunCost        = api.RunCost
	Turn           = api.Turn
	Step           = api.Step
	WorkflowTree   = api.WorkflowTree
	WorkflowNode   = api.WorkflowNode
	TreeNode       = api.WorkflowNode // the same type under its own name (internal/workflow.TreeNode)
	Event          = api.Event
	Message        = api.Message
	IfBusy         = api.IfBusy
)

// Groups, evaluations and environments.
type (
	AgentGroup       = api.AgentGroup
	AgentGroupSpec   = api.AgentGroupSpec
	AgentGroupStatus = api.AgentGroupStatus
	// GroupPhase is a group's status.phase (the Group* constants).
	GroupPhase = api.GroupPhase
	// GroupLimits are a group's limits: MaxActive, MaxPending and MaxCostUSD.
	GroupLimits    = api.GroupLimits
	GroupCounts    = api.GroupCounts
	EvaluationSpec = api.EvaluationSpec
	// EvaluationStatus summarises an evaluation's results. PassRate and MeanReward are pointers:
	// nil while no case is scored (not zero); print them with Score.
	EvaluationStatus  = api.EvaluationStatus
	TaskResult        = api.TaskResult
	EvalCase          = api.EvalCase
	Environment       = api.Environment
	EnvironmentSpec   = api.EnvironmentSpec
	EnvironmentStatus = api.EnvironmentStatus
	Task              = api.Task
	GraderSpec        = api.GraderSpec
)

// Seed-compatible bodies (POST /v1/agents and POST /v1/agents/NAME/runs).
type (
	SeedAgentBody  = api.SeedAgentBody
	SeedDefinition = api.SeedDefinition
	SeedRunBody    = api.SeedRunBody
	SeedInput      = api.SeedInput
)

// Score prints a rate or reward that may be absent (EvaluationStatus.PassRate, MeanReward,
// TaskResult.MeanReward, RewardSpread): "-" when nil (nothing scored yet), else three decimals.
func Score(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.3f", *p)
}

// AsError finds the API error in err's chain (as every method returns it, wrapped).
func AsError(err error) (*Error, bool) { return api.AsError(err) }

// Finished reports whether a run phase is terminal (Succeeded, Failed or Cancelled).
func Finished(phase Phase) bool { return api.Finished(phase) }

// WaitingOnPerson reports whether a run waits on a person (a question, an approval, its cap or
// credits).
func WaitingOnPerson(phase Phase, reason Reason) bool { return api.WaitingOnPerson(phase, reason) }

// APIVersion is the apiVersion objects carry.
const APIVersion = api.APIVersion

// Run phases (AgentRunStatus.Phase).
const (
	PhaseQueued          = api.PhaseQueued
	PhaseRunning         = api.PhaseRunning
	PhaseWaiting         = api.PhaseWaiting
	PhaseNeedsResolution = api.PhaseNeedsResolution
	PhaseSucceeded       = api.PhaseSucceeded
	PhaseFailed          = api.PhaseFailed
	PhaseCancelled       = api.PhaseCancelled
)

// What a message to a busy run does (SendMessageIfBusy, AgentSpec.IfBusy).
const (
	IfBusyEnqueue   = api.IfBusyEnqueue
	IfBusyReject    = api.IfBusyReject
	IfBusyInterrupt = api.IfBusyInterrupt
	IfBusyRollback  = api.IfBusyRollback
)

// Run reasons (AgentRunStatus.Reason).
const (
	ReasonMessage             = api.ReasonMessage
	ReasonQuestion            = api.ReasonQuestion
	ReasonApproval            = api.ReasonApproval
	ReasonMaxCostReached      = api.ReasonMaxCostReached
	ReasonCredits             = api.ReasonCredits
	ReasonInterrupted         = api.ReasonInterrupted
	ReasonDeadlineExceeded    = api.ReasonDeadlineExceeded
	ReasonModelError          = api.ReasonModelError
	ReasonToolError           = api.ReasonToolError
	ReasonInternalError       = api.ReasonInternalError
	ReasonUserCancelled       = api.ReasonUserCancelled
	ReasonCompleted           = api.ReasonCompleted
	ReasonDependencyWait      = api.ReasonDependencyWait
	ReasonGroupWait           = api.ReasonGroupWait
	ReasonMaxActiveReached    = api.ReasonMaxActiveReached
	ReasonDependencyFailed    = api.ReasonDependencyFailed
	ReasonDependencyCancelled = api.ReasonDependencyCancelled
	ReasonRunsFailed          = api.ReasonRunsFailed
	ReasonEvaluationTimeout   = api.ReasonEvaluationTimeout
)

// Agent states (AgentStatus.State).
const (
	AgentStateRunning = api.AgentStateRunning
	AgentStateStopped = api.AgentStateStopped
)

// Step states (Step.State).
const (
	StepStarted     = api.StepStarted
	StepCompleted   = api.StepCompleted
	StepInterrupted = api.StepInterrupted
	StepFailed      = api.StepFailed
)

// Step kinds (Step.Kind).
const (
	StepKindModel    = api.StepKindModel
	StepKindRoute    = api.StepKindRoute
	StepKindCount    = api.StepKindCount
	StepKindTool     = api.StepKindTool
	StepKindApproval = api.StepKindApproval
	StepKindQuestion = api.StepKindQuestion
	StepKindMessage  = api.StepKindMessage
	StepKindComputer = api.StepKindComputer
	StepKindLearning = api.StepKindLearning
	StepKindClock    = api.StepKindClock
	StepKindTurnPre  = api.StepKindTurnPre
	StepKindStop     = api.StepKindStop
)

// Group phases (AgentGroupStatus.Phase).
const (
	GroupRunning    = api.GroupRunning
	GroupSucceeded  = api.GroupSucceeded
	GroupFailed     = api.GroupFailed
	GroupCancelling = api.GroupCancelling
	GroupCancelled  = api.GroupCancelled
)

// Evaluation case states (EvalCase.State).
const (
	CasePending  = api.CasePending
	CaseScored   = api.CaseScored
	CaseUnscored = api.CaseUnscored
	CaseTimeout  = api.CaseTimeout
)

// Model access kinds (ModelSpec.Access).
const (
	AccessServer = api.AccessServer
	AccessBYOK   = api.AccessBYOK
)

// The values of spec.model.provider, spec.harness and spec.computer.kind.
var (
	ModelProviders = api.ModelProviders
	Harnesses      = api.Harnesses
	ComputerKinds  = computer.Kinds
)

// Trigger concurrency policies (TriggerSpec.Concurrency).
const (
	ConcurrencyAllow   = api.ConcurrencyAllow
	ConcurrencyForbid  = api.ConcurrencyForbid
	ConcurrencyReplace = api.ConcurrencyReplace
)

// Money, secrets and the learning folder.
type (
	Credits           = api.Credits
	CreditEntry       = api.CreditEntry
	CreditReservation = api.CreditReservation
	SecretInfo        = api.SecretInfo
	LearnedItem       = api.LearnedItem
	LearningList      = api.LearningList
	LearnedFile       = api.LearnedFile
	LearningCommit    = api.LearningCommit
	LearningChange    = api.LearningChange
)

// EventTypes lists every timeline event type the server writes (Event.Type), with its meaning.
var EventTypes = api.EventTypes

// Error codes (Error.Code): every code the server sends, as api.Codes registers them
// (TestClientExportsEveryCode fails when one is missing). Codes lists each with its status and
// meaning.
type (
	Code     = api.Code
	CodeInfo = api.CodeInfo
)

// Codes is the registry of every error code: its HTTP status and what it means.
var Codes = api.Codes

const (
	CodeInvalid             = api.CodeInvalid
	CodeUnknownField        = api.CodeUnknownField
	CodeWrongType           = api.CodeWrongType
	CodeRequired            = api.CodeRequired
	CodeTooLarge            = api.CodeTooLarge
	CodeDuplicateKey        = api.CodeDuplicateKey
	CodeInvalidLabel        = api.CodeInvalidLabel
	CodeNotFound            = api.CodeNotFound
	CodeAlreadyExists       = api.CodeAlreadyExists
	CodeConflict            = api.CodeConflict
	CodeMethodNotAllowed    = api.CodeMethodNotAllowed
	CodeAgentStopped        = api.CodeAgentStopped
	CodeAgentNotFound       = api.CodeAgentNotFound
	CodeAgentRunFinished    = api.CodeAgentRunFinished
	CodeRunBusy             = api.CodeRunBusy
	CodeNoAnswer            = api.CodeNoAnswer
	CodeFileNotFound        = api.CodeFileNotFound
	CodeNotResolvable       = api.CodeNotResolvable
	CodeUnpricedModel       = api.CodeUnpricedModel
	CodeSecretNotFound      = api.CodeSecretNotFound
	CodeCapNotRaised        = api.CodeCapNotRaised
	CodeUnauthorized        = api.CodeUnauthorized
	CodePersonRequired      = api.CodePersonRequired
	CodeSetupRequired       = api.CodeSetupRequired
	CodeSetupFailed         = api.CodeSetupFailed
	CodeRateLimited         = api.CodeRateLimited
	CodeTooManyRequests     = api.CodeTooManyRequests
	CodeTooManyStreams      = api.CodeTooManyStreams
	CodeClientClosed        = api.CodeClientClosed
	CodeInternal            = api.CodeInternal
	CodeStoreUnavailable    = api.CodeStoreUnavailable
	CodeStoreFull           = api.CodeStoreFull
	CodeGroupNotFound       = api.CodeGroupNotFound
	CodeGroupSealed         = api.CodeGroupSealed
	CodeGroupCancelled      = api.CodeGroupCancelled
	CodeMaxPendingReached   = api.CodeMaxPendingReached
	CodeIdempotencyReused   = api.CodeIdempotencyReused
	CodeEnvironmentNotFound = api.CodeEnvironmentNotFound
	CodePreconditionFailed  = api.CodePreconditionFailed
	CodeLearningOff         = api.CodeLearningOff
	CodeUnknownWebhookEvent = api.CodeUnknownWebhookEvent
	CodeWebhookBlocked      = api.CodeWebhookBlocked
	CodeStepNotFound        = api.CodeStepNotFound
	CodeStepNotCompleted    = api.CodeStepNotCompleted
	CodeRunPurged           = api.CodeRunPurged
	// web_fetch's refusals, in a tool result and on the timeline.
	CodeFetchBadURL             = api.CodeFetchBadURL
	CodeFetchBlocked            = api.CodeFetchBlocked
	CodeFetchNetworkOff         = api.CodeFetchNetworkOff
	CodeFetchTooManyRedirects   = api.CodeFetchTooManyRedirects
	CodeFetchRedirectNotAllowed = api.CodeFetchRedirectNotAllowed
	CodeFetchTimeout            = api.CodeFetchTimeout
	CodeFetchFailed             = api.CodeFetchFailed
	CodeFetchCut                = api.CodeFetchCut
	CodeForbidden               = api.CodeForbidden
	CodeBadRequest              = api.CodeBadRequest
	CodeInvalidRequest          = api.CodeInvalidRequest
	CodeRunStopped              = api.CodeRunStopped
	CodeTokenCountLimit         = api.CodeTokenCountLimit
)

// Limits and defaults the server applies.
const (
	MaxInputBytes           = api.MaxInputBytes
	DefaultMaxTokens        = api.DefaultMaxTokens
	DefaultMaxToolCalls     = api.DefaultMaxToolCalls
	DefaultPerRunMaxCostUSD = api.DefaultPerRunMaxCostUSD
	DefaultMaxActive        = api.DefaultMaxActive
	MaxMaxActive            = api.MaxMaxActive
	DefaultMaxPending       = api.DefaultMaxPending
	MaxBatch                = api.MaxBatch
	MaxEvalCases            = api.MaxEvalCases
	DefaultEvalTimeout      = api.DefaultEvalTimeout
	EvalLabel               = api.EvalLabel
)
