package otelexport_test

import (
	"bytes"
	"context"
	"encoding/hex"
	stdjson "encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"huddle/ipc"
	"huddle/ipc/blueprint"
	"huddle/ipc/trace"
	"huddle/ipc/trace/otelexport"
	"huddle/protocol"
)

// receiver is a loopback OTLP/HTTP collector: it decodes every
// ExportTraceServiceRequest posted to /v1/traces.
type receiver struct {
	*httptest.Server
	mu      sync.Mutex
	spans   []*tracepb.Span
	service []string // service.name of each resource
	attrs   []string // every resource attribute, key=value
	auth    []string // the Authorization header of each export
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err != nil || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, &req) != nil {
			t.Errorf("the receiver got %s %s (%s), not an ExportTraceServiceRequest", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.auth = append(rc.auth, r.Header.Get("Authorization"))
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.GetResource().GetAttributes() {
				rc.attrs = append(rc.attrs, kv.Key+"="+kv.GetValue().GetStringValue())
				if kv.Key == "service.name" {
					rc.service = append(rc.service, kv.GetValue().GetStringValue())
				}
			}
			for _, ss := range rs.ScopeSpans {
				rc.spans = append(rc.spans, ss.Spans...)
			}
		}
		rc.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) byName() map[string]*tracepb.Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := map[string]*tracepb.Span{}
	for _, s := range rc.spans {
		out[s.Name] = s
	}
	return out
}

// backend is a blueprint.Backend running every skill through a Caller.
type backend struct{ caller *ipc.Caller }

func (b backend) Skills() []blueprint.Skill     { return nil }
func (b backend) Has(string) bool               { return true }
func (b backend) Check(string, int) *ipc.Denial { return nil }
func (b backend) Call(ctx context.Context, req protocol.InvocationRequest) protocol.InvocationResult {
	return b.caller.Call(ctx, req)
}

// serveBlueprint serves a Blueprint server over b on loopback; the
// returned headers are those of every POST /invoke it got.
func serveBlueprint(t *testing.T, b blueprint.Backend) (*httptest.Server, func() []http.Header) {
	srv, err := blueprint.NewServer(blueprint.ServerConfig{Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []http.Header
	h := srv.Handler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/invoke" {
			mu.Lock()
			seen = append(seen, r.Header.Clone())
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return hs, func() []http.Header { mu.Lock(); defer mu.Unlock(); return seen }
}

// A chain across two huddles, started by a client that speaks only W3C
// trace context, arrives at an OTLP/HTTP collector set up by the standard
// variables as one trace: the client's, each span under its caller's.
// Huddle A serves front.ask; front calls back.work on huddle B over HTTP;
// B runs it. The traceparent (and its tracestate) goes on from A to B.
func TestChainAcrossTwoHuddlesReachesTheCollector(t *testing.T) {
	clean(t)
	rc := newReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20collector-token")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=loopback")
	e, err := otelexport.Start(context.Background(), otelexport.Options{})
	if err != nil || e == nil {
		t.Fatalf("Start with OTEL_EXPORTER_OTLP_ENDPOINT: %v %v", e, err)
	}
	defer e.Shutdown(context.Background())

	// Huddle B: back.work answers.
	back := targetFunc(func(_ context.Context, req protocol.InvocationRequest) (protocol.InvocationResult, error) {
		return protocol.OK(&req, 1, map[string]string{"summary": "worked"})
	})
	hsB, seenB := serveBlueprint(t, backend{caller(t.TempDir(), map[string]ipc.Target{"back": back}, "back")})
	// Huddle A: front.ask calls remote (B's back.work) on its behalf.
	dirA := t.TempDir()
	frontCalls := caller(dirA, map[string]ipc.Target{"remote": blueprint.Target{Client: &blueprint.Client{BaseURL: hsB.URL}, Skill: "back.work"}}, "remote")
	front := targetFunc(func(ctx context.Context, req protocol.InvocationRequest) (protocol.InvocationResult, error) {
		onward := frontCalls.Call(ctx, protocol.InvocationRequest{CorrelationID: req.CorrelationID, ParentRequestID: req.RequestID,
			Caller: "front", Target: "remote", Action: "work", Hop: req.Hop + 1, Prompt: "do it"})
		if onward.Status != protocol.ResultOK {
			return protocol.Fail(&req, 0, protocol.ErrIPC, "onward call failed", nil), nil
		}
		return protocol.OK(&req, 2, map[string]string{"summary": "asked"})
	})
	hsA, _ := serveBlueprint(t, backend{caller(dirA, map[string]ipc.Target{"front": front}, "front")})

	const clientTrace, clientSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	post, _ := http.NewRequest(http.MethodPost, hsA.URL+"/invoke",
		strings.NewReader(`{"caller":{"id":"webapp","type":"app"},"skill_id":"front.ask","inputs":{"prompt":"hi"}}`))
	post.Header.Set("Content-Type", "application/json")
	post.Header.Set("traceparent", "00-"+clientTrace+"-"+clientSpan+"-01")
	post.Header.Set("tracestate", "vendor=abc")
	resp, err := http.DefaultClient.Do(post)
	if err != nil {
		t.Fatal(err)
	}
	var acc blueprint.Accepted
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || jsonDecode(body, &acc) != nil {
		t.Fatalf("invoke: %d %s", resp.StatusCode, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := (&blueprint.Client{BaseURL: hsA.URL}).Wait(ctx, acc.ExecutionID); err != nil {
		t.Fatalf("the chain did not complete: %v", err)
	}
	if err := e.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	spans := rc.byName()
	ask, remote, work := spans["invoke_agent front"], spans["invoke_agent remote"], spans["invoke_agent back"]
	if ask == nil || remote == nil || work == nil || len(spans) != 3 {
		t.Fatalf("the collector got %d spans: %v", len(spans), spans)
	}
	for _, s := range []*tracepb.Span{ask, remote, work} {
		if got := hex.EncodeToString(s.TraceId); got != clientTrace {
			t.Errorf("%s is in trace %s, want the client's %s", s.Name, got, clientTrace)
		}
	}
	if hex.EncodeToString(ask.ParentSpanId) != clientSpan || !bytes.Equal(remote.ParentSpanId, ask.SpanId) || !bytes.Equal(work.ParentSpanId, remote.SpanId) {
		t.Errorf("parents: ask ← %x (want %s), remote ← %x (want %x), work ← %x (want %x)",
			ask.ParentSpanId, clientSpan, remote.ParentSpanId, ask.SpanId, work.ParentSpanId, remote.SpanId)
	}
	if remote.Kind != tracepb.Span_SPAN_KIND_CLIENT || attr(remote, "huddle.remote") != hsB.URL || attr(work, "huddle.caller") != "front" {
		t.Errorf("the remote call: kind %v remote %q; B's caller %q", remote.Kind, attr(remote, "huddle.remote"), attr(work, "huddle.caller"))
	}
	// B was sent the traceparent of A's calling span, with the client's tracestate.
	hB := seenB()
	wantTP := "00-" + clientTrace + "-" + hex.EncodeToString(remote.SpanId) + "-01"
	if len(hB) != 1 || hB[0].Get("traceparent") != wantTP || hB[0].Get("tracestate") != "vendor=abc" {
		t.Errorf("B got %v, want traceparent %s and tracestate vendor=abc", hB, wantTP)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.service) == 0 || rc.service[0] != "huddle" || !contains(rc.attrs, "deployment.environment=loopback") {
		t.Errorf("resource: service.name %v, attributes %v", rc.service, rc.attrs)
	}
	if len(rc.auth) == 0 || rc.auth[0] != "Bearer collector-token" {
		t.Errorf("OTEL_EXPORTER_OTLP_HEADERS were not sent: %q", rc.auth)
	}
}

// OTEL_SERVICE_NAME names the service instead of huddle.
func TestServiceNameFromTheEnvironment(t *testing.T) {
	clean(t)
	rc := newReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", rc.URL+"/v1/traces")
	t.Setenv("OTEL_SERVICE_NAME", "team-gpu-box")
	e, err := otelexport.Start(context.Background(), otelexport.Options{})
	if err != nil || e == nil {
		t.Fatalf("Start: %v %v", e, err)
	}
	req := protocol.InvocationRequest{RequestID: "req-svc", CorrelationID: "corr-svc", Caller: "a", Target: "b", Action: "c"}
	res, _ := protocol.OK(&req, 1, nil)
	trace.Record(trace.Start(req, time.Now()))
	trace.Record(trace.End(req, res, "", false, time.Now()))
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.spans) != 1 || len(rc.service) != 1 || rc.service[0] != "team-gpu-box" {
		t.Fatalf("spans %d, service.name %v", len(rc.spans), rc.service)
	}
}

// A collector that cannot be reached neither fails nor holds up the
// command past the flush's bound: Shutdown returns one warning line that
// names the endpoint without its credentials and shows no header value.
func TestUnreachableCollectorIsOneWarningWithoutSecrets(t *testing.T) {
	clean(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connections are refused
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://otel-user:endpoint-pass-7@"+addr+"/otlp?token=query-secret-8")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer%20header-secret-9,x-api-key=key-secret-10")
	e, err := otelexport.Start(context.Background(), otelexport.Options{})
	if err != nil || e == nil {
		t.Fatalf("Start: %v %v", e, err)
	}
	req := protocol.InvocationRequest{RequestID: "req-u", CorrelationID: "corr-u", Caller: "a", Target: "b", Action: "c"}
	res, _ := protocol.OK(&req, 1, nil)
	trace.Record(trace.Start(req, time.Now()))
	trace.Record(trace.End(req, res, "", false, time.Now()))
	ctx, cancel := context.WithTimeout(context.Background(), otelexport.ShutdownTimeout)
	defer cancel()
	err = e.Shutdown(ctx)
	if err == nil {
		t.Fatal("spans that went nowhere were not reported")
	}
	msg := err.Error()
	t.Logf("the warning: %s", msg)
	for _, secret := range []string{"otel-user", "endpoint-pass-7", "query-secret-8", "header-secret-9", "header-secret", "key-secret-10"} {
		if strings.Contains(msg, secret) {
			t.Errorf("the warning shows %q: %s", secret, msg)
		}
	}
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "http://"+addr+"/otlp/v1/traces") {
		t.Errorf("want one line naming the endpoint http://%s/otlp/v1/traces: %q", addr, msg)
	}
}

func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func jsonDecode(b []byte, v any) error { return stdjson.Unmarshal(b, v) }
