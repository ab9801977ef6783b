package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/charmbracelet/x/term"

	"huddle/team"
	"huddle/tui"
)

func init() {
	commands = append(commands,
		command{name: "up", summary: "run the team in --dir with the UI (or --headless: JSON events)", run: runUp},
		command{name: "attach", summary: "open the UI on a team that another process runs", run: runAttach},
	)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// signalContext ends on SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// runtimeOptions are the options of a runtime started from the CLI.
func runtimeOptions(auto bool) team.Options {
	exe, _ := os.Executable()
	return team.Options{AutoApprove: auto, Executable: exe}
}

func runUp(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("up", "[--dir D] [--headless] [--auto-approve]", stderr)
	dir := fs.String("dir", huddleDir(), "team directory ($HUDDLE_DIR, else .huddle)")
	headless := fs.Bool("headless", false, "print one JSON event per line on stdout instead of the UI")
	auto := fs.Bool("auto-approve", false, "approve every plan as it arrives")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "huddle: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	ctx, stop := signalContext()
	defer stop()
	opts := runtimeOptions(*auto)
	if !*headless {
		if !isTerminal(stdout) {
			fmt.Fprintln(stderr, "huddle: stdout is not a terminal; use 'huddle up --headless' for JSON events")
			return exitUsage
		}
		if err := tui.Run(ctx, tui.RunOptions{Dir: *dir, Runtime: &opts}); err != nil {
			fmt.Fprintf(stderr, "huddle: %v\n", err)
			return exitFail
		}
		return exitOK
	}
	var mu sync.Mutex
	enc := json.NewEncoder(stdout)
	opts.OnEvent = func(e team.Event) {
		mu.Lock()
		defer mu.Unlock()
		enc.Encode(e)
	}
	if err := team.Run(ctx, *dir, opts); err != nil {
		fmt.Fprintf(stderr, "huddle: %v\n", err)
		return exitFail
	}
	return exitOK
}

func runAttach(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("attach", "[--dir D]", stderr)
	dir := fs.String("dir", huddleDir(), "team directory ($HUDDLE_DIR, else .huddle)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "huddle: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if !isTerminal(stdout) {
		fmt.Fprintln(stderr, "huddle: stdout is not a terminal; the UI needs one ('huddle up --headless' prints events instead)")
		return exitUsage
	}
	if _, err := team.Load(*dir); err != nil {
		fmt.Fprintf(stderr, "huddle: %v\n", err)
		return exitFail
	}
	ctx, stop := signalContext()
	defer stop()
	if err := tui.Run(ctx, tui.RunOptions{Dir: *dir}); err != nil {
		fmt.Fprintf(stderr, "huddle: %v\n", err)
		return exitFail
	}
	return exitOK
}

// runDemo is `huddle` with no arguments on a terminal: the embedded demo
// team in a fresh directory, run and shown in this process.
func runDemo(stdout, stderr io.Writer) int {
	dir, err := os.MkdirTemp("", "huddle-demo-")
	if err != nil {
		fmt.Fprintf(stderr, "huddle: %v\n", err)
		return exitFail
	}
	if err := team.Init(dir); err != nil {
		fmt.Fprintf(stderr, "huddle: %v\n", err)
		return exitFail
	}
	ctx, stop := signalContext()
	defer stop()
	opts := runtimeOptions(false)
	err = tui.Run(ctx, tui.RunOptions{Dir: dir, Runtime: &opts})
	fmt.Fprintf(stdout, "the demo team's directory was %s\n(huddle attach --dir %s looks at it again; huddle up --dir %s runs it again)\n", dir, dir, dir)
	if err != nil {
		fmt.Fprintf(stderr, "huddle: %v\n", err)
		return exitFail
	}
	return exitOK
}
