package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/worktree"
)

const reviewAbout = "Show review ID: a coding teammate's finished change on its branch (docs/worktrees.md): its\n" +
	"branch and base, the plan it carries out, the files with their +/- counts, and the diff from\n" +
	"where the branch forked to the reviewed commit. --changes TEXT sends it back with feedback,\n" +
	"and each --comment PATH:LINE:TEXT a note on a line of the new file; the teammate takes them\n" +
	"as its next turn. --discard throws the change away: the commits it takes off the branch are\n" +
	"named and nothing happens without --yes (the old tip stays under refs/huddle/discarded/).\n" +
	"'huddle merge ID' merges it. The first decision wins: one resolved already says by whom, exit 1."

const mergeAbout = "Merge review ID's reviewed commit into its base, as team.json's workspace says (merge: a\n" +
	"fast-forward when it can, else a merge commit; ff; rebase), and tell the teammate. A conflict\n" +
	"merges nothing: the files are named, the review ends changes_requested and the teammate is asked\n" +
	"to resolve it on its branch (exit 1). A base checked out with local changes the merge would\n" +
	"overwrite is refused, saying so. The first decision wins."

const diffAbout = "Print what MEMBER's worktree holds against where its branch forked from its base, committed\n" +
	"or not (ignored files left out): the unified diff, --stat the files with their +/- counts, or\n" +
	"--json the files and hunks parsed."

// commentsFlag collects --comment PATH:LINE:TEXT.
type commentsFlag []team.Comment

func (c *commentsFlag) String() string { return fmt.Sprint(len(*c)) }

func (c *commentsFlag) Set(s string) error {
	path, rest, ok := strings.Cut(s, ":")
	line, text, ok2 := strings.Cut(rest, ":")
	n, err := strconv.Atoi(line)
	if !ok || !ok2 || path == "" || err != nil || n < 0 || strings.TrimSpace(text) == "" {
		return fmt.Errorf("want PATH:LINE:TEXT, got %q", s)
	}
	*c = append(*c, team.Comment{Path: path, Line: n, Text: strings.TrimSpace(text)})
	return nil
}

func reviewFlags(fs *flag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print the review and its parsed diff as JSON")
	changes := fs.String("changes", "", "send it back with this `feedback`")
	var comments commentsFlag
	fs.Var(&comments, "comment", "with --changes: a note on a line, `PATH:LINE:TEXT` (repeatable)")
	discard := fs.Bool("discard", false, "throw the change away (with --yes)")
	yes := fs.Bool("yes", false, "with --discard: take the named commits off the branch")
	return func(cl *Cmdline) int {
		if code, ok := cl.WantArgs(1, 1, "ID"); !ok {
			return code
		}
		switch {
		case *discard && (*changes != "" || len(comments) > 0):
			return cl.UsageError("--discard does not go with --changes or --comment")
		case *yes && !*discard:
			return cl.UsageError("--yes goes with --discard")
		case len(comments) > 0 && *changes == "" && !cl.FlagGiven("changes"):
			return cl.UsageError("--comment goes with --changes")
		}
		id := cl.Args[0]
		return cl.WithTeam(func(ctx context.Context, st store.Store) int {
			switch {
			case *discard:
				return discardReview(ctx, cl, st, id, *yes)
			case cl.FlagGiven("changes"):
				r, err := team.RequestChanges(ctx, st, id, *changes, comments, protocol.Lead)
				if err != nil {
					return cl.Exit(ExitFail, "%v", err)
				}
				fmt.Fprintf(cl.Stdout, "%s changes_requested: %s takes them as its next turn\n", r.ID, r.From)
				return ExitOK
			}
			return showReview(ctx, cl, st, id, *asJSON)
		})
	}
}

func showReview(ctx context.Context, cl *Cmdline, st store.Store, id string, asJSON bool) int {
	r, err := team.Review(ctx, st, id)
	if err != nil {
		return cl.Exit(ExitFail, "%v", err)
	}
	diff, err := team.ReviewDiff(ctx, r)
	if err != nil {
		return cl.Exit(ExitFail, "%v", err)
	}
	if asJSON {
		files := worktree.ParseDiff(diff)
		if files == nil {
			files = []worktree.FileDiff{}
		}
		if err := writeJSON(cl.Stdout, map[string]any{"request": r, "files": files}); err != nil {
			return cl.Exit(ExitFail, "%v", err)
		}
		return ExitOK
	}
	rv := r.Review
	fmt.Fprintf(cl.Stdout, "review %s  %s  %s → %s  (%s..%s)\n", r.ID, r.Status, rv.Branch, rv.Base, short(rv.BaseCommit), short(rv.Head))
	if rv.Plan != "" {
		plan := ""
		if p, err := st.Request(ctx, rv.Plan); err == nil {
			plan, _, _ = strings.Cut(p.Plan, "\n")
		}
		fmt.Fprintf(cl.Stdout, "plan %s: %s\n", rv.Plan, team.Printable(plan))
	}
	if r.Feedback != "" {
		fmt.Fprintf(cl.Stdout, "%s by %s: %s\n", r.Status, r.ResolvedBy, team.Printable(r.Feedback))
	}
	printStat(cl, worktree.ParseDiff(diff))
	fmt.Fprintln(cl.Stdout)
	_, _ = cl.Stdout.Write(diff)
	return ExitOK
}

func short(sha string) string { return sha[:min(8, len(sha))] }

// printStat prints each file with its +/- counts, and the totals.
func printStat(cl *Cmdline, files []worktree.FileDiff) {
	tw := NewTable(cl.Stdout, 0)
	add, del := 0, 0
	for _, f := range files {
		name := f.Path
		if f.OldPath != "" {
			name = f.OldPath + " → " + f.Path
		}
		counts := fmt.Sprintf("+%d\t-%d", f.Added, f.Deleted)
		if f.Binary {
			counts = "binary\t"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Status, name, counts)
		add, del = add+f.Added, del+f.Deleted
	}
	_ = tw.Flush()
	fmt.Fprintf(cl.Stdout, "%d file(s), +%d -%d\n", len(files), add, del)
}

func discardReview(ctx context.Context, cl *Cmdline, st store.Store, id string, yes bool) int {
	r, err := team.Review(ctx, st, id)
	if err != nil {
		return cl.Exit(ExitFail, "%v", err)
	}
	if r.Status.IsTerminal() {
		return cl.Exit(ExitFail, "%v", &store.AlreadyError{ID: r.ID, Status: r.Status, By: r.ResolvedBy})
	}
	lost, err := team.Unmerged(ctx, r)
	if err != nil {
		return cl.Exit(ExitFail, "%v", err)
	}
	if len(lost) > 0 && !yes {
		cs := make([]string, len(lost))
		for i, c := range lost {
			cs[i] = c.String()
		}
		return cl.Exit(ExitFail, "discarding %s takes %d commit(s) off %s: %s; run again with --yes to discard them", id, len(lost), r.Review.Branch, strings.Join(cs, "; "))
	}
	d, err := team.Discard(ctx, st, id, protocol.Lead)
	if err != nil {
		return cl.Exit(ExitFail, "%v", err)
	}
	fmt.Fprintf(cl.Stdout, "%s discarded: %s is back at %s (the old tip is kept as %s)\n", d.Request.ID, r.Review.Branch, r.Review.Base, d.Kept)
	return ExitOK
}

func mergeFlags(fs *flag.FlagSet) runFunc {
	return func(cl *Cmdline) int {
		if code, ok := cl.WantArgs(1, 1, "ID"); !ok {
			return code
		}
		return cl.WithTeam(func(ctx context.Context, st store.Store) int {
			m, err := team.Merge(ctx, st, cl.Args[0], protocol.Lead)
			var conflict *worktree.ConflictError
			switch {
			case errors.As(err, &conflict):
				return cl.Exit(ExitFail, "%s: %v: nothing merged; %s is asked to resolve it on its branch", cl.Args[0], err, conflictOwner(ctx, st, cl.Args[0]))
			case err != nil:
				return cl.Exit(ExitFail, "%v", err)
			}
			rv := m.Request.Review
			fmt.Fprintf(cl.Stdout, "%s merged: %s into %s as %s (%s)\n", m.Request.ID, rv.Branch, rv.Base, short(m.Commit), m.How)
			return ExitOK
		})
	}
}

func conflictOwner(ctx context.Context, st store.Store, id string) string {
	if r, err := st.Request(ctx, id); err == nil {
		return r.From
	}
	return "its teammate"
}

func diffFlags(fs *flag.FlagSet) runFunc {
	stat := fs.Bool("stat", false, "print the files with their +/- counts")
	asJSON := fs.Bool("json", false, "print the files and hunks as JSON")
	return func(cl *Cmdline) int {
		if code, ok := cl.WantArgs(1, 1, "MEMBER"); !ok {
			return code
		}
		return cl.WithTeam(func(ctx context.Context, st store.Store) int {
			t, err := team.LoadFrom(ctx, st)
			if err != nil {
				return cl.Exit(ExitFail, "%v", err)
			}
			return printWorkDiff(ctx, cl, t, cl.Args[0], *stat, *asJSON)
		})
	}
}

// printWorkDiff prints member's work in its worktree on this machine.
func printWorkDiff(ctx context.Context, cl *Cmdline, t *team.Team, member string, stat, asJSON bool) int {
	if _, ok := t.Member(member); !ok {
		return cl.Exit(ExitFail, "no member %q in team %s", member, t.Name)
	}
	ws, ok := t.Workspace(cl.Dir, member)
	if !ok {
		return cl.Exit(ExitFail, "%s works in place: its workspace in team.json has no worktree", member)
	}
	diff, base, err := team.WorkDiff(ctx, ws)
	if err != nil {
		return cl.Exit(ExitFail, "%v", err)
	}
	files := worktree.ParseDiff(diff)
	switch {
	case asJSON:
		if files == nil {
			files = []worktree.FileDiff{}
		}
		_ = writeJSON(cl.Stdout, map[string]any{"member": member, "branch": ws.Branch, "base": base, "files": files})
	case stat:
		printStat(cl, files)
	default:
		_, _ = cl.Stdout.Write(diff)
	}
	return ExitOK
}
