package cli

import (
	"context"
	"flag"
	"fmt"

	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/teamdir"
)

// deadLettersAbout is the help of huddle deadletters, with its JSON shape.
const deadLettersAbout = "List the team's dead letters (deadletter.jsonl), oldest first: input huddle refused, when,\n" +
	"who caused it (the sender of a message, the exec member that wrote the line, who asked for a\n" +
	"restart), whose inbox or stdout it came through (or who was to be restarted), and why.\n" +
	"--member M lists those M caused or received.\n" +
	"--json prints an array of objects, every key always present (\"\" or 0 when not known):\n" +
	"  {\"at\": time, \"source\": \"inbox/NAME.jsonl\" | \"exec:NAME\" | \"restart/NAME\", \"member\": NAME,\n" +
	"   \"by\": NAME, \"message_id\": ID, \"type\": the message's type, the line's action or \"restart\",\n" +
	"   \"offset\": N,\n" +
	"   \"reason\": TEXT, \"raw\": the refused input, cut to 4 KiB}"

func deadLettersFlags(fs *flag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print the dead letters as a JSON array (the shape above)")
	member := fs.String("member", "", "only the dead letters `M` caused or received (a member or lead)")
	return func(cl *Cmdline) int { return runDeadLetters(cl, *asJSON, *member) }
}

func runDeadLetters(cl *Cmdline, asJSON bool, member string) int {
	if code, ok := cl.WantArgs(0, 0, ""); !ok {
		return code
	}
	if cl.FlagGiven("member") {
		if err := protocol.ValidateName(member); err != nil {
			return cl.UsageError("--member: %v", err)
		}
	}
	return cl.WithTeam(func(ctx context.Context, st store.Store) int {
		all, skipped, err := team.DeadLetters(ctx, st)
		if err != nil {
			return cl.Fail(err)
		}
		if skipped > 0 {
			where, unit := cl.where(teamdir.DeadLetterFile)
			fmt.Fprintf(cl.Stderr, "huddle: %s: warning: %s of %s skipped: not dead letters\n", cl.Name, plural(skipped, unit), where)
		}
		return printDeadLetters(cl, all, member, asJSON)
	})
}

// printDeadLetters prints the dead letters member caused or received (all
// when ""), as a table or JSON.
func printDeadLetters(cl *Cmdline, all []team.DeadLetter, member string, asJSON bool) int {
	letters := []team.DeadLetter{}
	for i := range all {
		if member == "" || all[i].Caused(member) {
			letters = append(letters, all[i])
		}
	}
	if asJSON {
		if err := writeJSON(cl.Stdout, letters); err != nil {
			return cl.Fail(err)
		}
		return ExitOK
	}
	if len(letters) == 0 {
		fmt.Fprintln(cl.Stdout, "no dead letters")
		return ExitOK
	}
	tw := NewTable(cl.Stdout, 4)
	fmt.Fprintln(tw, "AT\tBY\tTHROUGH\tTYPE\tREASON")
	for _, d := range letters {
		at := "-"
		if !d.At.IsZero() {
			at = d.At.Local().Format("2006-01-02 15:04:05")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", at, dash(d.By), d.Source, dash(d.Type), team.Printable(d.Reason))
	}
	if err := tw.Flush(); err != nil {
		return cl.Fail(err)
	}
	fmt.Fprintf(cl.Stdout, "%s (--json adds the refused input)\n", plural(len(letters), "dead letter"))
	return ExitOK
}
