package ipc

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"huddle/inbox"
	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/teamdir"
)

const roleEnv = "HUDDLE_IPC_TEST_ROLE"

// TestMain lets the test binary stand in for exec targets.
func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(execTarget(role))
	}
	os.Exit(m.Run())
}

func execTarget(role string) int {
	var req protocol.InvocationRequest
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "bad request:", err)
		return 3
	}
	switch role {
	case "noop": // read the request, answer nothing: the cost of a start
	case "ok":
		res, _ := protocol.OK(&req, 5, map[string]string{"summary": "done: " + req.Prompt})
		json.NewEncoder(os.Stdout).Encode(res)
	case "garbage":
		fmt.Println("this is not JSON")
	case "mismatch":
		req.RequestID = "req-somebodyelse"
		res, _ := protocol.OK(&req, 5, map[string]string{"summary": "x"})
		json.NewEncoder(os.Stdout).Encode(res)
	case "crash":
		fmt.Fprintln(os.Stderr, "panic: the target fell over")
		return 2
	case "slow":
		time.Sleep(10 * time.Second) // a target that does not answer in time
	}
	return 0
}

func policy(t *testing.T, js string) *Policy {
	t.Helper()
	p, err := ParsePolicy([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func execResolver(role string) Resolver {
	return func(name string) (Target, string) {
		if name != "tool" {
			return nil, ""
		}
		return ExecTarget{Command: []string{os.Args[0], "-test.run=^$"}, Env: append(os.Environ(), roleEnv+"="+role)}, ""
	}
}

func readSpans(t *testing.T, dir string) []trace.Span {
	t.Helper()
	spans, err := trace.NewTraceReader(dir).Read()
	if err != nil {
		t.Fatal(err)
	}
	return spans
}

func TestCallerErrorsAndSpans(t *testing.T) {
	dir := t.TempDir()
	p := policy(t, `{"allowed_targets":["tool","ghost"],"allowed_actions":{"tool":["run"]}}`)
	cases := []struct {
		name   string
		c      *Caller
		req    protocol.InvocationRequest
		code   protocol.ErrorCode
		reason string
	}{
		{"not allowed target", &Caller{TeamDir: dir, Policy: p, Resolve: execResolver("ok")},
			protocol.InvocationRequest{Caller: "me", Target: "other", Action: "run"}, protocol.ErrDenied, protocol.DeniedNotAllowedTarget},
		{"not allowed action", &Caller{TeamDir: dir, Policy: p, Resolve: execResolver("ok")},
			protocol.InvocationRequest{Caller: "me", Target: "tool", Action: "wipe"}, protocol.ErrDenied, protocol.DeniedNotAllowedAction},
		{"hop at max_hops", &Caller{TeamDir: dir, Policy: p, Resolve: execResolver("ok")},
			protocol.InvocationRequest{Caller: "me", Target: "tool", Action: "run", Hop: 2}, protocol.ErrDenied, protocol.DeniedMaxHops},
		{"unknown target", &Caller{TeamDir: dir, Policy: p, Resolve: execResolver("ok")},
			protocol.InvocationRequest{Caller: "me", Target: "ghost", Action: "run"}, protocol.ErrTargetNotFound, ""},
		{"no policy", &Caller{TeamDir: dir, PolicyErr: fmt.Errorf("ipc config: open .puruto-ipc.json: no such file")},
			protocol.InvocationRequest{Caller: "me", Target: "tool", Action: "run"}, protocol.ErrIPC, ""},
		{"garbage", &Caller{TeamDir: dir, Policy: p, Resolve: execResolver("garbage")},
			protocol.InvocationRequest{Caller: "me", Target: "tool", Action: "run"}, protocol.ErrInvalidResponse, "not an InvocationResult"},
		{"mismatched id", &Caller{TeamDir: dir, Policy: p, Resolve: execResolver("mismatch")},
			protocol.InvocationRequest{Caller: "me", Target: "tool", Action: "run"}, protocol.ErrInvalidResponse, "does not match"},
		{"crash", &Caller{TeamDir: dir, Policy: p, Resolve: execResolver("crash")},
			protocol.InvocationRequest{Caller: "me", Target: "tool", Action: "run"}, protocol.ErrInvalidResponse, "the target fell over"},
		{"slow", &Caller{TeamDir: dir, Policy: p, Resolve: execResolver("slow")},
			protocol.InvocationRequest{Caller: "me", Target: "tool", Action: "run", TimeoutSec: 1}, protocol.ErrTimeout, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := c.c.Call(context.Background(), c.req)
			if res.Status != protocol.ResultError || res.Error == nil || res.Error.Code != c.code {
				t.Fatalf("got %+v, want %s", res, c.code)
			}
			if err := res.Validate(); err != nil {
				t.Fatalf("the caller's own result is invalid: %v", err)
			}
			if c.reason != "" && !strings.Contains(string(res.Error.Details)+res.Error.Message, c.reason) {
				t.Fatalf("details %s / message %q do not name %q", res.Error.Details, res.Error.Message, c.reason)
			}
			// A refused answer travels with the error, for the trace.
			wantAnswer := map[string]string{"garbage": "this is not JSON", "mismatch": "req-somebodyelse"}[c.name]
			if wantAnswer != "" && !strings.Contains(string(res.Error.Details), wantAnswer) {
				t.Fatalf("details %s do not hold the refused answer %q", res.Error.Details, wantAnswer)
			}
		})
	}
	// Every call has a start and an end span.
	spans := readSpans(t, dir)
	if len(spans) != 2*len(cases) {
		t.Fatalf("%d spans for %d calls", len(spans), len(cases))
	}
	ends := map[string]trace.Span{}
	for _, s := range spans {
		if s.Span == trace.SpanEnd {
			ends[s.RequestID] = s
		}
	}
	for _, s := range spans {
		if s.Span == trace.SpanStart {
			e, ok := ends[s.RequestID]
			if !ok || e.Status != protocol.ResultError || e.Error == nil {
				t.Fatalf("call %s: end span %+v", s.RequestID, e)
			}
		}
	}
}

func TestExecTargetOK(t *testing.T) {
	dir := t.TempDir()
	c := &Caller{TeamDir: dir, Policy: policy(t, `{"allowed_targets":["tool"]}`), Resolve: execResolver("ok")}
	res := c.Call(context.Background(), protocol.InvocationRequest{Caller: "me", Target: "tool", Action: "run", Prompt: "p1"})
	if res.Status != protocol.ResultOK || !strings.Contains(string(res.Result), "done: p1") {
		t.Fatalf("got %+v", res)
	}
	tr := trace.NewTraces()
	for _, s := range readSpans(t, dir) {
		tr.Add(s)
	}
	chains := tr.Chains()
	if len(chains) != 1 || chains[0].Rows[0].Call.Status != trace.CallOK || chains[0].Rows[0].Call.Prompt != "p1" {
		t.Fatalf("trace: %+v", chains)
	}
}

// TestTimeoutWithLateAnswer: a teammate answers after the deadline; the
// caller got TIMEOUT, and the answer is in the trace as late.
func TestTimeoutWithLateAnswer(t *testing.T) {
	dir := t.TempDir()
	router := NewRouter(dir)
	c := &Caller{TeamDir: dir, Policy: policy(t, `{"allowed_targets":["slowpoke"]}`),
		Resolve: func(name string) (Target, string) {
			return InboxTarget{TeamDir: dir, Name: name, Router: router}, ""
		}}
	res := c.Call(context.Background(), protocol.InvocationRequest{Caller: "me", Target: "slowpoke", Action: "think", TimeoutSec: 1})
	if res.Error == nil || res.Error.Code != protocol.ErrTimeout {
		t.Fatalf("got %+v, want TIMEOUT", res)
	}
	// The request did reach slowpoke's inbox.
	var got []protocol.Message
	o, _ := inbox.NewObserver(dir, "slowpoke", true, func(d inbox.Delivery) { got = append(got, d.Msg) })
	o.Drain()
	if len(got) != 1 || got[0].Invocation == nil || got[0].Invocation.RequestID != res.RequestID {
		t.Fatalf("slowpoke's inbox: %+v", got)
	}
	req := *got[0].Invocation
	late, _ := protocol.OK(&req, 1500, map[string]string{"summary": "finally"})
	if router.Deliver(late) {
		t.Fatal("a late answer was delivered as if on time")
	}
	var lateEnd *trace.Span
	for _, s := range readSpans(t, dir) {
		if s.Span == trace.SpanEnd && s.Late {
			lateEnd = &s
		}
	}
	if lateEnd == nil || lateEnd.RequestID != res.RequestID || lateEnd.Status != protocol.ResultOK {
		t.Fatalf("no late span for %s", res.RequestID)
	}
	tr := trace.NewTraces()
	for _, s := range readSpans(t, dir) {
		tr.Add(s)
	}
	call := tr.Chains()[0].Rows[0].Call
	if call.Status != trace.CallError || call.ErrorCode != "TIMEOUT" || !call.Late {
		t.Fatalf("the chain shows %+v, want TIMEOUT marked late", call)
	}
}

func TestRouterDeliversOnTimeAnswers(t *testing.T) {
	dir := t.TempDir()
	router := NewRouter(dir)
	target := InboxTarget{TeamDir: dir, Name: "quick", Router: router}
	// The callee: whoever consumes quick's inbox answers at once.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := inbox.NewWatcher(ctx, dir, inbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.Consume("quick", func(_ context.Context, d inbox.Delivery) error {
		res, _ := protocol.OK(d.Msg.Invocation, 1, map[string]string{"summary": "hi"})
		router.Deliver(res)
		return nil
	})
	c := &Caller{TeamDir: dir, Policy: policy(t, `{"allowed_targets":["quick"]}`), Resolve: func(string) (Target, string) { return target, "" }}
	res := c.Call(ctx, protocol.InvocationRequest{Caller: "me", Target: "quick", Action: "hello", TimeoutSec: 10})
	if res.Status != protocol.ResultOK {
		t.Fatalf("got %+v", res)
	}
	if _, err := os.Stat(teamdir.TracesPath(dir)); err != nil {
		t.Fatal(err)
	}
}

// remoteTarget answers at once and says it lives elsewhere.
type remoteTarget struct{}

func (remoteTarget) Remote() string { return "http://elsewhere:7420" }

func (remoteTarget) Invoke(_ context.Context, req protocol.InvocationRequest) (protocol.InvocationResult, error) {
	return protocol.OK(&req, 1, map[string]string{"summary": "far away"})
}

func TestRemoteTargetsAreMarkedInTheTrace(t *testing.T) {
	dir := t.TempDir()
	c := &Caller{TeamDir: dir, Policy: policy(t, `{"allowed_targets":["far"]}`),
		Resolve: func(string) (Target, string) { return remoteTarget{}, "" }}
	if res := c.Call(context.Background(), protocol.InvocationRequest{Caller: "me", Target: "far", Action: "x"}); res.Status != protocol.ResultOK {
		t.Fatalf("call: %+v", res)
	}
	tr := trace.NewTraces()
	for _, s := range readSpans(t, dir) {
		tr.Add(s)
	}
	if got := tr.Chains()[0].Rows[0].Call.Remote; got != "http://elsewhere:7420" {
		t.Fatalf("Remote = %q", got)
	}
}
