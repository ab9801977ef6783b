package cli

import (
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
	exitOK    = 0
	exitFail  = 1 // the command ran and failed
	exitUsage = 2 // bad flags or arguments: nothing was done
)

// cmdline is one run of a command: its positional arguments, its team
// directory and where it reports. Every error is one line on stderr:
// "huddle: NAME: what went wrong (hint)".
type cmdline struct {
	name string
	args []string // the positional arguments, flags taken out
	dir  string   // --dir, for a command that takes a team directory
	// --store and --nats-creds, for a command that runs on a store; the
	// URL's credentials are scrubbed from every error line.
	storeURL, natsCreds string
	secrets             []string
	fs                  *flag.FlagSet
	stdout, stderr      io.Writer
}

// execute parses args with c's flags, wherever they stand, and runs c.
// -h or --help prints c's help on stdout.
func (c *command) execute(args []string, stdout, stderr io.Writer) int {
	fs := c.flagSet()
	run := c.flags(fs)
	cl := &cmdline{name: c.name, fs: fs, stdout: stdout, stderr: stderr}
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		c.printHelp(stdout)
		return exitOK
	}
	if err != nil {
		return cl.usageError("%s", flagError(err, fs))
	}
	cl.args = pos
	if c.teamDir {
		cl.dir = fs.Lookup("dir").Value.String()
		if cl.dir == "" {
			return cl.usageError("--dir is empty")
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
		fs.String("dir", defaultTeamDir(), "team `directory` ($HUDDLE_DIR, else .huddle)")
	}
	if c.store {
		addStoreFlags(fs)
	}
	return fs
}

// defaultTeamDir is the team directory without --dir: $HUDDLE_DIR, else
// .huddle.
func defaultTeamDir() string {
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

// exit reports what went wrong in one line and returns code.
func (cl *cmdline) exit(code int, format string, a ...any) int {
	msg := fmt.Sprintf(format, a...)
	for _, s := range cl.secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "***")
		}
	}
	fmt.Fprintf(cl.stderr, "huddle: %s: %s\n", cl.name, team.Printable(msg))
	return code
}

// fail reports a failure of the command and returns exitFail.
func (cl *cmdline) fail(err error) int { return cl.exit(exitFail, "%v", err) }

// usageError reports bad arguments, pointing to the command's help, and
// returns exitUsage.
func (cl *cmdline) usageError(format string, a ...any) int {
	return cl.exit(exitUsage, "%s (run 'huddle help %s')", fmt.Sprintf(format, a...), cl.name)
}

// wantArgs checks the number of positional arguments: at least min, and at
// most max unless max < 0. what names the first missing one.
func (cl *cmdline) wantArgs(min, max int, what string) (int, bool) {
	switch {
	case len(cl.args) < min:
		return cl.usageError("%s is required", what), false
	case max >= 0 && len(cl.args) > max:
		return cl.usageError("unexpected argument %q", cl.args[max]), false
	}
	return 0, true
}

// flagGiven reports whether the flag name was given on the command line.
func (cl *cmdline) flagGiven(name string) bool {
	given := false
	cl.fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
