package ipc

import (
	"time"
)

// TracesFile is the span log of a team directory (DESIGN §7).
const TracesFile = "traces.jsonl"

// Span kinds.
const (
	SpanStart = "start"
	SpanEnd   = "end"
)

// Span is one line of traces.jsonl: a call's start or its end. Prompt (on
// start) and Result (on end) are huddle's additions, so a trace shows what
// was asked and what came back; Late marks an answer that came after the
// caller's deadline; Remote names the endpoint of a call that crossed to
// another huddle over HTTP.
type Span struct {
	Span            string     `json:"span"`
	TS              time.Time  `json:"ts"`
	RequestID       string     `json:"request_id"`
	CorrelationID   string     `json:"correlation_id"`
	ParentRequestID string     `json:"parent_request_id,omitempty"`
	Caller          string     `json:"caller"`
	Target          string     `json:"target"`
	Action          string     `json:"action"`
	Hop             int        `json:"hop"`
	Prompt          string     `json:"prompt,omitempty"`
	Status          string     `json:"status,omitempty"`
	DurationMS      int64      `json:"duration_ms,omitempty"`
	Error           *SpanError `json:"error,omitempty"`
	Result          string     `json:"result,omitempty"`
	Late            bool       `json:"late,omitempty"`
	Remote          string     `json:"remote,omitempty"`
}

// SpanError is the error of an end span.
type SpanError struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

// Call states as a trace shows them.
const (
	CallRunning = "running"
	CallOK      = "ok"
	CallError   = "error"
)

// Call is one invocation folded from its spans.
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
	Result          string
	Late            bool // an answer arrived after the deadline
	Remote          string
}

// Row is one call of a chain in tree order, with its depth in the tree.
type Row struct {
	Call  *Call
	Depth int
}

// Chain is a correlation chain: every call sharing a correlation id, as a
// tree linked by parent_request_id, flattened in tree order (children by
// start time).
type Chain struct {
	CorrelationID string
	Start         time.Time // the earliest call's start
	Rows          []Row
}
