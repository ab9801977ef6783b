package blueprint

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	oteltrace "go.opentelemetry.io/otel/trace"

	"huddle/ipc/trace"
	"huddle/protocol"
)

// traceBackend answers every call at once and hands over what it ran: the
// invocation, and the traceparent its context carries.
type traceBackend struct {
	fakeBackend
	ran chan ranCall
}

type ranCall struct {
	inv protocol.InvocationRequest
	sc  oteltrace.SpanContext
}

func (b *traceBackend) Call(ctx context.Context, req protocol.InvocationRequest) protocol.InvocationResult {
	b.ran <- ranCall{req, oteltrace.SpanContextFromContext(ctx)}
	res, _ := protocol.OK(&req, 1, map[string]string{"ok": "yes"})
	return res
}

const (
	foreignTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	foreignSpan  = "00f067aa0ba902b7"
	foreignTP    = "00-" + foreignTrace + "-" + foreignSpan + "-01"
)

// invokeWith posts body with the headers and returns what the server's
// backend ran.
func invokeWith(t *testing.T, be *traceBackend, body string, header map[string]string) ranCall {
	t.Helper()
	ts := newTestServer(t, ServerConfig{Backend: be})
	h := map[string]string{"Content-Type": "application/json", "X-API-Key": seedKey}
	for k, v := range header {
		h[k] = v
	}
	code, acc := ts.do(t, "POST", "/invoke", body, h)
	if code != http.StatusAccepted {
		t.Fatalf("invoke: %d %v", code, acc)
	}
	select {
	case r := <-be.ran:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the backend never ran the call")
	}
	return ranCall{}
}

func tpBody(context string) string {
	return `{"caller":{"id":"ifay-instance-001","type":"app"},"skill_id":"com.translate","inputs":{"prompt":"hi"},"context":{` + context + `}}`
}

// A call from a client that speaks only W3C trace context continues its
// trace: the chain's correlation id maps back to the traceparent's trace id,
// its parent to the traceparent's span, and the context carries the
// traceparent with its tracestate for the calls made on its behalf.
func TestServeContinuesAForeignTraceparent(t *testing.T) {
	be := &traceBackend{ran: make(chan ranCall, 1)}
	r := invokeWith(t, be, tpBody(``), map[string]string{"traceparent": foreignTP, "tracestate": "vendor=abc,other=1"})
	if r.inv.CorrelationID != "corr-"+foreignTrace || r.inv.ParentRequestID != "req-"+foreignSpan {
		t.Fatalf("correlation %q parent %q, want the traceparent's", r.inv.CorrelationID, r.inv.ParentRequestID)
	}
	if got := trace.TraceID(r.inv.CorrelationID).String(); got != foreignTrace {
		t.Fatalf("the chain maps to trace %s, want %s", got, foreignTrace)
	}
	if got := trace.SpanID(r.inv.ParentRequestID).String(); got != foreignSpan {
		t.Fatalf("the parent maps to span %s, want %s", got, foreignSpan)
	}
	if r.sc.TraceID().String() != foreignTrace || r.sc.TraceState().String() != "vendor=abc,other=1" {
		t.Fatalf("the call's context carries %v (tracestate %q)", r.sc.TraceID(), r.sc.TraceState().String())
	}
}

// The body's context is huddle's contract and wins: a traceparent of
// another trace changes nothing, and one of the same trace only gives the
// parent the body left out.
func TestServeBodyWinsOverTraceparent(t *testing.T) {
	be := &traceBackend{ran: make(chan ranCall, 1)}
	r := invokeWith(t, be, tpBody(`"trace_id":"corr-abc","parent_request_id":"req-1"`), map[string]string{"traceparent": foreignTP})
	if r.inv.CorrelationID != "corr-abc" || r.inv.ParentRequestID != "req-1" || r.sc.IsValid() {
		t.Fatalf("another trace's traceparent changed the call: %+v (context %v)", r.inv, r.sc.TraceID())
	}
	agreeing := "00-" + trace.TraceID("corr-abc").String() + "-" + foreignSpan + "-01"
	r = invokeWith(t, be, tpBody(`"trace_id":"corr-abc"`), map[string]string{"traceparent": agreeing})
	if r.inv.CorrelationID != "corr-abc" || r.inv.ParentRequestID != "req-"+foreignSpan {
		t.Fatalf("a traceparent of the chain's trace: %+v", r.inv)
	}
	r = invokeWith(t, be, tpBody(`"trace_id":"corr-abc","parent_request_id":"req-1"`), map[string]string{"traceparent": agreeing})
	if r.inv.ParentRequestID != "req-1" {
		t.Fatalf("the body's parent lost to the traceparent's: %+v", r.inv)
	}
}

// A malformed traceparent is ignored: the call runs as if it had none.
func TestServeIgnoresMalformedTraceparent(t *testing.T) {
	for _, tp := range []string{
		"garbage",
		"00-" + foreignTrace + "-" + foreignSpan, // no flags
		"00-00000000000000000000000000000000-" + foreignSpan + "-01", // zero trace id
		"00-" + foreignTrace + "-0000000000000000-01",                // zero span id
		"ff-" + foreignTrace + "-" + foreignSpan + "-01",             // forbidden version
		"00-" + strings.ToUpper(foreignTrace) + "-" + foreignSpan + "-01",
		"00-" + foreignTrace + "-" + foreignSpan + "-01-extra",
		strings.Repeat("0", 4096),
	} {
		be := &traceBackend{ran: make(chan ranCall, 1)}
		r := invokeWith(t, be, tpBody(``), map[string]string{"traceparent": tp, "tracestate": "vendor=abc"})
		if strings.Contains(r.inv.CorrelationID, foreignTrace) || r.inv.ParentRequestID != "" || r.sc.IsValid() {
			t.Errorf("traceparent %.40q: the call became %+v (context %v)", tp, r.inv, r.sc.TraceID())
		}
		if err := protocol.ValidateID(r.inv.CorrelationID); err != nil {
			t.Errorf("traceparent %.40q: correlation id: %v", tp, err)
		}
		r = invokeWith(t, be, tpBody(`"trace_id":"corr-keep","parent_request_id":"req-keep"`), map[string]string{"traceparent": tp})
		if r.inv.CorrelationID != "corr-keep" || r.inv.ParentRequestID != "req-keep" {
			t.Errorf("traceparent %.40q: the body's ids became %+v", tp, r.inv)
		}
	}
}

// A call to another huddle sends the W3C traceparent of the calling span
// (the chain's trace, the call's own span), and passes on the tracestate
// its context carries for the same trace only.
func TestTargetSendsTraceparent(t *testing.T) {
	got := make(chan http.Header, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/invoke" {
			got <- r.Header.Clone()
			writeJSON(w, http.StatusAccepted, Accepted{ExecutionID: "exec-1", Status: StateAccepted})
			return
		}
		now := time.Now().UTC()
		if strings.HasPrefix(r.URL.Path, "/status/") {
			writeJSON(w, http.StatusOK, Status{ExecutionID: "exec-1", Status: StateCompleted, Timestamps: Timestamps{CreatedAt: now}})
			return
		}
		writeJSON(w, http.StatusOK, Result{ExecutionID: "exec-1", Status: StateCompleted, Output: []byte(`{}`), Timestamps: Timestamps{CreatedAt: now}})
	}))
	defer srv.Close()
	target := Target{Client: &Client{BaseURL: srv.URL}, Skill: "back.work"}
	req := protocol.InvocationRequest{RequestID: "req-a1b2c3", CorrelationID: "corr-d4e5f6", Caller: "front", Target: "remote", Action: "work", Hop: 1, TimeoutSec: 5}
	want := "00-" + trace.TraceID(req.CorrelationID).String() + "-" + trace.SpanID(req.RequestID).String() + "-01"

	sameTrace := oteltrace.NewSpanContext(oteltrace.SpanContextConfig{TraceID: trace.TraceID(req.CorrelationID), SpanID: trace.SpanID("req-up"), Remote: true})
	ts, _ := oteltrace.ParseTraceState("vendor=abc")
	otherTrace := oteltrace.NewSpanContext(oteltrace.SpanContextConfig{TraceID: trace.TraceID("corr-other"), SpanID: trace.SpanID("req-up"), Remote: true})
	for _, c := range []struct {
		name      string
		ctx       context.Context
		wantState string
	}{
		{"no traceparent came in", context.Background(), ""},
		{"the chain's traceparent came in", trace.ContinueTrace(context.Background(), sameTrace.WithTraceState(ts)), "vendor=abc"},
		{"another trace's came in", trace.ContinueTrace(context.Background(), otherTrace.WithTraceState(ts)), ""},
	} {
		ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
		res, err := target.Invoke(ctx, req)
		cancel()
		if err != nil || res.Status != protocol.ResultOK {
			t.Fatalf("%s: %v %+v", c.name, err, res)
		}
		h := <-got
		if h.Get("traceparent") != want || h.Get("tracestate") != c.wantState {
			t.Errorf("%s: traceparent %q tracestate %q, want %q and %q", c.name, h.Get("traceparent"), h.Get("tracestate"), want, c.wantState)
		}
	}
}
