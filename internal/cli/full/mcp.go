package full

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"huddle/internal/cli"
	"huddle/ipc/blueprint"
	"huddle/protocol"
	"huddle/store"
	"huddle/team/mcpserve"
	"huddle/team/serve"
)

// runMCP is huddle mcp: the team as MCP tools, over stdio or streamable
// HTTP (--addr), until Ctrl-C.
func runMCP(cl *cli.Cmdline, o *cli.MCPFlags) int {
	if code, ok := cl.WantArgs(0, 0, ""); !ok {
		return code
	}
	if o.Keep <= 0 {
		return cl.UsageError("--keep must be positive")
	}
	if err := protocol.ValidateName(o.Caller); err != nil {
		return cl.UsageError("--caller: %v", err)
	}
	var deciders []string
	for _, d := range strings.Split(o.Decide, ",") {
		if d = strings.TrimSpace(d); d == "" {
			continue
		}
		if err := protocol.ValidateName(d); err != nil {
			return cl.UsageError("--decide: %v", err)
		}
		deciders = append(deciders, d)
	}
	var keys *blueprint.Keys
	switch {
	case o.KeysFile != "" && o.Addr == "":
		return cl.UsageError("--api-keys-file is for HTTP (--addr): over stdio the client is the process that started huddle mcp")
	case o.KeysFile != "":
		b, err := os.ReadFile(o.KeysFile)
		if err != nil {
			return cl.UsageError("--api-keys-file: %v", err)
		}
		if keys, err = blueprint.ParseKeys(b); err != nil {
			return cl.UsageError("--api-keys-file %s: %v", o.KeysFile, err)
		}
	case o.Addr != "" && !cli.Loopback(o.Addr):
		return cl.UsageError("without --api-keys-file huddle mcp listens only on a loopback address, not %s", o.Addr)
	}
	return cl.WithState(cli.NeedTeamAndLocal, func(ctx context.Context, st store.Store) int {
		policy, err := servePolicy(ctx, cl, st, &cli.ServeFlags{Config: o.Config})
		if err != nil {
			return cl.Fail(err)
		}
		backend, err := serve.NewServeBackend(ctx, st, policy)
		if err != nil {
			return cl.Fail(err)
		}
		defer backend.Close()
		version := "(devel)"
		if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
			version = info.Main.Version
		}
		door, err := mcpserve.New(ctx, mcpserve.Config{Store: st, Backend: serve.NewA2ABackend(backend, st), Deciders: deciders,
			Version: version, Keep: o.Keep, Log: slog.New(slog.NewTextHandler(cl.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err != nil {
			return cl.Fail(err)
		}
		defer door.Close()
		if o.Addr == "" {
			err := door.ServeStdio(ctx, o.Caller, io.NopCloser(os.Stdin), nopWriteCloser{cl.Stdout})
			if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
				return cl.Fail(err)
			}
			return cli.ExitOK
		}
		return serveMCPHTTP(ctx, cl, o, door, mcpserve.HTTPConfig{Keys: keys, Caller: o.Caller})
	})
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// serveMCPHTTP serves the door's streamable HTTP at /mcp until ctx ends.
func serveMCPHTTP(ctx context.Context, cl *cli.Cmdline, o *cli.MCPFlags, door *mcpserve.Door, cfg mcpserve.HTTPConfig) int {
	mux := http.NewServeMux()
	mux.Handle("/mcp", door.Handler(cfg))
	// No write timeout: a call's answer, and a task's result, come when
	// the lead has decided; the client going away ends them.
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 64 << 10}
	return serveHTTP(cl, ctx, hs, o.Addr, func(addr net.Addr) string {
		return fmt.Sprintf("serving the team in %s to MCP clients on http://%s/mcp", cl.TeamPlace(), addr)
	})
}
