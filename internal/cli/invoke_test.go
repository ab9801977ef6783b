package cli

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"huddle/ipc/blueprint"
)

const invokeExec = "exec-cli-1"

// invokeServer is a fake three-step Blueprint server: the execution runs
// for one /status poll, then is in state final (or runs forever when final
// is ""). It records what it is sent, and echoes the API key in its error
// messages, so a test can check the CLI never shows it.
type invokeServer struct {
	final string

	mu      sync.Mutex
	reqs    []string // "METHOD path"
	keys    []string // X-API-Key of each request
	invoked *blueprint.InvokeRequest
	polls   int
}

func startInvokeServer(t *testing.T, final string) (*invokeServer, string) {
	t.Helper()
	s := &invokeServer{final: final}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /invoke", func(w http.ResponseWriter, r *http.Request) {
		body := s.record(r)
		req, err := blueprint.DecodeInvoke(body)
		if err != nil {
			invokeReply(w, 400, blueprint.Envelope{Error: blueprint.ErrorBody{Code: blueprint.CodeValidation, Message: err.Error()}})
			return
		}
		s.mu.Lock()
		s.invoked = req
		s.mu.Unlock()
		invokeReply(w, 202, blueprint.Accepted{ExecutionID: invokeExec, Status: blueprint.StateAccepted})
	})
	mux.HandleFunc("GET /status/{id}", func(w http.ResponseWriter, r *http.Request) {
		s.record(r)
		invokeReply(w, 200, blueprint.Status{ExecutionID: invokeExec, SkillID: "alice.greet", Status: s.state(true)})
	})
	mux.HandleFunc("GET /result/{id}", func(w http.ResponseWriter, r *http.Request) {
		s.record(r)
		key := r.Header.Get("X-API-Key")
		fail := func(code int, state string, e blueprint.ErrorBody) {
			invokeReply(w, code, blueprint.Envelope{ExecutionID: invokeExec, Status: state, Error: e})
		}
		switch st := s.state(false); st {
		case blueprint.StateCompleted:
			invokeReply(w, 200, blueprint.Result{ExecutionID: invokeExec, SkillID: "alice.greet", Status: st,
				Output: json.RawMessage(`{"reply":"hello from alice","n":3}`)})
		case blueprint.StateFailed:
			fail(502, st, blueprint.ErrorBody{Code: blueprint.CodeFailed, Message: "alice failed; your key " + key + " was fine",
				Details: map[string]any{"key": key}})
		case blueprint.StateTimeout:
			fail(504, st, blueprint.ErrorBody{Code: blueprint.CodeTimeout, Message: "Skill execution exceeded the configured timeout",
				Retry: &blueprint.Retry{SuggestedDelayMS: 5000, MaxAttempts: 3}})
		case blueprint.StateCancelled:
			fail(409, st, blueprint.ErrorBody{Code: blueprint.CodeCancelled, Message: "cancelled by " + key})
		default:
			invokeReply(w, 202, blueprint.Status{ExecutionID: invokeExec, Status: st})
		}
	})
	mux.HandleFunc("POST /cancel/{id}", func(w http.ResponseWriter, r *http.Request) {
		s.record(r)
		invokeReply(w, 200, blueprint.Status{ExecutionID: invokeExec, Status: blueprint.StateCancelled})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

func invokeReply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func (s *invokeServer) record(r *http.Request) []byte {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, r.Method+" "+r.URL.Path)
	s.keys = append(s.keys, r.Header.Get("X-API-Key"))
	return body
}

// state is the execution's state; poll counts a /status poll.
func (s *invokeServer) state(poll bool) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if poll {
		s.polls++
	}
	if s.polls < 2 || s.final == "" {
		return blueprint.StateRunning
	}
	return s.final
}

func (s *invokeServer) seen() (reqs, keys []string, invoked *blueprint.InvokeRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.reqs...), append([]string(nil), s.keys...), s.invoked
}

// noSecret fails when key shows anywhere in the command's output.
func (r cliResult) noSecret(t *testing.T, key string) {
	t.Helper()
	if strings.Contains(r.stdout, key) || strings.Contains(r.stderr, key) {
		t.Errorf("the API key shows in the output:\nstdout %s\nstderr %s", r.stdout, r.stderr)
	}
}

// wantEnvelope checks a failed invoke: exit 1, the error envelope with code
// on stdout, one line naming code on stderr.
func (r cliResult) wantEnvelope(t *testing.T, code string) blueprint.Envelope {
	t.Helper()
	if r.code != ExitFail {
		t.Errorf("exit %d, want %d (stderr %q)", r.code, ExitFail, r.stderr)
	}
	if !strings.HasPrefix(r.stderr, "huddle: invoke: "+code) || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("stderr %q, want one line \"huddle: invoke: %s…\"", r.stderr, code)
	}
	var env blueprint.Envelope
	if err := json.Unmarshal([]byte(r.stdout), &env); err != nil || env.Error.Code != code {
		t.Fatalf("stdout %q is not the %s envelope: %v", r.stdout, code, err)
	}
	return env
}

// TestInvokeCompleted: `huddle invoke` builds the request from its
// arguments (flags before and after the positionals, JSON input values as
// JSON, the prompt as text), sends the key as X-API-Key, runs the three
// steps and prints the result.
func TestInvokeCompleted(t *testing.T) {
	t.Parallel()
	const key = "sk-cli-secret-7f3a"
	srv, url := startInvokeServer(t, blueprint.StateCompleted)
	r := huddle(t, "invoke", "--api-key", key, url+"/invoke", "alice.greet",
		"--input", "prompt=42", "--input", "n=3", "--input", `opts={"loud":true}`, "--input", "text=hello world",
		"--input", `quoted="7"`, "--timeout", "7", "--caller", "tester", "--trace-id", "trace-cli-1")
	r.wantOK(t, "invoke")
	r.noSecret(t, key)

	var res blueprint.Result
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("stdout is not the result: %v\n%s", err, r.stdout)
	}
	var out map[string]any
	json.Unmarshal(res.Output, &out)
	if res.ExecutionID != invokeExec || res.Status != blueprint.StateCompleted || out["reply"] != "hello from alice" {
		t.Errorf("result %+v, output %v", res, out)
	}
	if !strings.Contains(r.stdout, "\n  \"execution_id\"") {
		t.Errorf("the result is not indented:\n%s", r.stdout)
	}

	reqs, keys, got := srv.seen()
	// The call's own request id is the parent of what the server runs.
	if !strings.HasPrefix(got.Context.ParentRequestID, "req-") {
		t.Errorf("context.parent_request_id %q, want the call's request id", got.Context.ParentRequestID)
	}
	got.Context.ParentRequestID = ""
	want := &blueprint.InvokeRequest{
		Caller:  blueprint.Caller{ID: "tester", Type: "huddle"},
		SkillID: "alice.greet",
		Inputs:  map[string]any{"prompt": "42", "n": 3.0, "opts": map[string]any{"loud": true}, "text": "hello world", "quoted": "7"},
		Context: blueprint.Context{TraceID: "trace-cli-1", TimeoutMS: 7000},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the server got %+v\nwant %+v", got, want)
	}
	if reqs[0] != "POST /invoke" || reqs[len(reqs)-1] != "GET /result/"+invokeExec {
		t.Errorf("requests %q, want POST /invoke … GET /result", reqs)
	}
	for i, k := range keys {
		if k != key {
			t.Errorf("request %s: X-API-Key %q", reqs[i], k)
		}
	}

	// The key may come from $HUDDLE_API_KEY; the caller defaults to huddle-cli.
	srv, url = startInvokeServer(t, blueprint.StateCompleted)
	huddleIn(t, t.TempDir(), []string{"HUDDLE_API_KEY=" + key}, "invoke", url, "alice.greet").wantOK(t, "invoke").noSecret(t, key)
	if _, keys, got := srv.seen(); keys[0] != key || got.Caller.ID != "huddle-cli" || len(got.Inputs) != 0 {
		t.Errorf("with $HUDDLE_API_KEY: key %q, request %+v", keys[0], got)
	}
}

// TestInvokeFailures: a failed, timed-out or cancelled execution exits 1
// with the server's envelope on stdout and one line on stderr, never
// showing the key the server echoed.
func TestInvokeFailures(t *testing.T) {
	t.Parallel()
	const key = "sk-cli-secret-failing"
	for _, tc := range []struct{ final, code string }{
		{blueprint.StateFailed, blueprint.CodeFailed},
		{blueprint.StateTimeout, blueprint.CodeTimeout},
		{blueprint.StateCancelled, blueprint.CodeCancelled},
	} {
		_, url := startInvokeServer(t, tc.final)
		r := huddle(t, "invoke", url, "alice.greet", "--input", "prompt=hi", "--api-key", key)
		env := r.wantEnvelope(t, tc.code)
		r.noSecret(t, key)
		if env.ExecutionID != invokeExec || env.Status != tc.final {
			t.Errorf("%s: envelope %+v", tc.final, env)
		}
		if tc.final == blueprint.StateTimeout && (env.Error.Retry == nil || env.Error.Retry.SuggestedDelayMS != 5000) {
			t.Errorf("timeout: the retry hint is lost: %+v", env.Error)
		}
		if tc.final == blueprint.StateFailed && env.Error.Details["key"] != "[redacted]" {
			t.Errorf("failed: details %v", env.Error.Details)
		}
	}
}

// invokeDeadAddr is a loopback address where nothing listens.
func invokeDeadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestInvokeUnreachable: nothing listening is ENDPOINT_UNREACHABLE, exit 1,
// after --attempts tries.
func TestInvokeUnreachable(t *testing.T) {
	t.Parallel()
	const key = "sk-cli-secret-nowhere"
	url := "http://" + invokeDeadAddr(t)
	r := huddle(t, "invoke", url, "alice.greet", "--attempts", "2", "--api-key", key)
	env := r.wantEnvelope(t, blueprint.CodeUnreachable)
	r.noSecret(t, key)
	if !strings.Contains(env.Error.Message, url+"/invoke") || !strings.Contains(r.stderr, "2 attempts") {
		t.Errorf("the error does not name the URL and the attempts: %q / %q", env.Error.Message, r.stderr)
	}
}

// TestInvokeLocalDeadline: a server that never finishes cannot hold the CLI
// past --timeout plus its grace: EXECUTION_TIMEOUT, exit 1, and the
// execution is cancelled on the server.
func TestInvokeLocalDeadline(t *testing.T) {
	t.Parallel()
	srv, url := startInvokeServer(t, "")
	r := huddle(t, "invoke", url, "alice.greet", "--timeout", "1")
	env := r.wantEnvelope(t, blueprint.CodeTimeout)
	if !strings.Contains(env.Error.Message, "no final answer") {
		t.Errorf("message %q", env.Error.Message)
	}
	if reqs, _, _ := srv.seen(); reqs[len(reqs)-1] != "POST /cancel/"+invokeExec {
		t.Errorf("requests %q, want a last POST /cancel", reqs)
	}
}

// TestInvokeBadArgs: bad arguments exit 2 with one line and touch nothing.
func TestInvokeBadArgs(t *testing.T) {
	t.Parallel()
	srv, url := startInvokeServer(t, blueprint.StateCompleted)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "URL is required"},
		{[]string{url}, "SKILL is required"},
		{[]string{url, "a.b", "c"}, `unexpected argument "c"`},
		{[]string{"ftp://host/", "a.b"}, "want http://host"},
		{[]string{"localhost:7070", "a.b"}, "want http://host"},
		{[]string{url + "?x=1", "a.b"}, "without ?query"},
		{[]string{url, " "}, "SKILL is empty"},
		{[]string{url, "a.b", "--input", "novalue"}, `--input "novalue": want key=value`},
		{[]string{url, "a.b", "--input", "=v"}, "want key=value"},
		{[]string{url, "a.b", "--input", "k=1", "--input", "k=2"}, "k is given twice"},
		{[]string{url, "a.b", "--timeout", "0"}, "--timeout must be positive"},
		{[]string{url, "a.b", "--attempts", "-1"}, "--attempts must be positive"},
		{[]string{url, "a.b", "--caller", ""}, "--caller is empty"},
		{[]string{url, "a.b", "--nope"}, "unknown flag --nope"},
		{[]string{url, "a.b", "--timeout", "soon"}, "invalid value"},
	} {
		args := append([]string{"invoke"}, tc.args...)
		huddle(t, args...).wantError(t, ExitUsage, tc.want, args...)
	}
	if reqs, _, _ := srv.seen(); len(reqs) != 0 {
		t.Errorf("bad arguments reached the server: %q", reqs)
	}

	r := huddle(t, "invoke", "-h")
	if r.code != ExitOK || r.stderr != "" || !strings.Contains(r.stdout, "usage: huddle invoke URL SKILL") || !strings.Contains(r.stdout, "inputs.prompt is always text") {
		t.Errorf("invoke -h: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
