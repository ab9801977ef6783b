package trace

import (
	"encoding/json"
	"time"

	"huddle/protocol"
)

// Call states as a trace shows them.
const (
	CallRunning = "running"
	CallOK      = "ok"
	CallError   = "error"
)

// Call is one invocation folded from its spans. Its JSON (MarshalJSON) is
// every field, as `huddle traces --json` prints it.
type Call struct {
	RequestID       string
	CorrelationID   string
	ParentRequestID string
	Caller          string
	Target          string
	Action          string
	Hop             int
	Prompt          string
	Start           time.Time // zero when only the end span was seen
	End             time.Time // zero while running
	Status          string    // running | ok | error
	DurationMS      int64
	ErrorCode       string
	ErrorMessage    string
	ErrorReason     string // details.reason of the error, when it has one
	Refused         string // details.answer of an INVALID_RESPONSE: the answer refused
	Result          string
	Late            bool // an answer arrived after the deadline
	Remote          string
}

// Row is one call of a chain in tree order, with its depth in the tree. Its
// JSON is the call's with "depth" first.
type Row struct {
	Call  *Call
	Depth int
}

// Chain is a correlation chain: every call sharing a correlation id, as a
// tree linked by parent_request_id, flattened in tree order (children by
// start time).
type Chain struct {
	CorrelationID string    `json:"correlation_id"`
	Start         time.Time `json:"start"` // the earliest call's start
	Rows          []Row     `json:"calls"`
}

// callJSON is the JSON of a call. A struct of its own, not tags on Call:
// the times are null when not known, and a Row puts its depth before them.
type callJSON struct {
	RequestID       string  `json:"request_id"`
	CorrelationID   string  `json:"correlation_id"`
	ParentRequestID string  `json:"parent_request_id"`
	Caller          string  `json:"caller"`
	Target          string  `json:"target"`
	Action          string  `json:"action"`
	Hop             int     `json:"hop"`
	Prompt          string  `json:"prompt"`
	Start           *string `json:"start"`
	End             *string `json:"end"`
	Status          string  `json:"status"`
	DurationMS      int64   `json:"duration_ms"`
	ErrorCode       string  `json:"error_code"`
	ErrorMessage    string  `json:"error_message"`
	ErrorReason     string  `json:"error_reason"`
	Refused         string  `json:"refused_answer,omitempty"`
	Result          string  `json:"result"`
	Late            bool    `json:"late"`
	Remote          string  `json:"remote"`
}

func (c *Call) wire() callJSON {
	if c == nil {
		return callJSON{}
	}
	return callJSON{
		RequestID: c.RequestID, CorrelationID: c.CorrelationID, ParentRequestID: c.ParentRequestID,
		Caller: c.Caller, Target: c.Target, Action: c.Action, Hop: c.Hop, Prompt: c.Prompt,
		Start: wireTime(c.Start), End: wireTime(c.End), Status: c.Status, DurationMS: c.DurationMS,
		ErrorCode: c.ErrorCode, ErrorMessage: c.ErrorMessage, ErrorReason: c.ErrorReason, Refused: c.Refused,
		Result: c.Result, Late: c.Late, Remote: c.Remote,
	}
}

// MarshalJSON writes every field of the call; times in the wire form, or
// null when not known.
func (c Call) MarshalJSON() ([]byte, error) { return json.Marshal(c.wire()) }

// MarshalJSON writes the row's call with its depth first.
func (r Row) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Depth int `json:"depth"`
		callJSON
	}{r.Depth, r.Call.wire()})
}

// MarshalJSON writes a chain with its start in the wire form (null when not
// known) and its rows as "calls", [] when there are none.
func (ch Chain) MarshalJSON() ([]byte, error) {
	type plain Chain // without the method
	rows := ch.Rows
	if rows == nil {
		rows = []Row{}
	}
	return json.Marshal(struct {
		plain
		Start *string `json:"start"`
		Rows  []Row   `json:"calls"`
	}{plain(ch), wireTime(ch.Start), rows})
}

// wireTime is t in the wire form, or nil (null) when it is not known.
func wireTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := protocol.FormatTime(t)
	return &s
}
