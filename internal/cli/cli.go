package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/charmbracelet/x/term"

	"huddle/internal/suggest"
	"huddle/ipc/trace"
)

// Main is huddle: it runs a command with args (the command line without
// the program's name) and returns its exit code. A command that needs
// what only huddle-full links, and every command while the OpenTelemetry
// variables ask for spans (the export is huddle-full's), runs in
// huddle-full: this process executes it with the same arguments
// (handOver). Without a command it prints the usage off a terminal, and
// on one opens the team of the directory, or the demo, in huddle-full.
func Main(args []string, stdout, stderr io.Writer) int {
	h := handOver{args: args, stderr: stderr}
	if trace.ExportWanted() {
		return h.run()
	}
	return run(h, args, stdout, stderr)
}

// MainFull is huddle-full: every command of Main run in this process,
// with f for those that need it, and the spans of the calls it makes
// exported when the OpenTelemetry variables ask for it, flushed before
// it returns.
func MainFull(f Full, args []string, stdout, stderr io.Writer) int {
	stop := f.ExportTraces(stderr)
	defer stop()
	return run(f, args, stdout, stderr)
}

// Execute runs the command name with args, f giving what it needs of
// huddle-full: huddle alone uses it to attach, or run, a team.
func Execute(f Full, name string, args []string, stdout, stderr io.Writer) int {
	return lookup(name).execute(f, args, stdout, stderr)
}

// run is Main and MainFull once the export is settled.
func run(f Full, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (len(args) == 1 && args[0] == "--keep") {
		if !IsTerminal(stdout) {
			printUsage(stdout)
			return ExitOK
		}
		return f.NoCommand(len(args) == 1, os.Stdin, stdout, stderr)
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		return help(args[1:], stdout, stderr)
	case "--version", "-version":
		return lookup("version").execute(f, args[1:], stdout, stderr)
	case completeCommand:
		return runComplete(args[1:], stdout)
	}
	if c := lookup(args[0]); c != nil {
		return c.execute(f, args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "huddle: %s (run 'huddle help')\n", unknownCommand(args[0]))
	return ExitUsage
}

// unknownCommand says name is no command, and which it was meant to be
// when one is near.
func unknownCommand(name string) string {
	names := []string{"help"}
	for _, c := range commands {
		names = append(names, c.name)
	}
	msg := fmt.Sprintf("unknown command %q", name)
	if s := suggest.Nearest(name, names); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg
}

// help is 'huddle help [COMMAND]'.
func help(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) > 1:
		fmt.Fprintf(stderr, "huddle: help: unexpected argument %q (run 'huddle help')\n", args[1])
		return ExitUsage
	case len(args) == 0, args[0] == "help":
		printUsage(stdout)
		return ExitOK
	}
	c := lookup(args[0])
	if c == nil {
		fmt.Fprintf(stderr, "huddle: help: %s (run 'huddle help')\n", unknownCommand(args[0]))
		return ExitUsage
	}
	c.printHelp(stdout)
	return ExitOK
}

// helpWidth is the width 'huddle help' fits in.
const helpWidth = 80

// printUsage is 'huddle help': every command with its summary, in 80
// columns.
func printUsage(w io.Writer) {
	fmt.Fprintln(w, "huddle: a terminal supervisor for teams of agents")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "usage: huddle <command> [arguments and flags]")
	fmt.Fprintln(w, "       huddle          on a terminal: the team of $HUDDLE_STORE, else of")
	fmt.Fprintln(w, "                       $HUDDLE_DIR or .huddle, attached if it runs, else run")
	fmt.Fprintln(w, "                       after asking; with neither, the demo team")
	fmt.Fprintln(w, "       huddle --keep   the demo team, its directory kept (else removed on exit)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	const indent = 14 // "  " + a name in 11 + " "
	for _, c := range commands {
		fmt.Fprintf(w, "  %-11s %s\n", c.name, wrap(c.summary, helpWidth-indent, indent))
	}
	fmt.Fprintf(w, "  %-11s %s\n", "help", wrap("show this help, or a command's: huddle help <command>", helpWidth-indent, indent))
	fmt.Fprintln(w)
	fmt.Fprintln(w, wrap("Flags may come before or after the arguments. --dir, the team directory, defaults "+
		"to $HUDDLE_DIR, else .huddle. A command that takes --store URL (default $HUDDLE_STORE) runs on "+
		"a team kept in NATS instead. Run 'huddle help <command>' for a command's flags.", helpWidth, 0))
}

// wrap breaks text at spaces into lines of at most width columns, the
// lines after the first indented by indent spaces. A word longer than
// width stands alone on its line.
func wrap(text string, width, indent int) string {
	var b strings.Builder
	col := 0
	for i, word := range strings.Fields(text) {
		n := utf8.RuneCountInString(word)
		switch {
		case i == 0:
		case col+1+n > width:
			b.WriteString("\n" + strings.Repeat(" ", indent))
			col = 0
		default:
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += n
	}
	return b.String()
}

// printHelp is 'huddle help NAME' and 'huddle NAME -h': the usage line, what
// the command does and every flag it takes.
func (c *command) printHelp(w io.Writer) {
	fmt.Fprintf(w, "usage: huddle %s %s\n\n%s\n", c.name, c.synopsis, c.about)
	fs := c.flagSet()
	c.flags(fs)
	fmt.Fprintln(w, "\nflags:")
	printFlags(w, fs)
}

// printFlags lists fs's flags as the usage lines write them, --name ARG,
// each with its meaning wrapped below it.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		line := "  " + dashed(f.Name)
		if arg != "" {
			line += " " + strings.ToUpper(arg)
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && !strings.Contains(usage, "(default") {
			usage += fmt.Sprintf(" (default %q)", f.DefValue)
		}
		fmt.Fprintf(w, "%s\n      %s\n", line, wrap(usage, helpWidth-6, 6))
	})
}

// flagError is a flag parsing error said with the flags as the usage
// writes them (--name), and the flag an unknown one was meant to be.
func flagError(err error, fs *flag.FlagSet) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		name = strings.TrimLeft(name, "-")
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		msg = "unknown flag " + dashed(name)
		if s := suggest.Nearest(name, names); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", dashed(s))
		}
		return msg
	}
	for _, prefix := range []string{"flag needs an argument: -", "for flag -"} {
		if i := strings.Index(msg, prefix); i >= 0 {
			rest := msg[i+len(prefix):]
			name, tail, _ := strings.Cut(rest, ":")
			if tail != "" {
				tail = ":" + tail
			}
			return msg[:i] + prefix[:len(prefix)-1] + dashed(name) + tail
		}
	}
	return msg
}

// dashed is a flag's name as the usage lines write it: -f for one letter,
// --name otherwise.
func dashed(name string) string {
	if utf8.RuneCountInString(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// IsTerminalInput reports whether r is a terminal.
func IsTerminalInput(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// SignalContext ends on SIGINT, SIGTERM or SIGHUP: a closed terminal stops
// a command (huddle up stops its members) as cleanly as Ctrl-C does.
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
}
