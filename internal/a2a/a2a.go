// Package a2a holds the Agent2Agent protocol's (A2A v1.0) wire types as its JSON binding writes
// them (protobuf JSON: camelCase fields, enum names such as TASK_STATE_COMPLETED), the JSON-RPC 2.0
// envelope, and the protocol's errors with their JSON-RPC codes and HTTP+JSON statuses. It does no
// I/O: internal/server maps runs onto tasks with it (docs/mcp-and-a2a.md).
//
// Ours rather than a Go SDK's: the module proxy serves github.com/a2aproject/a2a-go only at
// v0.3.x, which speaks A2A v0.3 (method names such as message/send), not v1.0.
package a2a

import (
	"encoding/json"
	"net/http"
)

// ProtocolVersion is the A2A version served, as the card and the A2A-Version header name it.
const ProtocolVersion = "1.0"

// VersionHeader is the header a client names its protocol version in.
const VersionHeader = "A2A-Version"

// Transport names in an AgentInterface's protocolBinding.
const (
	BindingJSONRPC  = "JSONRPC"
	BindingHTTPJSON = "HTTP+JSON"
)

// JSON-RPC method names (A2A v1.0).
const (
	MethodSendMessage          = "SendMessage"
	MethodSendStreamingMessage = "SendStreamingMessage"
	MethodGetTask              = "GetTask"
	MethodCancelTask           = "CancelTask"
	MethodSubscribeToTask      = "SubscribeToTask"
	MethodListTasks            = "ListTasks"
	MethodGetExtendedAgentCard = "GetExtendedAgentCard"
)

// Task states.
const (
	StateSubmitted     = "TASK_STATE_SUBMITTED"
	StateWorking       = "TASK_STATE_WORKING"
	StateCompleted     = "TASK_STATE_COMPLETED"
	StateFailed        = "TASK_STATE_FAILED"
	StateCanceled      = "TASK_STATE_CANCELED"
	StateInputRequired = "TASK_STATE_INPUT_REQUIRED"
	StateRejected      = "TASK_STATE_REJECTED"
	StateAuthRequired  = "TASK_STATE_AUTH_REQUIRED"
)

// Terminal reports whether a task in state s takes no more messages.
func Terminal(s string) bool {
	return s == StateCompleted || s == StateFailed || s == StateCanceled || s == StateRejected
}

// Roles.
const (
	RoleUser  = "ROLE_USER"
	RoleAgent = "ROLE_AGENT"
)

// Part is one piece of a message or artifact: exactly one of text, raw, url or data.
type Part struct {
	Text      *string         `json:"text,omitempty"`
	Raw       []byte          `json:"raw,omitempty"`
	URL       string          `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Metadata  map[string]any  `json:"metadata,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
}

// TextPart is a text part.
func TextPart(s string) Part { return Part{Text: &s} }

// Message is one turn of a conversation.
type Message struct {
	MessageID        string         `json:"messageId"`
	ContextID        string         `json:"contextId,omitempty"`
	TaskID           string         `json:"taskId,omitempty"`
	Role             string         `json:"role"`
	Parts            []Part         `json:"parts"`
	Metadata         map[string]any `json:"metadata,omitempty"`
	Extensions       []string       `json:"extensions,omitempty"`
	ReferenceTaskIDs []string       `json:"referenceTaskIds,omitempty"`
}

// TaskStatus is a task's state, with a message saying more.
type TaskStatus struct {
	State     string   `json:"state"`
	Message   *Message `json:"message,omitempty"`
	Timestamp string   `json:"timestamp,omitempty"`
}

// Artifact is an output of a task.
type Artifact struct {
	ArtifactID  string         `json:"artifactId"`
	Name        string         `json:"name,omitempty"`
	Description string         `json:"description,omitempty"`
	Parts       []Part         `json:"parts"`
	Metadata    map[string]any `json:"metadata,omitempty"`
}

// Task is a unit of work.
type Task struct {
	ID        string         `json:"id"`
	ContextID string         `json:"contextId"`
	Status    TaskStatus     `json:"status"`
	Artifacts []Artifact     `json:"artifacts,omitempty"`
	History   []Message      `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// TaskStatusUpdateEvent is a streamed change of a task's status.
type TaskStatusUpdateEvent struct {
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Status    TaskStatus     `json:"status"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// TaskArtifactUpdateEvent is a streamed artifact (or a chunk of one).
type TaskArtifactUpdateEvent struct {
	TaskID    string   `json:"taskId"`
	ContextID string   `json:"contextId"`
	Artifact  Artifact `json:"artifact"`
	Append    bool     `json:"append,omitempty"`
	LastChunk bool     `json:"lastChunk,omitempty"`
}

// StreamResponse is one event of a stream: exactly one field is set.
type StreamResponse struct {
	Task           *Task                    `json:"task,omitempty"`
	Message        *Message                 `json:"message,omitempty"`
	StatusUpdate   *TaskStatusUpdateEvent   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *TaskArtifactUpdateEvent `json:"artifactUpdate,omitempty"`
}

// SendMessageResponse is SendMessage's answer: a task (or a message).
type SendMessageResponse struct {
	Task    *Task    `json:"task,omitempty"`
	Message *Message `json:"message,omitempty"`
}

// SendMessageConfiguration is a SendMessage request's options.
type SendMessageConfiguration struct {
	AcceptedOutputModes        []string        `json:"acceptedOutputModes,omitempty"`
	TaskPushNotificationConfig json.RawMessage `json:"taskPushNotificationConfig,omitempty"`
	HistoryLength              *int            `json:"historyLength,omitempty"`
	// ReturnImmediately answers as soon as the task exists; otherwise SendMessage answers once
	// the task is terminal or interrupted (input-required, auth-required).
	ReturnImmediately bool `json:"returnImmediately,omitempty"`
}

// SendMessageRequest is the params of SendMessage and SendStreamingMessage.
type SendMessageRequest struct {
	Tenant        string                    `json:"tenant,omitempty"`
	Message       *Message                  `json:"message"`
	Configuration *SendMessageConfiguration `json:"configuration,omitempty"`
	Metadata      map[string]any            `json:"metadata,omitempty"`
}

// GetTaskRequest is GetTask's params.
type GetTaskRequest struct {
	Tenant        string `json:"tenant,omitempty"`
	ID            string `json:"id"`
	HistoryLength *int   `json:"historyLength,omitempty"`
}

// TaskIDRequest is the params of CancelTask and SubscribeToTask.
type TaskIDRequest struct {
	Tenant   string         `json:"tenant,omitempty"`
	ID       string         `json:"id"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// ListTasksRequest is ListTasks' params (on the HTTP+JSON binding, GET BASE/tasks' query).
type ListTasksRequest struct {
	Tenant    string `json:"tenant,omitempty"`
	ContextID string `json:"contextId,omitempty"`
	Status    string `json:"status,omitempty"`
	// PageSize is 1 to 100; unset, 50.
	PageSize      *int   `json:"pageSize,omitempty"`
	PageToken     string `json:"pageToken,omitempty"`
	HistoryLength *int   `json:"historyLength,omitempty"`
	// StatusTimestampAfter keeps the tasks whose status changed at or after it (RFC 3339).
	StatusTimestampAfter string `json:"statusTimestampAfter,omitempty"`
	// IncludeArtifacts: unset or false leaves the artifacts out, to keep the list small.
	IncludeArtifacts *bool `json:"includeArtifacts,omitempty"`
}

// ListTasksResponse is one page of ListTasks: NextPageToken is "" on the last page; TotalSize
// counts every task the filters match, before paging.
type ListTasksResponse struct {
	Tasks         []Task `json:"tasks"`
	NextPageToken string `json:"nextPageToken"`
	PageSize      int    `json:"pageSize"`
	TotalSize     int    `json:"totalSize"`
}

// States are the task states a task can be in (a ListTasks status filter names one).
var States = []string{StateSubmitted, StateWorking, StateCompleted, StateFailed, StateCanceled, StateInputRequired, StateRejected, StateAuthRequired}

// AgentCard describes an agent: who it is, where and how to reach it.
type AgentCard struct {
	Name                 string                    `json:"name"`
	Description          string                    `json:"description"`
	SupportedInterfaces  []AgentInterface          `json:"supportedInterfaces"`
	Provider             *AgentProvider            `json:"provider,omitempty"`
	Version              string                    `json:"version"`
	DocumentationURL     string                    `json:"documentationUrl,omitempty"`
	Capabilities         AgentCapabilities         `json:"capabilities"`
	SecuritySchemes      map[string]SecurityScheme `json:"securitySchemes,omitempty"`
	SecurityRequirements []SecurityRequirement     `json:"securityRequirements,omitempty"`
	DefaultInputModes    []string                  `json:"defaultInputModes"`
	DefaultOutputModes   []string                  `json:"defaultOutputModes"`
	Skills               []AgentSkill              `json:"skills"`
}

// AgentInterface is one transport at one URL.
type AgentInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	Tenant          string `json:"tenant,omitempty"`
	ProtocolVersion string `json:"protocolVersion"`
}

// AgentProvider is who serves the agent.
type AgentProvider struct {
	URL          string `json:"url"`
	Organization string `json:"organization"`
}

// AgentCapabilities says which optional parts are served.
type AgentCapabilities struct {
	Streaming         bool `json:"streaming"`
	PushNotifications bool `json:"pushNotifications"`
	ExtendedAgentCard bool `json:"extendedAgentCard"`
}

// SecurityScheme is one way to authenticate (only the HTTP scheme is used here).
type SecurityScheme struct {
	HTTPAuthSecurityScheme *HTTPAuthSecurityScheme `json:"httpAuthSecurityScheme,omitempty"`
}

// HTTPAuthSecurityScheme is HTTP authentication (Bearer).
type HTTPAuthSecurityScheme struct {
	Description  string `json:"description,omitempty"`
	Scheme       string `json:"scheme"`
	BearerFormat string `json:"bearerFormat,omitempty"`
}

// SecurityRequirement names the schemes a request must satisfy, each with its scopes.
type SecurityRequirement struct {
	Schemes map[string]StringList `json:"schemes"`
}

// StringList is a list of strings (protobuf's wrapper).
type StringList struct {
	List []string `json:"list"`
}

// AgentSkill is one thing the agent does.
type AgentSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
	InputModes  []string `json:"inputModes,omitempty"`
	OutputModes []string `json:"outputModes,omitempty"`
}

// Request is a JSON-RPC 2.0 request.
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// Response is a JSON-RPC 2.0 response: a result or an error.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// Error is an A2A error: its JSON-RPC code, its HTTP+JSON status and ErrorInfo reason.
type Error struct {
	Code    int    // JSON-RPC error code
	Status  int    // HTTP status on the HTTP+JSON binding
	GRPC    string // google.rpc status name on the HTTP+JSON binding
	Reason  string // ErrorInfo reason ("" for JSON-RPC's own errors)
	Message string
}

func (e *Error) Error() string { return e.Message }

func newErr(code, status int, grpc, reason string) func(string) *Error {
	return func(msg string) *Error {
		return &Error{Code: code, Status: status, GRPC: grpc, Reason: reason, Message: msg}
	}
}

// The protocol's errors.
var (
	ParseError                 = newErr(-32700, http.StatusBadRequest, "INVALID_ARGUMENT", "")
	InvalidRequest             = newErr(-32600, http.StatusBadRequest, "INVALID_ARGUMENT", "")
	MethodNotFound             = newErr(-32601, http.StatusNotFound, "UNIMPLEMENTED", "")
	InvalidParams              = newErr(-32602, http.StatusBadRequest, "INVALID_ARGUMENT", "INVALID_PARAMS")
	Internal                   = newErr(-32603, http.StatusInternalServerError, "INTERNAL", "")
	TaskNotFound               = newErr(-32001, http.StatusNotFound, "NOT_FOUND", "TASK_NOT_FOUND")
	TaskNotCancelable          = newErr(-32002, http.StatusBadRequest, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE")
	PushNotificationNotSupport = newErr(-32003, http.StatusBadRequest, "FAILED_PRECONDITION", "PUSH_NOTIFICATION_NOT_SUPPORTED")
	UnsupportedOperation       = newErr(-32004, http.StatusBadRequest, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION")
	ContentTypeNotSupported    = newErr(-32005, http.StatusBadRequest, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED")
	ExtendedCardNotConfigured  = newErr(-32007, http.StatusBadRequest, "FAILED_PRECONDITION", "EXTENDED_AGENT_CARD_NOT_CONFIGURED")
	VersionNotSupported        = newErr(-32009, http.StatusBadRequest, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED")
)

// RPC is e as a JSON-RPC error object.
func (e *Error) RPC() *RPCError { return &RPCError{Code: e.Code, Message: e.Message} }

// RESTBody is e as the HTTP+JSON binding's error body (google.rpc.Status with an ErrorInfo).
func (e *Error) RESTBody() map[string]any {
	body := map[string]any{"code": e.Status, "status": e.GRPC, "message": e.Message}
	if e.Reason != "" {
		body["details"] = []map[string]any{{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": e.Reason, "domain": "a2a-protocol.org"}}
	}
	return map[string]any{"error": body}
}
