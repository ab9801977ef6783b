package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"huddle/team"
)

func init() {
	commands = append(commands, command{name: "up", summary: "run the team in --dir (headless: JSON events on stdout)", run: runUp})
}

func runUp(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("up", "[--dir D] [--headless] [--auto-approve]", stderr)
	dir := fs.String("dir", huddleDir(), "team directory")
	headless := fs.Bool("headless", false, "print one JSON event per line on stdout instead of a UI")
	auto := fs.Bool("auto-approve", false, "approve every plan as it arrives")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "huddle up: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	_ = headless // the UI is the issue after this one; until then up is headless
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var mu sync.Mutex
	enc := json.NewEncoder(stdout)
	exe, _ := os.Executable()
	err := team.Run(ctx, *dir, team.Options{
		AutoApprove: *auto,
		Executable:  exe,
		OnEvent: func(e team.Event) {
			mu.Lock()
			defer mu.Unlock()
			enc.Encode(e)
		},
	})
	if err != nil {
		fmt.Fprintf(stderr, "huddle up: %v\n", err)
		return exitFail
	}
	return exitOK
}
