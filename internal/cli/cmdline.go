package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"huddle/team"
)

// Exit codes shared by every command.
const (
	ExitOK    = 0
	ExitFail  = 1 // the command ran and failed
	ExitUsage = 2 // bad flags or arguments: nothing was done
)

// Cmdline is one run of a command: its positional arguments, its team
// directory and where it reports. Every error is one line on stderr:
// "huddle: NAME: what went wrong (hint)".
type Cmdline struct {
	Name string   // the command's
	Args []string // the positional arguments, flags taken out
	Dir  string   // --dir, for a command that takes a team directory
	// --store and --nats-creds, for a command that runs on a store; the
	// URL's credentials are scrubbed from every error line.
	storeURL, natsCreds string
	secrets             []string
	fs                  *flag.FlagSet
	Stdout, Stderr      io.Writer
	full                Full // what runs the commands of huddle-full
	brief               bool // the command's (command.brief)
}

// execute parses args with c's flags, wherever they stand, and runs c,
// with f for what it needs of huddle-full.
// -h or --help prints c's help on stdout.
func (c *command) execute(f Full, args []string, stdout, stderr io.Writer) int {
	fs := c.flagSet()
	run := c.flags(fs)
	cl := &Cmdline{Name: c.name, fs: fs, Stdout: stdout, Stderr: stderr, full: f, brief: c.brief}
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		c.printHelp(stdout)
		return ExitOK
	}
	if err != nil {
		return cl.UsageError("%s", flagError(err, fs))
	}
	cl.Args = pos
	if c.teamDir {
		cl.Dir = fs.Lookup("dir").Value.String()
		if cl.Dir == "" {
			return cl.UsageError("--dir is empty")
		}
	}
	if c.store {
		if code, ok := cl.readStoreFlags(); !ok {
			return code
		}
	}
	return run(cl)
}

// flagSet is a FlagSet for c that reports nothing itself (execute and
// printHelp do), with --dir when c takes a team directory.
func (c *command) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if c.teamDir {
		fs.String("dir", DefaultTeamDir(), "team `directory` ($HUDDLE_DIR, else .huddle)")
	}
	if c.store {
		addStoreFlags(fs)
	}
	return fs
}

// DefaultTeamDir is the team directory without --dir: $HUDDLE_DIR, else
// .huddle.
func DefaultTeamDir() string {
	if d := os.Getenv("HUDDLE_DIR"); d != "" {
		return d
	}
	return ".huddle"
}

// parseInterleaved parses flags wherever they stand among the positional
// arguments (Go's flag package stops at the first one; "--" still ends the
// flags) and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// Exit reports what went wrong in one line and returns code.
func (cl *Cmdline) Exit(code int, format string, a ...any) int {
	msg := fmt.Sprintf(format, a...)
	for _, s := range cl.secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "***")
		}
	}
	fmt.Fprintf(cl.Stderr, "huddle: %s: %s\n", cl.Name, team.Printable(msg))
	return code
}

// Fail reports a failure of the command and returns ExitFail.
func (cl *Cmdline) Fail(err error) int { return cl.Exit(ExitFail, "%v", err) }

// UsageError reports bad arguments, pointing to the command's help, and
// returns ExitUsage.
func (cl *Cmdline) UsageError(format string, a ...any) int {
	return cl.Exit(ExitUsage, "%s (run 'huddle help %s')", fmt.Sprintf(format, a...), cl.Name)
}

// WantArgs checks the number of positional arguments: at least min, and at
// most max unless max < 0. what names the first missing one.
func (cl *Cmdline) WantArgs(min, max int, what string) (int, bool) {
	switch {
	case len(cl.Args) < min:
		return cl.UsageError("%s is required", what), false
	case max >= 0 && len(cl.Args) > max:
		return cl.UsageError("unexpected argument %q", cl.Args[max]), false
	}
	return 0, true
}

// FlagGiven reports whether the flag name was given on the command line.
func (cl *Cmdline) FlagGiven(name string) bool {
	given := false
	cl.fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// PrintJSON writes v on stdout as indented JSON.
func (cl *Cmdline) PrintJSON(v any) int {
	if err := writeJSON(cl.Stdout, v); err != nil {
		return cl.Fail(err)
	}
	return ExitOK
}

// AddSecret scrubs s from every error line of the command (a URL that
// carries a token).
func (cl *Cmdline) AddSecret(s string) { cl.secrets = append(cl.secrets, s) }

// context is the context a command runs its work in: one that ends on
// Ctrl-C, SIGTERM or SIGHUP, so that a command that waits or serves stops
// cleanly. A brief command (command.brief) installs no handler: the
// signals keep their default action, which ends it at any instant as
// kill -9 would, what every write of huddle's is made to survive
// (docs/ARCHITECTURE.md, "Principles"); the handler's goroutines and
// threads would be a sixth of its start.
func (cl *Cmdline) context() (context.Context, context.CancelFunc) {
	if cl.brief {
		return context.WithCancel(context.Background())
	}
	return SignalContext()
}
