// Package api holds agentrun's resource types (Agent, AgentRun, ...), their defaults and their
// validation: the vocabulary every other package speaks. It does no I/O. Resources follow the
// Kubernetes convention {apiVersion, kind, metadata, spec, status}: users write spec, only the
// system writes status.
package api

import (
	"encoding/json"
	"slices"
	"time"

	"agentrun.dev/agentrun/internal/computer"
)

// APIVersion is the canonical apiVersion; AltAPIVersion is accepted so the Nodus seed's YAML applies as is.
const (
	APIVersion    = "agentrun.dev/v1"
	AltAPIVersion = "nodus.dev/v1"
)

// Limits from the seeds.
const (
	MaxInputBytes           = 256 << 10 // input and each message
	AnswerPreviewSize       = 4 << 10   // status.answer.preview
	DefaultMaxTokens        = 4096
	DefaultMaxToolCalls     = 50
	DefaultPerRunMaxCostUSD = "1.00"
	MaxDescriptionBytes     = 1 << 10 // spec.description
)

// ObjectMeta is the metadata every resource carries.
type ObjectMeta struct {
	Name              string            `json:"name"`
	Labels            map[string]string `json:"labels,omitempty"`
	UID               string            `json:"uid,omitempty"`
	ResourceVersion   string            `json:"resourceVersion,omitempty"`
	Generation        int64             `json:"generation,omitempty"`
	CreationTimestamp *time.Time        `json:"creationTimestamp,omitempty"`
}

// TypeMeta names the kind of a resource.
type TypeMeta struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
}

// Agent is a definition: instructions, model access, tools, computer. Every change of spec makes a
// new immutable revision (status.revision); a run pins the revision it started on.
type Agent struct {
	TypeMeta `json:",inline"`
	Metadata ObjectMeta  `json:"metadata"`
	Spec     AgentSpec   `json:"spec"`
	Status   AgentStatus `json:"status,omitempty"`
}

// AgentSpec is what a user writes for an agent.
type AgentSpec struct {
	// DisplayName is the human name (the AgentRun seed's definition.name).
	DisplayName string `json:"displayName,omitempty"`
	// Description says what the agent does, in a sentence or two (at most MaxDescriptionBytes):
	// what its MCP tool and its A2A card say of it to other agents (docs/mcp-and-a2a.md).
	Description string `json:"description,omitempty"`
	// System is the agent's instructions (system prompt).
	System   string        `json:"system,omitempty"`
	Model    ModelSpec     `json:"model,omitempty"`
	Tools    []string      `json:"tools,omitempty"`
	Skills   []string      `json:"skills,omitempty"`
	Computer *ComputerSpec `json:"computer,omitempty"`
	// Learning gives the agent a learning folder: its runs start from its notes and propose what
	// to keep when their job is done (internal/learning).
	Learning bool `json:"learning,omitempty"`
	// Harness is "builtin" (default) or an external harness name.
	Harness Harness `json:"harness,omitempty"`
	// MaxTokens is the output limit of each model call.
	MaxTokens int `json:"maxTokens,omitempty"`
	// MaxToolCalls bounds the tool calls in one turn (default 50).
	MaxToolCalls int `json:"maxToolCalls,omitempty"`
	// PerRunMaxCostUSD is the cap each run copies at creation (decimal string, default "1.00").
	PerRunMaxCostUSD string `json:"perRunMaxCostUSD,omitempty"`
	// AllowUnpricedModels lets a capped run start on a model the price table does not know; its
	// calls then cost "unknown" and the cap cannot hold them.
	AllowUnpricedModels bool `json:"allowUnpricedModels,omitempty"`
	// State "Stopped" refuses new runs.
	State string `json:"state,omitempty"`
	// Approvals decide which tool calls run, ask a person, or are refused.
	Approvals *Approvals `json:"approvals,omitempty"`
	// MCPServers are the MCP servers whose ticked tools the agent's runs are offered (see MCPServer).
	MCPServers []MCPServer `json:"mcpServers,omitempty"`
	// Workflow, when set, is the workflow document (internal/workflow) a run of this agent runs
	// instead of the agent's open loop: its input is the run's input as a JSON object.
	Workflow json.RawMessage `json:"workflow,omitempty"`
	// WorkflowChildren pins each child the workflow names by string ("workflow": "NAME", the
	// workflow of agent NAME) to that agent's revision: given, it is kept (each must exist); left
	// out, the server pins the current revision when it saves this one. Every run of this revision
	// runs those children.
	WorkflowChildren map[string]int64 `json:"workflowChildren,omitempty"`
	// IfBusy is what a message to a busy run of this agent does when the message names no mode:
	// enqueue (default), reject, interrupt or rollback (see IfBusy).
	IfBusy IfBusy `json:"ifBusy,omitempty"`
}

// ModelSpec says how the agent reaches a model.
type ModelSpec struct {
	// Access is "Server" (alias "Nodus": the server's keys) or "BYOK" (the user's apiKeySecret).
	Access Access `json:"access,omitempty"`
	// Provider is "anthropic", "openai" or "openrouter"; empty means the server's default provider.
	Provider ModelProvider `json:"provider,omitempty"`
	// Name is a concrete model id; empty means the server's default model.
	Name         string   `json:"name,omitempty"`
	Families     []string `json:"families,omitempty"`
	APIKeySecret string   `json:"apiKeySecret,omitempty"`
}

// ModelProvider is whose models an agent uses (spec.model.provider).
type ModelProvider string

// The model providers.
const (
	ProviderAnthropic  ModelProvider = "anthropic"
	ProviderOpenAI     ModelProvider = "openai"
	ProviderOpenRouter ModelProvider = "openrouter"
)

// ModelProviders are every spec.model.provider value, the one list validation and the console name.
var ModelProviders = []ModelProvider{ProviderAnthropic, ProviderOpenAI, ProviderOpenRouter}

// Known reports whether p is one of ModelProviders.
func (p ModelProvider) Known() bool { return slices.Contains(ModelProviders, p) }

// Access is how an agent reaches its model (spec.model.access).
type Access string

// Model access kinds.
const (
	AccessServer Access = "Server"
	// AccessNodus is the Nodus seed's name for AccessServer; validation rewrites it to Server.
	AccessNodus Access = "Nodus"
	AccessBYOK  Access = "BYOK"
)

// ComputerSpec names the computer an agent works on.
type ComputerSpec struct {
	Kind     computer.Kind `json:"kind,omitempty"`
	Provider string        `json:"provider,omitempty"`
	Network  bool          `json:"network,omitempty"`
}

// AgentStatus is written by the system.
type AgentStatus struct {
	Revision int64 `json:"revision,omitempty"`
	// Tools are the tools the agent's runs are offered: those spec.tools lists and those that come
	// with its computer (a sandbox or a desktop brings bash and its helpers and the file tools
	// read, write, edit, ls, grep; a browser its browser_ tools). The server fills it in on
	// every read; it is not stored.
	Tools []string `json:"tools,omitempty"`
}

// Agent states.
const (
	AgentStateRunning = "Running"
	AgentStateStopped = "Stopped"
)

// AgentRun is one conversation with an agent.
type AgentRun struct {
	TypeMeta `json:",inline"`
	Metadata ObjectMeta     `json:"metadata"`
	Spec     AgentRunSpec   `json:"spec"`
	Status   AgentRunStatus `json:"status,omitempty"`
}

// AgentRunSpec is what a user writes for a run.
type AgentRunSpec struct {
	Agent string `json:"agent"`
	// Input is the first user message (at most 256 KiB).
	Input     string `json:"input,omitempty"`
	KeepAlive bool   `json:"keepAlive,omitempty"`
	// Deadline bounds the run's lifetime: an RFC 3339 time, or a duration ("30m") from creation.
	Deadline string `json:"deadline,omitempty"`
	// MaxCostUSD defaults to the agent's perRunMaxCostUSD, copied at creation.
	MaxCostUSD string   `json:"maxCostUSD,omitempty"`
	Group      string   `json:"group,omitempty"`
	TaskKey    string   `json:"taskKey,omitempty"`
	DependsOn  []string `json:"dependsOn,omitempty"`
}

// Phase is a run's (or a group's) status.phase.
type Phase string

// Run phases.
const (
	PhaseQueued          Phase = "Queued"
	PhaseRunning         Phase = "Running"
	PhaseWaiting         Phase = "Waiting"
	PhaseNeedsResolution Phase = "NeedsResolution"
	PhaseSucceeded       Phase = "Succeeded"
	PhaseFailed          Phase = "Failed"
	PhaseCancelled       Phase = "Cancelled"
)

// Phases lists every run phase, in a run's order.
var Phases = []Phase{PhaseQueued, PhaseRunning, PhaseWaiting, PhaseNeedsResolution, PhaseSucceeded, PhaseFailed, PhaseCancelled}

// Reason says why a run (or a group) is in its phase: status.reason.
type Reason string

// Run reasons (status.reason).
const (
	ReasonMessage          Reason = "Message"
	ReasonQuestion         Reason = "Question"
	ReasonApproval         Reason = "Approval"
	ReasonMaxCostReached   Reason = "MaxCostReached"
	ReasonCredits          Reason = "Credits"
	ReasonInterrupted      Reason = "InterruptedStep"
	ReasonDeadlineExceeded Reason = "DeadlineExceeded"
	ReasonModelError       Reason = "ModelError"
	ReasonToolError        Reason = "ToolError"
	ReasonInternalError    Reason = "InternalError"
	ReasonUserCancelled    Reason = "UserCancelled"
	ReasonCompleted        Reason = "Completed"
	// ReasonStoreFull: a write of the run failed because the store's disk is full; the run goes
	// on by itself once space is freed.
	ReasonStoreFull Reason = "StoreFull"
	// ReasonModelKeyMissing: the run has work recorded but this server has no key for its model
	// provider (restarted without it); it goes on once a server with the key picks it up.
	ReasonModelKeyMissing Reason = "ModelKeyMissing"
	// ReasonWorkflowFailed: a workflow node failed (status.message names it, its key and code).
	ReasonWorkflowFailed Reason = "WorkflowFailed"
	// ReasonEscalated: a workflow's escalate node stopped it (status.escalation says why).
	ReasonEscalated Reason = "Escalated"
)

// Finished reports whether a phase is terminal. It takes any string type so a phase read from a
// column as a plain string is asked as is.
func Finished[P ~string](phase P) bool {
	p := Phase(phase)
	return p == PhaseSucceeded || p == PhaseFailed || p == PhaseCancelled
}

// WaitingOnPerson reports whether a run waits on a person (the CLI's exit code 8).
func WaitingOnPerson(phase Phase, reason Reason) bool {
	if phase == PhaseNeedsResolution {
		return true
	}
	if phase != PhaseWaiting {
		return false
	}
	switch reason {
	case ReasonQuestion, ReasonApproval, ReasonMaxCostReached, ReasonCredits, ReasonStoreFull, ReasonModelKeyMissing:
		return true
	}
	return false
}

// AgentRunStatus is written by the system.
type AgentRunStatus struct {
	Phase   Phase  `json:"phase,omitempty"`
	Reason  Reason `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// AgentRevision is the agent revision this run is pinned to.
	AgentRevision int64 `json:"agentRevision,omitempty"`
	// TraceParent is the W3C traceparent the run was created with: its spans join that trace
	// (docs/observability.md).
	TraceParent string `json:"traceParent,omitempty"`
	// Deadline is the resolved absolute deadline, if any.
	Deadline *time.Time `json:"deadline,omitempty"`
	// WaitingOn says what a Waiting or NeedsResolution run waits on.
	WaitingOn  *WaitingOn `json:"waitingOn,omitempty"`
	Answer     *Answer    `json:"answer,omitempty"`
	Cost       *RunCost   `json:"cost,omitempty"`
	Turns      []Turn     `json:"turns,omitempty"`
	StartedAt  *time.Time `json:"startedAt,omitempty"`
	FinishedAt *time.Time `json:"finishedAt,omitempty"`
	ConsoleURL string     `json:"consoleURL,omitempty"`
	// Runner is the runner that last held the run.
	Runner string `json:"runner,omitempty"`
	// CancelRequested is set when a user asked to cancel a run a runner holds.
	CancelRequested bool `json:"cancelRequested,omitempty"`
	// PayloadsPurgedAt is when retention dropped the finished run's recorded payloads (steps'
	// arguments and results, events' data, the run folder); status, cost, turns, the answer's
	// preview and the step list stay.
	PayloadsPurgedAt *time.Time `json:"payloadsPurgedAt,omitempty"`
	// Escalation is set when a workflow's escalate node ended the run (Succeeded, Escalated).
	Escalation *Escalation `json:"escalation,omitempty"`
	// FailedNode is the execution path of the workflow node a WorkflowFailed run failed at.
	FailedNode string `json:"failedNode,omitempty"`
}

// Clone is a copy of s that shares nothing a later change to s reaches (its pointers' values
// and its turns are copied): a status handed to another goroutine to encode, while its owner
// goes on changing its own.
func (s *AgentRunStatus) Clone() *AgentRunStatus {
	c := *s
	c.Deadline = clonePtr(s.Deadline)
	c.WaitingOn = clonePtr(s.WaitingOn)
	c.Answer = clonePtr(s.Answer)
	c.Cost = clonePtr(s.Cost)
	c.Turns = append([]Turn(nil), s.Turns...)
	c.StartedAt = clonePtr(s.StartedAt)
	c.FinishedAt = clonePtr(s.FinishedAt)
	c.PayloadsPurgedAt = clonePtr(s.PayloadsPurgedAt)
	c.Escalation = clonePtr(s.Escalation)
	return &c
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// Escalation is what an escalate node stopped a workflow with: its kind, stage, interpolated
// summary, and the node's label and step key.
type Escalation struct {
	Kind    string `json:"kind"`
	Stage   string `json:"stage"`
	Summary string `json:"summary"`
	Label   string `json:"label,omitempty"`
	StepKey string `json:"stepKey,omitempty"`
}

// WaitingOn names what a run waits on.
type WaitingOn struct {
	// Kind is "message", "question", "approval", "resolution", "cost", "credits", "storage" (the
	// store's disk is full) or "model" (no key for the model provider).
	Kind     string `json:"kind"`
	StepKey  string `json:"stepKey,omitempty"`
	Question string `json:"question,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

// Answer is the run's final answer: the first 4 KiB inline, the whole at /answer.
type Answer struct {
	Preview   string `json:"preview"`
	Truncated bool   `json:"truncated,omitempty"`
	Bytes     int    `json:"bytes"`
}

// RunCost is the model spend so far, in decimal dollars (strings, from integer micro-dollars).
// TotalUSD is what the run spent: on the server's access, what its calls (routing included) were
// billed from credits, at cost / 0.875; on the user's own key (BYOK), what they cost at the
// vendor's list price, billed to nobody here. It reads "unknown" when no call could be priced and
// "at least X" when some could not. VendorUSD is the list-price cost of the same calls.
type RunCost struct {
	TotalUSD  string `json:"totalUSD"`
	VendorUSD string `json:"vendorUSD,omitempty"`
	LimitUSD  string `json:"limitUSD,omitempty"`
	// NeededUSD, while the run waits with MaxCostReached, is the least cap that lets it make its
	// next call; while it waits with Credits, the least amount of credits to add.
	NeededUSD string `json:"neededUSD,omitempty"`
	// Billing is "credits" (server access) or "none" (BYOK: metered, not billed, no cap).
	Billing string `json:"billing,omitempty"`
}

// Turn is one prompt answered by the model: the input or a message, and every model call (with
// its tool calls) until the answer. The model is chosen once per turn and never changes within it.
type Turn struct {
	Index  int    `json:"index"`
	Model  string `json:"model,omitempty"`
	Family string `json:"family,omitempty"`
	// ChosenBy is "jev" (the router decided), "fallback" (the router failed, timed out or answered
	// out of bounds), "rules" (the deterministic router), or "agent" (the agent names its model).
	ChosenBy   string  `json:"chosenBy,omitempty"`
	Confidence float64 `json:"confidence,omitempty"`
	// ModelCalls counts the model calls of the turn (the routing call not included).
	ModelCalls int `json:"modelCalls,omitempty"`
	// Token counts of the turn's model calls, by kind. InputTokens excludes cache reads and writes;
	// CacheWrite1hTokens is the part of CacheWriteTokens written for one hour; ReasoningTokens is
	// the part of OutputTokens spent reasoning.
	InputTokens        int64 `json:"inputTokens,omitempty"`
	OutputTokens       int64 `json:"outputTokens,omitempty"`
	CacheReadTokens    int64 `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens   int64 `json:"cacheWriteTokens,omitempty"`
	CacheWrite1hTokens int64 `json:"cacheWrite1hTokens,omitempty"`
	ReasoningTokens    int64 `json:"reasoningTokens,omitempty"`
	// RouteCostUSD is what the routing call cost; CostUSD is the whole turn (routing included), in
	// the same terms as status.cost.totalUSD.
	RouteCostUSD string `json:"routeCostUSD,omitempty"`
	CostUSD      string `json:"costUSD,omitempty"`
}

// Step is one journaled step of a run, as the API shows it.
type Step struct {
	Seq         int64           `json:"seq"`
	Key         string          `json:"key"`
	Kind        StepKind        `json:"kind"`
	State       StepState       `json:"state"`
	Title       string          `json:"title,omitempty"`
	Attempt     int             `json:"attempt"`
	ArgsHash    string          `json:"argsHash,omitempty"`
	Args        json.RawMessage `json:"args,omitempty"`
	Result      json.RawMessage `json:"result,omitempty"`
	Error       string          `json:"error,omitempty"`
	CostMicros  *int64          `json:"costMicros,omitempty"`
	StartedAt   time.Time       `json:"startedAt"`
	CompletedAt *time.Time      `json:"completedAt,omitempty"`
	// Resolution is a person's decision on an interrupted step (retry, skip or complete) or on
	// an approval (approve or deny).
	Resolution       Resolution      `json:"resolution,omitempty"`
	ResolutionResult json.RawMessage `json:"resolutionResult,omitempty"`
	// RolledBack marks a step of a turn a message with ifBusy rollback discarded: its effects on
	// the run folder were undone and the conversation goes on without it (its cost still counts).
	RolledBack bool `json:"rolledBack,omitempty"`
	// CopiedFrom names the run a fork copied this step from (its key is the same there); a copied
	// step replays and is not billed again.
	CopiedFrom string `json:"copiedFrom,omitempty"`
}

// StepKind is what a journal step does. The values are stored in journals and shown by the
// API, so they never change (journals already stored must replay).
type StepKind string

// The step kinds the journal records.
const (
	StepKindModel    StepKind = "model"    // a model call
	StepKindRoute    StepKind = "route"    // the routing call choosing a turn's model
	StepKindCount    StepKind = "count"    // a token count a harness asked for
	StepKindTool     StepKind = "tool"     // a tool call (folder, computer, MCP, skill, note, workflow)
	StepKindApproval StepKind = "approval" // a person's approval of a tool call or a kept file
	StepKindQuestion StepKind = "question" // a question to a person and its answer
	StepKindMessage  StepKind = "message"  // a message the run received
	StepKindComputer StepKind = "computer" // the run's computer being created
	StepKindLearning StepKind = "learning" // a learning agent's base, proposal and commit
	StepKindClock    StepKind = "clock"    // a workflow's reading of the time
	StepKindTurnPre  StepKind = "turn.pre" // the run folder's files before a turn (for a rollback)
	// StepKindStop records a turn stopped by a message (interrupt or rollback); its result is a
	// TurnStop.
	StepKindStop StepKind = "turn.stop"
)

// StepState is a journal step's state.
type StepState string

// Step states.
const (
	StepStarted     StepState = "Started"
	StepCompleted   StepState = "Completed"
	StepInterrupted StepState = "Interrupted"
	StepFailed      StepState = "Failed"
)

// Resolution is a person's decision on a step that waits for one (Step.Resolution).
type Resolution string

// Resolutions: of an interrupted step, and of an approval.
const (
	ResolveRetry    Resolution = "retry"
	ResolveSkip     Resolution = "skip"
	ResolveComplete Resolution = "complete"
	ResolveApprove  Resolution = "approve"
	ResolveDeny     Resolution = "deny"
)

// Event is one timeline entry of a run. Seq is resumable (SSE Last-Event-ID).
type Event struct {
	Seq     int64           `json:"seq"`
	Time    time.Time       `json:"time"`
	Type    EventType       `json:"type"`
	StepKey string          `json:"stepKey,omitempty"`
	Message string          `json:"message,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Message is one message sent to a run.
type Message struct {
	Seq     int64     `json:"seq"`
	Key     string    `json:"messageKey,omitempty"`
	Payload string    `json:"payload"`
	Time    time.Time `json:"time"`
	// IfBusy is the mode the message was taken with when its run was busy (interrupt, rollback or
	// enqueue); empty when the run was not busy, so it was taken as always.
	IfBusy IfBusy `json:"ifBusy,omitempty"`
}

// List is a list of resources of one kind.
type List[T any] struct {
	TypeMeta `json:",inline"`
	Items    []T `json:"items"`
}
