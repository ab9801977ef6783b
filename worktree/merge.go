package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ConflictError is a merge git cannot make by itself: the files both sides
// changed in ways that clash.
type ConflictError struct {
	Base, Head string
	Files      []string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("merging into %s conflicts in %s", e.Base, strings.Join(e.Files, ", "))
}

// ErrNotFastForward: the base moved on, and the merge may only
// fast-forward.
var ErrNotFastForward = errors.New("the base has commits the branch does not: it cannot be fast-forwarded")

// Conflicts lists the files a merge of head into base would conflict in
// (git merge-tree --write-tree), touching no working tree; none: it merges
// cleanly, and tree is the merge's tree.
func (r *Repo) Conflicts(ctx context.Context, base, head string) (tree string, files []string, err error) {
	out, err := git(ctx, r.Dir, "merge-tree", "--write-tree", "--name-only", "--no-messages", base, head)
	var ge *GitError
	if errors.As(err, &ge) && ge.Code == 1 {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		for _, f := range lines[1:] {
			if f != "" && (len(files) == 0 || files[len(files)-1] != f) {
				files = append(files, f)
			}
		}
		return lines[0], files, nil
	}
	if err != nil {
		return "", nil, err
	}
	return strings.TrimSpace(string(out)), nil, nil
}

// Merge modes (team.json's workspace "merge").
const (
	ModeMerge  = "merge"
	ModeFF     = "ff"
	ModeRebase = "rebase"
)

// Merged is what a merge did: the base's new commit, and how.
type Merged struct {
	Commit string `json:"commit"`
	How    string `json:"how"` // fast-forward, merge commit, rebased
}

// Merge brings head into the branch base, as mode says: a fast-forward
// when base is an ancestor of head; else a merge commit (ModeMerge), head
// rebased onto base in the worktree at wt where its branch is checked out
// (ModeRebase), or ErrNotFastForward (ModeFF). A conflict is a
// *ConflictError and changes nothing. When base is checked out in a
// worktree (the main one, typically), that worktree is fast-forwarded to
// the result by git merge --ff-only, which refuses to overwrite local
// changes there: the error says so, and nothing moved. The caller holds
// Lock.
func (r *Repo) Merge(ctx context.Context, base, head, mode, wt, message, author string) (*Merged, error) {
	old, err := r.Rev(ctx, base)
	if err != nil {
		return nil, err
	}
	ff, err := r.IsAncestor(ctx, old, head)
	if err != nil {
		return nil, err
	}
	target, how := head, "fast-forward"
	if !ff {
		tree, files, err := r.Conflicts(ctx, old, head)
		if err != nil {
			return nil, err
		}
		if len(files) > 0 {
			return nil, &ConflictError{Base: base, Head: head, Files: files}
		}
		switch mode {
		case ModeFF:
			return nil, ErrNotFastForward
		case ModeRebase:
			if target, err = r.rebase(ctx, wt, old, head); err != nil {
				return nil, err
			}
			how = "rebased"
		default:
			out, err := gitIn(ctx, r.Dir, nil, r.identity(ctx, author), "commit-tree", tree, "-p", old, "-p", head, "-m", message)
			if err != nil {
				return nil, err
			}
			target, how = strings.TrimSpace(string(out)), "merge commit"
		}
	}
	if err := r.advance(ctx, base, old, target); err != nil {
		return nil, err
	}
	return &Merged{Commit: target, How: how}, nil
}

// rebase rebases the branch checked out in wt, whose tip must be head, onto
// onto, and returns the new tip; a conflict aborts it and changes nothing.
func (r *Repo) rebase(ctx context.Context, wt, onto, head string) (string, error) {
	tip, err := git(ctx, wt, "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(string(tip)) != head {
		return "", fmt.Errorf("the branch moved on past the reviewed %s: review it again", short(head))
	}
	if _, err := gitIn(ctx, wt, nil, r.identity(ctx, "huddle"), "rebase", "--quiet", onto); err != nil {
		_, _ = git(ctx, wt, "rebase", "--abort") // back as it was; the rebase's own error is the one said
		return "", err
	}
	out, err := git(ctx, wt, "rev-parse", "HEAD")
	return strings.TrimSpace(string(out)), err
}

// advance moves branch from old to target (a descendant of old): through
// the worktree that has it checked out, or, when none has, its ref alone,
// refused if it moved meanwhile.
func (r *Repo) advance(ctx context.Context, branch, old, target string) error {
	wt, err := r.CheckedOut(ctx, branch)
	if err != nil {
		return err
	}
	if wt == nil {
		_, err := git(ctx, r.Dir, "update-ref", "-m", "huddle: merge", "refs/heads/"+branch, target, old)
		return err
	}
	if _, err := git(ctx, wt.Path, "merge", "--ff-only", "--quiet", target); err != nil {
		var ge *GitError
		if errors.As(err, &ge) && strings.Contains(ge.Stderr, "would be overwritten") {
			return fmt.Errorf("%s in %s has local changes the merge would overwrite: commit or stash them, then merge again", branch, wt.Path)
		}
		return err
	}
	return nil
}

// Reset puts the branch checked out in wt back at to, keeping its old tip
// under refs/huddle/discarded/ (so nothing is lost for good), and cleans
// what no commit holds but ignored files (.env, dependencies stay). It
// returns the ref that keeps the old tip.
func (r *Repo) Reset(ctx context.Context, wt, branch, to string) (string, error) {
	tip, err := r.Rev(ctx, branch)
	if err != nil {
		return "", err
	}
	keep := "refs/huddle/discarded/" + branch + "/" + short(tip)
	if _, err := git(ctx, r.Dir, "update-ref", keep, tip); err != nil {
		return "", err
	}
	if _, err := git(ctx, wt, "reset", "--quiet", "--hard", to); err != nil {
		return "", err
	}
	if _, err := git(ctx, wt, "clean", "--quiet", "-fd"); err != nil {
		return "", err
	}
	return keep, nil
}

func short(sha string) string {
	if len(sha) > 8 {
		return sha[:8]
	}
	return sha
}

// Stat is a diff's size: files changed, lines added and deleted.
type Stat struct {
	Files   int `json:"files"`
	Added   int `json:"added"`
	Deleted int `json:"deleted"`
}

// DiffStat counts what changes from from to to (git diff --numstat).
func (r *Repo) DiffStat(ctx context.Context, from, to string) (Stat, error) {
	out, err := git(ctx, r.Dir, "diff", "--numstat", "--find-renames", from, to)
	if err != nil {
		return Stat{}, err
	}
	var s Stat
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		s.Files++
		a, _ := strconv.Atoi(f[0]) // "-" for a binary file: 0
		d, _ := strconv.Atoi(f[1])
		s.Added += a
		s.Deleted += d
	}
	return s, nil
}

// Diff is the unified diff from from to to, as git writes it (no colour,
// renames found, no external diff driver).
func (r *Repo) Diff(ctx context.Context, from, to string) ([]byte, error) {
	return git(ctx, r.Dir, "diff", "--no-color", "--no-ext-diff", "--find-renames", from, to)
}

// WorkTree is the tree of everything the worktree at path holds now,
// committed or not (ignored files left out), made through an index of its
// own so the worktree's index is untouched: a diff to it shows work not
// yet committed.
func WorkTree(ctx context.Context, path string) (string, error) {
	admin, err := AdminDir(ctx, path)
	if err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(admin, "huddle-index-")
	if err != nil {
		return "", err
	}
	name := tmp.Name()
	tmp.Close()
	defer os.Remove(name)
	if b, err := os.ReadFile(filepath.Join(admin, "index")); err == nil {
		if err := os.WriteFile(name, b, 0o600); err != nil {
			return "", err
		}
	} else {
		os.Remove(name) // git makes a missing index; an empty file is not one
	}
	env := []string{"GIT_INDEX_FILE=" + name}
	if _, err := gitIn(ctx, path, nil, env, "add", "--all"); err != nil {
		return "", err
	}
	out, err := gitIn(ctx, path, nil, env, "write-tree")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}
