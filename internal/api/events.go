package api

import "strings"

// EventType is the type of a timeline event (Event.Type). Every type the server writes is a
// constant here and in EventTypes; TestEveryEventTypeIsListed fails on one written anywhere else.
type EventType string

// Timeline event types.
const (
	EventRunCreated         EventType = "run.created"
	EventRunAdmitted        EventType = "run.admitted"
	EventRunStarted         EventType = "run.started"
	EventRunResumed         EventType = "run.resumed"
	EventRunWaiting         EventType = "run.waiting"
	EventRunQuestion        EventType = "run.question"
	EventRunApproval        EventType = "run.approval"
	EventRunCapRaised       EventType = "run.cap_raised"
	EventRunCancelRequested EventType = "run.cancel_requested"
	EventRunResolution      EventType = "run.resolution"
	EventRunDiverged        EventType = "run.diverged"
	EventRunSucceeded       EventType = "run.succeeded"
	EventRunFailed          EventType = "run.failed"
	EventRunCancelled       EventType = "run.cancelled"
	EventRunForked          EventType = "run.forked"

	EventStepStarted     EventType = "step.started"
	EventStepCompleted   EventType = "step.completed"
	EventStepFailed      EventType = "step.failed"
	EventStepInterrupted EventType = "step.interrupted"
	EventStepRetried     EventType = "step.retried"
	EventStepResolved    EventType = "step.resolved"

	EventMessageReceived EventType = "message.received"
	EventMessageQueued   EventType = "message.queued"
	EventRunInterrupted  EventType = "run.interrupted"
	EventTurnRolledBack  EventType = "turn.rolledBack"
	EventAnswer          EventType = "answer"
	EventApprovalApprove EventType = "approval.approve"
	EventApprovalDeny    EventType = "approval.deny"
	EventToolRefused     EventType = "tool.refused"
	EventToolCut         EventType = "tool.cut"
	EventTurnRouted      EventType = "turn.routed"
	EventCostDiscrepancy EventType = "cost.discrepancy"
	EventCostHeld        EventType = "cost.held"

	EventFolderRestored    EventType = "folder.restored"
	EventComputerPreparing EventType = "computer.preparing"
	EventComputerPrepared  EventType = "computer.prepared"
	EventComputerRecreated EventType = "computer.recreated"
	EventTakeoverClick     EventType = "takeover.click"
	EventTakeoverType      EventType = "takeover.type"
	EventTakeoverKey       EventType = "takeover.key"

	EventStoreFull  EventType = "store.full"
	EventStoreSpace EventType = "store.space"

	EventHarnessInstall    EventType = "harness.install"
	EventHarnessStarted    EventType = "harness.started"
	EventHarnessExited     EventType = "harness.exited"
	EventHarnessWaiting    EventType = "harness.waiting"
	EventGatewayClamped    EventType = "gateway.clamped"
	EventGatewayTranslated EventType = "gateway.translated"
	EventSkillOpened       EventType = "skill.opened"
	EventMCPUnavailable    EventType = "mcp.unavailable"

	EventLearningGiven     EventType = "learning.given"
	EventLearningOpened    EventType = "learning.opened"
	EventLearningProposed  EventType = "learning.proposed"
	EventLearningRefused   EventType = "learning.refused"
	EventLearningDropped   EventType = "learning.dropped"
	EventLearningKept      EventType = "learning.kept"
	EventLearningCommitted EventType = "learning.committed"
)

// EventTypeInfo is one listed event type and when it is written.
type EventTypeInfo struct {
	Type    EventType
	Meaning string
}

// EventTypes lists every timeline event type the server writes.
var EventTypes = []EventTypeInfo{
	{EventRunCreated, "the run was created and queued"},
	{EventRunAdmitted, "its group admitted the run"},
	{EventRunStarted, "a runner started the run"},
	{EventRunResumed, "a runner took the run up again after a restart or a wait"},
	{EventRunWaiting, "the run waits (a message, its cap, credits, a model key)"},
	{EventRunQuestion, "the agent asked a person a question"},
	{EventRunApproval, "a tool call waits for a person's approval"},
	{EventRunCapRaised, "a person raised the run's cap"},
	{EventRunCancelRequested, "a user (or the run's group) asked to cancel the run"},
	{EventRunResolution, "a person chose retry, skip or complete for an interrupted step"},
	{EventRunDiverged, "a replay differed from what the journal recorded"},
	{EventRunSucceeded, "the run finished with an answer"},
	{EventRunFailed, "the run failed"},
	{EventRunCancelled, "the run was cancelled"},
	{EventRunForked, "the run was made as a fork of another run at one of its steps (data: source, atStep)"},
	{EventStepStarted, "a journal step started"},
	{EventStepCompleted, "a journal step completed"},
	{EventStepFailed, "a journal step failed"},
	{EventStepInterrupted, "a journal step was cut off by a crash or its computer"},
	{EventStepRetried, "an interrupted step runs again as a person asked"},
	{EventStepResolved, "an interrupted step was resolved"},
	{EventMessageReceived, "a message reached the run"},
	{EventMessageQueued, "a message reached the run while a turn was in flight: it waits (ifBusy enqueue) or stops the turn (interrupt, rollback)"},
	{EventRunInterrupted, "a message (ifBusy interrupt) stopped the turn in flight; it starts the next turn"},
	{EventTurnRolledBack, "a message (ifBusy rollback) discarded the turn in flight: its steps rolled back, the run folder restored"},
	{EventAnswer, "the agent answered"},
	{EventApprovalApprove, "a person approved a tool call"},
	{EventApprovalDeny, "a person denied a tool call"},
	{EventToolRefused, "a tool call was refused (approvals or a bad input)"},
	{EventToolCut, "a tool's result was cut at its size limit (web_fetch's maxBytes: code FetchCut)"},
	{EventTurnRouted, "the router chose the turn's model"},
	{EventCostDiscrepancy, "a vendor reported usage beyond what the call could spend"},
	{EventCostHeld, "a model call waits for calls in flight beside it (a map's items) to settle: with their worst cases the run's cap has no room for it yet"},
	{EventFolderRestored, "the run folder was restored from the store"},
	{EventComputerPreparing, "the run waits for its computer's provider"},
	{EventComputerPrepared, "the computer's provider is ready"},
	{EventComputerRecreated, "the run's computer was created again"},
	{EventTakeoverClick, "a person clicked on the run's screen"},
	{EventTakeoverType, "a person typed on the run's screen"},
	{EventTakeoverKey, "a person pressed a key on the run's screen"},
	{EventStoreFull, "a write failed on a full store disk; the run waits"},
	{EventStoreSpace, "the store has space again; the run goes on"},
	{EventHarnessInstall, "an external harness is being installed"},
	{EventHarnessStarted, "an external harness started (inside the run's computer, or on the runner in the run folder)"},
	{EventHarnessExited, "an external harness exited with an error"},
	{EventHarnessWaiting, "a workflow agent node's harness waits for one of the run computer's guarded node homes to be free"},
	{EventGatewayClamped, "the gateway clamped a harness's output tokens to the agent's maxTokens"},
	{EventGatewayTranslated, "the gateway translates a harness's calls to the run's vendor API (Codex's Responses calls to Anthropic's Messages)"},
	{EventSkillOpened, "the agent opened one of its skills"},
	{EventMCPUnavailable, "an MCP server did not start, died or lacks a ticked tool; its tools answer with the error"},
	{EventLearningGiven, "the run started from its agent's learning folder: the commit and the notes in its instructions"},
	{EventLearningOpened, "the run opened one of its learned notes"},
	{EventLearningProposed, "the run proposed what to keep in its learning folder"},
	{EventLearningRefused, "a proposed item failed the code's checks (a secret, a path, a size, front matter)"},
	{EventLearningDropped, "the grader, or a person, dropped a proposed item"},
	{EventLearningKept, "a proposed item passed the checks and the grader (and a person, for a risky one)"},
	{EventLearningCommitted, "what the run's proposal kept was committed to its learning folder's main"},
}

// FinishEvent is the event of a run finishing in a terminal phase (run.failed for a phase that
// is not one: a run only finishes in a terminal phase).
func FinishEvent(phase Phase) EventType {
	switch phase {
	case PhaseSucceeded:
		return EventRunSucceeded
	case PhaseCancelled:
		return EventRunCancelled
	}
	return EventRunFailed
}

// ApprovalEvent is the event of a person's decision on an approval ("approve" or "deny").
func ApprovalEvent(decision Resolution) EventType {
	if decision == ResolveApprove {
		return EventApprovalApprove
	}
	return EventApprovalDeny
}

// EventTable is the table of event types in docs/limits-and-errors.md, made from EventTypes.
func EventTable() string {
	var b strings.Builder
	b.WriteString("| type | when |\n|---|---|\n")
	for _, e := range EventTypes {
		b.WriteString("| `" + string(e.Type) + "` | " + e.Meaning + " |\n")
	}
	return b.String()
}
