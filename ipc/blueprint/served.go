package blueprint

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"
)

// ServedConfig is what `huddle serve` chooses; everything else about the
// stack it runs is fixed by NewServed.
type ServedConfig struct {
	// Dir is the team directory: its executions.jsonl is the store.
	Dir     string
	Backend Backend
	// Keys, when set, require an API key on every request.
	Keys *Keys
	// MaxRunning and Keep are as in ServerConfig.
	MaxRunning int
	Keep       time.Duration
	// LogTo gets the request log, one text line per request.
	LogTo io.Writer
}

// Served is the stack `huddle serve` runs: the Server with its store and
// request log, and the http.Server in front of it with the timeouts §9
// requires. Built in one place so that the command and BenchmarkCycle run
// the same thing.
type Served struct {
	*Server
	HTTP *http.Server
}

// NewServed builds the stack; Close the Server when done.
func NewServed(cfg ServedConfig) (*Served, error) {
	if cfg.Dir == "" {
		return nil, errors.New("blueprint: a served stack needs a team directory")
	}
	if cfg.LogTo == nil {
		cfg.LogTo = io.Discard
	}
	srv, err := NewServer(ServerConfig{Backend: cfg.Backend, Keys: cfg.Keys, Store: NewStore(cfg.Dir),
		MaxRunning: cfg.MaxRunning, Keep: cfg.Keep, Log: slog.New(slog.NewTextHandler(cfg.LogTo, nil))})
	if err != nil {
		return nil, err
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 15 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 64 << 10}
	return &Served{Server: srv, HTTP: hs}, nil
}
