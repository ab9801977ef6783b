package cli

import (
	"encoding/json"
	"flag"
	"os"
	"sync"

	"huddle/team"
	"huddle/tui"
)

// runtimeOptions are the options of a runtime started from the CLI.
func runtimeOptions(auto bool) team.Options {
	exe, _ := os.Executable()
	return team.Options{AutoApprove: auto, Executable: exe}
}

func upFlags(fs *flag.FlagSet) runFunc {
	headless := fs.Bool("headless", false, "print one JSON event per line on stdout instead of the UI")
	auto := fs.Bool("auto-approve", false, "approve every teammate's plan as it arrives, without the lead")
	return func(cl *cmdline) int { return runUp(cl, *headless, *auto) }
}

func runUp(cl *cmdline, headless, auto bool) int {
	if code, ok := cl.wantArgs(0, 0, ""); !ok {
		return code
	}
	ctx, stop := signalContext()
	defer stop()
	opts := runtimeOptions(auto)
	if !headless {
		if !isTerminal(cl.stdout) {
			return cl.exit(exitUsage, "stdout is not a terminal (use 'huddle up --headless' for JSON events)")
		}
		if err := tui.Run(ctx, tui.RunOptions{Dir: cl.dir, Runtime: &opts}); err != nil {
			return cl.fail(err)
		}
		return exitOK
	}
	var mu sync.Mutex
	enc := json.NewEncoder(cl.stdout)
	opts.OnEvent = func(e team.Event) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(e) // a reader that went away must not stop the team
	}
	if err := team.Run(ctx, cl.dir, opts); err != nil {
		return cl.fail(err)
	}
	return exitOK
}

func attachFlags(fs *flag.FlagSet) runFunc {
	return runAttach // --dir only
}

func runAttach(cl *cmdline) int {
	if code, ok := cl.wantArgs(0, 0, ""); !ok {
		return code
	}
	if !isTerminal(cl.stdout) {
		return cl.exit(exitUsage, "stdout is not a terminal, and the UI needs one ('huddle up --headless' prints events instead)")
	}
	if _, err := team.Load(cl.dir); err != nil {
		return cl.fail(err)
	}
	ctx, stop := signalContext()
	defer stop()
	if err := tui.Run(ctx, tui.RunOptions{Dir: cl.dir}); err != nil {
		return cl.fail(err)
	}
	return exitOK
}
