package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"huddle/ipc/blueprint"
)

// ServeStdio serves caller's MCP server on in and out (a client that
// started huddle mcp as its process) until ctx ends or the client closes
// in.
func (d *Door) ServeStdio(ctx context.Context, caller string, in io.ReadCloser, out io.WriteCloser) error {
	return d.Server(caller).Run(ctx, lifting{&mcp.IOTransport{Reader: in, Writer: out}})
}

// lifting is a transport whose incoming tools/call requests have their
// "task" field moved where the SDK keeps it (liftTask).
type lifting struct{ mcp.Transport }

func (l lifting) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := l.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return liftingConn{c}, nil
}

type liftingConn struct{ mcp.Connection }

func (c liftingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if r, ok := m.(*jsonrpc.Request); ok && err == nil {
		r.Params = liftTask(r.Method, r.Params)
	}
	return m, err
}

// HTTPConfig sets up the door's streamable HTTP endpoint.
type HTTPConfig struct {
	// Keys, when set, require an API key (X-API-Key, or Authorization:
	// Bearer) on every request; its owner is the caller.
	Keys *blueprint.Keys
	// Caller is the caller of a server without keys.
	Caller string
}

// callerKey carries the authenticated caller to getServer.
type callerKey struct{}

// Handler serves MCP's streamable HTTP transport. Without keys it refuses
// what a browser could send (blueprint.BrowserRefusal); a session belongs
// to the caller that opened it, and another caller's key cannot use it.
func (d *Door) Handler(cfg HTTPConfig) http.Handler {
	sh := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		caller, _ := r.Context().Value(callerKey{}).(string)
		return d.Server(caller)
	}, &mcp.StreamableHTTPOptions{Logger: d.cfg.Log, MaxRequestBodyBytes: blueprint.MaxBody})
	var mu sync.Mutex
	owners := map[string]string{} // session id → caller
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cfg.Keys == nil {
			if f := blueprint.BrowserRefusal(r); f != nil {
				http.Error(w, f.Message+" ("+f.Detail+")", f.Status)
				return
			}
		}
		caller := cfg.Caller
		if cfg.Keys != nil {
			key := r.Header.Get("X-API-Key")
			if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && key == "" {
				key = strings.TrimSpace(b)
			}
			if key == "" {
				w.Header().Set("WWW-Authenticate", `Bearer realm="huddle"`)
				http.Error(w, "an API key is required: X-API-Key or Authorization: Bearer", http.StatusUnauthorized)
				return
			}
			owner, ok := cfg.Keys.Lookup(key)
			if !ok {
				http.Error(w, "the API key is not valid", http.StatusForbidden)
				return
			}
			caller = owner
		}
		if sid := r.Header.Get("Mcp-Session-Id"); sid != "" {
			mu.Lock()
			owner, known := owners[sid]
			mu.Unlock()
			if known && owner != caller {
				http.Error(w, "no such session", http.StatusNotFound)
				return
			}
		}
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, blueprint.MaxBody))
			if err != nil {
				http.Error(w, "the body exceeds 1 MiB or could not be read", http.StatusRequestEntityTooLarge)
				return
			}
			body = liftBody(body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		rec := &sessionRecorder{ResponseWriter: w}
		sh.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), callerKey{}, caller)))
		sid := rec.Header().Get("Mcp-Session-Id")
		if sid == "" {
			sid = r.Header.Get("Mcp-Session-Id")
		}
		mu.Lock()
		switch {
		case r.Method == http.MethodDelete:
			delete(owners, sid) // the client ended its session
		case sid != "":
			if _, known := owners[sid]; !known {
				owners[sid] = caller
			}
		}
		mu.Unlock()
	})
}

// sessionRecorder passes a response on; the handler reads the session id
// it set from its header.
type sessionRecorder struct{ http.ResponseWriter }

func (s *sessionRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *sessionRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// liftBody lifts the task of each tools/call in a POST's body, one message
// or a batch; a body that is not JSON is left for the SDK to refuse.
func liftBody(body []byte) []byte {
	trimmed := bytes.TrimSpace(body)
	lift := func(raw json.RawMessage) json.RawMessage {
		var m struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(raw, &m) != nil || m.Method != "tools/call" {
			return raw
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return raw
		}
		obj["params"] = liftTask(m.Method, m.Params)
		out, err := json.Marshal(obj)
		if err != nil {
			return raw
		}
		return out
	}
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(trimmed, &batch) != nil {
			return body
		}
		for i := range batch {
			batch[i] = lift(batch[i])
		}
		out, err := json.Marshal(batch)
		if err != nil {
			return body
		}
		return out
	}
	return lift(trimmed)
}
