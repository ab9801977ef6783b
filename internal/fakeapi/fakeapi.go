// Package fakeapi serves loopback fakes of the model APIs the real Claude
// Code and Codex CLIs call, Anthropic Messages and OpenAI Responses, each
// answering a test's script of turns over SSE and recording every request
// it got. Only tests and the fixture recorder import it.
package fakeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"unicode/utf8"
)

// Turn is one reply of the model: its text, then its tool calls, and the
// tokens it reports.
type Turn struct {
	Text  string
	Calls []Call
	Usage Usage
	// Make, if set, makes the turn from the request it answers (a tool
	// call naming a path the CLI chose, say); an error refuses the
	// request with a 500 that says it.
	Make func(Request) (Turn, error)
	// Error, if set, answers the request with an API error instead of a
	// stream, as the real API refuses a request it cannot serve.
	Error *APIError
	// Drop, if set, starts the stream and cuts the connection before any
	// event: a network that failed mid-response.
	Drop bool
	// Hold, if set, keeps the request waiting until it is closed (or the
	// client goes away): a model still thinking.
	Hold <-chan struct{}
}

// APIError is an error response of the API: its HTTP status and the
// error object's type and message.
type APIError struct {
	Status  int
	Type    string // invalid_request_error, overloaded_error, …
	Message string
}

// Call is one tool call of a turn. ID is the tool_use id (Anthropic) or
// call_id (Responses); the fake makes one up when it is empty.
type Call struct {
	ID    string
	Name  string
	Input any // marshalled to JSON; a json.RawMessage goes as it is
	// Custom sends the call as a Responses custom_tool_call (a freeform
	// tool such as Codex's apply_patch) whose input is Input, a string,
	// as it is.
	Custom bool
}

// Usage is what a turn reports it cost. The Responses fake reports
// CacheReadInputTokens as input_tokens_details.cached_tokens.
type Usage struct {
	InputTokens              int64
	OutputTokens             int64
	CacheReadInputTokens     int64
	CacheCreationInputTokens int64
}

// Request is one request the fake got, answered or refused.
type Request struct {
	N        int // 1 for the first request
	Method   string
	Path     string
	RawQuery string
	Header   http.Header
	Body     []byte
	// Turn is the index in the script of the turn that answered it, or -1
	// when it was refused with a 500 that says why (Refused).
	Turn    int
	Refused string
}

// dialect is what differs between the two APIs: the path the CLI posts to
// and how a turn is written as SSE.
type dialect interface {
	path() string
	write(w io.Writer, n int, t Turn, body []byte) error
}

// Server is a fake of one model API on loopback.
type Server struct {
	srv *httptest.Server
	d   dialect

	mu      sync.Mutex
	script  []Turn
	next    int
	reqs    []Request
	changed chan struct{} // closed and replaced on every request
}

func newServer(d dialect, script []Turn) *Server {
	s := &Server{d: d, script: script, changed: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the server's base URL, http://127.0.0.1:PORT, without a path.
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server, ending the streams of connections still open.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Add appends turns to the script.
func (s *Server) Add(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, turns...)
}

// Requests returns every request the server got so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Refused returns the requests answered with a 500.
func (s *Server) Refused() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Turn < 0 {
			out = append(out, r)
		}
	}
	return out
}

// Served returns the requests answered with a turn of the script.
func (s *Server) Served() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Turn >= 0 {
			out = append(out, r)
		}
	}
	return out
}

// Wait waits until the server has got n requests, or ctx ends, and returns
// the requests.
func (s *Server) Wait(ctx context.Context, n int) ([]Request, error) {
	for {
		s.mu.Lock()
		got, changed := len(s.reqs), s.changed
		s.mu.Unlock()
		if got >= n {
			return s.Requests(), nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return s.Requests(), fmt.Errorf("fakeapi: waiting for request %d (got %d): %w", n, got, context.Cause(ctx))
		}
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body, Turn: -1}
	var turn Turn
	switch {
	case err != nil:
		req.Refused = fmt.Sprintf("reading the body of %s %s: %v", r.Method, r.URL.Path, err)
	case r.Method != http.MethodPost || r.URL.Path != s.d.path():
		req.Refused = fmt.Sprintf("unexpected request %s %s", r.Method, r.RequestURI) // as sent: a CONNECT names its host
	case !streams(body):
		req.Refused = fmt.Sprintf("unexpected request %s %s without \"stream\": true", r.Method, r.URL.RequestURI())
	}
	s.mu.Lock()
	if req.Refused == "" {
		if s.next < len(s.script) {
			req.Turn, turn = s.next, s.script[s.next]
			s.next++
		} else {
			req.Refused = fmt.Sprintf("unexpected request %s %s: the script's %d turns are used up", r.Method, r.URL.RequestURI(), len(s.script))
		}
	}
	req.N = len(s.reqs) + 1
	s.reqs = append(s.reqs, req)
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()

	if req.Refused == "" && turn.Make != nil {
		made, err := turn.Make(req)
		if err != nil {
			req.Refused = fmt.Sprintf("turn %d of the script: %v", req.Turn, err)
			req.Turn = -1
			s.mu.Lock()
			s.reqs[req.N-1] = req
			s.mu.Unlock()
		}
		turn = made
	}
	if req.Refused != "" {
		// x-should-retry stops the Stainless SDKs retrying what will fail again.
		w.Header().Set("X-Should-Retry", "false")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		msg, _ := json.Marshal("fakeapi: " + req.Refused)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"api_error","message":%s}}`, msg)
		return
	}
	if turn.Hold != nil {
		select {
		case <-turn.Hold:
		case <-r.Context().Done():
			return
		}
	}
	if e := turn.Error; e != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(e.Status)
		_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]string{"type": e.Type, "message": e.Message}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	if turn.Drop {
		rc := http.NewResponseController(w)
		_, _ = io.WriteString(w, ": the fake drops this stream\n\n")
		_ = rc.Flush()
		if conn, _, err := rc.Hijack(); err == nil {
			_ = conn.Close() // no last chunk: the client reads an unexpected EOF
		}
		return
	}
	_ = s.d.write(flushWriter{w}, req.N, turn, body) // a write fails only when the CLI went away
}

func streams(body []byte) bool {
	var b struct {
		Stream bool `json:"stream"`
	}
	return json.Unmarshal(body, &b) == nil && b.Stream
}

// flushWriter flushes after each write, so every SSE event reaches the CLI
// when it is written.
type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
	return n, err
}

// sse writes one event.
func sse(w io.Writer, event string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	return err
}

// inputJSON is a call's input as JSON text.
func inputJSON(in any) (string, error) {
	if in == nil {
		return "{}", nil
	}
	if raw, ok := in.(json.RawMessage); ok {
		return string(raw), nil
	}
	b, err := json.Marshal(in)
	return string(b), err
}

// chunks splits s in two at a rune boundary, so a stream carries more
// than one delta, split where the real APIs split: anywhere.
func chunks(s string) []string {
	i := len(s) / 2
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	if i == 0 {
		return []string{s}
	}
	return []string{s[:i], s[i:]}
}
