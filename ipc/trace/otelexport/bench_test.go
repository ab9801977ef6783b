package otelexport_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"huddle/ipc/trace"
	"huddle/ipc/trace/otelexport"
	"huddle/protocol"
)

// BenchmarkSpanExport is what the export adds to each call when it is on:
// a start and an end span handed to the observer (trace.Record, no file),
// made into one OpenTelemetry span and queued for a discarding exporter.
// ipc/trace's BenchmarkSpanRecording shows the path with the export off.
func BenchmarkSpanExport(b *testing.B) {
	clean(b)
	e, err := otelexport.Start(context.Background(), otelexport.Options{Exporter: tracetest.NewNoopExporter()})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	i := 0
	for b.Loop() {
		req := protocol.InvocationRequest{RequestID: fmt.Sprintf("req-%d", i), CorrelationID: "corr-bench", ParentRequestID: "req-root",
			Caller: "lead", Target: "coder", Action: "write", Hop: 1}
		res, _ := protocol.OK(&req, 1, nil)
		now := time.Now()
		trace.Record(trace.Start(req, now))
		trace.Record(trace.End(req, res, "", false, now))
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/call")
}
