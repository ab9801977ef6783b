package ipc

import (
	"testing"

	"huddle/ipc/trace"
	"huddle/protocol"
)

// A late error answer is traced like an on-time one: its details stay.
func TestLateErrorAnswerKeepsDetails(t *testing.T) {
	dir := t.TempDir()
	router := NewRouter(dir)
	req := protocol.InvocationRequest{RequestID: "req-1", CorrelationID: "corr-1", Caller: "me", Target: "slowpoke", Action: "think", TimeoutSec: 1}
	router.expect(req.RequestID)
	router.giveUp(req, true)
	late := protocol.Fail(&req, 1500, protocol.ErrInvalidResponse, "INVALID_RESPONSE: no summary", map[string]string{"reason": "no summary"})
	if router.Deliver(late) {
		t.Fatal("a late answer was delivered as if on time")
	}
	spans := readSpans(t, dir)
	if len(spans) != 1 {
		t.Fatalf("spans: %+v", spans)
	}
	s := spans[0]
	if s.Span != trace.SpanEnd || !s.Late || s.Status != protocol.ResultError || s.DurationMS != 1500 || s.Error == nil ||
		s.Error.Code != string(protocol.ErrInvalidResponse) || string(s.Error.Details) != `{"reason":"no summary"}` {
		t.Fatalf("late span %+v (error %+v)", s, s.Error)
	}
}
