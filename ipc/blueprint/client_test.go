package blueprint_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/ipc/blueprint"
)

// seedRequest is the example request of the Blueprint's chapter 6.3.
const seedRequest = `{
  "caller": {
    "id": "ifay-instance-001",
    "type": "ifay",
    "credentials": { "api_key": "sk-xxxxx" }
  },
  "skill_id": "com.example.translate-v1",
  "inputs": { "text": "Hello, world!", "target_language": "zh-CN" },
  "context": { "trace_id": "trace-abc-123", "priority": "normal", "timeout_ms": 30000 }
}`

const seedOutput = `{"translated_text":"你好，世界！","confidence":0.98}`

// sleepLog is a Client.Sleep that records the delays and returns at once.
// then, when set, runs before each return with the number of sleeps so far.
type sleepLog struct {
	mu     sync.Mutex
	delays []time.Duration
	then   func(n int)
}

func (s *sleepLog) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.delays = append(s.delays, d)
	n, then := len(s.delays), s.then
	s.mu.Unlock()
	if then != nil {
		then(n)
	}
	return ctx.Err()
}

func (s *sleepLog) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.delays...)
}

// testClient is a Client for base with its own transport (closed when the
// test ends) and a recording Sleep.
func testClient(t *testing.T, base, key string) (*blueprint.Client, *sleepLog) {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	log := &sleepLog{}
	return &blueprint.Client{BaseURL: base, APIKey: key, HTTP: &http.Client{Transport: tr, Timeout: 10 * time.Second},
		Sleep: log.sleep}, log
}

// noLeaks fails the test when it leaves goroutines behind. Call it first:
// its cleanup then runs after the servers and transports are closed.
func noLeaks(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				t.Errorf("goroutines: %d before, %d after\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
				return
			}
			runtime.Gosched()
			time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
		}
	})
}

func serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func writeBody(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// seen is one request as the fake provider saw it.
type seen struct {
	method, path, apiKey, idemKey, body string
}

// provider is a fake three-step server with one execution, exec-789-xyz:
// /status says accepted, then running, for `polls` polls, then the final
// state; /result answers as the protocol says for that state.
type provider struct {
	polls  int
	final  string
	output string

	mu       sync.Mutex
	requests []seen
	invoked  []*blueprint.InvokeRequest
	statuses int
	state    string
}

const execID = "exec-789-xyz"

func (p *provider) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /invoke", func(w http.ResponseWriter, r *http.Request) {
		body := p.record(r)
		req, err := blueprint.DecodeInvoke(body)
		if err != nil {
			writeBody(w, 400, blueprint.Envelope{Error: blueprint.ErrorBody{Code: blueprint.CodeValidation, Message: err.Error()}})
			return
		}
		p.mu.Lock()
		p.invoked = append(p.invoked, req)
		p.state = blueprint.StateAccepted
		p.mu.Unlock()
		writeBody(w, 202, blueprint.Accepted{ExecutionID: execID, Status: blueprint.StateAccepted})
	})
	mux.HandleFunc("GET /status/{id}", func(w http.ResponseWriter, r *http.Request) {
		p.record(r)
		if !p.known(w, r) {
			return
		}
		p.mu.Lock()
		p.statuses++
		switch {
		case p.state == blueprint.StateCancelled:
		case p.statuses > p.polls:
			p.state = p.final
		case p.statuses > 1:
			p.state = blueprint.StateRunning
		}
		st := p.status()
		p.mu.Unlock()
		writeBody(w, 200, st)
	})
	mux.HandleFunc("GET /result/{id}", func(w http.ResponseWriter, r *http.Request) {
		p.record(r)
		if !p.known(w, r) {
			return
		}
		p.mu.Lock()
		st := p.status()
		p.mu.Unlock()
		fail := func(code int, e blueprint.ErrorBody) {
			writeBody(w, code, blueprint.Envelope{ExecutionID: execID, Status: st.Status, Error: e})
		}
		switch st.Status {
		case blueprint.StateCompleted:
			writeBody(w, 200, blueprint.Result{ExecutionID: execID, SkillID: st.SkillID, Status: st.Status,
				Output: json.RawMessage(p.output), Timestamps: st.Timestamps})
		case blueprint.StateTimeout:
			fail(504, blueprint.ErrorBody{Code: blueprint.CodeTimeout,
				Message: "Skill execution exceeded the configured timeout of 30000ms",
				Retry:   &blueprint.Retry{SuggestedDelayMS: 5000, MaxAttempts: 3}})
		case blueprint.StateFailed:
			fail(502, blueprint.ErrorBody{Code: blueprint.CodeFailed, Message: "the translator crashed",
				Details: map[string]any{"ipc_code": "IPC_ERROR"}})
		case blueprint.StateCancelled:
			fail(409, blueprint.ErrorBody{Code: blueprint.CodeCancelled, Message: "the execution was cancelled"})
		default:
			writeBody(w, 202, st)
		}
	})
	mux.HandleFunc("POST /cancel/{id}", func(w http.ResponseWriter, r *http.Request) {
		p.record(r)
		if !p.known(w, r) {
			return
		}
		p.mu.Lock()
		p.state = blueprint.StateCancelled
		st := p.status()
		p.mu.Unlock()
		writeBody(w, 200, st)
	})
	return mux
}

func (p *provider) record(r *http.Request) []byte {
	body, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests = append(p.requests, seen{r.Method, r.URL.Path, r.Header.Get("X-API-Key"), r.Header.Get("Idempotency-Key"), string(body)})
	return body
}

func (p *provider) known(w http.ResponseWriter, r *http.Request) bool {
	if r.PathValue("id") == execID {
		return true
	}
	writeBody(w, 404, blueprint.Envelope{Error: blueprint.ErrorBody{Code: blueprint.CodeExecutionNotFound, Message: "no execution " + r.PathValue("id")}})
	return false
}

// status is the execution's status; p.mu is held.
func (p *provider) status() blueprint.Status {
	return blueprint.Status{ExecutionID: execID, SkillID: "com.example.translate-v1", Status: p.state,
		Timestamps: blueprint.Timestamps{CreatedAt: time.Date(2025, 3, 20, 14, 30, 0, 0, time.UTC)}}
}

func (p *provider) seen() []seen {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]seen(nil), p.requests...)
}

func (p *provider) paths() []string {
	var out []string
	for _, s := range p.seen() {
		out = append(out, s.method+" "+s.path)
	}
	return out
}

func seedInvoke(t *testing.T) blueprint.InvokeRequest {
	t.Helper()
	req, err := blueprint.DecodeInvoke([]byte(seedRequest))
	if err != nil {
		t.Fatalf("the seed's example does not decode: %v", err)
	}
	return *req
}

// within reports whether d is base varied by ±jitter, capped at max.
func within(d, base, max time.Duration, jitter float64) bool {
	lo := time.Duration(float64(base) * (1 - jitter))
	hi := min(time.Duration(float64(base)*(1+jitter)), max)
	return d >= lo && d <= hi
}

// TestCallSeedExample: the Blueprint's example request goes through the three
// steps end to end: POST /invoke, GET /status until completed (polls spaced
// by growing, jittered delays), GET /result; the server gets the request as
// sent, the API key as X-API-Key and an Idempotency-Key.
func TestCallSeedExample(t *testing.T) {
	noLeaks(t)
	p := &provider{polls: 3, final: blueprint.StateCompleted, output: seedOutput}
	srv := serve(t, p.handler())
	c, log := testClient(t, srv.URL, "sk-header-key")

	res, err := c.Call(context.Background(), seedInvoke(t), "")
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	if res.ExecutionID != execID || res.Status != blueprint.StateCompleted || res.SkillID != "com.example.translate-v1" {
		t.Errorf("result %+v", res)
	}
	var out, want map[string]any
	if err := json.Unmarshal(res.Output, &out); err != nil {
		t.Fatalf("output %s: %v", res.Output, err)
	}
	json.Unmarshal([]byte(seedOutput), &want)
	if !reflect.DeepEqual(out, want) {
		t.Errorf("output %v, want %v", out, want)
	}

	wantPaths := []string{"POST /invoke", "GET /status/" + execID, "GET /status/" + execID, "GET /status/" + execID,
		"GET /status/" + execID, "GET /result/" + execID}
	if got := p.paths(); !reflect.DeepEqual(got, wantPaths) {
		t.Errorf("requests %q, want %q", got, wantPaths)
	}
	p.mu.Lock()
	if len(p.invoked) != 1 || !reflect.DeepEqual(*p.invoked[0], seedInvoke(t)) {
		t.Errorf("server decoded %+v, want the seed's request", p.invoked)
	}
	p.mu.Unlock()
	for _, s := range p.seen() {
		if s.apiKey != "sk-header-key" {
			t.Errorf("%s %s: X-API-Key %q", s.method, s.path, s.apiKey)
		}
	}
	if k := p.seen()[0].idemKey; k == "" {
		t.Error("POST /invoke without an Idempotency-Key")
	}

	// Three polls said not-final: three waits, 50, 100, 200 ms ±20%.
	b := blueprint.Backoff{}
	delays := log.got()
	if len(delays) != 3 {
		t.Fatalf("delays %v, want 3", delays)
	}
	for i, d := range delays {
		base := blueprint.DefaultInitial << i
		if !within(d, base, blueprint.DefaultMax, blueprint.DefaultJitter) {
			t.Errorf("poll delay %d = %v, want %v ±20%%", i, d, base)
		}
		if want := b.Delay(i, func() float64 { return 0.5 }); want != base {
			t.Errorf("Delay(%d) without jitter = %v, want %v", i, want, base)
		}
	}
}

// reservePort returns a loopback address where nothing listens.
func reservePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestInvokeRetriesUntilServerComesUp: connections are refused until the
// server starts (during the client's second wait); the invocation then
// goes through, once, with the caller's Idempotency-Key.
func TestInvokeRetriesUntilServerComesUp(t *testing.T) {
	noLeaks(t)
	addr := reservePort(t)
	p := &provider{polls: 0, final: blueprint.StateCompleted, output: `{}`}
	c, log := testClient(t, "http://"+addr, "")
	var srv *httptest.Server
	log.then = func(n int) {
		if n != 2 {
			return
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("listen on %s again: %v", addr, err)
			return
		}
		srv = httptest.NewUnstartedServer(p.handler())
		srv.Listener.Close()
		srv.Listener = l
		srv.Start()
	}
	t.Cleanup(func() {
		if srv != nil {
			srv.Close()
		}
	})

	acc, err := c.Invoke(context.Background(), seedInvoke(t), "key-1")
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	if acc.ExecutionID != execID || acc.Status != blueprint.StateAccepted {
		t.Errorf("accepted %+v", acc)
	}
	if got := log.got(); len(got) != 2 {
		t.Errorf("waits %v, want 2 (two refused connections)", got)
	}
	if s := p.seen(); len(s) != 1 || s[0].idemKey != "key-1" {
		t.Errorf("server saw %+v, want one POST with Idempotency-Key key-1", s)
	}
}

// TestUnreachable: a server that never listens is ENDPOINT_UNREACHABLE after
// Backoff.Attempts tries, naming the URL and not the key; the waits between
// tries grow by Factor and stop at Max, each within its jitter.
func TestUnreachable(t *testing.T) {
	noLeaks(t)
	base := "http://" + reservePort(t)
	c, log := testClient(t, base, "sk-never-shown")
	c.Backoff = blueprint.Backoff{Initial: 10 * time.Millisecond, Max: 80 * time.Millisecond, Factor: 2, Jitter: 0.2, Attempts: 7}

	_, err := c.Invoke(context.Background(), seedInvoke(t), "")
	var api *blueprint.APIError
	if !errors.As(err, &api) || api.Code != blueprint.CodeUnreachable || api.HTTPStatus != 0 {
		t.Fatalf("Invoke: %v, want ENDPOINT_UNREACHABLE", err)
	}
	if !strings.Contains(err.Error(), base+"/invoke") || !strings.Contains(err.Error(), "7 attempts") {
		t.Errorf("error %q does not name the URL and the attempts", err)
	}
	if strings.Contains(err.Error(), "sk-never-shown") || strings.Contains(err.Error(), "sk-xxxxx") {
		t.Errorf("error %q shows a key", err)
	}
	if api.Details["attempts"] != 7 || api.Details["url"] != base+"/invoke" {
		t.Errorf("details %v", api.Details)
	}

	delays := log.got()
	if len(delays) != 6 {
		t.Fatalf("waits %v, want 6 between 7 attempts", delays)
	}
	bases := []int{10, 20, 40, 80, 80, 80} // ms
	for i, d := range delays {
		if !within(d, time.Duration(bases[i])*time.Millisecond, c.Backoff.Max, 0.2) {
			t.Errorf("wait %d = %v, want %v ±20%% capped at %v", i, d, time.Duration(bases[i])*time.Millisecond, c.Backoff.Max)
		}
		if i > 0 && i < 4 && d <= delays[i-1] {
			t.Errorf("wait %d = %v does not grow from %v", i, d, delays[i-1])
		}
		if d > c.Backoff.Max {
			t.Errorf("wait %d = %v over the cap %v", i, d, c.Backoff.Max)
		}
	}

	// The other calls too: Wait surfaces it.
	if _, err := c.Wait(context.Background(), execID); !errors.As(err, &api) || api.Code != blueprint.CodeUnreachable {
		t.Errorf("Wait: %v, want ENDPOINT_UNREACHABLE", err)
	}
}

// refusing answers POST /invoke with the given refusals (status and hint)
// in turn, then accepts.
func refusing(code int, hints []blueprint.Retry) (http.Handler, *[]seen) {
	var mu sync.Mutex
	var got []seen
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, seen{r.Method, r.URL.Path, r.Header.Get("X-API-Key"), r.Header.Get("Idempotency-Key"), string(body)})
		n := len(got)
		mu.Unlock()
		if n <= len(hints) {
			h := hints[n-1]
			writeBody(w, code, blueprint.Envelope{Error: blueprint.ErrorBody{Code: blueprint.CodeTooMany, Message: "busy", Retry: &h}})
			return
		}
		writeBody(w, 202, blueprint.Accepted{ExecutionID: execID, Status: blueprint.StateAccepted})
	}), &got
}

// TestRetryHints: a 429 or 503 with a retry hint is tried again after
// exactly the suggested delay (not capped by Backoff.Max), with the same
// Idempotency-Key, up to the hint's max_attempts.
func TestRetryHints(t *testing.T) {
	hints := []blueprint.Retry{{SuggestedDelayMS: 120, MaxAttempts: 4}, {SuggestedDelayMS: 2400, MaxAttempts: 4}, {SuggestedDelayMS: 360, MaxAttempts: 4}}
	for _, code := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			h, got := refusing(code, hints)
			srv := serve(t, h)
			c, log := testClient(t, srv.URL, "")
			acc, err := c.Invoke(context.Background(), seedInvoke(t), "")
			if err != nil || acc.ExecutionID != execID {
				t.Fatalf("Invoke: %+v, %v", acc, err)
			}
			want := []time.Duration{120 * time.Millisecond, 2400 * time.Millisecond, 360 * time.Millisecond}
			if d := log.got(); !reflect.DeepEqual(d, want) {
				t.Errorf("waits %v, want the hints %v", d, want)
			}
			if len(*got) != 4 {
				t.Fatalf("%d tries, want 4", len(*got))
			}
			for _, s := range *got {
				if s.idemKey == "" || s.idemKey != (*got)[0].idemKey || s.body != (*got)[0].body {
					t.Errorf("a retry changed the request: %+v vs %+v", s, (*got)[0])
				}
			}
		})
	}

	t.Run("max_attempts", func(t *testing.T) {
		always := make([]blueprint.Retry, 10)
		for i := range always {
			always[i] = blueprint.Retry{SuggestedDelayMS: 70, MaxAttempts: 3}
		}
		h, got := refusing(http.StatusTooManyRequests, always)
		srv := serve(t, h)
		c, log := testClient(t, srv.URL, "")
		_, err := c.Invoke(context.Background(), seedInvoke(t), "")
		var api *blueprint.APIError
		if !errors.As(err, &api) || api.Code != blueprint.CodeTooMany || api.HTTPStatus != 429 ||
			api.Retry == nil || api.Retry.MaxAttempts != 3 {
			t.Fatalf("Invoke: %#v, want TOO_MANY_EXECUTIONS with its hint", err)
		}
		if len(*got) != 3 || len(log.got()) != 2 {
			t.Errorf("%d tries and waits %v, want 3 tries and 2 waits", len(*got), log.got())
		}
	})

	t.Run("no hint", func(t *testing.T) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeBody(w, 503, blueprint.Envelope{Error: blueprint.ErrorBody{Code: "SERVICE_UNAVAILABLE", Message: "down"}})
		})
		c, log := testClient(t, serve(t, h).URL, "")
		_, err := c.Invoke(context.Background(), seedInvoke(t), "")
		var api *blueprint.APIError
		if !errors.As(err, &api) || api.Code != "SERVICE_UNAVAILABLE" || api.HTTPStatus != 503 || len(log.got()) != 0 {
			t.Errorf("Invoke: %v after waits %v, want the 503 at once", err, log.got())
		}
	})
}

// TestIdempotencyKeyOnEveryRetry: one Invoke meets a dropped connection,
// then a 429 with a hint, then is accepted: all three tries carry the same
// Idempotency-Key, the caller's or a generated one.
func TestIdempotencyKeyOnEveryRetry(t *testing.T) {
	for _, given := range []string{"", "caller-key-42"} {
		var mu sync.Mutex
		var keys []string
		srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			mu.Lock()
			keys = append(keys, r.Header.Get("Idempotency-Key"))
			n := len(keys)
			mu.Unlock()
			switch n {
			case 1: // the request arrived, the answer is lost
				conn, _, err := http.NewResponseController(w).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				conn.Close()
			case 2:
				writeBody(w, 429, blueprint.Envelope{Error: blueprint.ErrorBody{Code: blueprint.CodeTooMany,
					Retry: &blueprint.Retry{SuggestedDelayMS: 10, MaxAttempts: 5}}})
			default:
				writeBody(w, 202, blueprint.Accepted{ExecutionID: execID, Status: blueprint.StateAccepted})
			}
		}))
		c, _ := testClient(t, srv.URL, "")
		if _, err := c.Invoke(context.Background(), seedInvoke(t), given); err != nil {
			t.Fatalf("Invoke: %v", err)
		}
		mu.Lock()
		if len(keys) < 3 || keys[0] == "" || (given != "" && keys[0] != given) {
			t.Errorf("key %q: keys %q", given, keys)
		}
		for _, k := range keys {
			if k != keys[0] {
				t.Errorf("key %q: retries used keys %q, want one", given, keys)
			}
		}
		mu.Unlock()
	}
}

// TestExecutionTimeoutKeepsHint: an execution that timed out is final: Call
// returns EXECUTION_TIMEOUT from /result's 504 with the server's retry hint
// and state, and does not invoke again by itself.
func TestExecutionTimeoutKeepsHint(t *testing.T) {
	p := &provider{polls: 1, final: blueprint.StateTimeout}
	c, log := testClient(t, serve(t, p.handler()).URL, "")
	_, err := c.Call(context.Background(), seedInvoke(t), "")
	var api *blueprint.APIError
	if !errors.As(err, &api) {
		t.Fatalf("Call: %v, want an *APIError", err)
	}
	want := &blueprint.APIError{HTTPStatus: 504, Code: blueprint.CodeTimeout,
		Message: "Skill execution exceeded the configured timeout of 30000ms",
		Retry:   &blueprint.Retry{SuggestedDelayMS: 5000, MaxAttempts: 3}, ExecutionID: execID, State: blueprint.StateTimeout}
	if !reflect.DeepEqual(api, want) {
		t.Errorf("error %#v, want %#v", api, want)
	}
	if !strings.Contains(err.Error(), "retry after 5000 ms") {
		t.Errorf("error %q does not give the hint", err)
	}
	if n := strings.Count(strings.Join(p.paths(), ","), "POST /invoke"); n != 1 {
		t.Errorf("%d invocations, want 1", n)
	}
	for _, d := range log.got() {
		if d == 5*time.Second {
			t.Errorf("the client waited the hint %v by itself", d)
		}
	}
}

// TestWaitFinalStates: failed and cancelled executions are errors carrying
// the envelope; a 200 /result whose state is not completed is one too.
func TestWaitFinalStates(t *testing.T) {
	for _, tc := range []struct {
		final, code string
		status      int
	}{
		{blueprint.StateFailed, blueprint.CodeFailed, 502},
		{blueprint.StateCancelled, blueprint.CodeCancelled, 409},
	} {
		p := &provider{polls: 2, final: tc.final}
		c, _ := testClient(t, serve(t, p.handler()).URL, "")
		_, err := c.Call(context.Background(), seedInvoke(t), "")
		var api *blueprint.APIError
		if !errors.As(err, &api) || api.Code != tc.code || api.HTTPStatus != tc.status || api.ExecutionID != execID || api.State != tc.final {
			t.Errorf("%s: %#v, want %s", tc.final, err, tc.code)
		}
		if tc.final == blueprint.StateFailed && api != nil && api.Details["ipc_code"] != "IPC_ERROR" {
			t.Errorf("details %v lost", api.Details)
		}
	}

	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := blueprint.Status{ExecutionID: "e1", Status: blueprint.StateFailed}
		if strings.HasPrefix(r.URL.Path, "/result/") {
			writeBody(w, 200, blueprint.Result{ExecutionID: "e1", Status: blueprint.StateFailed})
			return
		}
		writeBody(w, 200, st)
	}))
	c, _ := testClient(t, srv.URL, "")
	_, err := c.Wait(context.Background(), "e1")
	var api *blueprint.APIError
	if !errors.As(err, &api) || api.Code != blueprint.CodeFailed || api.State != blueprint.StateFailed {
		t.Errorf("Wait on a 200 failed result: %v, want EXECUTION_FAILED", err)
	}
}

// TestResultStatusCancel: the single steps. Result while running is the
// status and a zero Result; Cancel reaches /cancel; an unknown execution is
// EXECUTION_NOT_FOUND.
func TestResultStatusCancel(t *testing.T) {
	p := &provider{polls: 100, final: blueprint.StateCompleted}
	c, _ := testClient(t, serve(t, p.handler()).URL, "")
	ctx := context.Background()
	if _, err := c.Invoke(ctx, seedInvoke(t), ""); err != nil {
		t.Fatal(err)
	}
	c.Status(ctx, execID) // accepted
	st, err := c.Status(ctx, execID)
	if err != nil || st.Status != blueprint.StateRunning || st.ExecutionID != execID {
		t.Errorf("Status: %+v, %v, want running", st, err)
	}
	res, pending, err := c.Result(ctx, execID)
	if err != nil || pending == nil || pending.Status != blueprint.StateRunning || !reflect.DeepEqual(res, blueprint.Result{}) {
		t.Errorf("Result while running: %+v, %+v, %v", res, pending, err)
	}
	if err := c.Cancel(ctx, execID); err != nil {
		t.Errorf("Cancel: %v", err)
	}
	if got := p.paths(); got[len(got)-1] != "POST /cancel/"+execID {
		t.Errorf("requests %q, want a POST /cancel", got)
	}
	if _, err := c.Wait(ctx, execID); err == nil || !strings.Contains(err.Error(), blueprint.CodeCancelled) {
		t.Errorf("Wait after Cancel: %v, want EXECUTION_CANCELLED", err)
	}
	var api *blueprint.APIError
	for name, err := range map[string]error{
		"Status": func() error { _, err := c.Status(ctx, "nope"); return err }(),
		"Cancel": c.Cancel(ctx, "nope"),
	} {
		if !errors.As(err, &api) || api.Code != blueprint.CodeExecutionNotFound || api.HTTPStatus != 404 || api.ExecutionID != "nope" {
			t.Errorf("%s of an unknown execution: %v", name, err)
		}
	}
}

// TestContextEnds: Wait returns ctx.Err() when its context ends while the
// execution runs, and Call then cancels the execution on the server.
func TestContextEnds(t *testing.T) {
	noLeaks(t)
	p := &provider{polls: 1000, final: blueprint.StateCompleted}
	c, log := testClient(t, serve(t, p.handler()).URL, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log.then = func(n int) {
		if n == 3 {
			cancel()
		}
	}
	_, err := c.Call(ctx, seedInvoke(t), "")
	if err != context.Canceled {
		t.Fatalf("Call: %v, want context.Canceled", err)
	}
	if got := p.paths(); got[len(got)-1] != "POST /cancel/"+execID {
		t.Errorf("requests %q, want a last POST /cancel", got)
	}
}

// TestAPIKeyStaysSecret: the key goes as X-API-Key (not in the body), and
// whatever a server echoes of it, no error shows it.
func TestAPIKeyStaysSecret(t *testing.T) {
	const key = "sk-live-SECRET-0123456789"
	var mu sync.Mutex
	var headers, bodies []string
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		headers, bodies = append(headers, r.Header.Get("X-API-Key")), append(bodies, string(body))
		mu.Unlock()
		switch r.URL.Path {
		case "/status/e2":
			writeBody(w, 200, blueprint.Status{ExecutionID: "e2", Status: blueprint.StateFailed, Error: &blueprint.ErrorBody{
				Code: blueprint.CodeFailed, Message: "failed for " + r.Header.Get("X-API-Key"),
				Details: map[string]any{"key": r.Header.Get("X-API-Key")}}})
		case "/invoke":
			writeBody(w, 401, blueprint.Envelope{Error: blueprint.ErrorBody{Code: blueprint.CodeAuthRequired,
				Message: "key " + r.Header.Get("X-API-Key") + " is not known",
				Details: map[string]any{"key": r.Header.Get("X-API-Key"), "seen": []any{"x" + r.Header.Get("X-API-Key")}}}})
		default:
			w.WriteHeader(500)
			io.WriteString(w, "<html>proxy error for "+r.Header.Get("X-API-Key")+"</html>")
		}
	}))
	c, _ := testClient(t, srv.URL, key)
	req := seedInvoke(t)
	req.Caller.Credentials = nil

	_, err := c.Invoke(context.Background(), req, "")
	var api *blueprint.APIError
	if !errors.As(err, &api) || api.Code != blueprint.CodeAuthRequired || api.HTTPStatus != 401 {
		t.Fatalf("Invoke: %v, want AUTH_REQUIRED", err)
	}
	env, _ := json.Marshal(api.Envelope())
	_, serr := c.Status(context.Background(), "e1")
	if serr == nil || !strings.Contains(serr.Error(), blueprint.CodeInvalidResponse) {
		t.Errorf("Status on a proxy page: %v, want INVALID_RESPONSE", serr)
	}
	st, err2 := c.Status(context.Background(), "e2")
	if err2 != nil || st.Error == nil || st.Error.Code != blueprint.CodeFailed {
		t.Fatalf("Status of a failed execution: %+v %v", st, err2)
	}
	stBody, _ := json.Marshal(st)
	c.BaseURL = "http://" + reservePort(t)
	c.Backoff.Attempts = 2
	_, uerr := c.Invoke(context.Background(), req, "")
	for _, s := range []string{err.Error(), string(env), serr.Error(), uerr.Error(), string(stBody)} {
		if strings.Contains(s, key) {
			t.Errorf("the key shows in %q", s)
		}
	}
	if !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("error %q: the echoed key is not marked redacted", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range headers {
		if headers[i] != key || strings.Contains(bodies[i], key) {
			t.Errorf("request %d: X-API-Key %q, body %q", i, headers[i], bodies[i])
		}
	}
}

// TestBadAnswers: answers that are not the protocol are INVALID_RESPONSE,
// including a body over 1 MiB.
func TestBadAnswers(t *testing.T) {
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/invoke":
			writeBody(w, 202, map[string]string{"status": "accepted"}) // no execution_id
		case "/status/big":
			w.WriteHeader(200)
			io.WriteString(w, `{"execution_id":"big","status":"running","pad":"`+strings.Repeat("x", blueprint.MaxBody)+`"}`)
		case "/status/odd":
			writeBody(w, 200, blueprint.Status{ExecutionID: "odd", Status: "dancing"})
		default:
			w.WriteHeader(502)
			io.WriteString(w, "bad gateway")
		}
	}))
	c, _ := testClient(t, srv.URL, "")
	ctx := context.Background()
	checks := map[string]func() error{
		"invoke without id":    func() error { _, err := c.Invoke(ctx, seedInvoke(t), ""); return err },
		"status over 1 MiB":    func() error { _, err := c.Status(ctx, "big"); return err },
		"unknown state":        func() error { _, err := c.Wait(ctx, "odd"); return err },
		"502 with no envelope": func() error { _, _, err := c.Result(ctx, "x"); return err },
	}
	for name, check := range checks {
		var api *blueprint.APIError
		if err := check(); !errors.As(err, &api) || api.Code != blueprint.CodeInvalidResponse {
			t.Errorf("%s: %v, want INVALID_RESPONSE", name, err)
		}
	}
	if _, err := c.Status(ctx, "big"); err == nil || !strings.Contains(err.Error(), "1 MiB") {
		t.Errorf("over 1 MiB: %v", err)
	}
}

// TestBackoffDelay: the delay grows by Factor, stops at Max, and jitter
// stays within its fraction without passing Max.
func TestBackoffDelay(t *testing.T) {
	fixed := func(r float64) func() float64 { return func() float64 { return r } }
	ms := time.Millisecond
	for _, tc := range []struct {
		name    string
		b       blueprint.Backoff
		attempt int
		r       float64
		want    time.Duration
	}{
		{"defaults first", blueprint.Backoff{}, 0, 0.5, 50 * ms},
		{"defaults grow", blueprint.Backoff{}, 3, 0.5, 400 * ms},
		{"defaults cap", blueprint.Backoff{}, 10, 0.5, 2 * time.Second},
		{"huge attempt", blueprint.Backoff{}, math.MaxInt32, 0.5, 2 * time.Second},
		{"negative attempt", blueprint.Backoff{}, -3, 0.5, 50 * ms},
		{"jitter low", blueprint.Backoff{}, 1, 0, 80 * ms},
		{"jitter high", blueprint.Backoff{Jitter: 0.5}, 1, 0.75, 125 * ms},
		{"jitter never passes the cap", blueprint.Backoff{}, 10, 0.999, 2 * time.Second},
		{"jitter below the cap", blueprint.Backoff{}, 10, 0, 1600 * ms},
		{"no jitter", blueprint.Backoff{Jitter: -1}, 2, 0.9, 200 * ms},
		{"factor 3", blueprint.Backoff{Initial: 10 * ms, Max: time.Second, Factor: 3, Jitter: -1}, 3, 0.1, 270 * ms},
		{"factor below 1 means 2", blueprint.Backoff{Initial: 10 * ms, Factor: 0.5, Jitter: -1}, 2, 0.1, 40 * ms},
	} {
		if got := tc.b.Delay(tc.attempt, fixed(tc.r)); got != tc.want {
			t.Errorf("%s: Delay(%d) = %v, want %v", tc.name, tc.attempt, got, tc.want)
		}
	}
	b := blueprint.Backoff{}
	for i := range 1000 {
		if d := b.Delay(i%12, nil); d <= 0 || d > blueprint.DefaultMax {
			t.Fatalf("Delay(%d) = %v outside (0, Max]", i%12, d)
		}
	}
}
