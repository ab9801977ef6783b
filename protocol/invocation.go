package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ErrorCode is an invocation error code (docs/ARCHITECTURE.md, "Invocation (Puruto IPC)").
type ErrorCode string

const (
	ErrTargetNotFound  ErrorCode = "TARGET_NOT_FOUND"
	ErrDenied          ErrorCode = "DENIED"
	ErrTimeout         ErrorCode = "TIMEOUT"
	ErrInvalidResponse ErrorCode = "INVALID_RESPONSE"
	ErrIPC             ErrorCode = "IPC_ERROR"
)

// ErrorCodes lists every code.
var ErrorCodes = []ErrorCode{ErrTargetNotFound, ErrDenied, ErrTimeout, ErrInvalidResponse, ErrIPC}

// Known reports whether c is one of the codes of docs/ARCHITECTURE.md, "Invocation (Puruto IPC)"
func (c ErrorCode) Known() bool {
	for _, k := range ErrorCodes {
		if c == k {
			return true
		}
	}
	return false
}

// Reasons carried in details.reason of a DENIED error.
const (
	DeniedNotAllowedTarget = "not_allowed_target"
	DeniedNotAllowedAction = "not_allowed_action"
	DeniedMaxHops          = "max_hops"
	DeniedDisabled         = "disabled"
)

// InvocationRequest asks a target to run an action (docs/ARCHITECTURE.md, "Invocation (Puruto IPC)").
type InvocationRequest struct {
	RequestID       string `json:"request_id"`
	CorrelationID   string `json:"correlation_id"`
	Caller          string `json:"caller"`
	Target          string `json:"target"`
	Action          string `json:"action"`
	Prompt          string `json:"prompt"`
	TimeoutSec      int    `json:"timeout_sec"`
	Hop             int    `json:"hop"`
	ParentRequestID string `json:"parent_request_id,omitempty"`
	Traceparent     string `json:"traceparent,omitempty"`
}

// Validate checks every required field and names the first one missing or
// wrong.
func (r *InvocationRequest) Validate() error {
	ids := []struct{ field, v string }{
		{"request_id", r.RequestID}, {"correlation_id", r.CorrelationID},
	}
	for _, f := range ids {
		if f.v == "" {
			return fmt.Errorf("invocation_request: %s is required", f.field)
		}
		if err := ValidateID(f.v); err != nil {
			return fmt.Errorf("invocation_request: %s: %v", f.field, err)
		}
	}
	for _, f := range []struct{ field, v string }{{"caller", r.Caller}, {"target", r.Target}, {"action", r.Action}} {
		if f.v == "" {
			return fmt.Errorf("invocation_request: %s is required", f.field)
		}
	}
	if r.TimeoutSec < 0 {
		return fmt.Errorf("invocation_request: timeout_sec must not be negative (got %d)", r.TimeoutSec)
	}
	if r.Hop < 0 {
		return fmt.Errorf("invocation_request: hop must not be negative (got %d)", r.Hop)
	}
	if r.ParentRequestID != "" {
		if err := ValidateID(r.ParentRequestID); err != nil {
			return fmt.Errorf("invocation_request: parent_request_id: %v", err)
		}
	}
	return nil
}

// Result statuses.
const (
	ResultOK    = "ok"
	ResultError = "error"
)

// InvocationError is the error object of a failed invocation.
type InvocationError struct {
	Code    ErrorCode       `json:"code"`
	Message string          `json:"message"`
	Details json.RawMessage `json:"details"`
}

// InvocationResult answers an InvocationRequest (docs/ARCHITECTURE.md, "Invocation (Puruto IPC)").
type InvocationResult struct {
	RequestID     string           `json:"request_id"`
	CorrelationID string           `json:"correlation_id"`
	Status        string           `json:"status"`
	DurationMS    int64            `json:"duration_ms"`
	Result        json.RawMessage  `json:"result,omitempty"`
	Error         *InvocationError `json:"error,omitempty"`
}

// Validate checks the result's shape: an ok result carries a result object
// and no error; an error result carries an error with a known code.
func (r *InvocationResult) Validate() error {
	if r.RequestID == "" {
		return errors.New("invocation_result: request_id is required")
	}
	if err := ValidateID(r.RequestID); err != nil {
		return fmt.Errorf("invocation_result: request_id: %v", err)
	}
	if r.CorrelationID == "" {
		return errors.New("invocation_result: correlation_id is required")
	}
	if err := ValidateID(r.CorrelationID); err != nil {
		return fmt.Errorf("invocation_result: correlation_id: %v", err)
	}
	if r.DurationMS < 0 {
		return fmt.Errorf("invocation_result: duration_ms must not be negative (got %d)", r.DurationMS)
	}
	switch r.Status {
	case ResultOK:
		if len(r.Result) == 0 || string(r.Result) == "null" {
			return errors.New("invocation_result: result is required when status is ok")
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(r.Result, &obj); err != nil {
			return errors.New("invocation_result: result must be an object")
		}
		if r.Error != nil {
			return errors.New("invocation_result: error must be absent when status is ok")
		}
	case ResultError:
		if r.Error == nil {
			return errors.New("invocation_result: error is required when status is error")
		}
		if r.Error.Code == "" {
			return errors.New("invocation_result: error.code is required")
		}
		if !r.Error.Code.Known() {
			return fmt.Errorf("invocation_result: error.code %q is not a known code", clip(string(r.Error.Code), 64))
		}
		if r.Error.Message == "" {
			return errors.New("invocation_result: error.message is required")
		}
	case "":
		return errors.New("invocation_result: status is required")
	default:
		return fmt.Errorf("invocation_result: status %q: want ok or error", clip(r.Status, 64))
	}
	return nil
}

// OK builds a successful result for req.
func OK(req *InvocationRequest, durationMS int64, result any) (InvocationResult, error) {
	b, err := Marshal(result)
	if err != nil {
		return InvocationResult{}, fmt.Errorf("result: %w", err)
	}
	return InvocationResult{RequestID: req.RequestID, CorrelationID: req.CorrelationID, Status: ResultOK, DurationMS: durationMS, Result: b}, nil
}

// Fail builds an error result for req. details may be nil.
func Fail(req *InvocationRequest, durationMS int64, code ErrorCode, message string, details any) InvocationResult {
	d := json.RawMessage("null")
	if details != nil {
		if b, err := Marshal(details); err == nil {
			d = b
		}
	}
	return InvocationResult{
		RequestID: req.RequestID, CorrelationID: req.CorrelationID, Status: ResultError, DurationMS: durationMS,
		Error: &InvocationError{Code: code, Message: message, Details: d},
	}
}

// A2ACardPath is where an A2A server publishes its Agent Card (A2A v1.0,
// "Agent Discovery"); huddle serve --a2a serves it there.
const A2ACardPath = "/.well-known/agent-card.json"
