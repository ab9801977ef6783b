package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"huddle/ipc/blueprint"
	"huddle/protocol"
	"huddle/store"
	"huddle/team/mcpserve"
	"huddle/team/serve"
)

// mcpOptions are the flags of huddle mcp.
type mcpOptions struct {
	addr, keysFile, config, caller, decide string
	keep                                   time.Duration
}

func mcpFlags(fs *flag.FlagSet) runFunc {
	var o mcpOptions
	fs.StringVar(&o.addr, "addr", "", "serve streamable HTTP at http://ADDR/mcp instead of stdio; without --api-keys-file only a loopback address")
	fs.StringVar(&o.keysFile, "api-keys-file", "", "API keys, one \"KEY CALLER-ID\" per line (as huddle serve's); every HTTP request then needs one")
	fs.StringVar(&o.config, "config", "", "the .puruto-ipc.json that governs the callers (default: DIR/.puruto-ipc.json)")
	fs.StringVar(&o.caller, "caller", "mcp", "who calls over stdio, or over HTTP without keys")
	fs.StringVar(&o.decide, "decide", "", "callers the lead lets approve and reject, comma-separated (default: none)")
	fs.DurationVar(&o.keep, "keep", time.Hour, "how long an ended task stays answerable")
	return func(cl *cmdline) int { return runMCP(cl, &o) }
}

func runMCP(cl *cmdline, o *mcpOptions) int {
	if code, ok := cl.wantArgs(0, 0, ""); !ok {
		return code
	}
	if o.keep <= 0 {
		return cl.usageError("--keep must be positive")
	}
	if err := protocol.ValidateName(o.caller); err != nil {
		return cl.usageError("--caller: %v", err)
	}
	var deciders []string
	for _, d := range strings.Split(o.decide, ",") {
		if d = strings.TrimSpace(d); d == "" {
			continue
		}
		if err := protocol.ValidateName(d); err != nil {
			return cl.usageError("--decide: %v", err)
		}
		deciders = append(deciders, d)
	}
	var keys *blueprint.Keys
	switch {
	case o.keysFile != "" && o.addr == "":
		return cl.usageError("--api-keys-file is for HTTP (--addr): over stdio the client is the process that started huddle mcp")
	case o.keysFile != "":
		b, err := os.ReadFile(o.keysFile)
		if err != nil {
			return cl.usageError("--api-keys-file: %v", err)
		}
		if keys, err = blueprint.ParseKeys(b); err != nil {
			return cl.usageError("--api-keys-file %s: %v", o.keysFile, err)
		}
	case o.addr != "" && !loopback(o.addr):
		return cl.usageError("without --api-keys-file huddle mcp listens only on a loopback address, not %s", o.addr)
	}
	return cl.withState(needTeamAndLocal, func(ctx context.Context, st store.Store) int {
		policy, err := servePolicy(ctx, cl, st, &serveOptions{config: o.config})
		if err != nil {
			return cl.fail(err)
		}
		backend, err := serve.NewServeBackend(ctx, st, policy)
		if err != nil {
			return cl.fail(err)
		}
		defer backend.Close()
		version := "(devel)"
		if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
			version = info.Main.Version
		}
		door, err := mcpserve.New(ctx, mcpserve.Config{Store: st, Backend: serve.NewA2ABackend(backend, st), Deciders: deciders,
			Version: version, Keep: o.keep, Log: slog.New(slog.NewTextHandler(cl.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err != nil {
			return cl.fail(err)
		}
		defer door.Close()
		if o.addr == "" {
			err := door.ServeStdio(ctx, o.caller, io.NopCloser(os.Stdin), nopWriteCloser{cl.stdout})
			if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
				return cl.fail(err)
			}
			return exitOK
		}
		return serveMCPHTTP(ctx, cl, o, door, mcpserve.HTTPConfig{Keys: keys, Caller: o.caller})
	})
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// serveMCPHTTP serves the door's streamable HTTP at /mcp until ctx ends.
func serveMCPHTTP(ctx context.Context, cl *cmdline, o *mcpOptions, door *mcpserve.Door, cfg mcpserve.HTTPConfig) int {
	mux := http.NewServeMux()
	mux.Handle("/mcp", door.Handler(cfg))
	// No write timeout: a call's answer, and a task's result, come when
	// the lead has decided; the client going away ends them.
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 64 << 10}
	return cl.serveHTTP(ctx, hs, o.addr, func(addr net.Addr) string {
		return fmt.Sprintf("serving the team in %s to MCP clients on http://%s/mcp", cl.teamPlace(), addr)
	})
}
