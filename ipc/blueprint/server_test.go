package blueprint

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"huddle/ipc"
	"huddle/protocol"
)

// fakeBackend answers by action name: ok, slow (until cancelled), timeout,
// fail; its policy denies the target "secret".
type fakeBackend struct {
	calls     atomic.Int64
	mu        sync.Mutex
	cancelled []string
	started   chan string
	// checks, when set, holds every policy check until it is full: the
	// requests then leave the check together, as the busiest scheduler
	// would let them.
	checks *barrier
}

// barrier lets goroutines through together once n have arrived, or each
// after a deadline, so a test never hangs on it.
type barrier struct {
	mu      sync.Mutex
	n       int
	arrived int
	open    chan struct{}
}

func newBarrier(n int) *barrier { return &barrier{n: n, open: make(chan struct{})} }

func (b *barrier) wait() {
	b.mu.Lock()
	b.arrived++
	if b.arrived == b.n {
		close(b.open)
	}
	b.mu.Unlock()
	select {
	case <-b.open:
	case <-time.After(10 * time.Second):
	}
}

func (f *fakeBackend) Skills() []Skill {
	return []Skill{{ID: "com.example.translate-v1", Name: "translate"}, {ID: "tools.slow", Name: "slow"}}
}

func (f *fakeBackend) Has(id string) bool { return !strings.HasPrefix(id, "missing.") }

func (f *fakeBackend) Check(id string, hop int) *ipc.Denial {
	if f.checks != nil {
		f.checks.wait()
	}
	p := &ipc.Policy{Enabled: true, MaxHops: 2, DefaultTimeoutSec: 10, AllowedTargets: []string{"com", "tools"}}
	target, action, _ := strings.Cut(id, ".")
	return p.Check(target, action, hop)
}

func (f *fakeBackend) Call(ctx context.Context, req protocol.InvocationRequest) protocol.InvocationResult {
	f.calls.Add(1)
	if f.started != nil {
		f.started <- req.RequestID
	}
	switch req.Action {
	case "slow":
		<-ctx.Done()
		f.mu.Lock()
		f.cancelled = append(f.cancelled, req.RequestID)
		f.mu.Unlock()
		return protocol.Fail(&req, 0, protocol.ErrIPC, "cancelled", nil)
	case "timeout":
		return protocol.Fail(&req, 3000, protocol.ErrTimeout, "TIMEOUT: no answer within 3s", nil)
	case "fail":
		return protocol.Fail(&req, 1, protocol.ErrInvalidResponse, "INVALID_RESPONSE: garbage", map[string]string{"reason": "garbage"})
	}
	res, _ := protocol.OK(&req, 2, map[string]any{"translated_text": "你好，世界！", "confidence": 0.98, "trace": req.CorrelationID})
	return res
}

const seedKey = "sk-xxxxx"

// seedRequest is the Blueprint's example request (chapter 6.3).
const seedRequest = `{
  "caller": {"id": "ifay-instance-001", "type": "ifay", "credentials": {"api_key": "sk-xxxxx"}},
  "skill_id": "com.example.translate-v1",
  "inputs": {"text": "Hello, world!", "target_language": "zh-CN"},
  "context": {"trace_id": "trace-abc-123", "priority": "normal", "timeout_ms": 30000}
}`

type testServer struct {
	*httptest.Server
	srv *Server
	be  *fakeBackend
	log *bytes.Buffer
	mu  sync.Mutex
	// bodies keeps every response body, to search for secrets.
	bodies [][]byte
}

func newTestServer(t *testing.T, cfg ServerConfig) *testServer {
	t.Helper()
	ts := &testServer{log: &bytes.Buffer{}}
	if cfg.Backend == nil {
		ts.be = &fakeBackend{}
		cfg.Backend = ts.be
	}
	if cfg.Keys == nil {
		cfg.Keys, _ = ParseKeys([]byte(seedKey + " ifay-instance-001\nother-key other-caller\n"))
	}
	var logMu sync.Mutex
	cfg.Log = slog.New(slog.NewTextHandler(lockedWriter{&logMu, ts.log}, nil))
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts.srv = s
	ts.Server = httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	return ts
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (ts *testServer) do(t *testing.T, method, path, body string, header map[string]string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	ts.mu.Lock()
	ts.bodies = append(ts.bodies, b)
	ts.mu.Unlock()
	var out map[string]any
	json.Unmarshal(b, &out)
	return resp.StatusCode, out
}

func waitFinal(t *testing.T, ts *testServer, id string, header map[string]string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, st := ts.do(t, "GET", "/status/"+id, "", header)
		if code != 200 {
			t.Fatalf("status %s: %d %v", id, code, st)
		}
		if Final(st["status"].(string)) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("execution %s never finished: %v", id, st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestSeedExampleThroughTheThreeSteps(t *testing.T) {
	ts := newTestServer(t, ServerConfig{})
	code, acc := ts.do(t, "POST", "/invoke", seedRequest, nil)
	if code != http.StatusAccepted || acc["status"] != "accepted" || !strings.HasPrefix(acc["execution_id"].(string), "exec-") {
		t.Fatalf("invoke: %d %v", code, acc)
	}
	id := acc["execution_id"].(string)
	key := map[string]string{"X-API-Key": seedKey}
	st := waitFinal(t, ts, id, key)
	if st["status"] != "completed" || st["skill_id"] != "com.example.translate-v1" {
		t.Fatalf("status: %v", st)
	}
	ts0 := st["timestamps"].(map[string]any)
	if ts0["created_at"] == nil || ts0["completed_at"] == nil {
		t.Fatalf("timestamps: %v", ts0)
	}
	code, res := ts.do(t, "GET", "/result/"+id, "", key)
	out, _ := res["output"].(map[string]any)
	if code != 200 || res["status"] != "completed" || out["translated_text"] != "你好，世界！" {
		t.Fatalf("result: %d %v", code, res)
	}
	if out["trace"] != "trace-abc-123" {
		t.Fatalf("trace_id did not become the correlation id: %v", out["trace"])
	}
	code, disc := ts.do(t, "GET", "/.well-known/skill-sharing", "", nil)
	skills, _ := disc["skills"].([]any)
	if code != 200 || len(skills) != 2 {
		t.Fatalf("discovery: %d %v", code, disc)
	}
	first := skills[0].(map[string]any)
	if first["id"] != "com.example.translate-v1" || first["auth"].(map[string]any)["type"] != "api_key" || first["endpoints"] == nil {
		t.Fatalf("descriptor: %v", first)
	}
}

func TestErrorStatuses(t *testing.T) {
	ts := newTestServer(t, ServerConfig{})
	key := map[string]string{"X-API-Key": seedKey}
	body := func(skill string) string {
		return `{"caller":{"id":"ifay-instance-001","type":"ifay"},"skill_id":"` + skill + `","inputs":{"prompt":"x"}}`
	}
	cases := []struct {
		name        string
		body        string
		header      map[string]string
		status      int
		code, field string
	}{
		{"no caller", `{"skill_id":"com.x","inputs":{}}`, key, 400, CodeValidation, "caller"},
		{"no caller type", `{"caller":{"id":"ifay-instance-001"},"skill_id":"com.x","inputs":{}}`, key, 400, CodeValidation, "caller.type"},
		{"skill_id of the wrong type", `{"caller":{"id":"ifay-instance-001","type":"ifay"},"skill_id":7,"inputs":{}}`, key, 400, CodeValidation, "skill_id"},
		{"inputs not an object", `{"caller":{"id":"ifay-instance-001","type":"ifay"},"skill_id":"com.x","inputs":[1]}`, key, 400, CodeValidation, "inputs"},
		{"negative timeout", `{"caller":{"id":"ifay-instance-001","type":"ifay"},"skill_id":"com.x","inputs":{},"context":{"timeout_ms":-1}}`, key, 400, CodeValidation, "context.timeout_ms"},
		{"not JSON", `{{{`, key, 400, CodeValidation, "body"},
		{"too large", `{"caller":{"id":"ifay-instance-001","type":"ifay"},"skill_id":"com.x","inputs":{"prompt":"` + strings.Repeat("a", MaxBody) + `"}}`, key, 400, CodeValidation, "body"},
		{"no key", body("com.x"), nil, 401, CodeAuthRequired, ""},
		{"bad key", body("com.x"), map[string]string{"X-API-Key": "sk-guess"}, 403, CodePermissionDenied, ""},
		{"someone else's key", body("com.x"), map[string]string{"X-API-Key": "other-key"}, 403, CodePermissionDenied, ""},
		{"unknown skill", body("missing.skill"), key, 404, CodeSkillNotFound, ""},
		{"denied by the IPC policy", body("secret.read"), key, 403, CodePermissionDenied, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out := ts.do(t, "POST", "/invoke", c.body, c.header)
			e, _ := out["error"].(map[string]any)
			if code != c.status || e == nil || e["code"] != c.code {
				t.Fatalf("got %d %v, want %d %s", code, out, c.status, c.code)
			}
			if c.field != "" && e["details"].(map[string]any)["field"] != c.field {
				t.Fatalf("details %v do not name the field %s", e["details"], c.field)
			}
			if c.name == "denied by the IPC policy" && e["details"].(map[string]any)["reason"] != protocol.DeniedNotAllowedTarget {
				t.Fatalf("the denial's reason: %v", e["details"])
			}
		})
	}
	// Failures of the execution itself come from /result.
	for skill, want := range map[string]struct {
		status int
		code   string
		retry  bool
	}{
		"tools.timeout": {504, CodeTimeout, true},
		"tools.fail":    {502, CodeFailed, false},
	} {
		_, acc := ts.do(t, "POST", "/invoke", body(skill), key)
		id := acc["execution_id"].(string)
		waitFinal(t, ts, id, key)
		code, out := ts.do(t, "GET", "/result/"+id, "", key)
		e, _ := out["error"].(map[string]any)
		if code != want.status || e == nil || e["code"] != want.code {
			t.Fatalf("%s: %d %v", skill, code, out)
		}
		r, _ := e["retry"].(map[string]any)
		if want.retry && (r == nil || r["suggested_delay_ms"].(float64) <= 0 || r["max_attempts"].(float64) <= 0) {
			t.Fatalf("%s: no retry hint: %v", skill, e)
		}
		if skill == "tools.fail" && e["details"].(map[string]any)["ipc_code"] != "INVALID_RESPONSE" {
			t.Fatalf("the failure does not say what failed: %v", e)
		}
	}
	// Status of an execution that does not exist, or is someone else's.
	if code, out := ts.do(t, "GET", "/status/exec-nothing", "", key); code != 404 || out["error"].(map[string]any)["code"] != CodeExecutionNotFound {
		t.Fatalf("unknown execution: %d %v", code, out)
	}
}

func TestIdempotentRetryReturnsTheSameExecution(t *testing.T) {
	ts := newTestServer(t, ServerConfig{})
	h := map[string]string{"X-API-Key": seedKey, "Idempotency-Key": "retry-me-1"}
	_, a := ts.do(t, "POST", "/invoke", seedRequest, h)
	_, b := ts.do(t, "POST", "/invoke", seedRequest, h)
	if a["execution_id"] == nil || a["execution_id"] != b["execution_id"] {
		t.Fatalf("two executions for one key: %v %v", a, b)
	}
	waitFinal(t, ts, a["execution_id"].(string), h)
	if n := ts.be.calls.Load(); n != 1 {
		t.Fatalf("the skill ran %d times", n)
	}
	_, c := ts.do(t, "POST", "/invoke", seedRequest, map[string]string{"X-API-Key": seedKey, "Idempotency-Key": "another"})
	if c["execution_id"] == a["execution_id"] {
		t.Fatal("a different key returned the same execution")
	}
}

func TestTooManyRunningAndCancel(t *testing.T) {
	be := &fakeBackend{started: make(chan string, 4)}
	ts := newTestServer(t, ServerConfig{Backend: be, MaxRunning: 1})
	key := map[string]string{"X-API-Key": seedKey}
	slow := `{"caller":{"id":"ifay-instance-001","type":"ifay"},"skill_id":"tools.slow","inputs":{}}`
	_, acc := ts.do(t, "POST", "/invoke", slow, key)
	<-be.started
	code, out := ts.do(t, "POST", "/invoke", slow, key)
	e, _ := out["error"].(map[string]any)
	if code != 429 || e["code"] != CodeTooMany || e["retry"] == nil {
		t.Fatalf("over the cap: %d %v", code, out)
	}
	id := acc["execution_id"].(string)
	if code, _ := ts.do(t, "GET", "/result/"+id, "", key); code != 202 {
		t.Fatalf("result while running: %d", code)
	}
	if code, _ := ts.do(t, "POST", "/cancel/"+id, "", key); code != 202 {
		t.Fatalf("cancel: %d", code)
	}
	st := waitFinal(t, ts, id, key)
	if st["status"] != StateCancelled {
		t.Fatalf("after cancel: %v", st)
	}
	be.mu.Lock()
	n := len(be.cancelled)
	be.mu.Unlock()
	if n != 1 {
		t.Fatal("the running call never saw the cancellation")
	}
	if code, out := ts.do(t, "GET", "/result/"+id, "", key); code != 409 || out["error"].(map[string]any)["code"] != CodeCancelled {
		t.Fatalf("result after cancel: %d %v", code, out)
	}
	if code, _ := ts.do(t, "POST", "/cancel/"+id, "", key); code != 409 {
		t.Fatalf("cancelling twice: %d", code)
	}
}

func TestRestartedServerStillAnswers(t *testing.T) {
	dir := t.TempDir()
	ts := newTestServer(t, ServerConfig{Store: NewStore(dir)})
	key := map[string]string{"X-API-Key": seedKey}
	_, acc := ts.do(t, "POST", "/invoke", seedRequest, map[string]string{"X-API-Key": seedKey, "Idempotency-Key": "k1"})
	id := acc["execution_id"].(string)
	waitFinal(t, ts, id, key)
	ts.Close()
	ts.srv.Close()

	again := newTestServer(t, ServerConfig{Store: NewStore(dir)})
	code, res := again.do(t, "GET", "/result/"+id, "", key)
	if code != 200 || res["status"] != "completed" || res["output"] == nil {
		t.Fatalf("after a restart: %d %v", code, res)
	}
	// The idempotency key still points at it.
	_, retry := again.do(t, "POST", "/invoke", seedRequest, map[string]string{"X-API-Key": seedKey, "Idempotency-Key": "k1"})
	if retry["execution_id"] != id {
		t.Fatalf("a retried POST after a restart made a new execution: %v", retry)
	}
	// Kept for a bounded time only.
	short := newTestServer(t, ServerConfig{Store: NewStore(dir), Keep: time.Nanosecond})
	if code, _ := short.do(t, "GET", "/status/"+id, "", key); code != 404 {
		t.Fatalf("an execution past Keep is still answered: %d", code)
	}
}

func TestNoAuthServerTrustsTheCaller(t *testing.T) {
	srv, err := NewServer(ServerConfig{Backend: &fakeBackend{}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	resp, err := http.Post(ts.URL+"/invoke", "application/json", strings.NewReader(seedRequest))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 202 {
		t.Fatalf("without keys: %d", resp.StatusCode)
	}
	resp, _ = http.Get(ts.URL + "/.well-known/skill-sharing")
	var disc struct {
		Skills []struct{ Auth map[string]string } `json:"skills"`
	}
	json.NewDecoder(resp.Body).Decode(&disc)
	resp.Body.Close()
	if disc.Skills[0].Auth["type"] != "none" {
		t.Fatalf("auth type %v", disc.Skills[0].Auth)
	}
}

func TestKeysFile(t *testing.T) {
	k, err := ParseKeys([]byte("# keys\nsk-a alice\n\nsk-b bob\n"))
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := k.Lookup("sk-b"); !ok || o != "bob" {
		t.Fatalf("lookup sk-b: %q %v", o, ok)
	}
	if _, ok := k.Lookup("sk-c"); ok {
		t.Fatal("an unknown key was found")
	}
	for _, bad := range []string{"", "only-a-key\n", "sk-x Not-Valid\n"} {
		if _, err := ParseKeys([]byte(bad)); err == nil {
			t.Errorf("keys file %q accepted", bad)
		} else if strings.Contains(err.Error(), "sk-x") || strings.Contains(err.Error(), "only-a-key") {
			t.Errorf("the error names the key: %v", err)
		}
	}
}

// TestTheKeyNeverShows: after requests of every kind, with the key in the
// header and in the body, right and wrong, no log line and no response
// body contains a key.
func TestTheKeyNeverShows(t *testing.T) {
	ts := newTestServer(t, ServerConfig{})
	key := map[string]string{"X-API-Key": seedKey}
	ts.do(t, "POST", "/invoke", seedRequest, nil)
	_, acc := ts.do(t, "POST", "/invoke", seedRequest, key)
	ts.do(t, "POST", "/invoke", strings.Replace(seedRequest, seedKey, "sk-wrong-guess", 1), nil)
	ts.do(t, "POST", "/invoke", `{"caller":{"id":"x","type":"y","credentials":{"api_key":"sk-xxxxx"}},"skill_id":7}`, nil)
	ts.do(t, "POST", "/invoke", seedRequest, map[string]string{"X-API-Key": "other-key"})
	id := acc["execution_id"].(string)
	waitFinal(t, ts, id, key)
	ts.do(t, "GET", "/result/"+id, "", key)
	ts.do(t, "GET", "/status/"+id, "", map[string]string{"X-API-Key": "sk-wrong-guess"})
	ts.do(t, "POST", "/cancel/"+id, "", key)
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, secret := range []string{seedKey, "sk-wrong-guess", "other-key"} {
		if strings.Contains(ts.log.String(), secret) {
			t.Fatalf("the log shows %q:\n%s", secret, ts.log.String())
		}
		for _, b := range ts.bodies {
			if bytes.Contains(b, []byte(secret)) {
				t.Fatalf("a response shows %q: %s", secret, b)
			}
		}
	}
	if !strings.Contains(ts.log.String(), "path=/invoke") {
		t.Fatal("nothing was logged: the search above proves nothing")
	}
}
