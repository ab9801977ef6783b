package cli

import (
	"encoding/hex"
	"encoding/json"
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

	"huddle/internal/testkit"
	"huddle/ipc/blueprint"
	"huddle/ipc/trace"
	"huddle/team"
)

// otlpReceiver is a loopback OTLP/HTTP collector keeping every span it is
// sent, decoded from the protobuf ExportTraceServiceRequest.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	rc := &otlpReceiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			t.Errorf("the receiver got %s %s, not an ExportTraceServiceRequest", r.Method, r.URL.Path)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		for _, rs := range req.ResourceSpans {
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

func (rc *otlpReceiver) span(name string) *tracepb.Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, s := range rc.spans {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// The real commands, each its own process, export the spans of one chain
// as one trace: huddle invoke records the chain's first call and sends its
// traceparent; huddle serve runs it as a call from the invoker, whose span
// (exported by the serve process) is the child of the invoke's. The span
// ids agree because both processes derive them from huddle's ids.
func TestInvokeAndServeExportOneTrace(t *testing.T) {
	rc := newOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL) // the processes below inherit it
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")       // serve exports within 50 ms, not 5 s
	t.Setenv("OTEL_SDK_DISABLED", "")
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	dir, addr := t.TempDir(), freePort(t)
	echo := team.MemberSpec{Name: "echo", Role: "test", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript,
		Steps: []team.Step{{Wait: team.Duration(time.Hour)}}}, Actions: map[string]team.ActionSpec{"echo": {Reply: "echoed"}}}
	writeTeamFiles(t, dir, team.Team{Name: "team-o", Members: []team.MemberSpec{echo}}, map[string]string{
		".puruto-ipc.json": `{"allowed_targets":["echo"]}`,
	})
	startServe(t, dir, addr)
	startUp(t, dir)

	const corr = "corr-otel-cli-1"
	r := huddleIn(t, t.TempDir(), nil, "invoke", "http://"+addr, "echo.echo", "--input", "prompt=PROMPT-not-exported",
		"--caller", "tester", "--trace-id", corr, "--timeout", "20")
	r.wantOK(t, "invoke")
	// invoke flushed before it exited; serve exports on its schedule.
	testkit.WaitFor(t, 30*time.Second, "serve's span at the collector", func() bool {
		return rc.span("invoke_agent echo") != nil && len(rc.spansNamed("invoke_agent echo")) == 2
	})
	spans := rc.spansNamed("invoke_agent echo")
	var invoked, served *tracepb.Span
	for _, s := range spans {
		if s.Kind == tracepb.Span_SPAN_KIND_CLIENT {
			invoked = s
		} else {
			served = s
		}
	}
	if invoked == nil || served == nil {
		t.Fatalf("want invoke's client span and serve's span, got %v", spans)
	}
	tid := trace.TraceID(corr).String()
	if hex.EncodeToString(invoked.TraceId) != tid || hex.EncodeToString(served.TraceId) != tid {
		t.Errorf("trace ids %x and %x, want the chain's %s", invoked.TraceId, served.TraceId, tid)
	}
	if len(invoked.ParentSpanId) != 0 || hex.EncodeToString(served.ParentSpanId) != hex.EncodeToString(invoked.SpanId) {
		t.Errorf("serve's span's parent %x, want invoke's span %x (a root)", served.ParentSpanId, invoked.SpanId)
	}
	rc.mu.Lock()
	all, _ := json.Marshal(rc.spans)
	rc.mu.Unlock()
	if strings.Contains(string(all), "PROMPT-not-exported") || strings.Contains(string(all), "echoed") {
		t.Errorf("content was exported without HUDDLE_OTEL_CONTENT: %s", all)
	}
	// The chain in the team's own traces is the one the collector shows.
	for _, c := range teamChains(t, dir) {
		if c.CorrelationID == corr && len(c.Rows) == 1 && c.Rows[0].Call.Caller == "tester" &&
			trace.SpanID(c.Rows[0].Call.ParentRequestID).String() == hex.EncodeToString(invoked.SpanId) {
			return
		}
	}
	t.Errorf("the team's traces lack the chain %s under invoke's call: %v", corr, teamChains(t, dir))
}

func (rc *otlpReceiver) spansNamed(name string) []*tracepb.Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range rc.spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// A collector that is not there, or an endpoint that is not a URL,
// neither fails nor changes the command: invoke prints its result and
// exits 0, with one warning line on stderr that shows neither the
// endpoint's credentials nor a header's value (the OpenTelemetry
// libraries' own logger, which would quote a malformed endpoint, is
// replaced).
func TestInvokeWithUnreachableCollector(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	for _, c := range []struct{ endpoint, shown string }{
		{"http://collector-user:collector-pass-31@" + closed, "http://" + closed + "/v1/traces"},
		{"http://collector-user:collector-pass-31@bad host:4318", "(an endpoint that is not a URL)"},
	} {
		_, url := startInvokeServer(t, blueprint.StateCompleted)
		r := huddleIn(t, t.TempDir(), []string{
			"OTEL_EXPORTER_OTLP_ENDPOINT=" + c.endpoint,
			"OTEL_EXPORTER_OTLP_HEADERS=Authorization=Bearer%20header-token-32",
			"OTEL_EXPORTER_OTLP_TIMEOUT=500",
			"OTEL_SDK_DISABLED=", "OTEL_TRACES_EXPORTER=",
		}, "invoke", url, "alice.greet", "--trace-id", "corr-unreachable")
		if r.code != ExitOK || !strings.Contains(r.stdout, "hello from alice") {
			t.Fatalf("%s: invoke: exit %d stdout %q stderr %q", c.endpoint, r.code, r.stdout, r.stderr)
		}
		if strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "huddle: warning: traces were not all exported to "+c.shown+": ") {
			t.Errorf("%s: want one warning line naming %s, got %q", c.endpoint, c.shown, r.stderr)
		}
		for _, secret := range []string{"collector-user", "collector-pass-31", "header-token-32"} {
			if strings.Contains(r.stderr+r.stdout, secret) {
				t.Errorf("%s: %q shows: %q", c.endpoint, secret, r.stderr)
			}
		}
	}
}
