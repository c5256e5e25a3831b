package server

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"agentrun.dev/agentrun/internal/a2a"
	"agentrun.dev/agentrun/internal/api"
	"agentrun.dev/agentrun/internal/cost"
	"agentrun.dev/agentrun/internal/trigger"
)

// apiRoute is one route of the API as GET /v2/openapi.json describes it. Pattern is the
// ServeMux pattern the handler is registered with; TestOpenAPIRoutes fails when the registered
// patterns and this table differ, either way.
type apiRoute struct {
	Pattern string // "GET /v2/agents/{name}"
	Summary string
	Tag     string
	// Public routes take no bearer credential (sign-in, signed webhooks, health).
	Public bool
	Query  []apiParam
	Header []apiParam
	// Body is the request body's Go type (nil: none); BodyAlt are other shapes it may take.
	Body     reflect.Type
	BodyAlt  []reflect.Type
	BodyNote string
	// OptionalBody: an empty body is allowed.
	OptionalBody bool
	Responses    []apiResponse
	// Errors are the codes the route answers besides those every route of its kind can (see
	// routeErrors).
	Errors []api.Code
}

type apiParam struct {
	Name, Description string
	Schema            map[string]any
}

type apiResponse struct {
	Status      int
	Description string
	// Type is the JSON body's Go type; Types several it may be (anyOf).
	Type  reflect.Type
	Types []reflect.Type
	// Content is the media type when not JSON (Type is then nil): text/plain, text/event-stream, ...
	Content string
	Header  []apiParam
}

func typ[T any]() reflect.Type { return reflect.TypeFor[T]() }

// Shapes of answers that handlers write as maps: each mirrors its handler's keys, and the e2e
// suite holds what the handlers send against them.
type (
	items[T any] struct {
		Items []T `json:"items"`
	}
	deletedAnswer struct {
		Status string `json:"status"`
		Name   string `json:"name"`
	}
	groupDeletedAnswer struct {
		Status      string `json:"status"`
		Name        string `json:"name"`
		RunsDeleted int    `json:"runsDeleted"`
	}
	messagePostedAnswer struct {
		Message api.Message `json:"message"`
		Created bool        `json:"created"`
	}
	pricesAnswer struct {
		Version  string            `json:"version"`
		Unit     string            `json:"unit"`
		Markup   string            `json:"markup"`
		Families map[string]string `json:"families"`
		Models   []cost.Entry      `json:"models"`
	}
	secretSetAnswer struct {
		Name string   `json:"name"`
		Keys []string `json:"keys"`
		Set  bool     `json:"set"`
	}
	secretDeletedAnswer struct {
		Name    string `json:"name"`
		Deleted bool   `json:"deleted"`
	}
	loginAnswer struct {
		User    string `json:"user"`
		Session string `json:"session"`
	}
	deliveriesAnswer struct {
		Webhook string                `json:"webhook"`
		Items   []api.WebhookDelivery `json:"items"`
	}
	firesAnswer struct {
		Trigger string            `json:"trigger"`
		Items   []api.TriggerFire `json:"items"`
	}
	triggerTestAnswer struct {
		Trigger string          `json:"trigger"`
		Event   json.RawMessage `json:"event"`
		Input   json.RawMessage `json:"input"`
		Run     api.AgentRun    `json:"run"`
		Started bool            `json:"started"`
	}
	fireAnswer struct {
		Fire       api.TriggerFire `json:"fire"`
		Replayed   bool            `json:"replayed"`
		ConsoleURL string          `json:"consoleURL,omitempty"`
	}
	hookPongAnswer struct {
		OK      bool   `json:"ok"`
		Trigger string `json:"trigger"`
		Message string `json:"message"`
	}
	hookIgnoredAnswer struct {
		Ignored bool   `json:"ignored"`
		Reason  string `json:"reason"`
	}
	fileEntry struct {
		Path     string    `json:"path"`
		Size     int64     `json:"size"`
		Modified time.Time `json:"modified"`
	}
	endEvent struct {
		Phase  api.Phase `json:"phase"`
		Reason string    `json:"reason"`
	}
	capabilitiesAnswer map[string]any
	runListBody        struct {
		api.TypeMeta `json:",inline"`
		Items        []api.AgentRun `json:"items"`
	}
)

var (
	nameParam = apiParam{Name: "name", Description: "the resource's metadata.name"}
	dryRunQ   = apiParam{Name: "dryRun", Description: "All: check the request as it would be made (validated, and checked against what it names on this server) and store nothing; the answer carries X-Agentrun-Dry-Run: All. Any other value is refused (422, field dryRun); so is a dry run of an AgentRunList", Schema: map[string]any{"type": "string", "enum": []any{"All"}}}
	limitQ    = apiParam{Name: "limit", Description: "at most this many entries", Schema: map[string]any{"type": "integer", "minimum": 0}}
)

func ok(t reflect.Type) []apiResponse { return []apiResponse{{Status: 200, Type: t}} }
func created(t reflect.Type) []apiResponse {
	return []apiResponse{{Status: 201, Type: t, Description: "created"}}
}
func appliedOr(t reflect.Type) []apiResponse {
	return []apiResponse{{Status: 200, Type: t, Description: "updated or unchanged (X-Agentrun-Apply says which)"},
		{Status: 201, Type: t, Description: "created (X-Agentrun-Apply: created)"}}
}

// Codes that come with a kind of request; routeErrors adds them to a route's own.
var (
	authCodes = []api.Code{api.CodeUnauthorized, api.CodeInternal, api.CodeStoreUnavailable, api.CodeClientClosed}
	bodyCodes = []api.Code{api.CodeInvalid, api.CodeUnknownField, api.CodeWrongType, api.CodeRequired, api.CodeTooLarge, api.CodeDuplicateKey, api.CodeStoreFull}
	runCodes  = []api.Code{api.CodeAgentNotFound, api.CodeAgentStopped, api.CodeUnpricedModel, api.CodeSecretNotFound, api.CodeAlreadyExists,
		api.CodeInvalidLabel, api.CodeGroupNotFound, api.CodeGroupSealed, api.CodeGroupCancelled, api.CodeMaxPendingReached, api.CodeConflict}
	agentCodes = []api.Code{api.CodeInvalidLabel, api.CodeSecretNotFound, api.CodeNotFound}
)

func codes(lists ...[]api.Code) []api.Code {
	var out []api.Code
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// apiRoutes is every route the server registers (the console's HTML pages, in package console,
// aside), in the order the document lists them.
var apiRoutes = []apiRoute{
	{Pattern: "GET /livez", Tag: "server", Public: true, Summary: "ok while the process serves HTTP (asks nothing of the store): for liveness probes that restart the process",
		Responses: []apiResponse{{Status: 200, Content: "text/plain"}}},
	{Pattern: "GET /healthz", Tag: "server", Public: true, Summary: "ok when the store answers a cheap query in time",
		Responses: []apiResponse{{Status: 200, Content: "text/plain"}, {Status: 503, Content: "text/plain", Description: "the store does not answer"}}},
	{Pattern: "GET /readyz", Tag: "server", Public: true, Summary: "ok when the process can take work: the store answers, its schema is current, and the runner part (if any) is claiming",
		Responses: []apiResponse{{Status: 200, Content: "text/plain"}, {Status: 503, Content: "text/plain", Description: "names the check that failed: store, schema or runner"}}},
	{Pattern: "GET /SKILL.md", Tag: "server", Public: true, Summary: "The skill teaching a coding agent this CLI (the text agentrun skill install writes)",
		Responses: []apiResponse{{Status: 200, Content: "text/markdown"}}},
	{Pattern: "GET /metrics", Tag: "server", Summary: "Prometheus metrics (counts and latencies only); without credentials only under serve --metrics-public",
		Responses: []apiResponse{{Status: 200, Content: "text/plain"}}},
	{Pattern: "GET /v2/openapi.json", Tag: "server", Summary: "This document", Responses: ok(typ[map[string]any]())},
	{Pattern: "GET /v2/capabilities", Tag: "server", Summary: "What this server can run: computers, harnesses, store", Responses: ok(typ[capabilitiesAnswer]())},
	{Pattern: "GET /v2/runners", Tag: "server", Summary: "Runners and their heartbeats", Responses: ok(typ[items[runnerView]]())},
	{Pattern: "POST /v2/login", Tag: "people", Public: true, Summary: "Sign in (or set the first password with the setup code); answers a session token",
		Body: typ[loginBody](), Responses: ok(typ[loginAnswer]()),
		Errors: []api.Code{api.CodeUnauthorized, api.CodeSetupRequired, api.CodeSetupFailed, api.CodeRateLimited, api.CodeTooManyRequests, api.CodeInternal, api.CodeClientClosed}},
	{Pattern: "GET /v2/whoami", Tag: "people", Summary: "Who the credential is: the API token or a person", Responses: ok(typ[Principal]())},
	{Pattern: "POST /v2/logout", Tag: "people", Summary: "End the session the request carries", OptionalBody: true,
		Responses: []apiResponse{{Status: 204, Description: "signed out"}}, Errors: []api.Code{api.CodePersonRequired}},

	{Pattern: "GET /v2/agents", Tag: "agents", Summary: "List agents", Responses: ok(typ[api.List[api.Agent]]())},
	{Pattern: "POST /v2/agents", Tag: "agents", Query: []apiParam{dryRunQ}, Summary: "Create an agent (a resource, or the seed's {definition})",
		Body: typ[api.Agent](), BodyAlt: []reflect.Type{typ[api.SeedAgentBody]()}, Responses: created(typ[api.Agent]()), Errors: codes(agentCodes, []api.Code{api.CodeAlreadyExists})},
	{Pattern: "GET /v2/agents/{name}", Tag: "agents", Summary: "Get an agent", Responses: ok(typ[api.Agent]()), Errors: []api.Code{api.CodeNotFound}},
	{Pattern: "PUT /v2/agents/{name}", Tag: "agents", Query: []apiParam{dryRunQ}, Summary: "Apply an agent (create or replace its spec: a new revision when it changes)",
		Body: typ[api.Agent](), BodyAlt: []reflect.Type{typ[api.SeedAgentBody]()}, Responses: appliedOr(typ[api.Agent]()), Errors: codes(agentCodes, []api.Code{api.CodeConflict})},
	{Pattern: "PATCH /v2/agents/{name}", Tag: "agents", Summary: "Merge-patch an agent", Body: typ[api.Agent](), BodyNote: "a JSON merge patch of the resource",
		Responses: ok(typ[api.Agent]()), Errors: codes(agentCodes, []api.Code{api.CodeConflict})},
	{Pattern: "DELETE /v2/agents/{name}", Tag: "agents", Summary: "Delete an agent (its revisions are kept)", Responses: ok(typ[deletedAnswer]()), Errors: []api.Code{api.CodeNotFound, api.CodeStoreFull}},
	{Pattern: "GET /v2/agents/{name}/mcp-tools/{server}", Tag: "agents", Summary: "List the tools of one of the agent's MCP servers, each marked ticked or not",
		Responses: ok(typ[api.MCPToolList]()), Errors: []api.Code{api.CodeNotFound, api.CodeInvalid, api.CodeSecretNotFound}},
	{Pattern: "POST /v2/agents/{name}/runs", Tag: "runs", Query: []apiParam{dryRunQ}, Summary: "Start a run of the agent ({input: {content}})", Body: typ[api.SeedRunBody](),
		Responses: created(typ[api.AgentRun]()), Errors: runCodes},

	{Pattern: "GET /v2/agentruns", Tag: "runs", Summary: "List runs",
		Query: []apiParam{{Name: "agent", Description: "only this agent's runs"}, {Name: "phase", Description: "only runs in this phase"},
			{Name: "fieldSelector", Description: "comma-separated spec.agent=A, status.phase=P, spec.group=G"}},
		Responses: ok(typ[api.List[api.AgentRun]]()), Errors: []api.Code{api.CodeInvalid}},
	{Pattern: "POST /v2/agentruns", Tag: "runs", Query: []apiParam{dryRunQ}, Summary: "Create a run (a resource or the seed's {agent, input}), or an AgentRunList of up to 100 runs: all or nothing, in list order",
		Header: []apiParam{{Name: "Idempotency-Key", Description: "with an AgentRunList: a repeat with the same key and body answers the first result (200, Idempotent-Replayed: true); the same key with another body is 422 IdempotencyKeyReused"}},
		Body:   typ[api.AgentRun](), BodyAlt: []reflect.Type{typ[api.SeedRunBody](), typ[runListBody]()},
		Responses: []apiResponse{{Status: 201, Types: []reflect.Type{typ[api.AgentRun](), typ[api.List[api.AgentRun]]()}, Description: "created: the run, or the list"},
			{Status: 200, Type: typ[api.List[api.AgentRun]](), Description: "a replayed batch (Idempotent-Replayed: true)", Header: []apiParam{{Name: "Idempotent-Replayed", Description: "true"}}}},
		Errors: codes(runCodes, []api.Code{api.CodeIdempotencyReused})},
	{Pattern: "GET /v2/agentruns/{name}", Tag: "runs", Summary: "Get a run", Responses: ok(typ[api.AgentRun]()), Errors: []api.Code{api.CodeNotFound}},
	{Pattern: "PUT /v2/agentruns/{name}", Tag: "runs", Query: []apiParam{dryRunQ}, Summary: "Apply a run (create it, or the same spec again)", Body: typ[api.AgentRun](),
		Responses: appliedOr(typ[api.AgentRun]()), Errors: runCodes},
	{Pattern: "PATCH /v2/agentruns/{name}", Tag: "runs", Summary: "Raise the run's own cap {spec: {maxCostUSD}} (raise only; nothing else may change)",
		Body: typ[api.AgentRun](), BodyNote: "a JSON merge patch: only spec.maxCostUSD", Responses: ok(typ[api.AgentRun]()),
		Errors: []api.Code{api.CodeNotFound, api.CodeCapNotRaised, api.CodeConflict, api.CodeAgentRunFinished}},
	{Pattern: "DELETE /v2/agentruns/{name}", Tag: "runs", Summary: "Delete a run", Responses: ok(typ[deletedAnswer]()), Errors: []api.Code{api.CodeNotFound, api.CodeStoreFull}},
	{Pattern: "POST /v2/agentruns/{name}/messages", Tag: "runs", Summary: "Send a message {payload, messageKey, ifBusy}: a key is delivered once; ifBusy says what it does to a turn in flight",
		Body: typ[messageBody](), Responses: []apiResponse{{Status: 202, Type: typ[messagePostedAnswer]()}}, Errors: []api.Code{api.CodeNotFound, api.CodeAgentRunFinished, api.CodeRunBusy, api.CodeInvalid}},
	{Pattern: "GET /v2/agentruns/{name}/messages", Tag: "runs", Summary: "List the run's messages", Responses: ok(typ[items[api.Message]]()), Errors: []api.Code{api.CodeNotFound}},
	{Pattern: "POST /v2/agentruns/{name}/fork", Tag: "runs", Summary: "Fork the run at a completed step {atStep, name, message, maxCostUSD}: a new run with its steps up to there and its folder as that step left it",
		Body: typ[api.ForkRequest](), Responses: created(typ[api.AgentRun]()),
		Errors: []api.Code{api.CodeNotFound, api.CodeStepNotFound, api.CodeStepNotCompleted, api.CodeRunPurged, api.CodeAlreadyExists, api.CodeInvalidLabel}},
	{Pattern: "POST /v2/agentruns/{name}/cancel", Tag: "runs", Summary: "Cancel a run", OptionalBody: true, Responses: ok(typ[api.AgentRun]()),
		Errors: []api.Code{api.CodeNotFound, api.CodeStoreFull, api.CodeAgentRunFinished}},
	{Pattern: "GET /v2/agentruns/{name}/steps", Tag: "runs", Summary: "The run's journal: each model and tool call, in order", Responses: ok(typ[items[api.Step]]()), Errors: []api.Code{api.CodeNotFound}},
	{Pattern: "GET /v2/agentruns/{name}/nodes", Tag: "runs", Summary: "A workflow run's node tree: each node's state, value preview and cost, rolled up", Responses: ok(typ[api.WorkflowTree]()), Errors: []api.Code{api.CodeNotFound}},
	{Pattern: "GET /v2/agentruns/{name}/answer", Tag: "runs", Summary: "The whole answer",
		Responses: []apiResponse{{Status: 200, Content: "text/plain"}}, Errors: []api.Code{api.CodeNotFound, api.CodeNoAnswer}},
	{Pattern: "GET /v2/agentruns/{name}/events", Tag: "runs", Summary: "The timeline: a JSON page, or with Accept: text/event-stream an SSE stream that follows the run until it finishes",
		Query:  []apiParam{{Name: "after", Description: "only events after this seq", Schema: map[string]any{"type": "integer"}}},
		Header: []apiParam{{Name: "Last-Event-ID", Description: "resume the stream after this event's id (its seq)"}, {Name: "Accept", Description: "text/event-stream for the stream"}},
		Responses: []apiResponse{{Status: 200, Types: []reflect.Type{typ[items[api.Event]]()}, Content: "application/json+text/event-stream",
			Description: "JSON: up to 1000 events. SSE: `retry: 1000`, then one `id: SEQ` / `event: TYPE` / `data: EVENT-JSON` per event, `event: end` with `{phase, reason}` once the run finished, `: keepalive` comments"}},
		Errors: []api.Code{api.CodeNotFound, api.CodeTooManyStreams}},
	{Pattern: "GET /v2/agentruns/{name}/files/{path...}", Tag: "runs", Summary: "A file of the run folder (its bytes), or a directory's listing",
		Responses: []apiResponse{{Status: 200, Types: []reflect.Type{typ[items[fileEntry]]()}, Content: "application/json+application/octet-stream", Description: "a file's bytes, or {items} listing a directory"}},
		Errors:    []api.Code{api.CodeNotFound, api.CodeFileNotFound, api.CodeInvalid}},
	{Pattern: "POST /v2/agentruns/{name}/resolve", Tag: "runs", Summary: "Resolve an interrupted step {action: retry|skip|complete, result}",
		Body: typ[resolveBody](), Responses: ok(typ[api.AgentRun]()), Errors: []api.Code{api.CodeNotFound, api.CodeNotResolvable}},
	{Pattern: "GET /v2/agentruns/{name}/approvals", Tag: "approvals", Summary: "The run's tool calls that asked for approval, pending and decided", Responses: ok(typ[items[approvalView]]()), Errors: []api.Code{api.CodeNotFound}},
	{Pattern: "POST /v2/agentruns/{name}/approvals/{id}", Tag: "approvals", Summary: "Approve or deny a waiting tool call (a signed-in person only)",
		Body: typ[decisionBody](), Responses: ok(typ[approvalView]()), Errors: []api.Code{api.CodeNotFound, api.CodePersonRequired, api.CodeConflict}},

	{Pattern: "GET /v2/credits", Tag: "money", Summary: "Credits: balance, reservations held by calls in flight, ledger", Query: []apiParam{limitQ},
		Responses: ok(typ[api.Credits]()), Errors: []api.Code{api.CodeInvalid}},
	{Pattern: "POST /v2/credits", Tag: "money", Summary: "Add credits {amountUSD, note}; runs waiting on credits continue", Body: typ[addCreditsBody](), Responses: created(typ[api.Credits]())},
	{Pattern: "GET /v2/prices", Tag: "money", Summary: "The price table: version, families, micro-dollars per million tokens", Responses: ok(typ[pricesAnswer]())},
	{Pattern: "GET /v2/secrets", Tag: "secrets", Summary: "Secrets: names and key names, never values", Responses: ok(typ[items[api.SecretInfo]]())},
	{Pattern: "PUT /v2/secrets/{name}", Tag: "secrets", Summary: "Set a sealed secret {data: {KEY: value}} (a signed-in person only)", Body: typ[secretBody](),
		Responses: ok(typ[secretSetAnswer]()), Errors: []api.Code{api.CodePersonRequired}},
	{Pattern: "DELETE /v2/secrets/{name}", Tag: "secrets", Summary: "Remove a secret (a signed-in person only)", Responses: ok(typ[secretDeletedAnswer]()),
		Errors: []api.Code{api.CodePersonRequired, api.CodeNotFound, api.CodeStoreFull}},

	{Pattern: "GET /v2/agentgroups", Tag: "groups", Summary: "List groups with their status", Responses: ok(typ[api.List[api.AgentGroup]]())},
	{Pattern: "POST /v2/agentgroups", Tag: "groups", Query: []apiParam{dryRunQ}, Summary: "Create a group (spec.agent, limits, sealed, evaluation)", Body: typ[api.AgentGroup](),
		Responses: created(typ[api.AgentGroup]()), Errors: []api.Code{api.CodeAlreadyExists, api.CodeAgentNotFound, api.CodeInvalidLabel, api.CodeEnvironmentNotFound}},
	{Pattern: "GET /v2/agentgroups/{name}", Tag: "groups", Summary: "Get a group", Responses: ok(typ[api.AgentGroup]()), Errors: []api.Code{api.CodeNotFound}},
	{Pattern: "PUT /v2/agentgroups/{name}", Tag: "groups", Query: []apiParam{dryRunQ}, Summary: "Apply a group", Body: typ[api.AgentGroup](), Responses: appliedOr(typ[api.AgentGroup]()),
		Errors: []api.Code{api.CodeConflict, api.CodeAgentNotFound, api.CodeInvalidLabel, api.CodeEnvironmentNotFound, api.CodeGroupCancelled}},
	{Pattern: "PATCH /v2/agentgroups/{name}", Tag: "groups", Summary: "Merge-patch a group (maxActive, a higher maxCostUSD, sealed: true)", Body: typ[api.AgentGroup](),
		BodyNote: "a JSON merge patch of the resource", Responses: ok(typ[api.AgentGroup]()), Errors: []api.Code{api.CodeNotFound, api.CodeConflict, api.CodeGroupCancelled}},
	{Pattern: "DELETE /v2/agentgroups/{name}", Tag: "groups", Summary: "Delete a group with all its runs", Responses: ok(typ[groupDeletedAnswer]()), Errors: []api.Code{api.CodeNotFound, api.CodeStoreFull}},
	{Pattern: "POST /v2/agentgroups/{name}/cancel", Tag: "groups", Summary: "Cancel every unfinished run of the group", OptionalBody: true,
		Responses: ok(typ[api.AgentGroup]()), Errors: []api.Code{api.CodeNotFound, api.CodeStoreFull}},
	{Pattern: "GET /v2/agentgroups/{name}/results", Tag: "evaluations", Summary: "An evaluation group's per-case results and summary",
		Responses: ok(typ[EvalResults]()), Errors: []api.Code{api.CodeNotFound}},
	{Pattern: "GET /v2/environments", Tag: "evaluations", Summary: "List environments (built in and loaded; answers hidden)", Responses: ok(typ[api.List[api.Environment]]())},
	{Pattern: "POST /v2/environments", Tag: "evaluations", Summary: "Load an environment version (immutable per NAME@VERSION)", Body: typ[api.Environment](),
		Responses: appliedOr(typ[api.Environment]()), Errors: []api.Code{api.CodeConflict, api.CodeAlreadyExists}},
	{Pattern: "GET /v2/environments/{ref...}", Tag: "evaluations", Summary: "Get NAME@VERSION (answers hidden)", Responses: ok(typ[api.Environment]()),
		Errors: []api.Code{api.CodeEnvironmentNotFound, api.CodeNotFound}},
	{Pattern: "PUT /v2/environments/{ref...}", Tag: "evaluations", Summary: "Load an environment version", Body: typ[api.Environment](),
		Responses: appliedOr(typ[api.Environment]()), Errors: []api.Code{api.CodeConflict, api.CodeAlreadyExists}},

	{Pattern: "GET /v2/skills", Tag: "skills", Summary: "List skills (every version)", Responses: ok(typ[SkillList]())},
	{Pattern: "POST /v2/skills", Tag: "skills", Summary: "Add a skill version (the same content again is the version that holds it)", Body: typ[api.Skill](),
		Responses: appliedOr(typ[api.Skill]())},
	{Pattern: "GET /v2/skills/{ref}", Tag: "skills", Summary: "Get NAME or NAME@VERSION", Responses: ok(typ[api.Skill]()), Errors: []api.Code{api.CodeNotFound}},

	{Pattern: "GET /v2/agents/{name}/learning", Tag: "learning", Summary: "The learning folder's main: notes, skills' files and workflows, each with its ETag (blob hash)",
		Responses: ok(typ[LearningList]()), Errors: []api.Code{api.CodeNotFound, api.CodeLearningOff}},
	{Pattern: "GET /v2/agents/{name}/learning/log", Tag: "learning", Summary: "The learning folder's commits, newest first",
		Responses: ok(typ[LearningLog]()), Errors: []api.Code{api.CodeNotFound, api.CodeLearningOff}},
	{Pattern: "GET /v2/agents/{name}/learning/bundle", Tag: "learning", Summary: "main as a git bundle (git clone FILE)",
		Responses: []apiResponse{{Status: 200, Content: "application/x-git-bundle", Description: "a v2 git bundle of main"}}, Errors: []api.Code{api.CodeNotFound, api.CodeLearningOff}},
	{Pattern: "GET /v2/agents/{name}/learning/files/{path...}", Tag: "learning", Summary: "One file of main, whole (a bare name is a note: notes/NAME.md); ETag is its blob hash",
		Responses: ok(typ[LearnedFile]()), Errors: []api.Code{api.CodeNotFound, api.CodeLearningOff}},
	{Pattern: "DELETE /v2/agents/{name}/learning/files/{path...}", Tag: "learning", Summary: "Retire a file: a commit that removes it; If-Match must be its current ETag",
		Header: []apiParam{{Name: "If-Match", Description: "the file's current ETag"}}, Responses: ok(typ[LearningChange]()),
		Errors: []api.Code{api.CodeNotFound, api.CodeLearningOff, api.CodeRequired, api.CodePreconditionFailed}},
	{Pattern: "POST /v2/agents/{name}/learning/restore", Tag: "learning", Summary: "Restore a file {path, from}: a commit that brings it back as it was in commit from",
		Body: typ[restoreBody](), Responses: ok(typ[LearningChange]()), Errors: []api.Code{api.CodeNotFound, api.CodeLearningOff, api.CodeInvalid, api.CodeRequired, api.CodeConflict}},

	{Pattern: "POST /v2/workflows:validate", Tag: "workflows", Summary: "Validate a workflow document: every error with its code, JSON pointer and line:column (?runnable=true also refuses what this server does not run)",
		Responses: ok(typ[WorkflowValidation]())},

	{Pattern: "POST /v2/templates/apply", Tag: "templates", Summary: "Make a template's agent, skills and triggers in one step: all are checked first, and what was made is removed if a later part fails (a trigger whose signing secret is not stored yet is made suspended)",
		Body: typ[api.TemplateApply](), Responses: created(typ[api.TemplateApplied]()), Errors: []api.Code{api.CodeAlreadyExists, api.CodeGroupNotFound, api.CodeInvalidLabel}},

	{Pattern: "GET /v2/triggers", Tag: "triggers", Summary: "List triggers", Responses: ok(typ[api.List[api.Trigger]]())},
	{Pattern: "POST /v2/triggers", Tag: "triggers", Query: []apiParam{dryRunQ}, Summary: "Create a trigger (a schedule, a webhook or a GitHub hook)", Body: typ[api.Trigger](),
		Responses: created(typ[api.Trigger]()), Errors: []api.Code{api.CodeAlreadyExists, api.CodeAgentNotFound, api.CodeGroupNotFound, api.CodeInvalidLabel}},
	{Pattern: "GET /v2/triggers/{name}", Tag: "triggers", Summary: "Get a trigger", Responses: ok(typ[api.Trigger]()), Errors: []api.Code{api.CodeNotFound}},
	{Pattern: "PUT /v2/triggers/{name}", Tag: "triggers", Query: []apiParam{dryRunQ}, Summary: "Apply a trigger", Body: typ[api.Trigger](), Responses: appliedOr(typ[api.Trigger]()),
		Errors: []api.Code{api.CodeConflict, api.CodeAgentNotFound, api.CodeGroupNotFound, api.CodeInvalidLabel}},
	{Pattern: "PATCH /v2/triggers/{name}", Tag: "triggers", Summary: "Merge-patch a trigger", Body: typ[api.Trigger](), BodyNote: "a JSON merge patch of the resource",
		Responses: ok(typ[api.Trigger]()), Errors: []api.Code{api.CodeNotFound, api.CodeConflict, api.CodeAgentNotFound, api.CodeGroupNotFound, api.CodeInvalidLabel}},
	{Pattern: "DELETE /v2/triggers/{name}", Tag: "triggers", Summary: "Delete a trigger", Responses: ok(typ[deletedAnswer]()), Errors: []api.Code{api.CodeNotFound, api.CodeStoreFull}},
	{Pattern: "GET /v2/triggers/{name}/fires", Tag: "triggers", Summary: "The trigger's fires, newest first", Query: []apiParam{limitQ},
		Responses: ok(typ[firesAnswer]()), Errors: []api.Code{api.CodeNotFound, api.CodeInvalid}},
	{Pattern: "POST /v2/triggers/{name}/test", Tag: "triggers", Summary: "Show the run a fire would start over a payload; starts and records nothing",
		Body: typ[fireBody](), Responses: ok(typ[triggerTestAnswer]()), Errors: []api.Code{api.CodeNotFound}},
	{Pattern: "POST /v2/triggers/{name}/fire", Tag: "triggers", Summary: "Fire the trigger now", Body: typ[fireBody](),
		Responses: created(typ[fireAnswer]()), Errors: codes([]api.Code{api.CodeNotFound}, runCodes)},
	{Pattern: "POST /v2/triggers/{name}/rotate", Tag: "triggers", Summary: "Make a new signing secret, answered once (a signed-in person only)",
		Body: typ[rotateBody](), Responses: ok(typ[trigger.Rotation]()), Errors: []api.Code{api.CodeNotFound, api.CodePersonRequired}},
	{Pattern: "GET /v2/webhooks", Tag: "webhooks", Summary: "List outbound webhooks", Responses: ok(typ[api.List[api.Webhook]]())},
	{Pattern: "POST /v2/webhooks", Tag: "webhooks", Query: []apiParam{dryRunQ}, Summary: "Create an outbound webhook (signed Standard Webhooks deliveries of run and trigger events)", Body: typ[api.Webhook](),
		Responses: created(typ[api.Webhook]()), Errors: []api.Code{api.CodeAlreadyExists, api.CodeUnknownWebhookEvent, api.CodeWebhookBlocked, api.CodeInvalidLabel}},
	{Pattern: "GET /v2/webhooks/{name}", Tag: "webhooks", Summary: "Get a webhook", Responses: ok(typ[api.Webhook]()), Errors: []api.Code{api.CodeNotFound}},
	{Pattern: "PUT /v2/webhooks/{name}", Tag: "webhooks", Query: []apiParam{dryRunQ}, Summary: "Apply a webhook", Body: typ[api.Webhook](), Responses: appliedOr(typ[api.Webhook]()),
		Errors: []api.Code{api.CodeConflict, api.CodeUnknownWebhookEvent, api.CodeWebhookBlocked, api.CodeInvalidLabel}},
	{Pattern: "DELETE /v2/webhooks/{name}", Tag: "webhooks", Summary: "Delete a webhook with its deliveries", Responses: ok(typ[deletedAnswer]()), Errors: []api.Code{api.CodeNotFound, api.CodeStoreFull}},
	{Pattern: "GET /v2/webhooks/{name}/deliveries", Tag: "webhooks", Summary: "The webhook's deliveries, newest first, each with its attempts", Query: []apiParam{limitQ},
		Responses: ok(typ[deliveriesAnswer]()), Errors: []api.Code{api.CodeNotFound, api.CodeInvalid}},
	{Pattern: "POST /v2/webhooks/{name}/test", Tag: "webhooks", Summary: "Queue a webhook.test delivery to this webhook alone",
		Responses: []apiResponse{{Status: 202, Type: typ[api.WebhookDelivery](), Description: "the delivery, queued"}}, Errors: []api.Code{api.CodeNotFound}},
	{Pattern: "POST /v2/webhooks/{name}/rotate", Tag: "webhooks", Summary: "Make a new whsec_ signing secret in the secret spec.secretRef names, answered once (a signed-in person only)",
		Body: typ[rotateBody](), Responses: ok(typ[trigger.Rotation]()), Errors: []api.Code{api.CodeNotFound, api.CodePersonRequired}},
	{Pattern: "POST /v2/hooks/{name}", Tag: "triggers", Public: true, Summary: "A signed delivery for a webhook (Standard Webhooks) or GitHub trigger",
		Header: []apiParam{{Name: "webhook-id"}, {Name: "webhook-timestamp"}, {Name: "webhook-signature"}, {Name: "X-Hub-Signature-256"}, {Name: "X-GitHub-Event"}, {Name: "X-GitHub-Delivery"}},
		Body:   typ[json.RawMessage](), BodyNote: "the sender's payload, verified by its signature",
		Responses: []apiResponse{{Status: 201, Type: typ[fireAnswer](), Description: "a run started"}, {Status: 200, Types: []reflect.Type{typ[fireAnswer](), typ[hookPongAnswer](), typ[hookIgnoredAnswer]()}, Description: "a repeated delivery, GitHub's ping, or an event the trigger ignores"}},
		Errors:    codes([]api.Code{api.CodeUnauthorized, api.CodeNotFound, api.CodeInternal, api.CodeStoreUnavailable, api.CodeClientClosed}, runCodes)},

	// The outward protocols (docs/mcp-and-a2a.md): their bodies are the protocols' own.
	{Pattern: "POST /v2/mcp", Tag: "protocols", Summary: "MCP (Streamable HTTP): each agent as a tool, plus get-run, send-message and list-runs",
		Body: typ[json.RawMessage](), BodyNote: "a JSON-RPC message of the Model Context Protocol",
		Responses: []apiResponse{{Status: 200, Type: typ[json.RawMessage](), Content: "application/json+text/event-stream", Description: "the JSON-RPC answer, or an SSE stream of progress notifications and the answer"}, {Status: 202, Description: "a notification or response accepted"}}},
	{Pattern: "GET /v2/mcp", Tag: "protocols", Summary: "MCP (Streamable HTTP): the session's stream of server notifications (tools/list_changed)",
		Responses: []apiResponse{{Status: 200, Content: "text/event-stream"}}},
	{Pattern: "DELETE /v2/mcp", Tag: "protocols", Summary: "MCP (Streamable HTTP): end the session", Responses: []apiResponse{{Status: 204, Description: "ended"}}},
	{Pattern: "GET /v2/a2a/{agent}/.well-known/agent-card.json", Tag: "protocols", Summary: "The agent's A2A v1.0 agent card (bearer required: agent names are private)",
		Responses: ok(typ[a2a.AgentCard]()), Errors: []api.Code{api.CodeAgentNotFound}},
	{Pattern: "POST /v2/a2a/{agent}", Tag: "protocols", Summary: "A2A v1.0 JSON-RPC: SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask",
		Body: typ[a2a.Request](), BodyNote: "a JSON-RPC 2.0 request; protocol errors are JSON-RPC errors in a 200 answer",
		Responses: []apiResponse{{Status: 200, Types: []reflect.Type{typ[a2a.Response]()}, Content: "application/json+text/event-stream", Description: "the JSON-RPC response, or for the streaming methods an SSE stream of JSON-RPC responses holding StreamResponses"}},
		Errors:    []api.Code{api.CodeAgentNotFound}},
	{Pattern: "POST /v2/a2a/{agent}/{op}", Tag: "protocols", Summary: "A2A v1.0 HTTP+JSON: message:send, message:stream",
		Body:      typ[a2a.SendMessageRequest](),
		Responses: []apiResponse{{Status: 200, Types: []reflect.Type{typ[a2a.SendMessageResponse]()}, Content: "application/json+text/event-stream", Description: "the task, or an SSE stream of StreamResponses"}},
		Errors:    []api.Code{api.CodeAgentNotFound}},
	{Pattern: "GET /v2/a2a/{agent}/tasks", Tag: "protocols", Summary: "A2A v1.0 HTTP+JSON: ListTasks (the agent's tasks, newest first)",
		Query: []apiParam{
			{Name: "contextId", Description: "the tasks of this context (here: the one task of that id)", Schema: map[string]any{"type": "string"}},
			{Name: "status", Description: "the tasks in this state (TASK_STATE_COMPLETED, ...)", Schema: map[string]any{"type": "string"}},
			{Name: "pageSize", Description: "1 to 100; 50 when unset", Schema: map[string]any{"type": "integer"}},
			{Name: "pageToken", Description: "the nextPageToken of the page before", Schema: map[string]any{"type": "string"}},
			{Name: "historyLength", Description: "at most this many history messages per task", Schema: map[string]any{"type": "integer"}},
			{Name: "statusTimestampAfter", Description: "the tasks whose status changed at or after this RFC 3339 time", Schema: map[string]any{"type": "string"}},
			{Name: "includeArtifacts", Description: "true to include each task's artifacts", Schema: map[string]any{"type": "boolean"}},
		},
		Responses: ok(typ[a2a.ListTasksResponse]()), Errors: []api.Code{api.CodeAgentNotFound}},
	{Pattern: "GET /v2/a2a/{agent}/tasks/{id}", Tag: "protocols", Summary: "A2A v1.0 HTTP+JSON: GetTask",
		Query:     []apiParam{{Name: "historyLength", Description: "at most this many history messages", Schema: map[string]any{"type": "integer"}}},
		Responses: ok(typ[a2a.Task]()), Errors: []api.Code{api.CodeAgentNotFound}},
	{Pattern: "POST /v2/a2a/{agent}/tasks/{idop}", Tag: "protocols", Summary: "A2A v1.0 HTTP+JSON: ID:cancel (CancelTask), ID:subscribe (SubscribeToTask)", OptionalBody: true,
		Responses: []apiResponse{{Status: 200, Types: []reflect.Type{typ[a2a.Task]()}, Content: "application/json+text/event-stream", Description: "the task, or an SSE stream of StreamResponses"}},
		Errors:    []api.Code{api.CodeAgentNotFound}},
}

// routeErrors is every code r can answer: its own, and those of its kind (credentials, a body, a
// path naming a resource).
func routeErrors(r apiRoute) []api.Code {
	var out []api.Code
	if !r.Public {
		out = append(out, authCodes...)
	}
	if r.Body != nil {
		out = append(out, bodyCodes...)
	}
	out = append(out, r.Errors...)
	slices.Sort(out)
	return slices.Compact(out)
}

// openAPIPath is a ServeMux pattern's path as an OpenAPI path template ({path...} is {path}).
func openAPIPath(pattern string) (method, path string) {
	method, path, _ = strings.Cut(pattern, " ")
	return strings.ToLower(method), strings.ReplaceAll(path, "...}", "}")
}

func pathParams(path string) []string {
	var out []string
	for rest := path; ; {
		i := strings.Index(rest, "{")
		if i < 0 {
			return out
		}
		j := strings.Index(rest[i:], "}")
		out = append(out, strings.TrimSuffix(rest[i+1:i+j], "..."))
		rest = rest[i+j:]
	}
}

var (
	openAPIOnce sync.Once
	openAPIJSON []byte
	openAPIErr  error
)

// openAPIDocument is the document, built once (it depends on types only).
func openAPIDocument() ([]byte, error) {
	openAPIOnce.Do(func() {
		doc, errs := buildOpenAPI()
		if len(errs) > 0 {
			openAPIErr = errs[0]
			return
		}
		openAPIJSON, openAPIErr = json.MarshalIndent(doc, "", "  ")
	})
	return openAPIJSON, openAPIErr
}

// openAPIDoc is what GET /v2/openapi.json answers. The document cannot fail to build but for a
// type it cannot describe, which TestOpenAPIDocument catches; the answer then says so.
func openAPIDoc() any {
	b, err := openAPIDocument()
	if err != nil {
		return api.Errorf(http.StatusInternalServerError, api.CodeInternal, "", "openapi: %v", err)
	}
	return json.RawMessage(b)
}

// buildOpenAPI makes the OpenAPI 3.1 document from apiRoutes and the Go types they name.
func buildOpenAPI() (map[string]any, []error) {
	g := newSchemaGen()
	paths := map[string]any{}
	for _, r := range apiRoutes {
		method, path := openAPIPath(r.Pattern)
		item, _ := paths[path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[path] = item
		}
		item[method] = operation(g, r, method, path)
	}
	g.errorSchema()
	var codeList []any
	for _, c := range api.Codes {
		codeList = append(codeList, map[string]any{"code": string(c.Code), "status": c.Status, "also": c.Also, "meaning": c.Meaning})
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "agentrun API", "version": "v2",
			"description": "agentrun's HTTP API. Every error is JSON {code, message, field} with a stable code; " +
				"x-error-codes lists them all. A path under /v2/ that is no route answers 404 NotFound, and a route's path with another method 405 MethodNotAllowed with Allow. " +
				"The console's HTML pages are not described here.",
			"x-error-codes": codeList},
		"jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
		"components": map[string]any{
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer",
				"description": "the data folder's API token, or a person's session from POST /v2/login"}},
			"schemas": g.defs,
		},
		"security": []any{map[string]any{"bearer": []any{}}},
		"paths":    paths,
	}, g.errs
}

func (g *schemaGen) errorSchema() {
	var all []any
	for _, c := range api.Codes {
		all = append(all, string(c.Code))
	}
	g.defs["Error"] = map[string]any{"type": "object", "required": []any{"code", "message"},
		"properties": map[string]any{
			"code":    map[string]any{"type": "string", "enum": all},
			"message": map[string]any{"type": "string"},
			"field":   map[string]any{"type": "string", "description": "the path of the field at fault (spec.tools[1])"},
			"errors": map[string]any{"type": "array", "description": "every problem a check found, the first being this error's code, message and field (a document with three mistakes is told all three)",
				"items": map[string]any{"type": "object", "required": []any{"code", "message"}, "additionalProperties": false,
					"properties": map[string]any{
						"code":    map[string]any{"type": "string", "enum": all},
						"message": map[string]any{"type": "string"},
						"field":   map[string]any{"type": "string"},
					}}},
		}, "additionalProperties": false}
}

func operation(g *schemaGen, r apiRoute, method, path string) map[string]any {
	opID := method + strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			return c
		}
		return '_'
	}, strings.TrimPrefix(path, "/v2"))
	op := map[string]any{"summary": r.Summary, "operationId": opID, "tags": []any{r.Tag}}
	if r.Public {
		op["security"] = []any{}
	}
	var params []any
	for _, p := range pathParams(path) {
		d := nameParam.Description
		if p != "name" {
			d = ""
		}
		params = append(params, map[string]any{"name": p, "in": "path", "required": true, "description": d, "schema": map[string]any{"type": "string"}})
	}
	for _, p := range r.Query {
		params = append(params, param(p, "query"))
	}
	for _, p := range r.Header {
		params = append(params, param(p, "header"))
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	if r.Body != nil {
		var s any = g.ref(r.Body, true)
		if len(r.BodyAlt) > 0 {
			alts := []any{s}
			for _, t := range r.BodyAlt {
				alts = append(alts, g.ref(t, true))
			}
			s = map[string]any{"anyOf": alts}
		}
		rb := map[string]any{"required": !r.OptionalBody, "content": map[string]any{"application/json": map[string]any{"schema": s}}}
		if r.BodyNote != "" {
			rb["description"] = r.BodyNote
		}
		op["requestBody"] = rb
	}
	responses := map[string]any{}
	for _, resp := range r.Responses {
		responses[strconv.Itoa(resp.Status)] = response(g, resp)
	}
	byStatus := map[int][]api.Code{}
	for _, c := range routeErrors(r) {
		info, _ := api.LookupCode(c)
		for _, st := range append([]int{info.Status}, info.Also...) {
			byStatus[st] = append(byStatus[st], c)
		}
	}
	if r.Body != nil || r.Pattern == "POST /v2/login" {
		byStatus[400] = append(byStatus[400], api.CodeInvalid, api.CodeDuplicateKey)
	}
	statuses := make([]int, 0, len(byStatus))
	for st := range byStatus {
		statuses = append(statuses, st)
	}
	sort.Ints(statuses)
	for _, st := range statuses {
		cs := byStatus[st]
		slices.Sort(cs)
		cs = slices.Compact(cs)
		var names []any
		var desc []string
		for _, c := range cs {
			names = append(names, string(c))
			desc = append(desc, string(c))
		}
		responses[strconv.Itoa(st)] = map[string]any{
			"description": strings.Join(desc, ", "),
			"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{
				"$ref": "#/components/schemas/Error", "properties": map[string]any{"code": map[string]any{"enum": names}}}}},
		}
	}
	op["responses"] = responses
	return op
}

func param(p apiParam, in string) map[string]any {
	s := p.Schema
	if s == nil {
		s = map[string]any{"type": "string"}
	}
	m := map[string]any{"name": p.Name, "in": in, "schema": s}
	if p.Description != "" {
		m["description"] = p.Description
	}
	return m
}

func response(g *schemaGen, r apiResponse) map[string]any {
	desc := r.Description
	if desc == "" {
		desc = http.StatusText(r.Status)
	}
	out := map[string]any{"description": desc}
	content := map[string]any{}
	var js any
	switch {
	case r.Type != nil:
		js = g.ref(r.Type, false)
	case len(r.Types) == 1:
		js = g.ref(r.Types[0], false)
	case len(r.Types) > 1:
		var alts []any
		for _, t := range r.Types {
			alts = append(alts, g.ref(t, false))
		}
		js = map[string]any{"anyOf": alts}
	}
	for _, ct := range strings.Split(r.Content, "+") {
		switch ct {
		case "":
			if js != nil {
				content["application/json"] = map[string]any{"schema": js}
			}
		case "application/json":
			content[ct] = map[string]any{"schema": js}
		case "text/event-stream":
			// Each event's data is an Event; the last, "end", is {phase, reason}.
			content[ct] = map[string]any{"schema": map[string]any{"type": "string"},
				"x-sse-data": g.ref(typ[api.Event](), false), "x-sse-end": g.ref(typ[endEvent](), false)}
		default:
			content[ct] = map[string]any{"schema": map[string]any{"type": "string"}}
		}
	}
	if len(content) > 0 {
		out["content"] = content
	}
	if len(r.Header) > 0 {
		h := map[string]any{}
		for _, p := range r.Header {
			h[p.Name] = map[string]any{"description": p.Description, "schema": map[string]any{"type": "string"}}
		}
		out["headers"] = h
	}
	return out
}
