package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"huddle/protocol"
	"huddle/store"
	"huddle/team"
)

func restartFlags(fs *flag.FlagSet) runFunc {
	timeout := fs.Duration("timeout", 10*time.Second, "how long to wait for the runtime to restart it (`D`)")
	return func(cl *Cmdline) int { return runRestart(cl, *timeout) }
}

func runRestart(cl *Cmdline, timeout time.Duration) int {
	if code, ok := cl.WantArgs(1, 1, "a MEMBER"); !ok {
		return code
	}
	member := cl.Args[0]
	if err := protocol.ValidateMemberName(member); err != nil {
		return cl.UsageError("%v", err)
	}
	if timeout <= 0 {
		return cl.UsageError("--timeout must be more than 0")
	}
	return cl.WithTeam(func(ctx context.Context, st store.Store) int {
		asked := time.Now().Add(-time.Second)
		before, err := team.RequestRestart(ctx, st, member)
		if err != nil {
			return cl.Fail(err)
		}
		wctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		after, err := team.WaitMember(wctx, st, member, func(m *protocol.Member) bool { return m.RunID != before.RunID })
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				return cl.Fail(fmt.Errorf("asked the runtime to restart %s; not restarted after %v%s", member, timeout, refusal(ctx, st, member, asked)))
			}
			return cl.Fail(err)
		}
		return printRestarted(cl, member, before, after)
	})
}

// printRestarted is restart's line: what the member was, and is now.
func printRestarted(cl *Cmdline, member string, before, after *protocol.Member) int {
	was := string(before.Status)
	if before.Error != "" {
		was += " (" + team.Printable(before.Error) + ")"
	}
	fmt.Fprintf(cl.Stdout, "restarted %s, which was %s: now %s\n", member, was, after.Status)
	return ExitOK
}

// refusal is why the runtime refused to restart member since asked, from
// the team's dead letters, or a hint when they say nothing.
func refusal(ctx context.Context, st store.Store, member string, asked time.Time) string {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), OpenTimeout)
	defer cancel()
	letters, _, err := team.DeadLetters(rctx, st)
	if err != nil {
		return ""
	}
	return refusalIn(letters, member, asked)
}

func refusalIn(letters []team.DeadLetter, member string, asked time.Time) string {
	for i := len(letters) - 1; i >= 0; i-- {
		d := letters[i]
		if d.Source == "restart/"+member && !d.At.Before(asked) {
			return ": " + d.Reason
		}
	}
	return " (is the runtime stuck? 'huddle deadletters --member " + member + "' says what it refused)"
}
