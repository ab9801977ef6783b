package blueprint

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"huddle/ipc"
	"huddle/protocol"
)

// Skill describes one skill a server offers.
type Skill struct {
	ID          string
	Name        string
	Description string
}

// Backend is what a server exposes and how it runs a call: huddle's team
// (serve.ServeBackend) or a test's.
type Backend interface {
	// Skills lists the skills for discovery.
	Skills() []Skill
	// Has reports whether skillID exists.
	Has(skillID string) bool
	// Check applies the IPC policy to a call of skillID at hop: nil allows.
	Check(skillID string, hop int) *ipc.Denial
	// Call runs the invocation and returns its result (any error is in it).
	Call(ctx context.Context, req protocol.InvocationRequest) protocol.InvocationResult
}

// ServerConfig sets up a Server.
type ServerConfig struct {
	Backend Backend
	// Keys, when set, require an API key on every request.
	Keys *Keys
	// Store, when set, persists executions when they are accepted and when
	// they end, so a restarted server still answers for them and knows the
	// ones a crash cut short.
	Store *Store
	// MaxRunning caps running executions (429 beyond); default 64.
	MaxRunning int
	// Keep is how long finished executions are kept; default 1h.
	Keep time.Duration
	// Log gets one line per request (never a key or a body).
	Log *slog.Logger
}

// Server is the asynchronous invocation server.
type Server struct {
	cfg ServerConfig
	ctx context.Context
	end context.CancelFunc
	wg  sync.WaitGroup

	mu      sync.Mutex
	execs   map[string]*execution
	idem    map[string]string // caller + Idempotency-Key → execution id
	running int
}

// execution is one invocation the server runs.
type execution struct {
	ID       string `json:"id"`
	SkillID  string `json:"skill_id"`
	CallerID string `json:"caller_id"`
	IdemKey  string `json:"idempotency_key,omitempty"`
	// Request is a digest of the request without its credentials, so a
	// reused Idempotency-Key is told from a retry.
	Request string          `json:"request_sha256,omitempty"`
	State   string          `json:"status"`
	Created time.Time       `json:"created_at"`
	Started *time.Time      `json:"started_at,omitempty"`
	Done    *time.Time      `json:"completed_at,omitempty"`
	Output  json.RawMessage `json:"output,omitempty"`
	Err     *ErrorBody      `json:"error,omitempty"`

	cancel context.CancelFunc
}

// NewServer makes a server and loads the executions its store kept.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Backend == nil {
		return nil, errors.New("blueprint: a server needs a backend")
	}
	if cfg.MaxRunning <= 0 {
		cfg.MaxRunning = 64
	}
	if cfg.Keep <= 0 {
		cfg.Keep = time.Hour
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	ctx, end := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, ctx: ctx, end: end, execs: map[string]*execution{}, idem: map[string]string{}}
	if cfg.Store != nil {
		if err := s.recoverStore(); err != nil {
			end()
			return nil, err
		}
	}
	s.wg.Add(1)
	go s.janitor()
	return s, nil
}

// recoverStore loads the executions the store kept. One that was accepted
// or running when the last server died is failed SERVER_RESTARTED, so its
// caller may retry it; lines the store could not read are skipped with a
// warning naming the file. The file is then rewritten to what was kept.
func (s *Server) recoverStore() error {
	loaded, err := s.cfg.Store.Load(time.Now().Add(-s.cfg.Keep))
	if err != nil {
		return err
	}
	for _, sk := range loaded.Skipped {
		s.cfg.Log.Warn("executions: line skipped", "file", s.cfg.Store.Path(), "line", sk.Line, "reason", sk.Reason)
	}
	restarted := 0
	now := time.Now().UTC()
	for _, e := range loaded.Executions {
		if !Final(e.State) {
			e.markRestarted(now)
			restarted++
		}
		s.execs[e.ID] = e
		if e.IdemKey != "" {
			s.idem[idemIndex(e.CallerID, e.IdemKey)] = e.ID // the latest execution of a key wins
		}
	}
	if restarted > 0 {
		s.cfg.Log.Warn("executions: cut short by a restart", "file", s.cfg.Store.Path(), "count", restarted)
	}
	if restarted == 0 && loaded.Lines == len(loaded.Executions) {
		return nil
	}
	return s.cfg.Store.Rewrite(loaded.Executions)
}

// restartRetry is the hint given with SERVER_RESTARTED: the execution never
// ended, so running it again is the caller's call.
var restartRetry = &Retry{SuggestedDelayMS: 1000, MaxAttempts: 3}

// markRestarted fails an execution a server stop cut short.
func (e *execution) markRestarted(now time.Time) {
	e.State, e.Done, e.Output = StateFailed, &now, nil
	e.Err = &ErrorBody{Code: CodeServerRestarted,
		Message: "the server stopped while the execution ran; POST it again with the same Idempotency-Key to run it again",
		Details: map[string]any{}, Retry: restartRetry}
}

// restartable reports whether a retry with e's Idempotency-Key starts a new
// execution rather than answering with e.
func (e *execution) restartable() bool {
	return e.State == StateFailed && e.Err != nil && e.Err.Code == CodeServerRestarted
}

// idemIndex is the key of the idempotency index: keys are per caller.
func idemIndex(caller, key string) string { return caller + "\x00" + key }

// Close cancels every running execution and waits for them, then
// releases the store's descriptor.
func (s *Server) Close() error {
	s.end()
	s.wg.Wait()
	if s.cfg.Store != nil {
		return s.cfg.Store.Close()
	}
	return nil
}

// janitor forgets finished executions older than Keep.
func (s *Server) janitor() {
	defer s.wg.Done()
	every := max(s.cfg.Keep/10, 100*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		if s.forgetExpired(time.Now().Add(-s.cfg.Keep)) == 0 || s.cfg.Store == nil {
			continue
		}
		// The snapshot is taken under the store's lock, so an execution
		// accepted meanwhile is either in it or appended after the rename.
		if err := s.cfg.Store.RewriteWith(s.snapshotAll); err != nil {
			s.cfg.Log.Error("store", "error", err.Error())
		}
	}
}

// forgetExpired drops the executions that ended before cut and says how
// many.
func (s *Server) forgetExpired(cut time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	dropped := 0
	for id, e := range s.execs {
		if e.Done == nil || !e.Done.Before(cut) {
			continue
		}
		delete(s.execs, id)
		if k := idemIndex(e.CallerID, e.IdemKey); e.IdemKey != "" && s.idem[k] == id {
			delete(s.idem, k)
		}
		dropped++
	}
	return dropped
}

// snapshotAll copies every execution the server knows, running ones too
// (their accepted line must survive a rewrite), oldest first.
func (s *Server) snapshotAll() []*execution {
	s.mu.Lock()
	out := make([]*execution, 0, len(s.execs))
	for _, e := range s.execs {
		out = append(out, e.snapshot())
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out
}

// Handler serves the protocol's endpoints.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /invoke", s.invoke)
	mux.HandleFunc("GET /status/{id}", s.status)
	mux.HandleFunc("GET /result/{id}", s.result)
	mux.HandleFunc("POST /cancel/{id}", s.cancelExec)
	mux.HandleFunc("GET /.well-known/skill-sharing", s.discovery)
	return s.logged(s.refuseBrowsers(mux))
}

// logged writes one line per request: method, path, status, caller. The
// path holds no secret; headers and bodies are never logged.
func (s *Server) logged(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: 200}
		start := time.Now()
		h.ServeHTTP(rec, r)
		// LogAttrs with typed attributes: the line Info would write,
		// without boxing each value.
		s.cfg.Log.LogAttrs(context.Background(), slog.LevelInfo, "http", slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", rec.status), slog.String("caller", rec.caller), slog.Int64("ms", time.Since(start).Milliseconds()))
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	caller string
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v) // the client went away: nobody to tell
}

func writeError(w http.ResponseWriter, code int, body ErrorBody) {
	if body.Details == nil {
		body.Details = map[string]any{}
	}
	writeJSON(w, code, Envelope{Error: body})
}

// timeoutRetry is the hint given with EXECUTION_TIMEOUT.
var timeoutRetry = &Retry{SuggestedDelayMS: 5000, MaxAttempts: 3}

// authenticate finds the caller a request's key belongs to. body is the
// key found in the body (caller.credentials.api_key), if any. Without keys
// configured every caller is who it says.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request, bodyKey string) (callerID string, ok bool) {
	if s.cfg.Keys == nil {
		return "", true
	}
	key := r.Header.Get("X-API-Key")
	if key == "" {
		key = bodyKey
	}
	if key == "" {
		writeError(w, http.StatusUnauthorized, ErrorBody{Code: CodeAuthRequired,
			Message: "an API key is required: send it as X-API-Key or caller.credentials.api_key"})
		return "", false
	}
	owner, found := s.cfg.Keys.Lookup(key)
	if !found {
		writeError(w, http.StatusForbidden, ErrorBody{Code: CodePermissionDenied, Message: "the API key is not valid",
			Details: map[string]any{"reason": "bad_api_key"}})
		return "", false
	}
	if rec, ok := w.(*statusRecorder); ok {
		rec.caller = owner
	}
	return owner, true
}

// invoke accepts an invocation: it checks the request step by step, each
// step answering the client itself when it refuses, then reserves the
// execution, persists it and answers 202 with its id.
func (s *Server) invoke(w http.ResponseWriter, r *http.Request) {
	req, caller, ok := s.readInvoke(w, r)
	if !ok {
		return
	}
	if !s.skillExists(w, req.SkillID) {
		return
	}
	// The policy is asked outside the lock; admit uses the answer only when
	// the request is not a retry.
	denial := s.cfg.Backend.Check(req.SkillID, req.Context.Hop)
	e, ctx, ok := s.admit(w, admission{req: req, caller: caller, idemKey: r.Header.Get("Idempotency-Key"), denial: denial})
	if !ok {
		return
	}
	// Persisted before the 202 and before it runs: a crash from here on
	// leaves a line that the next start turns into SERVER_RESTARTED.
	s.persist(e)
	inv, ctx := continueTrace(ctx, req, r.Header, caller)
	s.wg.Add(1)
	go s.run(ctx, e, inv)
	w.Header().Set("Location", "/status/"+e.ID)
	writeJSON(w, http.StatusAccepted, Accepted{ExecutionID: e.ID, Status: StateAccepted})
}

// admission is an authenticated, valid request waiting to be admitted.
type admission struct {
	req     *InvokeRequest
	caller  string
	idemKey string
	denial  *ipc.Denial
}

// admit decides, in one critical section, between answering a retry with
// the execution its Idempotency-Key names and reserving a new execution:
// two requests with one key can never both reserve. It answers the client
// itself unless it returns a new execution.
func (s *Server) admit(w http.ResponseWriter, a admission) (*execution, context.Context, bool) {
	// The digest tells a retry from another request under one
	// Idempotency-Key; without a key nothing compares it.
	var digest string
	if a.idemKey != "" {
		digest = requestDigest(a.req)
	}
	s.mu.Lock()
	if prev := s.byIdemKey(a.caller, a.idemKey); prev != nil {
		switch {
		case prev.Request != "" && prev.Request != digest:
			s.mu.Unlock()
			writeError(w, http.StatusUnprocessableEntity, ErrorBody{Code: CodeIdempotencyReused,
				Message: "this Idempotency-Key was used for another request; use a new key for a new request",
				Details: map[string]any{"execution_id": prev.ID}})
			return nil, nil, false
		case !prev.restartable():
			id, st := prev.ID, prev.State
			s.mu.Unlock()
			writeJSON(w, http.StatusAccepted, Accepted{ExecutionID: id, Status: st})
			return nil, nil, false
		}
	}
	if d := a.denial; d != nil {
		s.mu.Unlock()
		writeError(w, http.StatusForbidden, ErrorBody{Code: CodePermissionDenied, Message: d.Message, Details: map[string]any{"reason": d.Reason}})
		return nil, nil, false
	}
	if s.running >= s.cfg.MaxRunning {
		s.mu.Unlock()
		writeError(w, http.StatusTooManyRequests, ErrorBody{Code: CodeTooMany,
			Message: fmt.Sprintf("%d executions are running; try again shortly", s.cfg.MaxRunning),
			Retry:   &Retry{SuggestedDelayMS: 500, MaxAttempts: 10}})
		return nil, nil, false
	}
	e := &execution{ID: newExecutionID(), SkillID: a.req.SkillID, CallerID: a.caller, IdemKey: a.idemKey, Request: digest,
		State: StateAccepted, Created: time.Now().UTC()}
	ctx, cancel := context.WithCancel(s.ctx)
	e.cancel = cancel
	s.execs[e.ID] = e
	if a.idemKey != "" {
		s.idem[idemIndex(a.caller, a.idemKey)] = e.ID
	}
	s.running++
	s.mu.Unlock()
	return e, ctx, true
}

// byIdemKey is the execution caller's Idempotency-Key names, or nil; the
// caller holds s.mu.
func (s *Server) byIdemKey(caller, key string) *execution {
	if key == "" {
		return nil
	}
	id, ok := s.idem[idemIndex(caller, key)]
	if !ok {
		return nil
	}
	return s.execs[id]
}

// requestDigest identifies what a request asks, without its credentials
// and whatever its whitespace: the same request retried has the same
// digest, another request under the same key has another.
func requestDigest(req *InvokeRequest) string {
	c := *req
	c.Caller.Credentials = nil
	b, err := json.Marshal(c)
	if err != nil {
		return "" // inputs decoded from JSON always encode: unreachable
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// persist appends an execution's current state to the store, if any.
func (s *Server) persist(e *execution) {
	if s.cfg.Store == nil {
		return
	}
	s.mu.Lock()
	snap := e.snapshot()
	s.mu.Unlock()
	if err := s.cfg.Store.Append(snap); err != nil {
		s.cfg.Log.Error("store", "error", err.Error())
	}
}

// readInvoke reads and decodes an invoke body, authenticates its caller
// and checks the ids it carries; it returns the caller id, or answers the
// client with what is wrong.
func (s *Server) readInvoke(w http.ResponseWriter, r *http.Request) (*InvokeRequest, string, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, ErrorBody{Code: CodeValidation, Message: "body: exceeds 1 MiB or could not be read",
			Details: map[string]any{"field": "body"}})
		return nil, "", false
	}
	req, derr := DecodeInvoke(body)
	bodyKey := ""
	if req != nil && req.Caller.Credentials != nil {
		bodyKey = req.Caller.Credentials.APIKey
	}
	// Authenticate before judging the body: without a valid key the answer
	// is 401 or 403, whatever was sent.
	owner, ok := s.authenticate(w, r, bodyKey)
	if !ok {
		return nil, "", false
	}
	if derr != nil {
		var fe *FieldError
		field := "body"
		if errors.As(derr, &fe) {
			field = fe.Field
		}
		writeError(w, http.StatusBadRequest, ErrorBody{Code: CodeValidation, Message: derr.Error(), Details: map[string]any{"field": field}})
		return nil, "", false
	}
	caller := req.Caller.ID
	if owner != "" && owner != caller {
		writeError(w, http.StatusForbidden, ErrorBody{Code: CodePermissionDenied, Message: "the API key belongs to another caller",
			Details: map[string]any{"reason": "caller_mismatch"}})
		return nil, "", false
	}
	if rec, ok := w.(*statusRecorder); ok {
		rec.caller = caller
	}
	if !checkInvokeIDs(w, req) {
		return nil, "", false
	}
	return req, caller, true
}

// checkInvokeIDs checks the caller id and the context's ids of an invoke
// body, or answers the client with the first that is not valid.
func checkInvokeIDs(w http.ResponseWriter, req *InvokeRequest) bool {
	if err := protocol.ValidateName(req.Caller.ID); err != nil {
		writeError(w, http.StatusBadRequest, ErrorBody{Code: CodeValidation, Message: "caller.id: " + err.Error(), Details: map[string]any{"field": "caller.id"}})
		return false
	}
	if t := req.Context.TraceID; t != "" {
		if err := protocol.ValidateID(t); err != nil {
			writeError(w, http.StatusBadRequest, ErrorBody{Code: CodeValidation, Message: "context.trace_id: " + err.Error(), Details: map[string]any{"field": "context.trace_id"}})
			return false
		}
	}
	if p := req.Context.ParentRequestID; p != "" {
		if err := protocol.ValidateID(p); err != nil {
			writeError(w, http.StatusBadRequest, ErrorBody{Code: CodeValidation, Message: "context.parent_request_id: " + err.Error(), Details: map[string]any{"field": "context.parent_request_id"}})
			return false
		}
	}
	return true
}

// skillExists reports whether the backend has skillID, or answers 404.
func (s *Server) skillExists(w http.ResponseWriter, skillID string) bool {
	if s.cfg.Backend.Has(skillID) {
		return true
	}
	writeError(w, http.StatusNotFound, ErrorBody{Code: CodeSkillNotFound, Message: fmt.Sprintf("no skill %q here (see /.well-known/skill-sharing)", skillID),
		Details: map[string]any{"skill_id": skillID}})
	return false
}

// invocationFor is the invocation an accepted request runs: the skill
// <member>.<action> as a call from caller, in the request's chain.
func invocationFor(req *InvokeRequest, caller string) protocol.InvocationRequest {
	member, action, _ := strings.Cut(req.SkillID, ".")
	inv := protocol.InvocationRequest{
		RequestID: protocol.NewInvocationID(), CorrelationID: req.Context.TraceID, Caller: caller,
		Target: member, Action: action, Prompt: req.Prompt(), Hop: req.Context.Hop,
		ParentRequestID: req.Context.ParentRequestID,
	}
	if inv.CorrelationID == "" {
		inv.CorrelationID = protocol.NewCorrelationID()
	}
	if ms := req.Context.TimeoutMS; ms > 0 {
		inv.TimeoutSec = int(math.Ceil(float64(ms) / 1000))
	}
	return inv
}

func newExecutionID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "exec-" + hex.EncodeToString(b)
}

// run executes one invocation and records how it ended.
func (s *Server) run(ctx context.Context, e *execution, inv protocol.InvocationRequest) {
	defer s.wg.Done()
	now := time.Now().UTC()
	s.mu.Lock()
	if e.State == StateAccepted {
		e.State, e.Started = StateRunning, &now
	}
	s.mu.Unlock()
	res := s.cfg.Backend.Call(ctx, inv)
	done := time.Now().UTC()
	s.mu.Lock()
	s.running--
	e.Done = &done
	switch {
	case s.ctx.Err() != nil && res.Status != protocol.ResultOK:
		// The server is stopping: the execution was cut short, not failed,
		// and a retry may run it again.
		e.markRestarted(done)
	case ctx.Err() != nil:
		e.State = StateCancelled
		e.Err = &ErrorBody{Code: CodeCancelled, Message: "the execution was cancelled", Details: map[string]any{}}
	case res.Status == protocol.ResultOK:
		e.State, e.Output = StateCompleted, res.Result
	case res.Error != nil && res.Error.Code == protocol.ErrTimeout:
		e.State = StateTimeout
		e.Err = &ErrorBody{Code: CodeTimeout, Message: res.Error.Message, Details: map[string]any{"request_id": res.RequestID}, Retry: timeoutRetry}
	default:
		e.State = StateFailed
		code, msg := string(protocol.ErrIPC), "the execution failed"
		var details any
		if res.Error != nil {
			code, msg = string(res.Error.Code), res.Error.Message
			_ = json.Unmarshal(res.Error.Details, &details) // none, or not JSON: null
		}
		e.Err = &ErrorBody{Code: CodeFailed, Message: msg, Details: map[string]any{"ipc_code": code, "ipc_details": details, "request_id": res.RequestID}}
	}
	s.mu.Unlock()
	e.cancel()
	s.persist(e)
}

// snapshot copies an execution for writing without the lock.
func (e *execution) snapshot() *execution {
	c := *e
	c.cancel = nil
	return &c
}

// lookup finds an execution the authenticated caller may see.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) (*execution, bool) {
	owner, ok := s.authenticate(w, r, "")
	if !ok {
		return nil, false
	}
	id := r.PathValue("id")
	s.mu.Lock()
	e, found := s.execs[id]
	var snap *execution
	if found && (owner == "" || e.CallerID == owner) {
		snap = e.snapshot()
	}
	s.mu.Unlock()
	if snap == nil {
		writeError(w, http.StatusNotFound, ErrorBody{Code: CodeExecutionNotFound, Message: fmt.Sprintf("no execution %q", id),
			Details: map[string]any{"execution_id": id}})
		return nil, false
	}
	return snap, true
}

func (e *execution) status() Status {
	return Status{ExecutionID: e.ID, SkillID: e.SkillID, Status: e.State, Error: e.Err,
		Timestamps: Timestamps{CreatedAt: e.Created, StartedAt: e.Started, CompletedAt: e.Done}}
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	if e, ok := s.lookup(w, r); ok {
		writeJSON(w, http.StatusOK, e.status())
	}
}

func (s *Server) result(w http.ResponseWriter, r *http.Request) {
	e, ok := s.lookup(w, r)
	if !ok {
		return
	}
	switch e.State {
	case StateCompleted:
		writeJSON(w, http.StatusOK, Result{ExecutionID: e.ID, SkillID: e.SkillID, Status: StateCompleted, Output: e.Output,
			Timestamps: Timestamps{CreatedAt: e.Created, StartedAt: e.Started, CompletedAt: e.Done}})
	case StateAccepted, StateRunning:
		writeJSON(w, http.StatusAccepted, e.status())
	default:
		code := map[string]int{StateTimeout: http.StatusGatewayTimeout, StateCancelled: http.StatusConflict}[e.State]
		if code == 0 {
			code = http.StatusBadGateway
		}
		writeJSON(w, code, Envelope{ExecutionID: e.ID, Status: e.State, Error: *e.Err})
	}
}

func (s *Server) cancelExec(w http.ResponseWriter, r *http.Request) {
	e, ok := s.lookup(w, r)
	if !ok {
		return
	}
	if Final(e.State) {
		writeError(w, http.StatusConflict, ErrorBody{Code: CodeCancelled, Message: fmt.Sprintf("execution %s is already %s", e.ID, e.State),
			Details: map[string]any{"status": e.State}})
		return
	}
	s.mu.Lock()
	live := s.execs[e.ID]
	s.mu.Unlock()
	live.cancel()
	writeJSON(w, http.StatusAccepted, e.status())
}

func (s *Server) discovery(w http.ResponseWriter, r *http.Request) {
	auth := "none"
	if s.cfg.Keys != nil {
		auth = "api_key"
	}
	type endpoints struct {
		Invoke string `json:"invocation_endpoint"`
		Status string `json:"status_url"`
		Result string `json:"result_url"`
	}
	type descriptor struct {
		ID          string            `json:"id"`
		Name        string            `json:"name"`
		Description string            `json:"description"`
		Endpoints   endpoints         `json:"endpoints"`
		Auth        map[string]string `json:"auth"`
	}
	var out []descriptor
	for _, sk := range s.cfg.Backend.Skills() {
		out = append(out, descriptor{ID: sk.ID, Name: sk.Name, Description: sk.Description,
			Endpoints: endpoints{Invoke: "/invoke", Status: "/status", Result: "/result"},
			Auth:      map[string]string{"type": auth}})
	}
	if out == nil {
		out = []descriptor{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"skills": out})
}

// Keys maps API keys to the caller ids they belong to.
type Keys struct {
	keys []keyOwner
}

type keyOwner struct {
	key   []byte
	owner string
}

// ParseKeys reads a keys file: one "KEY CALLER-ID" per line; blank lines
// and lines starting with # are skipped. Errors name the line, never the
// key.
func ParseKeys(b []byte) (*Keys, error) {
	k := &Keys{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("keys file line %d: want \"KEY CALLER-ID\"", i+1)
		}
		if err := protocol.ValidateName(f[1]); err != nil {
			return nil, fmt.Errorf("keys file line %d: caller id: %v", i+1, err)
		}
		k.keys = append(k.keys, keyOwner{[]byte(f[0]), f[1]})
	}
	if len(k.keys) == 0 {
		return nil, errors.New("keys file has no keys")
	}
	return k, nil
}

// Lookup finds the owner of key, comparing against every key in constant
// time, so the time taken says nothing about which key is close.
func (k *Keys) Lookup(key string) (string, bool) {
	owner := ""
	kb := []byte(key)
	for _, ko := range k.keys {
		if subtle.ConstantTimeCompare(ko.key, kb) == 1 {
			owner = ko.owner
		}
	}
	return owner, owner != ""
}
