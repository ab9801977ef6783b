package otelexport

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"

	"huddle/ipc/trace"
	"huddle/protocol"
)

// ShutdownTimeout bounds the flush when a command exits: a collector that
// is slow or away costs a command at most this.
const ShutdownTimeout = 3 * time.Second

// maxOpen bounds the calls whose start is remembered until their end; a
// call started beyond it is exported with its start worked out from its
// duration.
const maxOpen = 4096

// Options set up an export. The zero value exports over OTLP/HTTP as the
// environment says.
type Options struct {
	// Exporter, when set, receives the spans instead of OTLP/HTTP (tests
	// give tracetest's in-memory exporter).
	Exporter sdktrace.SpanExporter
	// Version is huddle's, the resource's service.version.
	Version string
}

// Export turns the spans this process records into OpenTelemetry spans.
type Export struct {
	tp      *sdktrace.TracerProvider
	tracer  oteltrace.Tracer
	chains  sdktrace.Sampler // which chains are exported (OTEL_TRACES_SAMPLER)
	content bool
	stop    func()

	mu     sync.Mutex
	open   map[string]opened // calls started, not yet ended, by request id
	failed error             // the first export error
	fails  int
}

// opened is what a start span leaves for its end.
type opened struct {
	at     time.Time
	prompt string // only with content
}

// Start begins exporting when the environment asks for it
// (trace.ExportWanted) or o.Exporter is given; otherwise it builds nothing
// and returns nil, nil.
// Shut the export down (Shutdown) before the process exits. An error means
// nothing is exported; it says why without a secret.
func Start(ctx context.Context, o Options) (*Export, error) {
	if o.Exporter == nil && !trace.ExportWanted() {
		return nil, nil
	}
	chains, err := chainSamplerFromEnv()
	if err != nil {
		return nil, fmt.Errorf("traces are not exported: %w", err)
	}
	e := &Export{content: contentOn(), open: map[string]opened{}, chains: chains}
	otel.SetLogger(logr.New(sdkLog{e}))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(e.exportFailed))
	exp := o.Exporter
	if exp == nil {
		var err error
		if exp, err = otlptracehttp.New(ctx); err != nil {
			return nil, fmt.Errorf("traces are not exported to %s: %s", endpointShown(), scrub(err.Error()))
		}
	}
	// The environment's resource (OTEL_SERVICE_NAME,
	// OTEL_RESOURCE_ATTRIBUTES) overrides huddle's defaults. A malformed
	// OTEL_RESOURCE_ATTRIBUTES still leaves a usable resource.
	attrs := []attribute.KeyValue{attribute.String("service.name", "huddle")}
	if o.Version != "" {
		attrs = append(attrs, attribute.String("service.version", o.Version))
	}
	res, _ := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithTelemetrySDK(), resource.WithFromEnv())
	e.tp = sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(huddleIDs{}),
		// Every chain is exported whole or not at all: a first call is
		// decided by the chain sampler on the chain's trace id, and every
		// other span follows the parent withIDs marks with that decision
		// (sampler.go).
		sdktrace.WithSampler(sdktrace.ParentBased(chains)),
	)
	e.tracer = e.tp.Tracer("huddle/ipc/trace/otelexport")
	stopSpans, stopOps := trace.Observe(e.observe), trace.ObserveOps(e.exportOp)
	e.stop = func() { stopSpans(); stopOps() }
	return e, nil
}

// exportFailed keeps the first error of the SDK's background export, for
// the one warning Shutdown returns.
func (e *Export) exportFailed(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failed == nil {
		e.failed = err
	}
	e.fails++
}

// Flush exports every span ended so far.
func (e *Export) Flush(ctx context.Context) error {
	if e == nil {
		return nil
	}
	return e.tp.ForceFlush(ctx)
}

// Shutdown stops observing spans and exports the ones still queued,
// within ctx. Its error is the one warning a command prints: why spans
// were not exported, without a secret. A nil Export does nothing.
func (e *Export) Shutdown(ctx context.Context) error {
	if e == nil {
		return nil
	}
	e.stop()
	err := e.tp.Shutdown(ctx)
	e.mu.Lock()
	failed, fails := e.failed, e.fails
	e.open = map[string]opened{}
	e.mu.Unlock()
	if failed == nil && err == nil {
		return nil
	}
	if failed == nil {
		failed = err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		failed = fmt.Errorf("%w (gave up after %v)", failed, ShutdownTimeout)
	}
	msg := fmt.Sprintf("traces were not all exported to %s: %s", endpointShown(), oneLine(scrub(failed.Error())))
	if fails > 1 {
		msg += fmt.Sprintf(" (%d failures)", fails)
	}
	return errors.New(msg)
}

// oneLine keeps an error to one line of at most 300 bytes.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// observe is the trace.Observe hook: a start span is remembered, an end
// span becomes an OpenTelemetry span. It never blocks: the batcher drops
// spans when its queue is full.
func (e *Export) observe(s trace.Span) {
	switch {
	case s.Span == trace.SpanStart:
		e.mu.Lock()
		if len(e.open) < maxOpen {
			o := opened{at: s.TS}
			if e.content {
				o.prompt = s.Prompt
			}
			e.open[s.RequestID] = o
		}
		e.mu.Unlock()
	case s.Late:
		e.exportLate(s)
	default:
		e.mu.Lock()
		o, ok := e.open[s.RequestID]
		delete(e.open, s.RequestID)
		e.mu.Unlock()
		if !ok {
			o.at = s.TS.Add(-time.Duration(s.DurationMS) * time.Millisecond)
		}
		e.exportCall(s, o)
	}
}

// exportCall exports one call: its span has the call's own ids, under its
// parent call's span.
func (e *Export) exportCall(end trace.Span, o opened) {
	kind := oteltrace.SpanKindInternal
	if end.Remote != "" {
		kind = oteltrace.SpanKindClient
	}
	attrs := e.attributes(end)
	if o.prompt != "" {
		attrs = append(attrs, attribute.String("huddle.prompt", o.prompt))
	}
	ctx := e.withIDs(end.CorrelationID, trace.SpanID(end.RequestID), end.ParentRequestID)
	_, sp := e.tracer.Start(ctx, "invoke_agent "+end.Target, oteltrace.WithTimestamp(o.at), oteltrace.WithSpanKind(kind),
		oteltrace.WithAttributes(attrs...))
	setStatus(sp, end)
	sp.End(oteltrace.WithTimestamp(end.TS))
}

// exportLate exports an answer that came after its caller gave up: a span
// of no length under the call's own, so the call keeps the outcome its
// caller saw.
func (e *Export) exportLate(end trace.Span) {
	ctx := e.withIDs(end.CorrelationID, LateSpanID(end.RequestID), end.RequestID)
	attrs := append(e.attributes(end), attribute.Bool("huddle.late", true))
	_, sp := e.tracer.Start(ctx, "invoke_agent "+end.Target+" late answer", oteltrace.WithTimestamp(end.TS),
		oteltrace.WithAttributes(attrs...))
	setStatus(sp, end)
	sp.End(oteltrace.WithTimestamp(end.TS))
}

// LateSpanID is the span id of the late answer to the call req.
func LateSpanID(req string) oteltrace.SpanID { return trace.SpanID(req + "/late") }

// attributes are what every span of a call says: the GenAI semantic
// conventions' invoke_agent (the agent called, the chain as the
// conversation), and huddle's own: who called what, how it ended, where it
// went; with content, what came back and the error's text.
func (e *Export) attributes(end trace.Span) []attribute.KeyValue {
	a := make([]attribute.KeyValue, 0, 24)
	a = append(a,
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.provider.name", "huddle"),
		attribute.String("gen_ai.agent.name", end.Target),
		attribute.String("gen_ai.conversation.id", end.CorrelationID),
		attribute.String("huddle.caller", end.Caller),
		attribute.String("huddle.target", end.Target),
		attribute.String("huddle.action", end.Action),
		attribute.Int("huddle.hop", end.Hop),
		attribute.String("huddle.status", end.Status),
		attribute.String("huddle.request_id", end.RequestID),
		attribute.String("huddle.correlation_id", end.CorrelationID),
	)
	if end.ParentRequestID != "" {
		a = append(a, attribute.String("huddle.parent_request_id", end.ParentRequestID))
	}
	if end.Remote != "" {
		a = append(a, attribute.String("huddle.remote", safeURL(end.Remote)))
		if u, err := url.Parse(end.Remote); err == nil && u.Hostname() != "" {
			a = append(a, attribute.String("server.address", u.Hostname()))
			if p, err := strconv.Atoi(u.Port()); err == nil {
				a = append(a, attribute.Int("server.port", p))
			}
		}
	}
	if end.Error != nil {
		a = append(a, attribute.String("huddle.error.code", end.Error.Code), attribute.String("error.type", end.Error.Code))
	}
	if !e.content {
		return a
	}
	if end.Result != "" {
		a = append(a, attribute.String("huddle.result", end.Result))
	}
	if end.Error != nil && end.Error.Message != "" {
		a = append(a, attribute.String("huddle.error.message", end.Error.Message))
	}
	return a
}

// setStatus marks a call that ended in error with its code; the message is
// content, and stays out without HUDDLE_OTEL_CONTENT.
func setStatus(sp oteltrace.Span, end trace.Span) {
	if end.Error != nil {
		sp.SetStatus(codes.Error, end.Error.Code)
		return
	}
	if end.Status == protocol.ResultOK {
		sp.SetStatus(codes.Ok, "")
	}
}
