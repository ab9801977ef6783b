package trace

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"huddle/protocol"
	"huddle/teamdir"
)

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

// SpanError is the error of an end span. Details is the error's details
// object as the invocation result carried it (a DENIED call says why in
// details.reason).
type SpanError struct {
	Code    string          `json:"code"`
	Message string          `json:"message,omitempty"`
	Details json.RawMessage `json:"details,omitempty"`
}

// MarshalJSON writes a span in the wire form: ts as RFC 3339, UTC, µs.
func (s Span) MarshalJSON() ([]byte, error) {
	type plain Span // without the method
	return json.Marshal(struct {
		plain
		TS string `json:"ts"`
	}{plain(s), protocol.FormatTime(s.TS)})
}

// Validate checks a span before it is written and after it is read: its
// kind, its time, its ids (they may become file names elsewhere), its hop,
// and an end span's status.
func (s *Span) Validate() error {
	if s.Span != SpanStart && s.Span != SpanEnd {
		return fmt.Errorf("span: kind %q: want start or end", clip(s.Span))
	}
	if s.TS.IsZero() {
		return errors.New("span: ts is required")
	}
	for _, f := range []struct{ field, v string }{{"request_id", s.RequestID}, {"correlation_id", s.CorrelationID}} {
		if err := protocol.ValidateID(f.v); err != nil {
			return fmt.Errorf("span: %s: %v", f.field, err)
		}
	}
	if s.ParentRequestID != "" {
		if err := protocol.ValidateID(s.ParentRequestID); err != nil {
			return fmt.Errorf("span: parent_request_id: %v", err)
		}
	}
	if s.Hop < 0 {
		return fmt.Errorf("span: hop must not be negative (got %d)", s.Hop)
	}
	if s.DurationMS < 0 {
		return fmt.Errorf("span: duration_ms must not be negative (got %d)", s.DurationMS)
	}
	if s.Span == SpanEnd && s.Status != protocol.ResultOK && s.Status != protocol.ResultError {
		return fmt.Errorf("span: end status %q: want ok or error", clip(s.Status))
	}
	return nil
}

func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	return s[:64] + "…"
}

// AppendSpan validates s and appends it as one line to teamDir/traces.jsonl,
// under an exclusive flock with one write, so spans from any number of
// processes never interleave. A zero TS is stamped with the current time.
// The observer, if any (Observe), sees the span before it is written.
func AppendSpan(teamDir string, s Span) error {
	line, err := Line(s)
	if err != nil {
		return err
	}
	if err := teamdir.AppendLine(teamdir.TracesPath(teamDir), line); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	return nil
}

// Line is AppendSpan but the write: s stamped, validated, shown to the
// observer and encoded as its line of traces.jsonl, newline included, for
// a writer that appends it itself (a teamdir.Joiner).
func Line(s Span) ([]byte, error) {
	if s.TS.IsZero() {
		s.TS = time.Now()
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	observe(s)
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	if len(b)+1 > protocol.MaxLine {
		return nil, fmt.Errorf("trace: span %s: %w (%d bytes)", s.RequestID, protocol.ErrTooLarge, len(b)+1)
	}
	return append(b, '\n'), nil
}
