// Package otelexport sends huddle's invocation spans to an OpenTelemetry
// backend over OTLP/HTTP when the standard OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set: every call recorded in this
// process becomes one OpenTelemetry span, with ids derived from huddle's
// (ipc/trace's TraceID and SpanID), so the spans of one correlation chain
// form one trace whichever process recorded them. It observes the spans
// ipc/trace records (trace.Observe); unset, Start builds nothing and
// observes nothing. docs/ARCHITECTURE.md, "Invocation (Puruto IPC)" has the mapping and the variables.
package otelexport
