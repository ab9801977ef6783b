package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"huddle/ipc/blueprint"
	"huddle/team"
)

func init() {
	commands = append(commands, command{name: "serve", summary: "expose the team's actions as skills over HTTP (invoke → status → result)", run: runServe})
}

func runServe(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("serve", "[--addr 127.0.0.1:7420] [--dir D] [--api-keys-file F] [--config PATH]", stderr)
	addr := fs.String("addr", "127.0.0.1:7420", "where to listen; without --api-keys-file only a loopback address")
	dir := fs.String("dir", huddleDir(), "team directory ($HUDDLE_DIR, else .huddle)")
	keysFile := fs.String("api-keys-file", "", "API keys, one \"KEY CALLER-ID\" per line; every request then needs one")
	config := fs.String("config", "", "the .puruto-ipc.json that governs HTTP callers (default: DIR/.puruto-ipc.json)")
	maxRunning := fs.Int("max-running", 64, "executions running at once; more get 429 with a retry hint")
	keep := fs.Duration("keep", time.Hour, "how long finished executions stay answerable")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "huddle: serve: "+format+"\n", a...)
		return exitUsage
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q", fs.Arg(0))
	}
	if *maxRunning <= 0 || *keep <= 0 {
		return bad("--max-running and --keep must be positive")
	}
	var keys *blueprint.Keys
	if *keysFile != "" {
		b, err := os.ReadFile(*keysFile)
		if err != nil {
			return bad("--api-keys-file: %v", err)
		}
		if keys, err = blueprint.ParseKeys(b); err != nil {
			return bad("--api-keys-file %s: %v", *keysFile, err)
		}
	} else if !loopback(*addr) {
		return bad("without --api-keys-file huddle serve listens only on a loopback address, not %s", *addr)
	}
	if *config == "" {
		*config = team.ServePolicyPath(*dir)
	}
	ctx, stop := signalContext()
	defer stop()
	backend, err := team.NewServeBackend(ctx, *dir, *config)
	if err != nil {
		fmt.Fprintf(stderr, "huddle: serve: %v\n", err)
		return exitFail
	}
	defer backend.Close()
	log := slog.New(slog.NewTextHandler(stderr, nil))
	srv, err := blueprint.NewServer(blueprint.ServerConfig{Backend: backend, Keys: keys, Store: blueprint.NewStore(*dir),
		MaxRunning: *maxRunning, Keep: *keep, Log: log})
	if err != nil {
		fmt.Fprintf(stderr, "huddle: serve: %v\n", err)
		return exitFail
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "huddle: serve: %v\n", err)
		return exitFail
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 15 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 64 << 10}
	fmt.Fprintf(stdout, "serving %d skills of the team in %s on http://%s\n", len(backend.Skills()), *dir, ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err = <-errc:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = hs.Shutdown(sctx)
		cancel()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "huddle: serve: %v\n", err)
		return exitFail
	}
	return exitOK
}

// loopback reports whether addr (host:port) is a loopback address.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
