package blueprint

import (
	"context"
	"net/http"

	"huddle/ipc/trace"
	"huddle/protocol"
)

// continueTrace is the invocation an accepted request runs and the context
// it runs in, continuing the W3C traceparent the request came with
// (docs/ARCHITECTURE.md, "The HTTP protocol (Blueprint)", traceparent). The body's context is huddle's
// contract and wins: a traceparent only fills what the body leaves out.
//   - No context.trace_id: the chain continues the traceparent's trace; its
//     correlation id is "corr-" and the trace id, which trace.TraceID maps
//     back to that trace.
//   - No context.parent_request_id, and the traceparent's trace is the
//     chain's: the parent is the traceparent's span ("req-" and its id).
//
// A traceparent of another trace than the body's trace_id is ignored, and
// so is a malformed one. The context carries the traceparent, so the HTTP
// calls this invocation makes pass its tracestate on. The request itself
// is left as it came: its digest keys idempotency, and a retry through a
// proxy may come with another traceparent.
func continueTrace(ctx context.Context, req *InvokeRequest, h http.Header, caller string) (protocol.InvocationRequest, context.Context) {
	sc, ok := trace.Traceparent(h)
	if !ok {
		return invocationFor(req, caller), ctx
	}
	c := *req
	if c.Context.TraceID == "" {
		c.Context.TraceID = trace.CorrelationIDFor(sc.TraceID())
	}
	if trace.TraceID(c.Context.TraceID) != sc.TraceID() {
		return invocationFor(&c, caller), ctx
	}
	if c.Context.ParentRequestID == "" {
		c.Context.ParentRequestID = trace.RequestIDFor(sc.SpanID())
	}
	return invocationFor(&c, caller), trace.ContinueTrace(ctx, sc)
}
