package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"huddle/ipc"
	"huddle/ipc/a2a"
	"huddle/ipc/blueprint"
	"huddle/store"
	"huddle/team"
	"huddle/team/serve"
)

// serveOptions are the flags of huddle serve.
type serveOptions struct {
	addr, keysFile, config string
	maxRunning             int
	keep                   time.Duration
	a2a                    bool
}

func serveFlags(fs *flag.FlagSet) runFunc {
	var o serveOptions
	fs.StringVar(&o.addr, "addr", "127.0.0.1:7420", "where to listen; without --api-keys-file only a loopback address")
	fs.StringVar(&o.keysFile, "api-keys-file", "", "API keys, one \"KEY CALLER-ID\" per line; every request then needs one")
	fs.StringVar(&o.config, "config", "", "the .puruto-ipc.json that governs HTTP callers (default: DIR/.puruto-ipc.json)")
	fs.IntVar(&o.maxRunning, "max-running", 64, "executions running at once; more get 429 with a retry hint")
	fs.DurationVar(&o.keep, "keep", time.Hour, "how long finished executions (and A2A tasks) stay answerable")
	fs.BoolVar(&o.a2a, "a2a", false, "serve A2A v1.0 beside the Blueprint: the Agent Card at "+a2a.CardPath+", JSON-RPC at /a2a")
	return func(cl *cmdline) int { return runServe(cl, &o) }
}

func runServe(cl *cmdline, o *serveOptions) int {
	if code, ok := cl.wantArgs(0, 0, ""); !ok {
		return code
	}
	if o.maxRunning <= 0 || o.keep <= 0 {
		return cl.usageError("--max-running and --keep must be positive")
	}
	var keys *blueprint.Keys
	if o.keysFile != "" {
		b, err := os.ReadFile(o.keysFile)
		if err != nil {
			return cl.usageError("--api-keys-file: %v", err)
		}
		if keys, err = blueprint.ParseKeys(b); err != nil {
			return cl.usageError("--api-keys-file %s: %v", o.keysFile, err)
		}
	} else if !loopback(o.addr) {
		return cl.usageError("without --api-keys-file huddle serve listens only on a loopback address, not %s", o.addr)
	}
	return cl.withState(needTeamAndLocal, func(ctx context.Context, st store.Store) int {
		policy, err := servePolicy(ctx, cl, st, o)
		if err != nil {
			return cl.fail(err)
		}
		backend, err := serve.NewServeBackend(ctx, st, policy)
		if err != nil {
			return cl.fail(err)
		}
		defer backend.Close()
		return serveBackend(ctx, cl, o, keys, st, backend, cl.teamPlace())
	})
}

// servePolicy is the policy of HTTP callers: --config, else the team's
// .puruto-ipc.json: an entry of the store, or a file of the team
// directory, which huddle init --ipc writes.
func servePolicy(ctx context.Context, cl *cmdline, st store.Store, o *serveOptions) (*ipc.Policy, error) {
	if o.config == "" && cl.remote() {
		p, err := storedPolicy(ctx, cl, st, store.ConfigPolicy)
		if err != nil {
			return nil, fmt.Errorf("the policy of HTTP callers: %w", err)
		}
		return p, nil
	}
	path := o.config
	if path == "" {
		path = serve.ServePolicyPath(cl.dir)
	}
	p, err := ipc.LoadPolicy(path)
	if err != nil {
		return nil, fmt.Errorf("the policy of HTTP callers: %w (huddle init --ipc %s writes one)", err, cl.dir)
	}
	return p, nil
}

// serveBackend serves backend's skills over HTTP until ctx ends; where
// says where the team is.
func serveBackend(ctx context.Context, cl *cmdline, o *serveOptions, keys *blueprint.Keys, st store.Store, backend *serve.ServeBackend, where string) int {
	srv, err := blueprint.NewServed(blueprint.ServedConfig{Dir: cl.dir, Backend: backend, Keys: keys,
		MaxRunning: o.maxRunning, Keep: o.keep, LogTo: cl.stderr})
	if err != nil {
		return cl.fail(err)
	}
	defer srv.Close()
	hs := srv.HTTP
	also := ""
	if o.a2a {
		t, err := team.LoadFrom(ctx, st)
		if err != nil {
			return cl.fail(err)
		}
		as, err := a2a.NewServer(a2a.ServerConfig{Backend: serve.NewA2ABackend(backend, st), Keys: keys,
			Name: t.Name, Description: fmt.Sprintf("The huddle team %s.", t.Name),
			MaxRunning: o.maxRunning, Keep: o.keep, Log: slog.New(slog.NewTextHandler(cl.stderr, nil))})
		if err != nil {
			return cl.fail(err)
		}
		as.ServeLegacy()
		defer as.Close()
		mux := http.NewServeMux()
		for _, p := range as.Paths() {
			mux.Handle(p, as.Handler())
		}
		mux.Handle("/", hs.Handler)
		hs.Handler = mux
		also = ", A2A's Agent Card at " + a2a.CardPath
	}
	return cl.serveHTTP(ctx, hs, o.addr, func(addr net.Addr) string {
		return fmt.Sprintf("serving %d skills of the team in %s on http://%s%s", len(backend.Skills()), where, addr, also)
	})
}

// serveHTTP listens on addr, says where (announce, given the address
// bound), and serves hs until it fails or ctx ends, then shuts it down,
// waiting at most 5 s for the requests under way: huddle serve's and
// huddle mcp's one loop.
func (cl *cmdline) serveHTTP(ctx context.Context, hs *http.Server, addr string, announce func(net.Addr) string) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return cl.fail(err)
	}
	fmt.Fprintln(cl.stdout, announce(ln.Addr()))
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }() // owner: serveHTTP; ends with Shutdown
	select {
	case err = <-errc:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = hs.Shutdown(sctx)
		cancel()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return cl.fail(err)
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
