package a2a

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"huddle/ipc"
	"huddle/ipc/blueprint"
	"huddle/protocol"
)

// Skill is one action the backend exposes: a member's action, "member.action".
type Skill struct {
	ID          string
	Name        string
	Description string
	Tags        []string
}

// Backend is what the server exposes and how it runs a task: huddle's team
// (team/serve) or a test's.
type Backend interface {
	// Skills lists the skills for the Agent Card.
	Skills() []Skill
	// Has reports whether skillID exists.
	Has(skillID string) bool
	// Check applies the IPC policy to a call of skillID at hop: nil allows.
	Check(skillID string, hop int) *ipc.Denial
	// Run runs the invocation and returns its result (any error is in
	// it), telling the task's progress as it goes: the plan it waits on
	// (INPUT_REQUIRED), or working again.
	Run(ctx context.Context, req protocol.InvocationRequest, tell func(Progress)) protocol.InvocationResult
}

// Progress is a step of a running task the backend tells.
type Progress struct {
	// Plan, when set, is the plan of the task's member that waits for
	// huddle's lead: the task is INPUT_REQUIRED until it is decided.
	Plan *Plan
	// Note says why the task is working again (the plan's decision), or
	// what it does.
	Note string
}

// Plan is a member's plan that waits on huddle's desk, as a task's status
// message carries it (a data part).
type Plan struct {
	RequestID string    `json:"request_id"`
	Member    string    `json:"member"`
	Plan      string    `json:"plan"`
	Revises   string    `json:"revises,omitempty"`
	Created   time.Time `json:"created"`
	Deadline  time.Time `json:"deadline"`
	// Feedback is the lead's on the plan this one revises, if any.
	Feedback string `json:"feedback,omitempty"`
}

// ServerConfig sets up a Server.
type ServerConfig struct {
	Backend Backend
	// Keys, when set, require an API key (X-API-Key) on every request but
	// the Agent Card's, and decide who the caller is.
	Keys *blueprint.Keys
	// Name, Description and Version describe the agent on its card.
	Name, Description, Version string
	// URL is where the card says the JSON-RPC endpoint is; empty: the
	// request's own host, and Path.
	URL string
	// Path is the JSON-RPC endpoint's path; default /a2a.
	Path string
	// MaxRunning caps the tasks under way; default 64.
	MaxRunning int
	// Keep is how long ended tasks stay answerable; default 1h.
	Keep time.Duration
	// Log gets one line per request (never a key or a body).
	Log *slog.Logger
	// Legacy serves the v0.3 binding (requests without A2A-Version): set
	// by ServeLegacy; nil answers them VersionNotSupportedError.
	Legacy http.Handler
}

// Server serves the A2A v1.0 JSON-RPC binding and the Agent Card.
type Server struct {
	cfg ServerConfig
	ctx context.Context
	end context.CancelFunc
	wg  sync.WaitGroup

	mu      sync.Mutex
	tasks   map[string]*entry
	running int
}

// DefaultCaller is the caller of a request that names none, on a server
// without keys.
const DefaultCaller = "a2a"

// NewServer makes a server; Close it when done.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.Backend == nil {
		return nil, errors.New("a2a: a server needs a backend")
	}
	if cfg.Path == "" {
		cfg.Path = "/a2a"
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
	if cfg.Name == "" {
		cfg.Name = "huddle"
	}
	if cfg.Version == "" {
		cfg.Version = "1"
	}
	ctx, end := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, ctx: ctx, end: end, tasks: map[string]*entry{}}
	s.wg.Add(1)
	go s.janitor()
	return s, nil
}

// Close cancels every task under way and waits for them.
func (s *Server) Close() error {
	s.end()
	s.wg.Wait()
	return nil
}

// Handler serves the Agent Card at CardPath and JSON-RPC at the
// endpoint's path; a server without keys first refuses what a browser
// could send (blueprint.BrowserRefusal).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+CardPath, s.serveCard)
	mux.HandleFunc("POST "+s.cfg.Path, s.serveRPC)
	return s.logged(s.refuseBrowsers(mux))
}

// Paths are the paths Handler serves, for a caller that mounts it beside
// other handlers.
func (s *Server) Paths() []string { return []string{CardPath, s.cfg.Path} }

func (s *Server) refuseBrowsers(h http.Handler) http.Handler {
	if s.cfg.Keys != nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f := blueprint.BrowserRefusal(r); f != nil {
			writeRPC(w, f.Status, rpcResponse{JSONRPC: "2.0", ID: json.RawMessage("null"),
				Error: rpcError(CodeInvalidRequest, f.Code, f.Message, map[string]any{f.DetailKey: f.Detail})})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// logged writes one line per request: method, path, status. Headers and
// bodies are never logged.
func (s *Server) logged(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		start := time.Now()
		h.ServeHTTP(rec, r)
		s.cfg.Log.LogAttrs(context.Background(), slog.LevelInfo, "a2a", slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", rec.status), slog.String("rpc", rec.rpc), slog.Int64("ms", time.Since(start).Milliseconds()))
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	rpc    string
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func writeRPC(w http.ResponseWriter, status int, resp rpcResponse) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(resp) // the client went away: nobody to tell
}

// authenticate finds who calls: the owner of the X-API-Key when keys are
// on ("" and false after answering 401 or 403), else "" (the request
// names its caller).
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request, id json.RawMessage) (string, bool) {
	if s.cfg.Keys == nil {
		return "", true
	}
	key := r.Header.Get("X-API-Key")
	if key == "" {
		w.Header().Set("WWW-Authenticate", `APIKey header="X-API-Key"`)
		writeRPC(w, http.StatusUnauthorized, rpcResponse{JSONRPC: "2.0", ID: id,
			Error: rpcError(CodeInvalidRequest, blueprint.CodeAuthRequired, "an API key is required: send it as X-API-Key (the Agent Card's securitySchemes)", nil)})
		return "", false
	}
	owner, ok := s.cfg.Keys.Lookup(key)
	if !ok {
		writeRPC(w, http.StatusForbidden, rpcResponse{JSONRPC: "2.0", ID: id,
			Error: rpcError(CodeInvalidRequest, blueprint.CodePermissionDenied, "the API key is not valid", map[string]any{"reason": "bad_api_key"})})
		return "", false
	}
	return owner, true
}

// serveRPC answers one JSON-RPC request of the v1.0 binding, or hands a
// request of the v0.3 binding (no A2A-Version, or 0.3) to Legacy.
func (s *Server) serveRPC(w http.ResponseWriter, r *http.Request) {
	version := r.Header.Get(VersionHeader)
	if version == "" {
		version = r.URL.Query().Get(VersionHeader)
	}
	version = majorMinor(version)
	if version == "" || version == LegacyVersion {
		if s.cfg.Legacy != nil {
			if owner, ok := s.authenticate(w, r, json.RawMessage("null")); ok {
				s.cfg.Legacy.ServeHTTP(w, r.WithContext(withCaller(r.Context(), owner, r.Header)))
			}
			return
		}
		version = LegacyVersion
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, blueprint.MaxBody))
	if err != nil {
		writeRPC(w, http.StatusOK, rpcResponse{JSONRPC: "2.0", ID: json.RawMessage("null"),
			Error: rpcError(CodeInvalidRequest, "BODY_TOO_LARGE", "the request exceeds 1 MiB or could not be read", nil)})
		return
	}
	var req rpcRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeRPC(w, http.StatusOK, rpcResponse{JSONRPC: "2.0", ID: json.RawMessage("null"),
			Error: rpcError(CodeParse, "PARSE_ERROR", "the body is not JSON: "+err.Error(), nil)})
		return
	}
	id := req.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	if rec, ok := w.(*statusRecorder); ok {
		rec.rpc = req.Method
	}
	caller, ok := s.authenticate(w, r, id)
	if !ok {
		return
	}
	if req.JSONRPC != "2.0" || req.Method == "" {
		writeRPC(w, http.StatusOK, rpcResponse{JSONRPC: "2.0", ID: id,
			Error: rpcError(CodeInvalidRequest, "INVALID_REQUEST", `not a JSON-RPC 2.0 request: want "jsonrpc": "2.0" and a method`, nil)})
		return
	}
	if version != Version {
		writeRPC(w, http.StatusOK, rpcResponse{JSONRPC: "2.0", ID: id,
			Error: rpcError(CodeVersionNotSupported, "VERSION_NOT_SUPPORTED",
				fmt.Sprintf("A2A version %q is not served here: send %s: %s", version, VersionHeader, Version),
				map[string]any{"supportedVersions": s.versions()})})
		return
	}
	s.dispatch(w, r, caller, id, &req)
}

// versions are the protocol versions this server speaks.
func (s *Server) versions() []string {
	if s.cfg.Legacy != nil {
		return []string{Version, LegacyVersion}
	}
	return []string{Version}
}

// majorMinor is a version's Major.Minor ("1.0.2" → "1.0").
func majorMinor(v string) string {
	v = strings.TrimSpace(v)
	if i := strings.IndexByte(v, '.'); i >= 0 {
		if j := strings.IndexByte(v[i+1:], '.'); j >= 0 {
			return v[:i+1+j]
		}
	}
	return v
}

func (s *Server) dispatch(w http.ResponseWriter, r *http.Request, caller string, id json.RawMessage, req *rpcRequest) {
	reply := func(result any, e *Error) {
		if e != nil {
			writeRPC(w, http.StatusOK, rpcResponse{JSONRPC: "2.0", ID: id, Error: e})
			return
		}
		writeRPC(w, http.StatusOK, rpcResponse{JSONRPC: "2.0", ID: id, Result: result})
	}
	switch req.Method {
	case MethodSend:
		var p SendMessageRequest
		if e := decodeParams(req.Params, &p); e != nil {
			reply(nil, e)
			return
		}
		t, e := s.send(caller, &p, r.Header)
		if e != nil {
			reply(nil, e)
			return
		}
		if p.Configuration == nil || !p.Configuration.ReturnImmediately {
			unlimited(w)
			t.settled(r.Context())
		}
		var hl *int
		if p.Configuration != nil {
			hl = p.Configuration.HistoryLength
		}
		snap := t.snapshot(hl, true)
		reply(SendMessageResponse{Task: &snap}, nil)
	case MethodStream:
		var p SendMessageRequest
		if e := decodeParams(req.Params, &p); e != nil {
			reply(nil, e)
			return
		}
		t, e := s.send(caller, &p, r.Header)
		if e != nil {
			reply(nil, e)
			return
		}
		s.stream(w, r, id, t, 0)
	case MethodGet:
		var p GetTaskRequest
		if e := decodeParams(req.Params, &p); e != nil {
			reply(nil, e)
			return
		}
		t, e := s.lookup(caller, p.ID)
		if e != nil {
			reply(nil, e)
			return
		}
		snap := t.snapshot(p.HistoryLength, true)
		reply(&snap, nil)
	case MethodList:
		var p ListTasksRequest
		if e := decodeParams(req.Params, &p); e != nil {
			reply(nil, e)
			return
		}
		reply(s.list(caller, &p))
	case MethodCancel:
		var p TaskIDRequest
		if e := decodeParams(req.Params, &p); e != nil {
			reply(nil, e)
			return
		}
		reply(s.cancelTask(caller, p.ID))
	case MethodSubscribe:
		var p TaskIDRequest
		if e := decodeParams(req.Params, &p); e != nil {
			reply(nil, e)
			return
		}
		t, e := s.lookup(caller, p.ID)
		if e != nil {
			reply(nil, e)
			return
		}
		if st := t.state(); st.Terminal() {
			reply(nil, errUnsupported(fmt.Sprintf("task %s is %s: there is nothing to subscribe to (GetTask reads it)", p.ID, st)))
			return
		}
		snap, next := t.follow()
		s.streamFrom(w, r, id, t, &snap, next)
	case MethodPushCreate, MethodPushGet, MethodPushList, MethodPushDelete:
		reply(nil, rpcError(CodePushNotSupported, "PUSH_NOTIFICATION_NOT_SUPPORTED",
			"push notifications are not supported: stream (SendStreamingMessage, SubscribeToTask) or poll GetTask", nil))
	case MethodExtCard:
		reply(nil, errUnsupported("this agent has no extended Agent Card"))
	default:
		reply(nil, rpcError(CodeMethodNotFound, "METHOD_NOT_FOUND", fmt.Sprintf("no method %q in A2A %s", req.Method, Version), nil))
	}
}

// decodeParams decodes a method's params; what does not decode is
// InvalidParams naming the field.
func decodeParams(raw json.RawMessage, dst any) *Error {
	if len(raw) == 0 || string(raw) == "null" {
		return errInvalidParams("params", "are required")
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return errInvalidParams(te.Field, "want "+te.Type.String())
		}
		return errInvalidParams("params", "not an object of the method's parameters")
	}
	return nil
}

// unlimited lifts the server's write deadline for a response that lasts
// as long as its task: a stream, a blocking send.
func unlimited(w http.ResponseWriter) {
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{}) // a writer that cannot: the server's own timeout stays
}

// keepAlive is how often an idle stream writes an SSE comment, so that
// nothing between the client and the server closes it.
const keepAlive = 15 * time.Second

// stream answers with the events of a task that was just sent, from its
// first.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, id json.RawMessage, t *entry, from int) {
	s.streamFrom(w, r, id, t, nil, from)
}

// streamFrom writes a task's events as Server-Sent Events: first (when
// set), then every event from index next on, until the task ends, the
// client goes or the server stops. INPUT_REQUIRED does not end a stream.
func (s *Server) streamFrom(w http.ResponseWriter, r *http.Request, id json.RawMessage, t *entry, first *Task, next int) {
	unlimited(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	write := func(ev StreamResponse) error {
		b, err := encodeEvent(id, ev)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return err
		}
		return rc.Flush()
	}
	if first != nil {
		if write(StreamResponse{Task: first}) != nil {
			return
		}
		if first.Status.State.Terminal() {
			return
		}
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	for {
		wctx, wcancel := context.WithTimeout(ctx, keepAlive)
		evs, ended, err := t.next(wctx, next)
		wcancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil || rc.Flush() != nil {
				return
			}
			continue
		}
		for _, ev := range evs {
			if write(ev) != nil {
				return
			}
		}
		next += len(evs)
		if ended {
			return
		}
	}
}

// lookup finds a task caller may see.
func (s *Server) lookup(caller, id string) (*entry, *Error) {
	s.mu.Lock()
	t, ok := s.tasks[id]
	s.mu.Unlock()
	if !ok || (s.cfg.Keys != nil && t.owner != caller) {
		return nil, errTaskNotFound(id)
	}
	return t, nil
}

// list is ListTasks: the caller's tasks, most recently updated first,
// filtered and paged (the page token is the offset).
func (s *Server) list(caller string, p *ListTasksRequest) (any, *Error) {
	size := 50
	if p.PageSize != nil {
		if *p.PageSize < 1 || *p.PageSize > 100 {
			return nil, errInvalidParams("pageSize", "must be between 1 and 100")
		}
		size = *p.PageSize
	}
	if p.Status == StateUnspecified {
		p.Status = "" // ProtoJSON's default: no filter
	}
	if p.Status != "" && !p.Status.Known() {
		return nil, errInvalidParams("status", fmt.Sprintf("%q is not a task state", p.Status))
	}
	var after time.Time
	if p.StatusTimestampAfter != "" {
		t, err := time.Parse(time.RFC3339Nano, p.StatusTimestampAfter)
		if err != nil {
			return nil, errInvalidParams("statusTimestampAfter", "want an RFC 3339 timestamp")
		}
		after = t
	}
	offset := 0
	if p.PageToken != "" {
		n, err := strconv.Atoi(p.PageToken)
		if err != nil || n < 0 {
			return nil, errInvalidParams("pageToken", "not a token this server gave")
		}
		offset = n
	}
	type row struct {
		t       *entry
		updated time.Time
	}
	var rows []row
	s.mu.Lock()
	for _, t := range s.tasks {
		if s.cfg.Keys != nil && t.owner != caller {
			continue
		}
		t.mu.Lock()
		match := (p.ContextID == "" || t.task.ContextID == p.ContextID) && (p.Status == "" || t.task.Status.State == p.Status) &&
			(after.IsZero() || t.updated.After(after))
		updated := t.updated
		t.mu.Unlock()
		if match {
			rows = append(rows, row{t, updated})
		}
	}
	s.mu.Unlock()
	sort.Slice(rows, func(i, j int) bool {
		if !rows[i].updated.Equal(rows[j].updated) {
			return rows[i].updated.After(rows[j].updated)
		}
		return rows[i].t.task.ID < rows[j].t.task.ID // ids never change: read without the lock
	})
	out := ListTasksResponse{Tasks: []Task{}, PageSize: size, TotalSize: len(rows)}
	for i := offset; i < len(rows) && i < offset+size; i++ {
		out.Tasks = append(out.Tasks, rows[i].t.snapshot(p.HistoryLength, p.IncludeArtifacts))
	}
	if offset+size < len(rows) {
		out.NextPageToken = strconv.Itoa(offset + size)
	}
	return out, nil
}

// cancelTask cancels a task that has not ended: CANCELED at once, its
// invocation cancelled down the chain.
func (s *Server) cancelTask(caller, id string) (any, *Error) {
	t, e := s.lookup(caller, id)
	if e != nil {
		return nil, e
	}
	msg := agentMessage(t, TextPart("cancelled by "+orName(caller, "its caller")))
	if !t.setStatus(TaskStatus{State: StateCanceled, Message: msg}, time.Now()) {
		st := t.state()
		return nil, rpcError(CodeTaskNotCancelable, "TASK_NOT_CANCELABLE", fmt.Sprintf("task %s is %s already", id, st),
			map[string]any{"taskId": id, "state": string(st)})
	}
	t.mu.Lock()
	cancel := t.cancel
	t.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	snap := t.snapshot(nil, true)
	return &snap, nil
}

func orName(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// janitor forgets ended tasks older than Keep.
func (s *Server) janitor() {
	defer s.wg.Done()
	tick := time.NewTicker(max(s.cfg.Keep/10, 100*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		cut := time.Now().Add(-s.cfg.Keep)
		s.mu.Lock()
		for id, t := range s.tasks {
			t.mu.Lock()
			old := t.task.Status.State.Terminal() && t.updated.Before(cut)
			t.mu.Unlock()
			if old {
				delete(s.tasks, id)
			}
		}
		s.mu.Unlock()
	}
}

// agentMessage is a status message of the agent in t's task.
func agentMessage(t *entry, parts ...Part) *Message {
	return &Message{MessageID: newID("msg-"), ContextID: t.task.ContextID, TaskID: t.task.ID, Role: RoleAgent, Parts: parts}
}

func newID(prefix string) string {
	b := make([]byte, 8)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// has reports whether list holds s.
func has(list []string, s string) bool { return slices.Contains(list, s) }
