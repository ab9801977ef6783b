package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"huddle/protocol"
	"huddle/team"
	"huddle/teamdir"
)

func logsFlags(fs *flag.FlagSet) runFunc {
	transcript := fs.Bool("transcript", false, "print the member's llm transcript (members/NAME.transcript.jsonl) instead of its log")
	asJSON := fs.Bool("json", false, "with --transcript: print the raw JSON lines")
	follow := fs.Bool("f", false, "keep printing what is appended, until Ctrl-C")
	return func(cl *cmdline) int { return runLogs(cl, *transcript, *asJSON, *follow) }
}

func runLogs(cl *cmdline, transcript, asJSON, follow bool) int {
	if code, ok := cl.wantArgs(1, 1, "MEMBER"); !ok {
		return code
	}
	name := cl.args[0]
	if asJSON && !transcript {
		return cl.usageError("--json goes with --transcript")
	}
	t, err := team.Load(cl.dir)
	if err != nil {
		return cl.fail(err)
	}
	if err := protocol.ValidateMemberName(name); err != nil {
		return cl.usageError("%v", err)
	}
	if _, ok := t.Member(name); !ok {
		return cl.fail(fmt.Errorf("no member %q in team %s", name, t.Name))
	}
	path, err := teamdir.MemberLogPath(cl.dir, name)
	print := func(w io.Writer, line []byte) { _, _ = w.Write(line) }
	what := "log (an exec member's stderr)"
	if transcript {
		path, err = teamdir.TranscriptPath(cl.dir, name)
		what = "transcript (an llm member's turns)"
		print = printEntry
		if asJSON {
			print = func(w io.Writer, line []byte) { _, _ = w.Write(line) }
		}
	}
	if err != nil {
		return cl.fail(err)
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && !follow {
		return cl.fail(fmt.Errorf("%s has no %s yet: %s", name, what, path))
	}
	lines, off, err := team.ReadLines(path, 0)
	for _, l := range lines {
		print(cl.stdout, l)
	}
	if err != nil {
		return cl.fail(err)
	}
	if !follow {
		return exitOK
	}
	ctx, stop := signalContext()
	defer stop()
	if err := followFile(ctx, path, off, cl.stdout, print); err != nil {
		return cl.fail(err)
	}
	return exitOK
}

// followFile prints the lines appended to path from off on, as they are
// written, until ctx ends.
func followFile(ctx context.Context, path string, off int64, w io.Writer, print func(io.Writer, []byte)) error {
	f, err := team.Follow(path, off)
	if err != nil {
		return err
	}
	defer f.Close()
	for {
		lines, err := f.Next(ctx)
		for _, l := range lines {
			print(w, l)
		}
		if ctx.Err() != nil || errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// printEntry prints one transcript line readably (team.TranscriptLine).
func printEntry(w io.Writer, line []byte) { fmt.Fprintln(w, team.TranscriptLine(line)) }
