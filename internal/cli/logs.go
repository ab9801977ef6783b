package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/teamdir"
)

func logsFlags(fs *flag.FlagSet) runFunc {
	transcript := fs.Bool("transcript", false, "print the member's llm transcript (members/NAME.transcript.jsonl) instead of its log")
	asJSON := fs.Bool("json", false, "with --transcript: print the raw JSON lines")
	follow := fs.Bool("f", false, "keep printing what is appended, until Ctrl-C")
	return func(cl *Cmdline) int { return runLogs(cl, *transcript, *asJSON, *follow) }
}

func runLogs(cl *Cmdline, transcript, asJSON, follow bool) int {
	if code, ok := cl.WantArgs(1, 1, "MEMBER"); !ok {
		return code
	}
	name := cl.Args[0]
	if asJSON && !transcript {
		return cl.UsageError("--json goes with --transcript")
	}
	if err := protocol.ValidateMemberName(name); err != nil {
		return cl.UsageError("%v", err)
	}
	return cl.WithTeam(func(ctx context.Context, st store.Store) int {
		return printLogs(ctx, cl, st, name, transcript, asJSON, follow)
	})
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

// printLogs prints what st holds of name's log or transcript, and with
// follow what is appended to it, until Ctrl-C: on a team directory its
// file in members/, on NATS the lines the runtime that runs name copies
// there from its machine.
func printLogs(ctx context.Context, cl *Cmdline, st store.Store, name string, transcript, asJSON, follow bool) int {
	t, err := team.LoadFrom(ctx, st)
	if err != nil {
		return cl.Fail(err)
	}
	spec, ok := t.Member(name)
	if !ok {
		return cl.Fail(fmt.Errorf("no member %q in team %s", name, t.Name))
	}
	if why := noLog(spec, transcript); why != "" {
		return cl.Fail(errors.New(why))
	}
	kind, file := store.LogStderr, teamdir.MemberLogPath
	if transcript {
		kind, file = store.LogTranscript, teamdir.TranscriptPath
	}
	what, print := logPrinter(transcript, asJSON)
	printed := false
	err = st.ReadLog(ctx, name, kind, follow, func(line []byte) { printed = true; print(cl.Stdout, line) })
	if errors.Is(err, store.ErrNotFound) {
		rel, _ := file("", name) // the name was checked: no error
		return cl.Fail(fmt.Errorf("%s has no %s%s", name, what, cl.notYet(rel)))
	}
	if err != nil && ctx.Err() == nil {
		return cl.Fail(err)
	}
	if !printed && !follow {
		return cl.Fail(fmt.Errorf("%s's %s is empty: it has written nothing yet", name, what))
	}
	return ExitOK
}

// noLog says why a member has no log (or transcript) at all: huddle
// writes a log for an exec or llm member and a transcript for an llm
// member, and nothing for the others.
func noLog(m team.MemberSpec, transcript bool) string {
	switch kind := m.Runtime.Kind; {
	case m.Target != nil:
		return m.Name + " is called through a command of its own, not run by huddle: it has no log"
	case transcript && kind != team.RuntimeLLM:
		return fmt.Sprintf("%s is a %s member: only an llm member has a transcript", m.Name, kind)
	case !transcript && kind == team.RuntimeScript:
		return m.Name + " is a script member: it writes no log (its steps are in team.json; huddle status shows what it does)"
	case !transcript && kind == team.RuntimeExternal:
		return m.Name + " is an external member: its log is its own, huddle keeps none"
	}
	return ""
}
