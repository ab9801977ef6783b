package replay

import (
	"encoding/json"
	"fmt"
	"time"

	"huddle/ipc/trace"
	"huddle/protocol"
)

// Kind says what an Event records.
type Kind string

// The kinds of event, one per source of the timeline.
const (
	KindStatus  Kind = "status"  // a member moved to a status
	KindRequest Kind = "request" // a request was created or changed state
	KindMessage Kind = "message" // a message landed in an inbox
	KindSpan    Kind = "span"    // a call started or ended
)

// Event is one thing that happened to the team, at At. Exactly one of
// Member, Request, Message and Span is set, as Kind says. Each event carries
// the whole of what changed, as it was then, so a fold needs nothing else.
type Event struct {
	At   time.Time
	Kind Kind
	// Member is the member's record as of this move: its name, role and
	// runtime, and the status, activity, since and error of the move.
	Member *protocol.Member
	// Request is the request as it was right after this transition: its
	// status, its history up to it, and its answer once final.
	Request *protocol.Request
	// Inbox and Offset say where Message was read: whose inbox and at which
	// logical offset.
	Inbox   string
	Offset  int64
	Message *protocol.Message
	Span    *trace.Span
}

// wireEvent is an Event as one line of an export.
type wireEvent struct {
	At      time.Time         `json:"at"`
	Kind    Kind              `json:"kind"`
	Member  *protocol.Member  `json:"member,omitempty"`
	Request *protocol.Request `json:"request,omitempty"`
	Inbox   string            `json:"inbox,omitempty"`
	Offset  int64             `json:"offset,omitempty"`
	Message json.RawMessage   `json:"message,omitempty"`
	Span    *trace.Span       `json:"span,omitempty"`
}

// MarshalJSON writes the event as an export line (without its newline).
func (e Event) MarshalJSON() ([]byte, error) {
	w := wireEvent{At: e.At, Kind: e.Kind, Member: e.Member, Request: e.Request, Inbox: e.Inbox, Offset: e.Offset, Span: e.Span}
	if e.Message != nil {
		b, err := json.Marshal(e.Message)
		if err != nil {
			return nil, err
		}
		w.Message = b
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads an export line and checks that it holds what its kind
// says: a message is decoded and validated as an inbox line is.
func (e *Event) UnmarshalJSON(b []byte) error {
	var w wireEvent
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*e = Event{At: w.At, Kind: w.Kind, Member: w.Member, Request: w.Request, Inbox: w.Inbox, Offset: w.Offset, Span: w.Span}
	if len(w.Message) > 0 {
		m, err := protocol.Decode(w.Message, protocol.Fallback{To: w.Inbox})
		if err != nil {
			return fmt.Errorf("message: %w", err)
		}
		e.Message = &m
	}
	return e.check()
}

// check reports an event whose payload does not match its kind.
func (e *Event) check() error {
	ok := false
	switch e.Kind {
	case KindStatus:
		ok = e.Member != nil && protocol.ValidateName(e.Member.Name) == nil
	case KindRequest:
		ok = e.Request != nil && e.Request.ID != ""
	case KindMessage:
		ok = e.Message != nil && e.Inbox != ""
	case KindSpan:
		ok = e.Span != nil
	default:
		return fmt.Errorf("unknown kind %q", e.Kind)
	}
	if !ok {
		return fmt.Errorf("a %s event without its %s", e.Kind, e.Kind)
	}
	return nil
}
