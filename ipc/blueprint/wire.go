package blueprint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// MaxBody bounds every request and response body (docs/ARCHITECTURE.md, "Bounds").
const MaxBody = 1 << 20

// Execution states.
const (
	StateAccepted  = "accepted"
	StateRunning   = "running"
	StateCompleted = "completed"
	StateFailed    = "failed"
	StateTimeout   = "timeout"
	StateCancelled = "cancelled"
)

// Final reports whether an execution in state s is over.
func Final(s string) bool {
	return s == StateCompleted || s == StateFailed || s == StateTimeout || s == StateCancelled
}

// Error codes of the envelope.
const (
	CodeValidation        = "VALIDATION_ERROR"       // 400
	CodeAuthRequired      = "AUTH_REQUIRED"          // 401
	CodePermissionDenied  = "PERMISSION_DENIED"      // 403
	CodeSkillNotFound     = "SKILL_NOT_FOUND"        // 404
	CodeExecutionNotFound = "EXECUTION_NOT_FOUND"    // 404
	CodeCancelled         = "EXECUTION_CANCELLED"    // 409
	CodeUnsupportedMedia  = "UNSUPPORTED_MEDIA_TYPE" // 415: a POST that is not JSON, without keys
	CodeIdempotencyReused = "IDEMPOTENCY_KEY_REUSED" // 422: the key with another request
	CodeTooMany           = "TOO_MANY_EXECUTIONS"    // 429
	CodeFailed            = "EXECUTION_FAILED"       // 502
	CodeServerRestarted   = "SERVER_RESTARTED"       // 502: a failed execution a server stop cut short
	CodeTimeout           = "EXECUTION_TIMEOUT"      // 504
	CodeUnreachable       = "ENDPOINT_UNREACHABLE"   // client side only
)

// Caller identifies who invokes.
type Caller struct {
	ID          string       `json:"id"`
	Type        string       `json:"type"`
	Credentials *Credentials `json:"credentials,omitempty"`
}

// Credentials carry an API key in the body (the X-API-Key header is the
// other way).
type Credentials struct {
	APIKey string `json:"api_key,omitempty"`
}

// Context is the invocation context. Hop and ParentRequestID are huddle's
// additions, so a correlation chain keeps its depth and its links when it
// crosses to another huddle.
type Context struct {
	TraceID         string `json:"trace_id,omitempty"`
	Priority        string `json:"priority,omitempty"`
	TimeoutMS       int64  `json:"timeout_ms,omitempty"`
	Hop             int    `json:"hop,omitempty"`
	ParentRequestID string `json:"parent_request_id,omitempty"`
}

// InvokeRequest is the body of POST /invoke.
type InvokeRequest struct {
	Caller  Caller         `json:"caller"`
	SkillID string         `json:"skill_id"`
	Inputs  map[string]any `json:"inputs"`
	Context Context        `json:"context"`
}

// Accepted is the 202 answer to POST /invoke.
type Accepted struct {
	ExecutionID string `json:"execution_id"`
	Status      string `json:"status"`
}

// Timestamps of an execution.
type Timestamps struct {
	CreatedAt   time.Time  `json:"created_at"`
	StartedAt   *time.Time `json:"started_at,omitempty"`
	CompletedAt *time.Time `json:"completed_at,omitempty"`
}

// Status is the body of GET /status/{id} (and of a 202 from /result). An
// execution that ended in error also carries the error /result gives.
type Status struct {
	ExecutionID string     `json:"execution_id"`
	SkillID     string     `json:"skill_id"`
	Status      string     `json:"status"`
	Error       *ErrorBody `json:"error,omitempty"`
	Timestamps  Timestamps `json:"timestamps"`
}

// Result is the body of a completed GET /result/{id}.
type Result struct {
	ExecutionID string          `json:"execution_id"`
	SkillID     string          `json:"skill_id"`
	Status      string          `json:"status"`
	Output      json.RawMessage `json:"output"`
	Timestamps  Timestamps      `json:"timestamps"`
}

// Retry is the hint a server gives with an error it expects to pass.
type Retry struct {
	SuggestedDelayMS int64 `json:"suggested_delay_ms"`
	MaxAttempts      int   `json:"max_attempts"`
}

// ErrorBody is the error of the envelope.
type ErrorBody struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
	Retry   *Retry         `json:"retry,omitempty"`
}

// Envelope is every error answer: {"error": {...}}. Failed executions also
// carry their execution id and status.
type Envelope struct {
	ExecutionID string    `json:"execution_id,omitempty"`
	Status      string    `json:"status,omitempty"`
	Error       ErrorBody `json:"error"`
}

// FieldError is a validation failure naming the field.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// DecodeInvoke parses and checks a POST /invoke body. The error is a
// *FieldError naming the missing or wrong field.
func DecodeInvoke(body []byte) (*InvokeRequest, error) {
	if len(body) > MaxBody {
		return nil, &FieldError{"body", "exceeds 1 MiB"}
	}
	// JSON's whitespace only: bytes.TrimSpace would also strip U+00A0 and
	// U+0085, and a body padded with them is not JSON.
	trimmed := bytes.Trim(body, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, &FieldError{"body", "is empty"}
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &raw); err != nil {
		return nil, &FieldError{"body", "is not a JSON object"}
	}
	var req InvokeRequest
	for _, f := range []struct {
		name     string
		dst      any
		required bool
		want     string
	}{
		{"caller", &req.Caller, true, "an object {id, type, credentials?}"},
		{"skill_id", &req.SkillID, true, "a string"},
		{"inputs", &req.Inputs, true, "an object"},
		{"context", &req.Context, false, "an object {trace_id?, priority?, timeout_ms?}"},
	} {
		v, ok := raw[f.name]
		if !ok || string(v) == "null" {
			if f.required {
				return nil, &FieldError{f.name, "is required"}
			}
			continue
		}
		if err := json.Unmarshal(v, f.dst); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field != "" {
				return nil, &FieldError{f.name + "." + te.Field, fmt.Sprintf("want %s", te.Type)}
			}
			return nil, &FieldError{f.name, "want " + f.want}
		}
	}
	switch {
	case strings.TrimSpace(req.Caller.ID) == "":
		return nil, &FieldError{"caller.id", "is required"}
	case strings.TrimSpace(req.Caller.Type) == "":
		return nil, &FieldError{"caller.type", "is required"}
	case strings.TrimSpace(req.SkillID) == "":
		return nil, &FieldError{"skill_id", "is required"}
	case req.Inputs == nil:
		return nil, &FieldError{"inputs", "is required"}
	case req.Context.TimeoutMS < 0:
		return nil, &FieldError{"context.timeout_ms", "must not be negative"}
	case req.Context.Hop < 0:
		return nil, &FieldError{"context.hop", "must not be negative"}
	}
	return &req, nil
}

// Prompt is what the invocation asks: inputs.prompt when it is a string,
// otherwise the inputs as JSON.
func (r *InvokeRequest) Prompt() string {
	if p, ok := r.Inputs["prompt"].(string); ok {
		return p
	}
	b, _ := json.Marshal(r.Inputs)
	return string(b)
}
