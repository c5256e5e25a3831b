package api

import (
	"strconv"
	"strings"
)

// Code is a stable, machine-readable error code: the "code" of every failed request's body. Every
// code is declared here and listed in Codes; the public client exports each (client.Code*), and
// the table of codes in docs/limits-and-errors.md is made from Codes (TestDocsTables fails when
// they differ).
type Code string

// Stable error codes. A new code goes here and in Codes, with its status and meaning.
const (
	CodeInvalid          Code = "Invalid"
	CodeUnknownField     Code = "UnknownField"
	CodeWrongType        Code = "WrongType"
	CodeRequired         Code = "Required"
	CodeTooLarge         Code = "PayloadTooLarge"
	CodeDuplicateKey     Code = "DuplicateKey"
	CodeInvalidLabel     Code = "InvalidLabel"
	CodeNotFound         Code = "NotFound"
	CodeAlreadyExists    Code = "AlreadyExists"
	CodeConflict         Code = "Conflict"
	CodeMethodNotAllowed Code = "MethodNotAllowed"
	CodeAgentStopped     Code = "AgentStopped"
	CodeAgentNotFound    Code = "AgentNotFound"
	CodeAgentRunFinished Code = "AgentRunFinished"
	CodeRunBusy          Code = "RunBusy"
	CodeNoAnswer         Code = "NoAnswer"
	CodeFileNotFound     Code = "FileNotFound"
	CodeNotResolvable    Code = "NotResolvable"
	CodeUnpricedModel    Code = "UnpricedModel"
	CodeSecretNotFound   Code = "SecretNotFound"
	CodeCapNotRaised     Code = "CapNotRaised"
	CodeUnauthorized     Code = "Unauthorized"
	CodePersonRequired   Code = "PersonRequired"
	CodeSetupRequired    Code = "SetupRequired"
	CodeSetupFailed      Code = "SetupFailed"
	CodeRateLimited      Code = "RateLimited"
	CodeTooManyRequests  Code = "TooManyRequests"
	CodeTooManyStreams   Code = "TooManyStreams"
	CodeClientClosed     Code = "ClientClosed"
	CodeInternal         Code = "Internal"
	CodeStoreUnavailable Code = "StoreUnavailable"
	CodeStoreFull        Code = "StoreFull"

	CodeGroupNotFound     Code = "GroupNotFound"
	CodeGroupSealed       Code = "GroupSealed"
	CodeGroupCancelled    Code = "GroupCancelled"
	CodeMaxPendingReached Code = "MaxPendingReached"
	CodeIdempotencyReused Code = "IdempotencyKeyReused"

	CodeEnvironmentNotFound Code = "EnvironmentNotFound"

	CodePreconditionFailed Code = "PreconditionFailed"
	CodeLearningOff        Code = "LearningOff"

	CodeUnknownWebhookEvent Code = "UnknownWebhookEvent"
	CodeWebhookBlocked      Code = "WebhookBlocked"
	// Codes of a fork's refusals (POST /v2/agentruns/NAME/fork).
	CodeStepNotFound     Code = "StepNotFound"
	CodeStepNotCompleted Code = "StepNotCompleted"
	CodeRunPurged        Code = "RunPurged"

	// Codes of web_fetch's refusals: in the tool result the model reads and on the timeline
	// (tool.refused, tool.cut), not in an HTTP answer; the status is the one a proxy would give.
	CodeFetchBadURL             Code = "FetchBadURL"
	CodeFetchBlocked            Code = "FetchBlocked"
	CodeFetchNetworkOff         Code = "FetchNetworkOff"
	CodeFetchTooManyRedirects   Code = "FetchTooManyRedirects"
	CodeFetchRedirectNotAllowed Code = "FetchRedirectNotAllowed"
	CodeFetchTimeout            Code = "FetchTimeout"
	CodeFetchFailed             Code = "FetchFailed"
	CodeFetchCut                Code = "FetchCut"

	// Codes of the runner's gateway, which harnesses call (not the public API).
	CodeForbidden       Code = "Forbidden"
	CodeBadRequest      Code = "BadRequest"
	CodeInvalidRequest  Code = "InvalidRequest"
	CodeRunStopped      Code = "RunStopped"
	CodeTokenCountLimit Code = "TokenCountLimit"
)

// HTTP statuses the codes go with, spelled here rather than taken from net/http: every package
// imports api (the store too), and none of them should pull in an HTTP stack for seven numbers.
const (
	statusBadRequest          = 400
	statusUnauthorized        = 401
	statusForbidden           = 403
	statusNotFound            = 404
	statusMethodNotAllowed    = 405
	statusConflict            = 409
	statusPreconditionFailed  = 412
	statusTooLarge            = 413
	statusUnprocessable       = 422
	statusTooManyRequests     = 429
	statusClientClosed        = 499 // nginx's: the caller left before the answer
	statusInternal            = 500
	statusUnavailable         = 503
	statusGatewayTimeout      = 504
	statusInsufficientStorage = 507
	statusBadGateway          = 502
)

// CodeInfo is one registered code: the HTTP status it is sent with and what it means.
type CodeInfo struct {
	Code   Code
	Status int
	// Also lists other statuses the code is sent with, where the one code covers two cases.
	Also    []int
	Meaning string
}

// Codes is the registry of every error code the server sends, in the order
// docs/limits-and-errors.md lists them.
var Codes = []CodeInfo{
	{CodeInvalid, statusUnprocessable, []int{statusBadRequest}, "a field's value is wrong (400: the body is not one valid JSON or YAML value)"},
	{CodeUnknownField, statusUnprocessable, nil, "the body names a field the resource does not have"},
	{CodeWrongType, statusUnprocessable, nil, "a field holds the wrong JSON type"},
	{CodeRequired, statusUnprocessable, nil, "a required field is missing"},
	{CodeTooLarge, statusTooLarge, nil, "the body, the input, a message or the system prompt is over its limit"},
	{CodeDuplicateKey, statusBadRequest, nil, "an object in the body names one key twice"},
	{CodeInvalidLabel, statusUnprocessable, nil, "a label key or value breaks Kubernetes' label rules, or there are over 64 labels"},
	{CodeNotFound, statusNotFound, nil, "the named resource does not exist"},
	{CodeAlreadyExists, statusConflict, nil, "a resource of that name (or a group's run of that task key) exists"},
	{CodeConflict, statusConflict, nil, "the change conflicts with what is stored (a stale resourceVersion, a run's fixed spec, a decided approval)"},
	{CodeMethodNotAllowed, statusMethodNotAllowed, nil, "the path exists but not with this method; Allow lists those it has"},
	{CodeAgentStopped, statusConflict, nil, "the agent's spec.state is Stopped: it takes no new runs"},
	{CodeAgentNotFound, statusNotFound, nil, "the run's or group's spec.agent names no agent"},
	{CodeAgentRunFinished, statusConflict, nil, "the run has finished: it takes no messages"},
	{CodeRunBusy, statusConflict, nil, "a message with ifBusy reject reached a run with a turn in flight; nothing was stored"},
	{CodeNoAnswer, statusNotFound, nil, "the run has no answer yet"},
	{CodeFileNotFound, statusNotFound, nil, "the run's folder has no such file"},
	{CodeNotResolvable, statusConflict, nil, "the run is not waiting for a resolution of that step"},
	{CodeUnpricedModel, statusUnprocessable, nil, "a capped run's model is not in the price table (spec.allowUnpricedModels lets it start)"},
	{CodeSecretNotFound, statusUnprocessable, nil, "a BYOK agent's apiKeySecret names no secret"},
	{CodeCapNotRaised, statusUnprocessable, nil, "a run's cap can only be raised"},
	{CodeUnauthorized, statusUnauthorized, nil, "missing or wrong credentials, or a wrong password"},
	{CodePersonRequired, statusForbidden, nil, "only a signed-in person may do this; the API token and a run's credentials cannot"},
	{CodeSetupRequired, statusUnauthorized, nil, "no password is set yet: send the setup code the server printed"},
	{CodeSetupFailed, statusUnauthorized, nil, "the first password could not be set (a wrong setup code, a weak password)"},
	{CodeRateLimited, statusTooManyRequests, nil, "too many sign-in attempts from this address; Retry-After says when to try again"},
	{CodeTooManyRequests, statusTooManyRequests, nil, "too many sign-ins wait for a password check right now; Retry-After says when"},
	{CodeTooManyStreams, statusTooManyRequests, nil, "the credential already holds the most event streams it may"},
	{CodeClientClosed, statusClientClosed, nil, "the caller went away before the answer"},
	{CodeInternal, statusInternal, []int{statusUnavailable}, "the server failed (503: it lacks what the request needs, such as a seal key)"},
	{CodeStoreUnavailable, statusUnavailable, nil, "the store could not be reached; try again"},
	{CodeStoreFull, statusInsufficientStorage, nil, "the store's disk is full; nothing was written"},
	{CodeGroupNotFound, statusNotFound, nil, "a run's spec.group names no group"},
	{CodeGroupSealed, statusConflict, nil, "the group is sealed: it takes no new runs"},
	{CodeGroupCancelled, statusConflict, nil, "the group is cancelled"},
	{CodeMaxPendingReached, statusConflict, nil, "the group holds limits.maxPending runs that have not started"},
	{CodeIdempotencyReused, statusUnprocessable, nil, "the idempotency key was used for another batch"},
	{CodeEnvironmentNotFound, statusNotFound, nil, "an evaluation names an environment that is not built in or loaded"},
	{CodePreconditionFailed, statusPreconditionFailed, nil, "If-Match names a version that is not the current one (a learned note's ETag changed)"},
	{CodeLearningOff, statusConflict, nil, "the agent's spec.learning is off: it has no learning folder"},
	{CodeUnknownWebhookEvent, statusUnprocessable, nil, "a webhook's spec.events names a type that is not a webhook event"},
	{CodeWebhookBlocked, statusUnprocessable, nil, "a webhook's URL is a loopback, private, link-local, metadata or reserved address and not in the server's --webhook-allow"},
	{CodeStepNotFound, statusNotFound, nil, "a fork's atStep names no step of the run (keys as `runs steps` shows them)"},
	{CodeStepNotCompleted, statusConflict, nil, "a fork's atStep names a step that is not completed (started, failed or interrupted)"},
	{CodeRunPurged, statusConflict, nil, "retention purged the run's recorded payloads: it cannot be forked"},
	{CodeFetchBadURL, statusUnprocessable, nil, "web_fetch: the URL (or a redirect's) is not an absolute http:// or https:// URL with a host and no credentials"},
	{CodeFetchBlocked, statusForbidden, nil, "web_fetch: the address dialled is loopback, link-local, private, metadata or reserved and not in --fetch-allow"},
	{CodeFetchNetworkOff, statusForbidden, nil, "web_fetch: the agent's computer has no network (spec.computer.network is not true)"},
	{CodeFetchTooManyRedirects, statusBadGateway, nil, "web_fetch: the page redirected more than 5 times"},
	{CodeFetchRedirectNotAllowed, statusForbidden, nil, "web_fetch: a redirect went to a URL the approvals do not allow without a person"},
	{CodeFetchTimeout, statusGatewayTimeout, nil, "web_fetch: the page did not answer (or send its body) in time"},
	{CodeFetchFailed, statusBadGateway, nil, "web_fetch: the page could not be reached (DNS, connection, TLS)"},
	{CodeFetchCut, statusTooLarge, nil, "web_fetch: the body was longer than maxBytes and was cut there (the result is the first maxBytes)"},
	{CodeForbidden, statusForbidden, nil, "gateway: the token is another run's, or for another endpoint"},
	{CodeBadRequest, statusBadRequest, nil, "gateway: the request body could not be read"},
	{CodeInvalidRequest, statusBadRequest, nil, "gateway: the harness's call is malformed (a body that is not a JSON object)"},
	{CodeRunStopped, statusUnavailable, nil, "gateway: the run's drive ended while the harness called"},
	{CodeTokenCountLimit, statusTooManyRequests, nil, "gateway: the run asked for more token counts (count_tokens, not billed) since its last model call than it may"},
}

var codeIndex = func() map[Code]*CodeInfo {
	m := make(map[Code]*CodeInfo, len(Codes))
	for i := range Codes {
		m[Codes[i].Code] = &Codes[i]
	}
	return m
}()

// LookupCode returns the registry's entry for a code.
func LookupCode(c Code) (CodeInfo, bool) {
	if info, ok := codeIndex[c]; ok {
		return *info, true
	}
	return CodeInfo{}, false
}

// Status is the HTTP status a code is usually sent with (500 for a code not registered).
func (c Code) Status() int {
	if info, ok := codeIndex[c]; ok {
		return info.Status
	}
	return statusInternal
}

// E makes an *Error with the status the registry gives its code.
func E(code Code, field, format string, args ...any) *Error {
	return Errorf(code.Status(), code, field, format, args...)
}

// CodeTable is the table of codes in docs/limits-and-errors.md, made from Codes.
func CodeTable() string {
	var b strings.Builder
	b.WriteString("| code | status | meaning |\n|---|---|---|\n")
	for _, c := range Codes {
		status := strconv.Itoa(c.Status)
		for _, s := range c.Also {
			status += ", " + strconv.Itoa(s)
		}
		b.WriteString("| `" + string(c.Code) + "` | " + status + " | " + c.Meaning + " |\n")
	}
	return b.String()
}
