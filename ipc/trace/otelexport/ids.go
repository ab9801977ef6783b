package otelexport

import (
	"context"
	"crypto/rand"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"

	"huddle/ipc/trace"
)

// idsKey carries, in the context a span is started with, the ids huddle's
// mapping gives it.
type idsKey struct{}

type spanIDs struct {
	trace oteltrace.TraceID
	span  oteltrace.SpanID
}

// withIDs is the context to start the span of a call with: its trace (the
// chain's) and span id, under the span of the call parent (a request id;
// "" for the chain's first call). The parent is marked sampled when the
// chain is: every span of a chain follows its first call's decision.
func (e *Export) withIDs(corr string, span oteltrace.SpanID, parent string) context.Context {
	tid := trace.TraceID(corr)
	ctx := context.WithValue(context.Background(), idsKey{}, spanIDs{tid, span})
	if parent == "" {
		return ctx
	}
	var flags oteltrace.TraceFlags
	if sampled(e.chains, tid) {
		flags = oteltrace.FlagsSampled
	}
	return oteltrace.ContextWithRemoteSpanContext(ctx, oteltrace.NewSpanContext(oteltrace.SpanContextConfig{
		TraceID: tid, SpanID: trace.SpanID(parent), TraceFlags: flags, Remote: true}))
}

// huddleIDs gives the SDK the ids withIDs put in the context, instead of
// random ones, so that every process derives the same.
type huddleIDs struct{}

var _ sdktrace.IDGenerator = huddleIDs{}

func (huddleIDs) NewIDs(ctx context.Context) (oteltrace.TraceID, oteltrace.SpanID) {
	if ids, ok := ctx.Value(idsKey{}).(spanIDs); ok {
		return ids.trace, ids.span
	}
	var t oteltrace.TraceID
	var s oteltrace.SpanID
	_, _ = rand.Read(t[:]) // never reached: every span is started with withIDs
	_, _ = rand.Read(s[:])
	return t, s
}

func (huddleIDs) NewSpanID(ctx context.Context, _ oteltrace.TraceID) oteltrace.SpanID {
	if ids, ok := ctx.Value(idsKey{}).(spanIDs); ok {
		return ids.span
	}
	var s oteltrace.SpanID
	_, _ = rand.Read(s[:])
	return s
}
