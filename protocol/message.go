package protocol

import (
	"errors"
	"fmt"
	"time"
)

// MessageType names the kind of an inbox line (docs/ARCHITECTURE.md, "Messages").
type MessageType string

const (
	TypeMessage              MessageType = "message"
	TypeBroadcast            MessageType = "broadcast"
	TypeShutdownRequest      MessageType = "shutdown_request"
	TypeShutdownResponse     MessageType = "shutdown_response"
	TypePlanApprovalRequest  MessageType = "plan_approval_request"
	TypePlanApprovalResponse MessageType = "plan_approval_response"
	TypeInvocationRequest    MessageType = "invocation_request"
	TypeInvocationResult     MessageType = "invocation_result"
	TypeStatus               MessageType = "status"
	// TypeInvocationCancel is huddle's addition to docs/ARCHITECTURE.md, "Messages": the caller of
	// an invocation (request_id) no longer wants its answer, so the callee
	// stops and cancels its own onward calls.
	TypeInvocationCancel MessageType = "invocation_cancel"
	// TypePermissionRequest tells the lead that a teammate's agent asks to
	// use a tool (request_id names the record; content draws the use on
	// one line); TypePermissionResponse is the answer the agent acts on
	// (approve, and feedback: why not).
	TypePermissionRequest  MessageType = "permission_request"
	TypePermissionResponse MessageType = "permission_response"
)

// MessageTypes lists every type in the order of docs/ARCHITECTURE.md, "Messages"
var MessageTypes = []MessageType{
	TypeMessage, TypeBroadcast, TypeShutdownRequest, TypeShutdownResponse,
	TypePlanApprovalRequest, TypePlanApprovalResponse, TypeInvocationRequest,
	TypeInvocationResult, TypeStatus, TypeInvocationCancel,
	TypePermissionRequest, TypePermissionResponse,
}

// Known reports whether t is one of the types of docs/ARCHITECTURE.md, "Messages"
func (t MessageType) Known() bool {
	for _, k := range MessageTypes {
		if t == k {
			return true
		}
	}
	return false
}

// Message is one inbox line. The common fields come first; the rest are used
// by the types that docs/ARCHITECTURE.md, "Messages" gives them to.
type Message struct {
	ID      string      `json:"id"`
	Type    MessageType `json:"type"`
	From    string      `json:"from"`
	To      string      `json:"to"`
	TS      time.Time   `json:"ts"`
	Content string      `json:"content,omitempty"`

	RequestID string `json:"request_id,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Approve   *bool  `json:"approve,omitempty"`
	Feedback  string `json:"feedback,omitempty"`
	Plan      string `json:"plan,omitempty"`

	Invocation *InvocationRequest `json:"invocation,omitempty"`
	Result     *InvocationResult  `json:"result,omitempty"`

	Status MemberStatus `json:"status,omitempty"`

	// Extra holds top-level fields this version does not know, so a line
	// written by someone else loses nothing when huddle reads it.
	Extra map[string]any `json:"-"`
}

// Bool returns a pointer to v, for Message.Approve.
func Bool(v bool) *bool { return &v }

// Approved reports the decision a response carries (false when absent).
func (m *Message) Approved() bool { return m.Approve != nil && *m.Approve }

// Event is the request event a response stands for: approve when it
// approves, reject otherwise.
func (m *Message) Event() RequestEvent { return AnswerEvent(m.Approved()) }

// Validate checks the envelope and the fields the message's type requires.
// The error names the type and the offending field:
// "plan_approval_response: request_id is required".
func (m *Message) Validate() error {
	if m.Type == "" {
		return errors.New("message: type is required")
	}
	if !m.Type.Known() {
		return fmt.Errorf("message: unknown type %q", clip(string(m.Type), 64))
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("%s: %s", m.Type, fmt.Sprintf(format, a...))
	}
	// Judge ts as the wire will hold it (UTC, whole microseconds, a
	// four-digit year), so that whatever passes can be written and read back.
	ts := m.TS.UTC().Truncate(time.Microsecond)
	switch {
	case m.ID == "":
		return fail("id is required")
	case ValidateID(m.ID) != nil:
		return fail("id: %v", ValidateID(m.ID))
	case m.From == "":
		return fail("from is required")
	case ValidateName(m.From) != nil:
		return fail("from: %v", ValidateName(m.From))
	case m.To == "":
		return fail("to is required")
	case ValidateName(m.To) != nil:
		return fail("to: %v", ValidateName(m.To))
	case ts.IsZero():
		return fail("ts is required")
	case ts.Year() < 0 || ts.Year() > 9999:
		return fail("ts: year %d is outside 0000-9999", ts.Year())
	}
	requestID := func() error {
		if m.RequestID == "" {
			return fail("request_id is required")
		}
		if err := ValidateID(m.RequestID); err != nil {
			return fail("request_id: %v", err)
		}
		return nil
	}
	switch m.Type {
	case TypeMessage, TypeBroadcast:
		if m.Content == "" {
			return fail("content is required")
		}
	case TypeShutdownRequest, TypeInvocationCancel:
		return requestID()
	case TypeShutdownResponse, TypePlanApprovalResponse, TypePermissionResponse:
		if err := requestID(); err != nil {
			return err
		}
		if m.Approve == nil {
			return fail("approve is required")
		}
	case TypePlanApprovalRequest:
		if err := requestID(); err != nil {
			return err
		}
		if m.Plan == "" {
			return fail("plan is required")
		}
	case TypePermissionRequest:
		if err := requestID(); err != nil {
			return err
		}
		if m.Content == "" {
			return fail("content is required")
		}
	case TypeInvocationRequest:
		if m.Invocation == nil {
			return fail("invocation is required")
		}
		if err := m.Invocation.Validate(); err != nil {
			return fail("invocation: %v", err)
		}
	case TypeInvocationResult:
		if m.Result == nil {
			return fail("result is required")
		}
		if err := m.Result.Validate(); err != nil {
			return fail("result: %v", err)
		}
	case TypeStatus:
		if m.Status == "" {
			return fail("status is required")
		}
		if !m.Status.Known() {
			return fail("unknown status %q", clip(string(m.Status), 64))
		}
	}
	return nil
}

// NewMessage fills the envelope of a message of type t from one name to
// another: a fresh id and the current time.
func NewMessage(t MessageType, from, to string) Message {
	return Message{ID: NewMessageID(), Type: t, From: from, To: to, TS: time.Now().UTC()}
}
