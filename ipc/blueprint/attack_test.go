package blueprint

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestOneIdempotencyKeyOneExecution: 50 POSTs at once with one
// Idempotency-Key make exactly one execution; the key with another body is
// 422 IDEMPOTENCY_KEY_REUSED; the key in the header or in the body changes
// nothing.
func TestOneIdempotencyKeyOneExecution(t *testing.T) {
	const n = 50
	be := &fakeBackend{checks: newBarrier(n)}
	ts := newTestServer(t, ServerConfig{Backend: be})
	h := map[string]string{"X-API-Key": seedKey, "Idempotency-Key": "fifty"}
	ids := make([]string, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			code, acc := ts.do(t, "POST", "/invoke", seedRequest, h)
			if code != http.StatusAccepted {
				t.Errorf("POST %d: %d %v", i, code, acc)
				return
			}
			ids[i], _ = acc["execution_id"].(string)
		})
	}
	close(start)
	wg.Wait()
	distinct := map[string]bool{}
	for _, id := range ids {
		distinct[id] = true
	}
	for id := range distinct {
		waitFinal(t, ts, id, h)
	}
	if calls := be.calls.Load(); len(distinct) != 1 || calls != 1 {
		t.Fatalf("50 POSTs with one key: %d executions, %d runs; want 1 and 1", len(distinct), calls)
	}
	other := strings.Replace(seedRequest, "Hello, world!", "Goodbye", 1)
	code, out := ts.do(t, "POST", "/invoke", other, h)
	if e, _ := out["error"].(map[string]any); code != http.StatusUnprocessableEntity || e["code"] != CodeIdempotencyReused {
		t.Fatalf("the key with another body: %d %v", code, out)
	}
	// The same request with its key in the header instead of the body, and
	// other whitespace, is the same request.
	same := strings.ReplaceAll(strings.Replace(seedRequest, `, "credentials": {"api_key": "sk-xxxxx"}`, "", 1), "\n", " ")
	if code, out := ts.do(t, "POST", "/invoke", same, h); code != http.StatusAccepted || !distinct[out["execution_id"].(string)] {
		t.Fatalf("the same request, written otherwise: %d %v", code, out)
	}
	if calls := be.calls.Load(); calls != 1 {
		t.Fatalf("the skill ran %d times", calls)
	}
}

// TestBrowserBorneRequestsRefusedWithoutKeys: without keys a browser's
// request is refused, whatever its path: a POST that is not JSON, any
// request with an Origin, any Host that is not loopback. With keys,
// discovery stays open and the rest needs a key.
func TestBrowserBorneRequestsRefusedWithoutKeys(t *testing.T) {
	ts := newOpenTestServer(t)
	be := ts.be
	with := func(kv ...string) map[string]string {
		h := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			h[kv[i]] = kv[i+1]
		}
		return h
	}
	for _, c := range []struct {
		name, method, path string
		header             map[string]string
		status             int
	}{
		{"text/plain from another origin", "POST", "/invoke", with("Content-Type", "text/plain", "Origin", "http://evil.example"), 403},
		{"text/plain", "POST", "/invoke", with("Content-Type", "text/plain"), 415},
		{"no content type", "POST", "/invoke", nil, 415},
		{"a form", "POST", "/invoke", with("Content-Type", "multipart/form-data; boundary=x"), 415},
		{"JSON from another origin", "POST", "/invoke", with("Content-Type", "application/json", "Origin", "http://evil.example"), 403},
		{"JSON with Origin null", "POST", "/invoke", with("Content-Type", "application/json", "Origin", "null"), 403},
		{"a cancel from another origin", "POST", "/cancel/exec-x", with("Content-Type", "text/plain", "Origin", "http://evil.example"), 403},
		{"a status with an Origin", "GET", "/status/exec-x", with("Origin", "http://evil.example"), 403},
		{"discovery with an Origin", "GET", "/.well-known/skill-sharing", with("Origin", "http://evil.example"), 403},
		{"JSON to evil.example", "POST", "/invoke", with("Content-Type", "application/json", "Host", "evil.example"), 403},
		{"discovery of evil.example:80", "GET", "/.well-known/skill-sharing", with("Host", "evil.example:80"), 403},
		{"discovery of 10.0.0.1", "GET", "/.well-known/skill-sharing", with("Host", "10.0.0.1"), 403},
		{"discovery of localhost.evil.example", "GET", "/.well-known/skill-sharing", with("Host", "localhost.evil.example"), 403},
	} {
		code, out := ts.doHost(t, c.method, c.path, seedRequest, c.header)
		e, _ := out["error"].(map[string]any)
		if code != c.status || e == nil || e["code"] == nil || e["message"] == "" {
			t.Errorf("%s: %d %v; want %d with the error envelope", c.name, code, out, c.status)
		}
	}
	if n := be.calls.Load(); n != 0 {
		t.Fatalf("a refused request ran the skill %d times", n)
	}
	for _, host := range []string{"", "localhost", "LOCALHOST:7420", "127.0.0.1", "127.0.0.2:9", "[::1]:7420"} {
		h := with("Content-Type", "application/json; charset=utf-8")
		if host != "" {
			h["Host"] = host
		}
		if code, out := ts.doHost(t, "POST", "/invoke", seedRequest, h); code != http.StatusAccepted {
			t.Errorf("a local JSON POST to %q: %d %v", host, code, out)
		}
	}

	keyed := newTestServer(t, ServerConfig{})
	if code, _ := keyed.do(t, "GET", "/.well-known/skill-sharing", "", map[string]string{"Origin": "http://elsewhere.example"}); code != 200 {
		t.Fatalf("with keys, discovery: %d", code)
	}
	for _, p := range []string{"/status/exec-x", "/result/exec-x"} {
		if code, out := keyed.do(t, "GET", p, "", nil); code != http.StatusUnauthorized {
			t.Fatalf("with keys, %s without one: %d %v", p, code, out)
		}
	}
	if code, out := keyed.do(t, "POST", "/cancel/exec-x", "", nil); code != http.StatusUnauthorized {
		t.Fatalf("with keys, a cancel without one: %d %v", code, out)
	}
}

// TestOverlongStoreLineIsSkipped: a line over the limit in
// executions.jsonl, between two good ones, is skipped with a warning naming
// the file; the server starts and answers for both others.
func TestOverlongStoreLineIsSkipped(t *testing.T) {
	dir := t.TempDir()
	ts := newTestServer(t, ServerConfig{Store: NewStore(dir)})
	key := map[string]string{"X-API-Key": seedKey}
	run := func() string {
		_, acc := ts.do(t, "POST", "/invoke", seedRequest, key)
		id := acc["execution_id"].(string)
		waitFinal(t, ts, id, key)
		return id
	}
	before := run()
	path := NewStore(dir).path
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	// A torn line first: the old loader then rewrote the file without
	// everything after the long line.
	over := "{\"id\":\"exec-torn\n" + `{"id":"exec-overlong","status":"completed","created_at":"` + now + `","completed_at":"` + now + `","output":"` + strings.Repeat("x", MaxRecord) + "\"}\n"
	if _, err := f.WriteString(over); err != nil {
		t.Fatal(err)
	}
	f.Close()
	after := run()
	ts.Close()
	ts.srv.Close()

	again := newTestServer(t, ServerConfig{Store: NewStore(dir)})
	for _, id := range []string{before, after} {
		if code, st := again.do(t, "GET", "/status/"+id, "", key); code != 200 || st["status"] != StateCompleted {
			t.Errorf("execution %s after the restart: %d %v", id, code, st)
		}
	}
	log := again.log.String()
	if strings.Count(log, "level=WARN") != 2 || !strings.Contains(log, path) || strings.Contains(log, "xxxxxxxx") {
		t.Fatalf("the warnings: %q", log)
	}
	again.Close()
	again.srv.Close()
	third := newTestServer(t, ServerConfig{Store: NewStore(dir)})
	for _, id := range []string{before, after} {
		if code, st := third.do(t, "GET", "/status/"+id, "", key); code != 200 || st["status"] != StateCompleted {
			t.Errorf("execution %s after a second restart: %d %v", id, code, st)
		}
	}
}

// TestClientCancelsOnAnOpenServer: the client's body-less cancel says it is
// JSON, so a server without keys takes it.
func TestClientCancelsOnAnOpenServer(t *testing.T) {
	ts := newOpenTestServer(t)
	c := &Client{BaseURL: ts.URL}
	ctx := t.Context()
	acc, err := c.Invoke(ctx, InvokeRequest{Caller: Caller{ID: "ifay-instance-001", Type: "ifay"}, SkillID: "tools.slow", Inputs: map[string]any{}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(ctx, acc.ExecutionID); err != nil {
		t.Fatalf("cancel on a server without keys: %v", err)
	}
	st := waitFinal(t, ts, acc.ExecutionID, map[string]string{})
	if st["status"] != StateCancelled {
		t.Fatalf("after cancel: %v", st)
	}
}

// newOpenTestServer is a test server without API keys, as huddle serve
// runs on loopback without --api-keys-file.
func newOpenTestServer(t *testing.T) *testServer {
	t.Helper()
	ts := &testServer{be: &fakeBackend{}}
	s, err := NewServer(ServerConfig{Backend: ts.be, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ts.srv = s
	ts.Server = httptest.NewServer(s.Handler())
	t.Cleanup(func() { ts.Close(); s.Close() })
	return ts
}

// doHost makes a request whose headers may include Host.
func (ts *testServer) doHost(t *testing.T, method, path, body string, header map[string]string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(b, &out) // not JSON: out stays nil and the test says so
	return resp.StatusCode, out
}

// TestStoppedServerLetsTheExecutionRetry: a server stopped (not killed)
// while an execution runs records it SERVER_RESTARTED, as a crash would
// leave it; after a restart the status says so with a retry hint, and
// retries with its Idempotency-Key run it once more.
func TestStoppedServerLetsTheExecutionRetry(t *testing.T) {
	dir := t.TempDir()
	be := &fakeBackend{started: make(chan string, 4)}
	ts := newTestServer(t, ServerConfig{Backend: be, Store: NewStore(dir)})
	h := map[string]string{"X-API-Key": seedKey, "Idempotency-Key": "stop-me"}
	slow := `{"caller":{"id":"ifay-instance-001","type":"ifay"},"skill_id":"tools.slow","inputs":{}}`
	_, acc := ts.do(t, "POST", "/invoke", slow, h)
	id := acc["execution_id"].(string)
	<-be.started
	ts.Close()
	ts.srv.Close()

	be2 := &fakeBackend{started: make(chan string, 4)}
	again := newTestServer(t, ServerConfig{Backend: be2, Store: NewStore(dir)})
	code, st := again.do(t, "GET", "/status/"+id, "", h)
	e, _ := st["error"].(map[string]any)
	if code != 200 || st["status"] != StateFailed || e["code"] != CodeServerRestarted || e["retry"] == nil {
		t.Fatalf("status after a stop: %d %v", code, st)
	}
	var ids sync.Map
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			_, retry := again.do(t, "POST", "/invoke", slow, h)
			ids.Store(retry["execution_id"], true)
		})
	}
	wg.Wait()
	<-be2.started
	n := 0
	ids.Range(func(k, _ any) bool {
		n++
		if k == id || k == nil {
			t.Errorf("a retry answered %v", k)
		}
		return true
	})
	if n != 1 || be2.calls.Load() != 1 {
		t.Fatalf("5 retries: %d executions, %d runs", n, be2.calls.Load())
	}
}
