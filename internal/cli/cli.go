// Command huddle is a terminal supervisor for teams of agents. This file is
// the CLI: one small dispatcher, one FlagSet per subcommand.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// command is one subcommand: its name, a one-line summary and its entry.
type command struct {
	name, summary string
	hidden        bool
	run           func(args []string, stdout, stderr io.Writer) int
}

// commands lists every subcommand; usage is generated from it.
var commands []command

// Exit codes shared by every subcommand.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// Main runs huddle with args (without the program name) and returns its exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		if isTerminal(stdout) {
			return runDemo(stdout, stderr)
		}
		usage(stdout)
		return exitOK
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "huddle: unknown command %q (run 'huddle help')\n", args[0])
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "huddle: a terminal supervisor for teams of agents")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "usage: huddle <command> [flags]")
	fmt.Fprintln(w, "       huddle            (on a terminal: the demo team, run and shown live)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range commands {
		if !c.hidden {
			fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
		}
	}
	fmt.Fprintln(w, "  help       show this help")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'huddle <command> -h' for a command's flags.")
}

// newFlags makes a subcommand's FlagSet that reports errors instead of
// exiting, with usage going to stderr.
func newFlags(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: huddle %s %s\n", name, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args and returns the exit code to use when parsing
// stops the command (help asked for, or bad flags).
func parseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false
	}
	return 0, true
}
