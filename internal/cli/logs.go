package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"huddle/protocol"
	"huddle/store"
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
	if err := protocol.ValidateMemberName(name); err != nil {
		return cl.usageError("%v", err)
	}
	if cl.onStore() {
		return cl.withStore(func(ctx context.Context, st store.Store) int {
			return logsOnStore(ctx, cl, st, name, transcript, asJSON, follow)
		})
	}
	t, err := team.Load(cl.dir)
	if err != nil {
		return cl.fail(err)
	}
	if _, ok := t.Member(name); !ok {
		return cl.fail(fmt.Errorf("no member %q in team %s", name, t.Name))
	}
	path, err := teamdir.MemberLogPath(cl.dir, name)
	if transcript {
		path, err = teamdir.TranscriptPath(cl.dir, name)
	}
	what, print := logPrinter(transcript, asJSON)
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

// logPrinter is what the log is called and how a line of it is printed.
func logPrinter(transcript, asJSON bool) (string, func(io.Writer, []byte)) {
	raw := func(w io.Writer, line []byte) { _, _ = w.Write(line) }
	switch {
	case transcript && asJSON:
		return "transcript (an llm member's turns)", raw
	case transcript:
		return "transcript (an llm member's turns)", printEntry
	}
	return "log (an exec member's stderr)", raw
}

// logsOnStore prints what the store holds of name's log, and with follow
// what is appended to it, until Ctrl-C: the lines the runtime that runs
// name copies there from its machine.
func logsOnStore(ctx context.Context, cl *cmdline, st store.Store, name string, transcript, asJSON, follow bool) int {
	t, err := team.LoadTeamOn(ctx, st)
	if err != nil {
		return cl.fail(err)
	}
	if _, ok := t.Member(name); !ok {
		return cl.fail(fmt.Errorf("no member %q in team %s", name, t.Name))
	}
	kind := store.LogStderr
	if transcript {
		kind = store.LogTranscript
	}
	what, print := logPrinter(transcript, asJSON)
	err = st.ReadLog(ctx, name, kind, follow, func(line []byte) { print(cl.stdout, line) })
	if errors.Is(err, store.ErrNotFound) {
		return cl.fail(fmt.Errorf("%s has no %s in the store yet", name, what))
	}
	if err != nil && ctx.Err() == nil {
		return cl.fail(err)
	}
	return exitOK
}
