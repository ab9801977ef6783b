package trace

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"huddle/protocol"
)

var buildAt = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func buildReq() protocol.InvocationRequest {
	return protocol.InvocationRequest{RequestID: "req-1", CorrelationID: "corr-1", ParentRequestID: "req-0",
		Caller: "reservas", Target: "finanzas", Action: "pagar", Hop: 1, Prompt: "pay", TimeoutSec: 3}
}

func TestStartSpan(t *testing.T) {
	s := Start(buildReq(), buildAt)
	want := Span{Span: SpanStart, TS: buildAt, RequestID: "req-1", CorrelationID: "corr-1", ParentRequestID: "req-0",
		Caller: "reservas", Target: "finanzas", Action: "pagar", Hop: 1, Prompt: "pay"}
	if !equalSpans(s, want) {
		t.Fatalf("got %+v\nwant %+v", s, want)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
}

// An end span is the same on time and late, but for Late: a late answer
// keeps its error details and the call's remote endpoint.
func TestEndSpanLateKeepsDetailsAndRemote(t *testing.T) {
	req := buildReq()
	res := protocol.Fail(&req, 3001, protocol.ErrDenied, "no", map[string]string{"reason": "max_hops"})
	for _, late := range []bool{false, true} {
		s := End(req, res, "http://10.0.0.2:7070", late, buildAt)
		want := Span{Span: SpanEnd, TS: buildAt, RequestID: "req-1", CorrelationID: "corr-1", ParentRequestID: "req-0",
			Caller: "reservas", Target: "finanzas", Action: "pagar", Hop: 1, Status: protocol.ResultError, DurationMS: 3001,
			Error:  &SpanError{Code: "DENIED", Message: "no", Details: json.RawMessage(`{"reason":"max_hops"}`)},
			Remote: "http://10.0.0.2:7070", Late: late}
		if !equalSpans(s, want) {
			t.Fatalf("late=%v: got %+v\nwant %+v", late, s, want)
		}
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestEndSpanClipsResult(t *testing.T) {
	req := buildReq()
	res, _ := protocol.OK(&req, 5, map[string]string{"summary": strings.Repeat("x", 3000)})
	s := End(req, res, "", true, buildAt)
	if s.Error != nil || s.Status != protocol.ResultOK || !s.Late || s.Remote != "" ||
		len(s.Result) != maxResultInTrace+len("…") || !strings.HasSuffix(s.Result, "…") {
		t.Fatalf("got %+v", s)
	}
}

func equalSpans(a, b Span) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
