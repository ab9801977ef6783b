package otelexport_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"huddle/ipc/trace"
	"huddle/ipc/trace/otelexport"
	"huddle/protocol"
)

// chains records n two-call chains (corr-sampleN: lead → coder.write, and
// coder → reviewer.review under it) through trace.AppendSpan, as Callers
// would, and returns their correlation ids.
func chains(t *testing.T, n int) []string {
	t.Helper()
	dir := t.TempDir()
	at := time.Now()
	var ids []string
	for i := range n {
		corr := fmt.Sprintf("corr-sample%03d", i)
		first := protocol.InvocationRequest{RequestID: fmt.Sprintf("req-a%03d", i), CorrelationID: corr, Caller: "lead", Target: "coder", Action: "write"}
		onward := protocol.InvocationRequest{RequestID: fmt.Sprintf("req-b%03d", i), CorrelationID: corr, ParentRequestID: first.RequestID,
			Caller: "coder", Target: "reviewer", Action: "review", Hop: 1}
		okFirst, _ := protocol.OK(&first, 3, map[string]string{"summary": "written"})
		okOnward, _ := protocol.OK(&onward, 1, map[string]string{"summary": "fine"})
		for _, s := range []trace.Span{trace.Start(first, at), trace.Start(onward, at.Add(time.Millisecond)),
			trace.End(onward, okOnward, "", false, at.Add(2*time.Millisecond)), trace.End(first, okFirst, "", false, at.Add(3*time.Millisecond))} {
			if err := trace.AppendSpan(dir, s); err != nil {
				t.Fatal(err)
			}
		}
		ids = append(ids, corr)
	}
	return ids
}

// TestSamplerFromTheEnvironment: OTEL_TRACES_SAMPLER and its argument
// decide which chains are exported, each chain whole or not at all (never
// an onward call without the call that made it), by the chain's trace id.
func TestSamplerFromTheEnvironment(t *testing.T) {
	const n = 40
	half := sdktrace.TraceIDRatioBased(0.5)
	for _, c := range []struct {
		sampler, arg string
		keep         func(corr string) bool
	}{
		{"", "", func(string) bool { return true }},
		{"always_off", "", func(string) bool { return false }},
		{"parentbased_always_off", "", func(string) bool { return false }},
		{"parentbased_always_on", "", func(string) bool { return true }},
		{"traceidratio", "0.5", func(corr string) bool { return keptBy(half, corr) }},
		{"parentbased_traceidratio", "0.5", func(corr string) bool { return keptBy(half, corr) }},
		{"TraceIdRatio", "0", func(string) bool { return false }},
	} {
		t.Run(c.sampler+"_"+c.arg, func(t *testing.T) {
			clean(t)
			t.Setenv("OTEL_TRACES_SAMPLER", c.sampler)
			t.Setenv("OTEL_TRACES_SAMPLER_ARG", c.arg)
			mem := tracetest.NewInMemoryExporter()
			e, err := otelexport.Start(context.Background(), otelexport.Options{Exporter: mem})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Shutdown(context.Background())
			ids := chains(t, n)
			if err := e.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			byTrace := map[string]int{}
			for _, s := range mem.GetSpans() {
				byTrace[s.SpanContext.TraceID().String()]++
			}
			kept := 0
			for _, corr := range ids {
				got, want := byTrace[trace.TraceID(corr).String()], 0
				if c.keep(corr) {
					want = 2
					kept++
				}
				if got != want {
					t.Errorf("chain %s: %d spans exported, want %d", corr, got, want)
				}
			}
			if c.arg == "0.5" && (kept == 0 || kept == n) {
				t.Fatalf("the ratio kept %d of %d chains: the test's ids decide nothing", kept, n)
			}
		})
	}
}

func keptBy(s sdktrace.Sampler, corr string) bool {
	r := s.ShouldSample(sdktrace.SamplingParameters{ParentContext: context.Background(), TraceID: trace.TraceID(corr)})
	return r.Decision == sdktrace.RecordAndSample
}

// TestBadSamplerIsOneError: a sampler huddle does not take, or a ratio
// that is none, is one error naming the variable, and nothing is
// exported.
func TestBadSamplerIsOneError(t *testing.T) {
	for _, c := range []struct{ sampler, arg, want string }{
		{"jaeger_remote", "", `OTEL_TRACES_SAMPLER="jaeger_remote" is not a sampler huddle takes`},
		{"traceidratio", "half", `OTEL_TRACES_SAMPLER_ARG="half": want a ratio from 0 to 1`},
		{"parentbased_traceidratio", "1.5", `OTEL_TRACES_SAMPLER_ARG="1.5": want a ratio from 0 to 1`},
	} {
		clean(t)
		t.Setenv("OTEL_TRACES_SAMPLER", c.sampler)
		t.Setenv("OTEL_TRACES_SAMPLER_ARG", c.arg)
		e, err := otelexport.Start(context.Background(), otelexport.Options{Exporter: tracetest.NewInMemoryExporter()})
		if e != nil || err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s=%s: Start = %v, %v; want one line saying %q", c.sampler, c.arg, e, err, c.want)
		}
		if trace.Observing() {
			t.Fatal("spans are observed after a refused start")
		}
	}
}
