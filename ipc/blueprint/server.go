package blueprint

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
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
// (team.ServeBackend) or a test's.
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
	// Store, when set, persists finished executions so a restarted server
	// still answers for them.
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
	ID       string          `json:"id"`
	SkillID  string          `json:"skill_id"`
	CallerID string          `json:"caller_id"`
	IdemKey  string          `json:"idempotency_key,omitempty"`
	State    string          `json:"status"`
	Created  time.Time       `json:"created_at"`
	Started  *time.Time      `json:"started_at,omitempty"`
	Done     *time.Time      `json:"completed_at,omitempty"`
	Output   json.RawMessage `json:"output,omitempty"`
	Err      *ErrorBody      `json:"error,omitempty"`

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
		old, err := cfg.Store.Load(time.Now().Add(-cfg.Keep))
		if err != nil {
			end()
			return nil, err
		}
		for _, e := range old {
			s.execs[e.ID] = e
			if e.IdemKey != "" {
				s.idem[e.CallerID+"\x00"+e.IdemKey] = e.ID
			}
		}
	}
	s.wg.Add(1)
	go s.janitor()
	return s, nil
}

// Close cancels every running execution and waits for them.
func (s *Server) Close() error {
	s.end()
	s.wg.Wait()
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
		cut := time.Now().Add(-s.cfg.Keep)
		var keep []*execution
		s.mu.Lock()
		dropped := 0
		for id, e := range s.execs {
			if e.Done != nil && e.Done.Before(cut) {
				delete(s.execs, id)
				if e.IdemKey != "" {
					delete(s.idem, e.CallerID+"\x00"+e.IdemKey)
				}
				dropped++
			} else if e.Done != nil {
				keep = append(keep, e.snapshot())
			}
		}
		s.mu.Unlock()
		if dropped > 0 && s.cfg.Store != nil {
			if err := s.cfg.Store.Rewrite(keep); err != nil {
				s.cfg.Log.Error("store", "error", err.Error())
			}
		}
	}
}

// Handler serves the protocol's endpoints.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /invoke", s.invoke)
	mux.HandleFunc("GET /status/{id}", s.status)
	mux.HandleFunc("GET /result/{id}", s.result)
	mux.HandleFunc("POST /cancel/{id}", s.cancelExec)
	mux.HandleFunc("GET /.well-known/skill-sharing", s.discovery)
	return s.logged(mux)
}

// logged writes one line per request: method, path, status, caller. The
// path holds no secret; headers and bodies are never logged.
func (s *Server) logged(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: 200}
		start := time.Now()
		h.ServeHTTP(rec, r)
		s.cfg.Log.Info("http", "method", r.Method, "path", r.URL.Path, "status", rec.status,
			"caller", rec.caller, "ms", time.Since(start).Milliseconds())
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
// step answering the client itself when it refuses, then starts the
// execution and answers 202 with its id.
func (s *Server) invoke(w http.ResponseWriter, r *http.Request) {
	req, caller, ok := s.readInvoke(w, r)
	if !ok {
		return
	}
	if !s.skillExists(w, req.SkillID) {
		return
	}
	idemKey := r.Header.Get("Idempotency-Key")
	if s.replay(w, caller, idemKey) {
		return
	}
	if !s.authorize(w, req) {
		return
	}
	e, ctx, ok := s.startExecution(w, req.SkillID, caller, idemKey)
	if !ok {
		return
	}
	s.wg.Add(1)
	go s.run(ctx, e, invocationFor(req, caller))
	w.Header().Set("Location", "/status/"+e.ID)
	writeJSON(w, http.StatusAccepted, Accepted{ExecutionID: e.ID, Status: StateAccepted})
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

// replay answers a repeated request (same caller, same Idempotency-Key)
// with the execution the first one started, and reports whether it did.
func (s *Server) replay(w http.ResponseWriter, caller, idemKey string) bool {
	if idemKey == "" {
		return false
	}
	s.mu.Lock()
	id, ok := s.idem[caller+"\x00"+idemKey]
	var st string
	if ok {
		st = s.execs[id].State
	}
	s.mu.Unlock()
	if !ok {
		return false
	}
	writeJSON(w, http.StatusAccepted, Accepted{ExecutionID: id, Status: st})
	return true
}

// authorize applies the backend's IPC policy to the call, or answers 403.
func (s *Server) authorize(w http.ResponseWriter, req *InvokeRequest) bool {
	d := s.cfg.Backend.Check(req.SkillID, req.Context.Hop)
	if d == nil {
		return true
	}
	writeError(w, http.StatusForbidden, ErrorBody{Code: CodePermissionDenied, Message: d.Message, Details: map[string]any{"reason": d.Reason}})
	return false
}

// startExecution registers a new execution, unless MaxRunning are running
// already (then it answers 429), and returns it with the context it runs
// in.
func (s *Server) startExecution(w http.ResponseWriter, skillID, caller, idemKey string) (*execution, context.Context, bool) {
	s.mu.Lock()
	if s.running >= s.cfg.MaxRunning {
		s.mu.Unlock()
		writeError(w, http.StatusTooManyRequests, ErrorBody{Code: CodeTooMany,
			Message: fmt.Sprintf("%d executions are running; try again shortly", s.cfg.MaxRunning),
			Retry:   &Retry{SuggestedDelayMS: 500, MaxAttempts: 10}})
		return nil, nil, false
	}
	e := &execution{ID: newExecutionID(), SkillID: skillID, CallerID: caller, IdemKey: idemKey, State: StateAccepted, Created: time.Now().UTC()}
	ctx, cancel := context.WithCancel(s.ctx)
	e.cancel = cancel
	s.execs[e.ID] = e
	if idemKey != "" {
		s.idem[caller+"\x00"+idemKey] = e.ID
	}
	s.running++
	s.mu.Unlock()
	return e, ctx, true
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
	case ctx.Err() != nil && s.ctx.Err() == nil:
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
	snap := e.snapshot()
	s.mu.Unlock()
	e.cancel()
	if s.cfg.Store != nil {
		if err := s.cfg.Store.Append(snap); err != nil {
			s.cfg.Log.Error("store", "error", err.Error())
		}
	}
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
	return Status{ExecutionID: e.ID, SkillID: e.SkillID, Status: e.State,
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
