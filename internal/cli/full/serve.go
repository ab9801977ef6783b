package full

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"huddle/internal/cli"
	"huddle/ipc"
	"huddle/ipc/a2a"
	"huddle/ipc/blueprint"
	"huddle/store"
	"huddle/team"
	"huddle/team/serve"
)

// runServe is huddle serve: the Blueprint (and A2A with --a2a) over HTTP
// at --addr, until Ctrl-C.
func runServe(cl *cli.Cmdline, o *cli.ServeFlags) int {
	if code, ok := cl.WantArgs(0, 0, ""); !ok {
		return code
	}
	if o.MaxRunning <= 0 || o.Keep <= 0 {
		return cl.UsageError("--max-running and --keep must be positive")
	}
	var keys *blueprint.Keys
	if o.KeysFile != "" {
		b, err := os.ReadFile(o.KeysFile)
		if err != nil {
			return cl.UsageError("--api-keys-file: %v", err)
		}
		if keys, err = blueprint.ParseKeys(b); err != nil {
			return cl.UsageError("--api-keys-file %s: %v", o.KeysFile, err)
		}
	} else if !cli.Loopback(o.Addr) {
		return cl.UsageError("without --api-keys-file huddle serve listens only on a loopback address, not %s", o.Addr)
	}
	return cl.WithState(cli.NeedTeamAndLocal, func(ctx context.Context, st store.Store) int {
		policy, err := servePolicy(ctx, cl, st, o)
		if err != nil {
			return cl.Fail(err)
		}
		backend, err := serve.NewServeBackend(ctx, st, policy)
		if err != nil {
			return cl.Fail(err)
		}
		defer backend.Close()
		return serveBackend(ctx, cl, o, keys, st, backend, cl.TeamPlace())
	})
}

// servePolicy is the policy of HTTP callers: --config, else the team's
// .puruto-ipc.json: an entry of the store, or a file of the team
// directory, which huddle init --ipc writes.
func servePolicy(ctx context.Context, cl *cli.Cmdline, st store.Store, o *cli.ServeFlags) (*ipc.Policy, error) {
	if o.Config == "" && cl.Remote() {
		p, err := storedPolicy(ctx, cl, st, store.ConfigPolicy)
		if err != nil {
			return nil, fmt.Errorf("the policy of HTTP callers: %w", err)
		}
		return p, nil
	}
	path := o.Config
	if path == "" {
		path = serve.ServePolicyPath(cl.Dir)
	}
	p, err := ipc.LoadPolicy(path)
	if err != nil {
		return nil, fmt.Errorf("the policy of HTTP callers: %w (huddle init --ipc %s writes one)", err, cl.Dir)
	}
	return p, nil
}

// serveBackend serves backend's skills over HTTP until ctx ends; where
// says where the team is.
func serveBackend(ctx context.Context, cl *cli.Cmdline, o *cli.ServeFlags, keys *blueprint.Keys, st store.Store, backend *serve.ServeBackend, where string) int {
	srv, err := blueprint.NewServed(blueprint.ServedConfig{Dir: cl.Dir, Backend: backend, Keys: keys,
		MaxRunning: o.MaxRunning, Keep: o.Keep, LogTo: cl.Stderr})
	if err != nil {
		return cl.Fail(err)
	}
	defer srv.Close()
	hs := srv.HTTP
	also := ""
	if o.A2A {
		t, err := team.LoadFrom(ctx, st)
		if err != nil {
			return cl.Fail(err)
		}
		as, err := a2a.NewServer(a2a.ServerConfig{Backend: serve.NewA2ABackend(backend, st), Keys: keys,
			Name: t.Name, Description: fmt.Sprintf("The huddle team %s.", t.Name),
			MaxRunning: o.MaxRunning, Keep: o.Keep, Log: slog.New(slog.NewTextHandler(cl.Stderr, nil))})
		if err != nil {
			return cl.Fail(err)
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
	return serveHTTP(cl, ctx, hs, o.Addr, func(addr net.Addr) string {
		return fmt.Sprintf("serving %d skills of the team in %s on http://%s%s", len(backend.Skills()), where, addr, also)
	})
}

// serveHTTP listens on addr, says where (announce, given the address
// bound), and serves hs until it fails or ctx ends, then shuts it down,
// waiting at most 5 s for the requests under way: huddle serve's and
// huddle mcp's one loop.
func serveHTTP(cl *cli.Cmdline, ctx context.Context, hs *http.Server, addr string, announce func(net.Addr) string) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return cl.Fail(err)
	}
	fmt.Fprintln(cl.Stdout, announce(ln.Addr()))
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
		return cl.Fail(err)
	}
	return cli.ExitOK
}
