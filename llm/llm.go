// Package llm drives teammates with a language model: one provider-neutral
// chat interface (Model) with two implementations (the OpenAI Chat
// Completions API and the Anthropic Messages API), and the loop (Agent) that
// turns a model's tool calls into huddle's gates: plans, messages, calls and
// work on files, each through the Env the team runtime gives it.
//
// llm knows nothing of inboxes or records: the runtime (package team)
// implements Env. It imports only protocol and internal/sandbox of ours
// (docs/ARCHITECTURE.md, "Packages").
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"huddle/llm/record"
)

// Role says who a Message is from.
type Role string

const (
	RoleUser      Role = "user"      // a prompt, a message from a teammate
	RoleAssistant Role = "assistant" // the model's text and tool calls
	RoleTool      Role = "tool"      // the result of one tool call
)

// Message is one turn of a conversation, provider-neutral.
type Message struct {
	Role       Role       `json:"role"`
	Text       string     `json:"text,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`   // RoleAssistant
	ToolCallID string     `json:"tool_call_id,omitempty"` // RoleTool: the call it answers
	IsError    bool       `json:"is_error,omitempty"`     // RoleTool: a refusal or a failure
}

// ToolCall is the model asking for one tool with JSON arguments.
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// ToolSpec offers a tool to the model: its name, what it does and the JSON
// schema of its arguments.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Params      json.RawMessage `json:"params"`
}

// Request is one call to a model.
type Request struct {
	System    string
	Messages  []Message
	Tools     []ToolSpec
	MaxTokens int // the most output tokens of this turn (0: the provider's default)
}

// Usage counts the tokens of one turn.
type Usage = record.Usage

// Response is the model's turn: text, tool calls, or both.
type Response struct {
	Text      string
	ToolCalls []ToolCall
	Usage     Usage
	Stop      string // the provider's stop reason, as it says it
}

// Model is one provider's chat API. Turn makes one request and returns the
// model's turn; it does not retry (the Agent does, see APIError).
type Model interface {
	Turn(ctx context.Context, req Request) (Response, error)
}

// APIError is a provider's refusal, with what the Agent needs to decide
// whether to retry: 429 and 5xx are retried (honouring RetryAfter), 401
// (the key) and 404 (the model) are not. Message never holds the key.
type APIError struct {
	Status     int
	RetryAfter time.Duration // 0: none given
	Message    string
	// ContextFull is set when the provider says the conversation no longer
	// fits the context window: the Agent drops the oldest tool results.
	ContextFull bool
}

func (e *APIError) Error() string { return e.Message }

// ErrStopped ends an Agent's run: the member approved its own shutdown or
// the runtime stopped it.
var ErrStopped = errors.New("llm: stopped")

// Env is what an llm teammate can do in its team. The runtime implements it;
// every method goes through huddle's own gates (the plan request, the
// address checks of huddle send, the member's .puruto-ipc.json).
type Env interface {
	// SubmitPlan opens a plan request and blocks until it is decided.
	// approved with the lead's feedback, or not approved with the feedback
	// (or the reason: expired, cancelled).
	SubmitPlan(ctx context.Context, plan string) (approved bool, feedback string, err error)
	Send(to, content string) error
	Broadcast(content string) error
	// Call invokes a teammate's action under the member's policy; the
	// result (ok or error, with its code) is returned as JSON text.
	Call(ctx context.Context, target, action, prompt string, timeoutSec int) (resultJSON string, err error)
	// ShutdownResponse answers a shutdown request; an approval stops the
	// member (the Agent's run then ends with ErrStopped).
	ShutdownResponse(requestID string, approve bool, reason string) error
	// Activity tells the roster what the loop is doing now: "thinking",
	// "read_file src/main.go", "waiting for approval", "calling b.x".
	Activity(text string)
	// Usage adds one turn's tokens to the member's totals.
	Usage(u Usage)
}

// Entry is one line of a member's transcript
// (members/<name>.transcript.jsonl).
type Entry = record.Entry
