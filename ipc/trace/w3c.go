package trace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// W3C trace context for huddle's ids (docs/ARCHITECTURE.md, "Invocation (Puruto IPC)", the OpenTelemetry export).
// Every process that records a span of a correlation chain derives the same
// OpenTelemetry ids from huddle's own, with nothing to share but the ids:
// the trace id from the correlation id, a span id from a request id, so a
// call's parent span id is its parent call's span id wherever each was
// recorded.

// Prefixes of the ids TraceID and SpanID take as they are.
const (
	corrPrefix = "corr-"
	reqPrefix  = "req-"
)

// w3c reads and writes the traceparent and tracestate headers
// (https://www.w3.org/TR/trace-context/) by the OpenTelemetry API's rules:
// a malformed header reads as none.
var w3c = propagation.TraceContext{}

// TraceID is the trace id of correlation chain corr: the 32 hex digits of
// corr when it is "corr-" followed by them (a chain begun by a foreign
// traceparent, or a W3C trace id given as it is), otherwise the first 16
// bytes of the SHA-256 of corr.
func TraceID(corr string) oteltrace.TraceID {
	var id oteltrace.TraceID
	if hexID(strings.TrimPrefix(corr, corrPrefix), id[:]) {
		return id
	}
	sum := sha256.Sum256([]byte(corr))
	copy(id[:], sum[:])
	if !id.IsValid() {
		id[15] = 1 // all zero is invalid; 2^-128, but never send one
	}
	return id
}

// SpanID is the span id of the call with request id req: the 16 hex digits
// of req when it is "req-" followed by them (the parent a foreign
// traceparent names), otherwise the first 8 bytes of the SHA-256 of req.
func SpanID(req string) oteltrace.SpanID {
	var id oteltrace.SpanID
	if hexID(strings.TrimPrefix(req, reqPrefix), id[:]) {
		return id
	}
	sum := sha256.Sum256([]byte(req))
	copy(id[:], sum[:])
	if !id.IsValid() {
		id[7] = 1
	}
	return id
}

// hexID fills dst from s when s is exactly its lowercase hex digits and
// not all zero.
func hexID(s string, dst []byte) bool {
	if len(s) != 2*len(dst) || strings.ToLower(s) != s {
		return false
	}
	if _, err := hex.Decode(dst, []byte(s)); err != nil {
		clear(dst)
		return false
	}
	for _, b := range dst {
		if b != 0 {
			return true
		}
	}
	return false
}

// CorrelationIDFor is the correlation id of a chain that continues the
// foreign trace tid: TraceID maps it back to tid.
func CorrelationIDFor(tid oteltrace.TraceID) string { return corrPrefix + tid.String() }

// RequestIDFor is the request id standing for the foreign span sid as a
// parent: SpanID maps it back to sid.
func RequestIDFor(sid oteltrace.SpanID) string { return reqPrefix + sid.String() }

// SetTraceparent writes the traceparent of the call requestID in chain corr
// into h, and the tracestate that ctx carries for the same trace
// (ContinueTrace put it there), if any. The call's span is the parent of
// whatever the receiver records. Nothing is written when corr or requestID
// is empty: there is no chain to continue.
func SetTraceparent(ctx context.Context, h http.Header, corr, requestID string) {
	if corr == "" || requestID == "" {
		return
	}
	cfg := oteltrace.SpanContextConfig{TraceID: TraceID(corr), SpanID: SpanID(requestID),
		TraceFlags: oteltrace.FlagsSampled, Remote: true}
	if in := oteltrace.SpanContextFromContext(ctx); in.TraceID() == cfg.TraceID {
		cfg.TraceState = in.TraceState() // passed on within its own trace only
	}
	w3c.Inject(oteltrace.ContextWithRemoteSpanContext(ctx, oteltrace.NewSpanContext(cfg)), propagation.HeaderCarrier(h))
}

// Traceparent is what a traceparent header in h says: the trace and parent
// span it names, with its tracestate; ok is false when h has none or a
// malformed one (then it is ignored, as the W3C recommendation asks).
func Traceparent(h http.Header) (sc oteltrace.SpanContext, ok bool) {
	sc = oteltrace.SpanContextFromContext(w3c.Extract(context.Background(), propagation.HeaderCarrier(h)))
	return sc, sc.IsValid()
}

// ContinueTrace returns ctx carrying sc, the traceparent a call came with,
// so that the HTTP calls made on its behalf pass its tracestate on.
func ContinueTrace(ctx context.Context, sc oteltrace.SpanContext) context.Context {
	if !sc.IsValid() {
		return ctx
	}
	return oteltrace.ContextWithRemoteSpanContext(ctx, sc)
}
