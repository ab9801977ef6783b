package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/charmbracelet/x/term"
)

// Main runs huddle with args (the command line without the program's name)
// and returns its exit code. Without a command it opens the team of the
// directory, or runs the demo, on a terminal (withoutCommand), and prints
// the usage otherwise. With the OpenTelemetry variables set, the calls it
// makes are exported as spans, flushed before it returns.
func Main(args []string, stdout, stderr io.Writer) int {
	stop := startTraceExport(stderr)
	defer stop()
	return run(args, stdout, stderr)
}

// run is Main without the trace export.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (len(args) == 1 && args[0] == "--keep") {
		return withoutCommand(len(args) == 1, os.Stdin, stdout, stderr)
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		return help(args[1:], stdout, stderr)
	case "--version", "-version":
		return lookup("version").execute(args[1:], stdout, stderr)
	}
	if c := lookup(args[0]); c != nil {
		return c.execute(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "huddle: unknown command %q (run 'huddle help')\n", args[0])
	return exitUsage
}

// help is 'huddle help [COMMAND]'.
func help(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) > 1:
		fmt.Fprintf(stderr, "huddle: help: unexpected argument %q (run 'huddle help')\n", args[1])
		return exitUsage
	case len(args) == 0, args[0] == "help":
		printUsage(stdout)
		return exitOK
	}
	c := lookup(args[0])
	if c == nil {
		fmt.Fprintf(stderr, "huddle: help: unknown command %q (run 'huddle help')\n", args[0])
		return exitUsage
	}
	c.printHelp(stdout)
	return exitOK
}

// printUsage is 'huddle help': every command with its summary.
func printUsage(w io.Writer) {
	fmt.Fprintln(w, "huddle: a terminal supervisor for teams of agents")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "usage: huddle <command> [arguments and flags]")
	fmt.Fprintln(w, "       huddle            (on a terminal: attached to the team of $HUDDLE_STORE when it is set;")
	fmt.Fprintln(w, "                         else the team of $HUDDLE_DIR or .huddle if there is one, attached if")
	fmt.Fprintln(w, "                         it runs, else run after asking; elsewhere the demo team)")
	fmt.Fprintln(w, "       huddle --keep     (the demo team, keeping its directory: it is removed on exit otherwise)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "  %-10s %s\n", "help", "show this help, or a command's: huddle help <command>")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Flags may come before or after the arguments. --dir, the team directory, defaults to")
	fmt.Fprintln(w, "$HUDDLE_DIR, else .huddle. A command that takes --store URL (default $HUDDLE_STORE) runs on")
	fmt.Fprintln(w, "a team kept in NATS instead. Run 'huddle help <command>' for a command's flags.")
}

// printHelp is 'huddle help NAME' and 'huddle NAME -h': the usage line, what
// the command does and every flag it takes.
func (c *command) printHelp(w io.Writer) {
	fmt.Fprintf(w, "usage: huddle %s %s\n\n%s\n", c.name, c.synopsis, c.about)
	fs := c.flagSet()
	c.flags(fs)
	fmt.Fprintln(w, "\nflags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// isTerminalInput reports whether r is a terminal.
func isTerminalInput(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// signalContext ends on SIGINT, SIGTERM or SIGHUP: a closed terminal stops
// a command (huddle up stops its members) as cleanly as Ctrl-C does.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
}
