package otelexport_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"huddle/ipc"
	"huddle/ipc/trace"
	"huddle/ipc/trace/otelexport"
	"huddle/protocol"
)

// targetFunc is an ipc.Target made of a function.
type targetFunc func(ctx context.Context, req protocol.InvocationRequest) (protocol.InvocationResult, error)

func (f targetFunc) Invoke(ctx context.Context, req protocol.InvocationRequest) (protocol.InvocationResult, error) {
	return f(ctx, req)
}

func policy(targets ...string) *ipc.Policy {
	return &ipc.Policy{Enabled: true, MaxHops: 3, DefaultTimeoutSec: 10, AllowedTargets: targets}
}

// caller is an ipc.Caller writing its spans under dir, resolving names
// through targets.
func caller(dir string, targets map[string]ipc.Target, allowed ...string) *ipc.Caller {
	return &ipc.Caller{TeamDir: dir, Policy: policy(allowed...), Resolve: func(name string) (ipc.Target, string) {
		return targets[name], ""
	}}
}

// clean unsets every variable the export reads, so the machine's own
// never decide a test.
func clean(t testing.TB) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED",
		"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_SERVICE_NAME",
		"OTEL_RESOURCE_ATTRIBUTES", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", otelexport.EnvContent,
		"OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"} {
		t.Setenv(k, "")
	}
}

const (
	leadPrompt     = "PROMPT-pay-invoice-42"
	reviewerAnswer = "ANSWER-looks-good"
)

// twoHopChain runs lead → coder.write, which calls reviewer.review on its
// behalf (hop 1), through real Callers writing traces.jsonl under dir, and
// a call to a target that does not exist. It returns the chain's result.
func twoHopChain(t *testing.T, dir string) protocol.InvocationResult {
	t.Helper()
	reviewer := targetFunc(func(_ context.Context, req protocol.InvocationRequest) (protocol.InvocationResult, error) {
		return protocol.OK(&req, 1, map[string]string{"summary": reviewerAnswer})
	})
	coderCalls := caller(dir, map[string]ipc.Target{"reviewer": reviewer}, "reviewer")
	coder := targetFunc(func(ctx context.Context, req protocol.InvocationRequest) (protocol.InvocationResult, error) {
		onward := coderCalls.Call(ctx, protocol.InvocationRequest{CorrelationID: req.CorrelationID, ParentRequestID: req.RequestID,
			Caller: "coder", Target: "reviewer", Action: "review", Hop: req.Hop + 1, Prompt: "PROMPT-review-it"})
		if onward.Status != protocol.ResultOK {
			t.Errorf("the onward call failed: %+v", onward.Error)
		}
		return protocol.OK(&req, 2, map[string]string{"summary": "written"})
	})
	lead := caller(dir, map[string]ipc.Target{"coder": coder}, "coder", "ghost")
	res := lead.Call(context.Background(), protocol.InvocationRequest{Caller: "lead", Target: "coder", Action: "write", Prompt: leadPrompt})
	if res.Status != protocol.ResultOK {
		t.Fatalf("the chain failed: %+v", res.Error)
	}
	if ghost := lead.Call(context.Background(), protocol.InvocationRequest{Caller: "lead", Target: "ghost", Action: "x", Prompt: leadPrompt}); ghost.Status != protocol.ResultError {
		t.Fatalf("a call to no target: %+v", ghost)
	}
	return res
}

func byName(t *testing.T, spans tracetest.SpanStubs) map[string]tracetest.SpanStub {
	t.Helper()
	out := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		if _, dup := out[s.Name]; dup {
			t.Fatalf("two spans named %s", s.Name)
		}
		out[s.Name] = s
	}
	return out
}

func attrs(s tracetest.SpanStub) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

// A two-hop chain recorded through real Callers is one trace: the trace id
// is the chain's (trace.TraceID of its correlation id), the onward call's
// parent is the calling span, each span says who called what and how it
// ended, and what was asked or answered is there only with
// HUDDLE_OTEL_CONTENT=1.
func TestTwoHopChainIsOneTrace(t *testing.T) {
	for _, content := range []bool{false, true} {
		name := "without content"
		if content {
			name = "with HUDDLE_OTEL_CONTENT=1"
		}
		t.Run(name, func(t *testing.T) {
			clean(t)
			if content {
				t.Setenv(otelexport.EnvContent, "1")
			}
			mem := tracetest.NewInMemoryExporter()
			e, err := otelexport.Start(context.Background(), otelexport.Options{Exporter: mem, Version: "v9.9.9"})
			if err != nil || e == nil {
				t.Fatalf("Start: %v %v", e, err)
			}
			defer e.Shutdown(context.Background())
			if !trace.Observing() {
				t.Fatal("the export does not observe the spans")
			}
			res := twoHopChain(t, t.TempDir())
			if err := e.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			spans := byName(t, mem.GetSpans())
			if len(spans) != 3 {
				t.Fatalf("%d spans, want 3: %v", len(spans), spans)
			}
			write, review, ghost := spans["invoke_agent coder"], spans["invoke_agent reviewer"], spans["invoke_agent ghost"]

			tid := trace.TraceID(res.CorrelationID)
			if write.SpanContext.TraceID() != tid || review.SpanContext.TraceID() != tid {
				t.Fatalf("trace ids %v and %v, want the chain's %v", write.SpanContext.TraceID(), review.SpanContext.TraceID(), tid)
			}
			if write.SpanContext.SpanID() != trace.SpanID(res.RequestID) || write.Parent.IsValid() {
				t.Fatalf("the first call: span %v parent %v, want span %v and no parent", write.SpanContext.SpanID(), write.Parent.SpanID(), trace.SpanID(res.RequestID))
			}
			if review.Parent.SpanID() != write.SpanContext.SpanID() || review.Parent.TraceID() != tid {
				t.Fatalf("the onward call's parent is %v, want the calling span %v", review.Parent.SpanID(), write.SpanContext.SpanID())
			}
			if ghost.SpanContext.TraceID() == tid {
				t.Fatal("a call of another chain joined the trace")
			}

			w, r, g := attrs(write), attrs(review), attrs(ghost)
			for _, c := range []struct {
				got  attribute.Value
				want string
			}{
				{w["huddle.caller"], "lead"}, {w["huddle.target"], "coder"}, {w["huddle.action"], "write"}, {w["huddle.status"], "ok"},
				{w["huddle.correlation_id"], res.CorrelationID}, {w["huddle.request_id"], res.RequestID},
				{r["huddle.caller"], "coder"}, {r["huddle.target"], "reviewer"}, {r["huddle.parent_request_id"], res.RequestID},
				{g["huddle.status"], "error"}, {g["huddle.error.code"], "TARGET_NOT_FOUND"}, {g["error.type"], "TARGET_NOT_FOUND"},
				// The GenAI semantic conventions' invoke_agent, beside huddle's own.
				{w["gen_ai.operation.name"], "invoke_agent"}, {w["gen_ai.agent.name"], "coder"}, {w["gen_ai.provider.name"], "huddle"},
				{w["gen_ai.conversation.id"], res.CorrelationID}, {r["gen_ai.agent.name"], "reviewer"},
			} {
				if c.got.AsString() != c.want {
					t.Errorf("attribute %q, want %q", c.got.AsString(), c.want)
				}
			}
			if w["huddle.hop"].AsInt64() != 0 || r["huddle.hop"].AsInt64() != 1 {
				t.Errorf("hops %d and %d, want 0 and 1", w["huddle.hop"].AsInt64(), r["huddle.hop"].AsInt64())
			}
			if ghost.Status.Code != codes.Error || ghost.Status.Description != "TARGET_NOT_FOUND" || write.Status.Code != codes.Ok {
				t.Errorf("statuses: ghost %+v, write %+v", ghost.Status, write.Status)
			}
			if !write.StartTime.Before(review.StartTime) || write.EndTime.Before(review.EndTime) {
				t.Errorf("the onward call (%v–%v) is not within its caller (%v–%v)", review.StartTime, review.EndTime, write.StartTime, write.EndTime)
			}
			if svc, _ := write.Resource.Set().Value("service.name"); svc.AsString() != "huddle" {
				t.Errorf("service.name %q, want huddle", svc.AsString())
			}
			if v, _ := write.Resource.Set().Value("service.version"); v.AsString() != "v9.9.9" {
				t.Errorf("service.version %q", v.AsString())
			}

			dump, _ := json.Marshal(mem.GetSpans())
			hasContent := strings.Contains(string(dump), leadPrompt) || strings.Contains(string(dump), reviewerAnswer) ||
				strings.Contains(string(dump), "no target")
			if !content {
				if hasContent {
					t.Fatalf("content was exported without %s:\n%s", otelexport.EnvContent, dump)
				}
				return
			}
			if w["huddle.prompt"].AsString() != leadPrompt || !strings.Contains(r["huddle.result"].AsString(), reviewerAnswer) ||
				!strings.Contains(g["huddle.error.message"].AsString(), "ghost") {
				t.Fatalf("content with %s: prompt %q result %q error %q", otelexport.EnvContent,
					w["huddle.prompt"].AsString(), r["huddle.result"].AsString(), g["huddle.error.message"].AsString())
			}
			if err := e.Shutdown(context.Background()); err != nil || trace.Observing() {
				t.Fatalf("after Shutdown (%v) spans are still observed", err)
			}
		})
	}
}

// An answer that comes after its caller gave up is a span of its own
// under the call's, marked late: the call keeps the outcome its caller saw.
func TestLateAnswerIsAChildSpan(t *testing.T) {
	clean(t)
	mem := tracetest.NewInMemoryExporter()
	e, err := otelexport.Start(context.Background(), otelexport.Options{Exporter: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	dir := t.TempDir()
	req := protocol.InvocationRequest{RequestID: "req-late1", CorrelationID: "corr-late1", Caller: "lead", Target: "slow", Action: "think", TimeoutSec: 1}
	at := time.Now()
	timedOut := protocol.Fail(&req, 1000, protocol.ErrTimeout, "TIMEOUT", nil)
	answer, _ := protocol.OK(&req, 1500, map[string]string{"summary": "late"})
	for _, s := range []trace.Span{trace.Start(req, at), trace.End(req, timedOut, "", false, at.Add(time.Second)),
		trace.End(req, answer, "", true, at.Add(1500*time.Millisecond))} {
		if err := trace.AppendSpan(dir, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := byName(t, mem.GetSpans())
	call, late := spans["invoke_agent slow"], spans["invoke_agent slow late answer"]
	if call.Status.Code != codes.Error || call.Status.Description != "TIMEOUT" || !call.StartTime.Equal(at) || !call.EndTime.Equal(at.Add(time.Second)) {
		t.Fatalf("the call: %+v %v–%v", call.Status, call.StartTime, call.EndTime)
	}
	if late.Parent.SpanID() != call.SpanContext.SpanID() || late.SpanContext.SpanID() != otelexport.LateSpanID(req.RequestID) ||
		!attrs(late)["huddle.late"].AsBool() || late.Status.Code != codes.Ok {
		t.Fatalf("the late answer: parent %v span %v attrs %v status %+v", late.Parent.SpanID(), late.SpanContext.SpanID(), attrs(late), late.Status)
	}
}

// Without an endpoint, or with the SDK disabled or the traces exporter
// "none", nothing is built and no span is observed.
func TestNothingWithoutAnEndpoint(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
	}{
		{"no endpoint", nil},
		{"OTEL_SDK_DISABLED", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "TRUE"}},
		{"OTEL_TRACES_EXPORTER=none", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1/v1/traces", "OTEL_TRACES_EXPORTER": "none"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			clean(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			if trace.ExportWanted() {
				t.Fatal("ExportWanted")
			}
			e, err := otelexport.Start(context.Background(), otelexport.Options{})
			if e != nil || err != nil {
				t.Fatalf("Start built %v (%v)", e, err)
			}
			if trace.Observing() {
				t.Fatal("spans are observed")
			}
			if e.Shutdown(context.Background()) != nil || e.Flush(context.Background()) != nil {
				t.Fatal("a nil export did something")
			}
		})
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_SDK_DISABLED", "false")
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	if !trace.ExportWanted() {
		t.Fatal("an endpoint with the SDK enabled is not ExportWanted")
	}
}
