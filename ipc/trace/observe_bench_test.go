package trace

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"huddle/protocol"
	"huddle/teamdir"
)

// BenchmarkSpanRecording is the span-recording path every call takes twice
// (its start and its end), with and without the OpenTelemetry hook, paired
// in one run: each iteration records one span by each path, in turns
// first, into the same traces.jsonl, so both see the same file, cache and
// machine load. "without-hook" is the path as it was before the export
// (stamp, validate, write the line); "otel-unset" is AppendSpan as it is,
// with no observer (the OpenTelemetry variables unset). It reports the
// median time of each path and their difference.
// ipc/trace/otelexport's BenchmarkSpanExport measures the export on.
func BenchmarkSpanRecording(b *testing.B) {
	req := protocol.InvocationRequest{RequestID: "req-0a1b2c3d4e5f", CorrelationID: "corr-0a1b2c3d4e5f", Caller: "lead",
		Target: "coder", Action: "write", Prompt: "add a --verbose flag", TimeoutSec: 30}
	res, _ := protocol.OK(&req, 12, map[string]string{"summary": "done"})
	spans := []Span{Start(req, time.Now()), End(req, res, "", false, time.Now())}
	if Observing() {
		b.Fatal("an observer is set")
	}
	withoutHook := func(dir string, s Span) error {
		if s.TS.IsZero() {
			s.TS = time.Now()
		}
		if err := s.Validate(); err != nil {
			return err
		}
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		return teamdir.AppendLine(teamdir.TracesPath(dir), append(b, '\n'))
	}
	paths := [2]func(dir string, s Span) error{withoutHook, AppendSpan}
	var took [2][]time.Duration
	dir := b.TempDir()
	i := 0
	for b.Loop() {
		for k := range 2 {
			p := (i + k) & 1 // each path first in turn
			t0 := time.Now()
			if err := paths[p](dir, spans[i&1]); err != nil {
				b.Fatal(err)
			}
			took[p] = append(took[p], time.Since(t0))
		}
		i++
	}
	median := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds())
	}
	without, unset := median(took[0]), median(took[1])
	b.ReportMetric(without, "ns/span-without-hook")
	b.ReportMetric(unset, "ns/span-otel-unset")
	b.ReportMetric(unset-without, "ns/span-difference")
}
