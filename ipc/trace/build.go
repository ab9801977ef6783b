package trace

import (
	"time"

	"huddle/protocol"
)

// maxResultInTrace bounds the result text kept in an end span.
const maxResultInTrace = 2 << 10

// Start is the start span of req, at the time the call was made.
func Start(req protocol.InvocationRequest, at time.Time) Span {
	return Span{Span: SpanStart, TS: at, RequestID: req.RequestID, CorrelationID: req.CorrelationID,
		ParentRequestID: req.ParentRequestID, Caller: req.Caller, Target: req.Target, Action: req.Action,
		Hop: req.Hop, Prompt: req.Prompt}
}

// End is the end span of req with its result res: the error with its code,
// message and details, or the result cut to 2 KiB. remote names the
// endpoint of a call that crossed to another huddle (""); late marks an
// answer that came after the caller gave up. Every end span, on time or
// late, is built here.
func End(req protocol.InvocationRequest, res protocol.InvocationResult, remote string, late bool, at time.Time) Span {
	end := Span{Span: SpanEnd, TS: at, RequestID: req.RequestID, CorrelationID: req.CorrelationID,
		ParentRequestID: req.ParentRequestID, Caller: req.Caller, Target: req.Target, Action: req.Action,
		Hop: req.Hop, Status: res.Status, DurationMS: res.DurationMS, Remote: remote, Late: late}
	if res.Error != nil {
		end.Error = &SpanError{Code: string(res.Error.Code), Message: res.Error.Message, Details: res.Error.Details}
	} else {
		end.Result = Clip(string(res.Result))
	}
	return end
}

// Clip cuts s to the size a span keeps of a result or a refused answer.
func Clip(s string) string {
	if len(s) > maxResultInTrace {
		s = s[:maxResultInTrace] + "…"
	}
	return s
}
