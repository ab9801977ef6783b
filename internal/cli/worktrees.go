package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"huddle/store"
	"huddle/team"
)

const worktreesAbout = "List the team's git worktrees, one per coding teammate whose workspace in team.json has\n" +
	"\"worktree\": true (docs/worktrees.md): member, branch, commits ahead of and behind its base, its\n" +
	"size, and whether a member of team.json still works in it (an orphan does not). The total and\n" +
	"the workspace's max_disk close the list.\n" +
	"'prune' removes the orphans. What one would lose (commits its base does not hold, files no\n" +
	"commit holds) is named, and nothing is removed without --yes.\n" +
	"'finish MEMBER' removes MEMBER's worktree and branch the same way, after its teardown script\n" +
	"(when the lead approved it): the way a worktree ends by hand."

func worktreesFlags(fs *flag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	yes := fs.Bool("yes", false, "prune, finish: remove even what holds unmerged work (named first)")
	return func(cl *Cmdline) int {
		return cl.WithTeam(func(ctx context.Context, st store.Store) int {
			t, err := team.LoadFrom(ctx, st)
			if err != nil {
				return cl.Exit(ExitFail, "%v", err)
			}
			return runWorktrees(ctx, cl, st, t, *asJSON, *yes)
		})
	}
}

// runWorktrees is huddle worktrees on team t, whose worktrees are on this
// machine, under --dir (the team directory, or this machine's directory of
// a team in a store).
func runWorktrees(ctx context.Context, cl *Cmdline, st store.Store, t *team.Team, asJSON, yes bool) int {
	verb := ""
	if len(cl.Args) > 0 {
		verb = cl.Args[0]
	}
	switch verb {
	case "", "list":
		if code, ok := cl.WantArgs(0, 1, ""); !ok {
			return code
		}
		if yes {
			return cl.UsageError("--yes goes with prune or finish")
		}
		return listWorktrees(ctx, cl, t, asJSON)
	case "prune":
		if code, ok := cl.WantArgs(1, 1, ""); !ok {
			return code
		}
		return removeWorktrees(ctx, cl, st, t, "", yes, asJSON)
	case "finish":
		if code, ok := cl.WantArgs(2, 2, "MEMBER"); !ok {
			return code
		}
		return removeWorktrees(ctx, cl, st, t, cl.Args[1], yes, asJSON)
	}
	return cl.UsageError("unknown %q: want list, prune or finish MEMBER", verb)
}

func listWorktrees(ctx context.Context, cl *Cmdline, t *team.Team, asJSON bool) int {
	l, err := team.ListWorktrees(ctx, t, cl.Dir, false)
	if err != nil && l == nil {
		return cl.Exit(ExitFail, "%v", err)
	}
	if err != nil {
		fmt.Fprintf(cl.Stderr, "huddle: %s: warning: %v\n", cl.Name, team.Printable(err.Error()))
	}
	if asJSON {
		if err := writeJSON(cl.Stdout, l); err != nil {
			return cl.Exit(ExitFail, "%v", err)
		}
		return ExitOK
	}
	tw := NewTable(cl.Stdout, 0)
	fmt.Fprintln(tw, "MEMBER\tBRANCH\tBASE\tAHEAD\tBEHIND\tSIZE\tUSED\tPATH")
	for _, w := range l.Worktrees {
		used := "yes"
		switch {
		case w.Missing:
			used = "gone"
		case !w.InUse:
			used = "orphan"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", w.Member, w.Branch, dash(w.Base), w.Ahead, w.Behind, team.FormatSize(w.Size), used, w.Path)
	}
	_ = tw.Flush()
	fmt.Fprintln(cl.Stdout, diskLine(l))
	return ExitOK
}

// diskLine says what the worktrees take, against the limit.
func diskLine(l *team.WorktreeList) string {
	s := fmt.Sprintf("%d worktree(s), %s", len(l.Worktrees), team.FormatSize(l.Total))
	if l.Limit > 0 {
		s += " of max_disk " + team.FormatSize(l.Limit)
		if l.Over() {
			s += ": OVER THE LIMIT (huddle worktrees prune, or finish the worktrees done with)"
		}
	}
	return s
}

// removeWorktrees removes the orphans (member ""), or member's worktree:
// what holds work is named, and removed only with yes.
func removeWorktrees(ctx context.Context, cl *Cmdline, st store.Store, t *team.Team, member string, yes, asJSON bool) int {
	l, err := team.ListWorktrees(ctx, t, cl.Dir, true)
	if err != nil && l == nil {
		return cl.Exit(ExitFail, "%v", err)
	}
	var pick []team.WorktreeInfo
	for _, w := range l.Worktrees {
		if (member == "" && !w.InUse) || (member != "" && w.Member == member) {
			pick = append(pick, w)
		}
	}
	if member != "" && len(pick) == 0 {
		return cl.Exit(ExitFail, "%s has no worktree of team %s", member, t.Name)
	}
	if len(pick) == 0 {
		fmt.Fprintln(cl.Stdout, "no orphaned worktree")
		return ExitOK
	}
	var refused int
	var removed []team.WorktreeInfo
	for i := range pick {
		w := &pick[i]
		if loses := w.Loses(); loses != "" && !yes {
			fmt.Fprintf(cl.Stderr, "huddle: %s: %s (%s) holds %s: not removed (--yes removes it)\n", cl.Name, w.Path, w.Branch, loses)
			refused++
			continue
		}
		if member != "" {
			if ws, ok := t.Workspace(cl.Dir, member); ok {
				switch err := team.Teardown(ctx, cl.Dir, ws); {
				case errors.Is(err, team.ErrScriptNotApproved):
					fmt.Fprintf(cl.Stderr, "huddle: %s: warning: teardown not run: the lead never approved the workspace's scripts\n", cl.Name)
				case err != nil:
					return cl.Exit(ExitFail, "%v", err)
				}
			}
		}
		if err := team.RemoveWorktree(ctx, w); err != nil {
			return cl.Exit(ExitFail, "%s: %v", w.Path, err)
		}
		if err := team.CancelReviewsOf(ctx, st, w); err != nil {
			fmt.Fprintf(cl.Stderr, "huddle: %s: warning: %v\n", cl.Name, team.Printable(err.Error()))
		}
		removed = append(removed, *w)
		if !asJSON {
			fmt.Fprintf(cl.Stdout, "removed %s (%s, %s)\n", w.Path, w.Branch, team.FormatSize(w.Size))
		}
	}
	if asJSON {
		if removed == nil {
			removed = []team.WorktreeInfo{}
		}
		_ = writeJSON(cl.Stdout, map[string]any{"removed": removed, "refused": refused})
	}
	if refused > 0 {
		return ExitFail
	}
	return ExitOK
}
