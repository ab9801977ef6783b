package a2a

import (
	"encoding/json"
	"time"

	"huddle/protocol"
)

// The protocol version this package speaks natively, and the binding.
const (
	Version        = "1.0"
	LegacyVersion  = "0.3"
	BindingJSONRPC = "JSONRPC"
	// VersionHeader is the service parameter that names the version a
	// client speaks; an empty one means 0.3 (the spec's §3.6.2).
	VersionHeader = "A2A-Version"
	// ExtensionsHeader lists the extensions a request activates and a
	// response echoes.
	ExtensionsHeader = "A2A-Extensions"
	// CardPath is where the Agent Card is published.
	CardPath = protocol.A2ACardPath
)

// PlanApprovalExtension is huddle's extension: a task whose member's plan
// waits for huddle's lead is TASK_STATE_INPUT_REQUIRED, its status message
// carrying the plan (a data part) and PendingApprovalKey, in the shape
// a2aproject/A2A#1976 gives a pending acceptance.
const (
	PlanApprovalExtension = "urn:huddle:a2a:plan-approval:v1"
	PendingApprovalKey    = PlanApprovalExtension + "/pendingApproval"
	// PurutoErrorKey names the Puruto error in a failed or rejected task's
	// status message metadata.
	PurutoErrorKey = "urn:huddle:a2a:puruto-error"
)

// TaskState is a task's state, as ProtoJSON writes the enum.
type TaskState string

// The states of a task.
const (
	StateUnspecified   TaskState = "TASK_STATE_UNSPECIFIED"
	StateSubmitted     TaskState = "TASK_STATE_SUBMITTED"
	StateWorking       TaskState = "TASK_STATE_WORKING"
	StateCompleted     TaskState = "TASK_STATE_COMPLETED"
	StateFailed        TaskState = "TASK_STATE_FAILED"
	StateCanceled      TaskState = "TASK_STATE_CANCELED"
	StateInputRequired TaskState = "TASK_STATE_INPUT_REQUIRED"
	StateRejected      TaskState = "TASK_STATE_REJECTED"
	StateAuthRequired  TaskState = "TASK_STATE_AUTH_REQUIRED"
)

// Terminal reports whether a task in s can change no more.
func (s TaskState) Terminal() bool {
	return s == StateCompleted || s == StateFailed || s == StateCanceled || s == StateRejected
}

// Interrupted reports whether a task in s waits for something outside it.
func (s TaskState) Interrupted() bool { return s == StateInputRequired || s == StateAuthRequired }

// Known reports whether s is one of the states.
func (s TaskState) Known() bool {
	switch s {
	case StateSubmitted, StateWorking, StateCompleted, StateFailed, StateCanceled, StateInputRequired, StateRejected, StateAuthRequired:
		return true
	}
	return false
}

// Role says who wrote a message.
type Role string

// The roles.
const (
	RoleUser  Role = "ROLE_USER"
	RoleAgent Role = "ROLE_AGENT"
)

// Part is one piece of a message or an artifact: text, raw bytes, a URL or
// structured data.
type Part struct {
	Text      string          `json:"text,omitempty"`
	Raw       []byte          `json:"raw,omitempty"`
	URL       string          `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Metadata  map[string]any  `json:"metadata,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
}

// TextPart is a part of plain text.
func TextPart(s string) Part { return Part{Text: s} }

// DataPart is a part of JSON data; v must marshal.
func DataPart(v any) Part {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte("null")
	}
	return Part{Data: b, MediaType: "application/json"}
}

// Message is one turn of a conversation.
type Message struct {
	MessageID        string         `json:"messageId"`
	ContextID        string         `json:"contextId,omitempty"`
	TaskID           string         `json:"taskId,omitempty"`
	Role             Role           `json:"role"`
	Parts            []Part         `json:"parts"`
	Metadata         map[string]any `json:"metadata,omitempty"`
	Extensions       []string       `json:"extensions,omitempty"`
	ReferenceTaskIDs []string       `json:"referenceTaskIds,omitempty"`
}

// Artifact is an output of a task.
type Artifact struct {
	ArtifactID  string         `json:"artifactId"`
	Name        string         `json:"name,omitempty"`
	Description string         `json:"description,omitempty"`
	Parts       []Part         `json:"parts"`
	Metadata    map[string]any `json:"metadata,omitempty"`
	Extensions  []string       `json:"extensions,omitempty"`
}

// TaskStatus is where a task stands.
type TaskStatus struct {
	State     TaskState `json:"state"`
	Message   *Message  `json:"message,omitempty"`
	Timestamp string    `json:"timestamp,omitempty"`
}

// Task is a unit of work an agent tracks.
type Task struct {
	ID        string         `json:"id"`
	ContextID string         `json:"contextId,omitempty"`
	Status    TaskStatus     `json:"status"`
	Artifacts []Artifact     `json:"artifacts,omitempty"`
	History   []Message      `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// TaskStatusUpdateEvent tells a task's new status.
type TaskStatusUpdateEvent struct {
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Status    TaskStatus     `json:"status"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// TaskArtifactUpdateEvent tells an artifact a task made.
type TaskArtifactUpdateEvent struct {
	TaskID    string         `json:"taskId"`
	ContextID string         `json:"contextId"`
	Artifact  Artifact       `json:"artifact"`
	Append    bool           `json:"append,omitempty"`
	LastChunk bool           `json:"lastChunk,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// StreamResponse is one event of a stream: exactly one field is set.
type StreamResponse struct {
	Task           *Task                    `json:"task,omitempty"`
	Message        *Message                 `json:"message,omitempty"`
	StatusUpdate   *TaskStatusUpdateEvent   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *TaskArtifactUpdateEvent `json:"artifactUpdate,omitempty"`
}

// SendMessageConfiguration is how a client wants a send handled.
type SendMessageConfiguration struct {
	AcceptedOutputModes        []string        `json:"acceptedOutputModes,omitempty"`
	TaskPushNotificationConfig json.RawMessage `json:"taskPushNotificationConfig,omitempty"`
	HistoryLength              *int            `json:"historyLength,omitempty"`
	ReturnImmediately          bool            `json:"returnImmediately,omitempty"`
}

// SendMessageRequest is the params of SendMessage and SendStreamingMessage.
type SendMessageRequest struct {
	Tenant        string                    `json:"tenant,omitempty"`
	Message       *Message                  `json:"message"`
	Configuration *SendMessageConfiguration `json:"configuration,omitempty"`
	Metadata      map[string]any            `json:"metadata,omitempty"`
}

// SendMessageResponse is SendMessage's result: a task or a message.
type SendMessageResponse struct {
	Task    *Task    `json:"task,omitempty"`
	Message *Message `json:"message,omitempty"`
}

// GetTaskRequest is the params of GetTask.
type GetTaskRequest struct {
	Tenant        string `json:"tenant,omitempty"`
	ID            string `json:"id"`
	HistoryLength *int   `json:"historyLength,omitempty"`
}

// ListTasksRequest is the params of ListTasks.
type ListTasksRequest struct {
	Tenant               string    `json:"tenant,omitempty"`
	ContextID            string    `json:"contextId,omitempty"`
	Status               TaskState `json:"status,omitempty"`
	PageSize             *int      `json:"pageSize,omitempty"`
	PageToken            string    `json:"pageToken,omitempty"`
	HistoryLength        *int      `json:"historyLength,omitempty"`
	StatusTimestampAfter string    `json:"statusTimestampAfter,omitempty"`
	IncludeArtifacts     bool      `json:"includeArtifacts,omitempty"`
}

// ListTasksResponse is ListTasks' result. Every field is present, the
// last page's token an empty string (the spec's §3.1.4).
type ListTasksResponse struct {
	Tasks         []Task `json:"tasks"`
	NextPageToken string `json:"nextPageToken"`
	PageSize      int    `json:"pageSize"`
	TotalSize     int    `json:"totalSize"`
}

// TaskIDRequest is the params of CancelTask and SubscribeToTask.
type TaskIDRequest struct {
	Tenant   string         `json:"tenant,omitempty"`
	ID       string         `json:"id"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// AgentCard describes an agent: who it is, where and how to call it, what
// it can do.
type AgentCard struct {
	Name                string                    `json:"name"`
	Description         string                    `json:"description"`
	SupportedInterfaces []AgentInterface          `json:"supportedInterfaces"`
	Provider            *AgentProvider            `json:"provider,omitempty"`
	Version             string                    `json:"version"`
	DocumentationURL    string                    `json:"documentationUrl,omitempty"`
	Capabilities        AgentCapabilities         `json:"capabilities"`
	SecuritySchemes     map[string]SecurityScheme `json:"securitySchemes,omitempty"`
	SecurityReqs        []SecurityRequirement     `json:"securityRequirements,omitempty"`
	DefaultInputModes   []string                  `json:"defaultInputModes"`
	DefaultOutputModes  []string                  `json:"defaultOutputModes"`
	Skills              []AgentSkill              `json:"skills"`

	// The v0.3 card's fields, so that a v0.3 client (the Go SDK's) finds
	// its interface in the same card: the JSON-RPC URL, the version and
	// the transport.
	URL                string                `json:"url,omitempty"`
	ProtocolVersion    string                `json:"protocolVersion,omitempty"`
	PreferredTransport string                `json:"preferredTransport,omitempty"`
	Security           []map[string][]string `json:"security,omitempty"`
}

// AgentInterface is one way to reach the agent.
type AgentInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	Tenant          string `json:"tenant,omitempty"`
	ProtocolVersion string `json:"protocolVersion"`
}

// AgentProvider is who runs the agent.
type AgentProvider struct {
	URL          string `json:"url"`
	Organization string `json:"organization"`
}

// AgentCapabilities are the optional parts of the protocol an agent
// serves.
type AgentCapabilities struct {
	Streaming         bool             `json:"streaming"`
	PushNotifications bool             `json:"pushNotifications"`
	Extensions        []AgentExtension `json:"extensions,omitempty"`
	ExtendedAgentCard bool             `json:"extendedAgentCard"`
}

// AgentExtension is an extension an agent supports.
type AgentExtension struct {
	URI         string         `json:"uri"`
	Description string         `json:"description,omitempty"`
	Required    bool           `json:"required,omitempty"`
	Params      map[string]any `json:"params,omitempty"`
}

// AgentSkill is one thing the agent can do.
type AgentSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
	InputModes  []string `json:"inputModes,omitempty"`
	OutputModes []string `json:"outputModes,omitempty"`
}

// SecurityScheme is how a client authenticates; huddle's is an API key.
type SecurityScheme struct {
	APIKey   *APIKeySecurityScheme   `json:"apiKeySecurityScheme,omitempty"`
	HTTPAuth *HTTPAuthSecurityScheme `json:"httpAuthSecurityScheme,omitempty"`

	// The same scheme as a v0.3 card says it (OpenAPI's shape), for a
	// card that serves both versions: a v1.0 reader ignores these.
	Type string `json:"type,omitempty"`
	In   string `json:"in,omitempty"`
	Name string `json:"name,omitempty"`
}

// HTTPAuthSecurityScheme is HTTP authentication, Bearer most often.
type HTTPAuthSecurityScheme struct {
	Description  string `json:"description,omitempty"`
	Scheme       string `json:"scheme"`
	BearerFormat string `json:"bearerFormat,omitempty"`
}

// APIKeySecurityScheme is an API key sent in a header.
type APIKeySecurityScheme struct {
	Description string `json:"description,omitempty"`
	Location    string `json:"location"`
	Name        string `json:"name"`
}

// SecurityRequirement names the schemes a request must satisfy.
type SecurityRequirement struct {
	Schemes map[string]StringList `json:"schemes"`
}

// StringList is a list of strings (scopes).
type StringList struct {
	List []string `json:"list"`
}

// timestamp writes t as the spec's timestamps: UTC, milliseconds.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
