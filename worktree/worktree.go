package worktree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Entry is one worktree of a repository, as git lists it.
type Entry struct {
	Path   string `json:"path"`
	Head   string `json:"head"`
	Branch string `json:"branch,omitempty"` // short name; "" when detached
	// Prunable: git's record of it is left but its directory is gone.
	Prunable bool `json:"prunable,omitempty"`
	Locked   bool `json:"locked,omitempty"`
}

// List reads the repository's worktrees (git worktree list --porcelain),
// the main one first.
func (r *Repo) List(ctx context.Context) ([]Entry, error) {
	out, err := git(ctx, r.Dir, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, err
	}
	var es []Entry
	var cur *Entry
	for _, line := range strings.Split(string(out), "\n") {
		k, v, _ := strings.Cut(line, " ")
		switch k {
		case "worktree":
			es = append(es, Entry{Path: v})
			cur = &es[len(es)-1]
		case "HEAD":
			if cur != nil {
				cur.Head = v
			}
		case "branch":
			if cur != nil {
				cur.Branch = strings.TrimPrefix(v, "refs/heads/")
			}
		case "prunable":
			if cur != nil {
				cur.Prunable = true
			}
		case "locked":
			if cur != nil {
				cur.Locked = true
			}
		}
	}
	return es, nil
}

// samePath reports whether a and b name the same directory, symbolic links
// resolved where they can be.
func samePath(a, b string) bool {
	ra, err := filepath.EvalSymlinks(a)
	if err != nil {
		ra = filepath.Clean(a)
	}
	rb, err := filepath.EvalSymlinks(b)
	if err != nil {
		rb = filepath.Clean(b)
	}
	return ra == rb
}

// At is the worktree at path, or nil.
func (r *Repo) At(ctx context.Context, path string) (*Entry, error) {
	es, err := r.List(ctx)
	if err != nil {
		return nil, err
	}
	for i := range es {
		if samePath(es[i].Path, path) {
			return &es[i], nil
		}
	}
	return nil, nil
}

// CheckedOut is the worktree that has branch checked out, or nil.
func (r *Repo) CheckedOut(ctx context.Context, branch string) (*Entry, error) {
	es, err := r.List(ctx)
	if err != nil {
		return nil, err
	}
	for i := range es {
		if es[i].Branch == branch && !es[i].Prunable {
			return &es[i], nil
		}
	}
	return nil, nil
}

// Ensure makes path a worktree of branch and says whether it made it. A
// worktree of branch already there is left as it is: a restarted
// teammate lands in the work it left. A branch that exists gets a new
// worktree; one that does not is made from base, which it tracks (git
// status and the ahead/behind counts then compare with base). path must
// be free: an existing directory that is not this worktree is an error,
// and nothing is overwritten.
func (r *Repo) Ensure(ctx context.Context, path, branch, base string) (bool, error) {
	unlock, err := r.Lock()
	if err != nil {
		return false, err
	}
	defer unlock()
	e, err := r.At(ctx, path)
	if err != nil {
		return false, err
	}
	if e != nil && !e.Prunable {
		if e.Branch != branch {
			return false, fmt.Errorf("worktree %s has %s checked out, not %s", path, or(e.Branch, "a detached HEAD"), branch)
		}
		return false, nil
	}
	if e != nil && e.Prunable {
		// Its directory went (removed by hand): git forgets it first.
		if _, err := git(ctx, r.Dir, "worktree", "prune"); err != nil {
			return false, err
		}
	}
	if other, err := r.CheckedOut(ctx, branch); err != nil {
		return false, err
	} else if other != nil {
		return false, fmt.Errorf("branch %s is checked out in %s already", branch, other.Path)
	}
	if ents, err := os.ReadDir(path); err == nil && len(ents) > 0 {
		return false, fmt.Errorf("%s exists and is not a worktree of %s: not touching it", path, branch)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, err
	}
	if r.HasBranch(ctx, branch) {
		_, err = git(ctx, r.Dir, "worktree", "add", "--quiet", path, branch)
	} else {
		if !r.HasBranch(ctx, base) {
			return false, fmt.Errorf("base %s: no such branch in %s", base, r.Dir)
		}
		_, err = git(ctx, r.Dir, "worktree", "add", "--quiet", "--track", "-b", branch, path, base)
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Track is how a branch stands against its base: commits only it has
// (Ahead), commits only the base has (Behind).
type Track struct {
	Base   string `json:"base,omitempty"` // the branch it tracks
	Ahead  int    `json:"ahead"`
	Behind int    `json:"behind"`
}

// Tracks reads, in one git process, how every branch under prefix stands
// against the branch it tracks (Ensure makes each track its base): by
// short branch name.
func (r *Repo) Tracks(ctx context.Context, prefix string) (map[string]Track, error) {
	out, err := git(ctx, r.Dir, "for-each-ref", "--format=%(refname:short)%00%(upstream:short)%00%(upstream:track,nobracket)", "refs/heads/"+strings.TrimSuffix(prefix, "/"))
	if err != nil {
		return nil, err
	}
	m := map[string]Track{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		name, rest, ok := strings.Cut(line, "\x00")
		if !ok {
			continue
		}
		base, track, _ := strings.Cut(rest, "\x00")
		t := Track{Base: base}
		for _, part := range strings.Split(track, ", ") {
			k, v, _ := strings.Cut(part, " ")
			n, _ := strconv.Atoi(v)
			switch k {
			case "ahead":
				t.Ahead = n
			case "behind":
				t.Behind = n
			}
		}
		m[name] = t
	}
	return m, nil
}

// Remove removes the worktree at path and deletes branch, whatever they
// hold: the caller has asked whoever must confirm (Unmerged names what
// would be lost). A worktree already gone, or a branch already deleted,
// is no error.
func (r *Repo) Remove(ctx context.Context, path, branch string) error {
	unlock, err := r.Lock()
	if err != nil {
		return err
	}
	defer unlock()
	e, err := r.At(ctx, path)
	if err != nil {
		return err
	}
	if e != nil {
		if _, err := git(ctx, r.Dir, "worktree", "remove", "--force", "--force", path); err != nil {
			return err
		}
	} else if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("%s is not a worktree of %s: not removing it", path, r.Dir)
	}
	if _, err := git(ctx, r.Dir, "worktree", "prune"); err != nil {
		return err
	}
	if branch != "" && r.HasBranch(ctx, branch) {
		if _, err := git(ctx, r.Dir, "branch", "-D", branch); err != nil {
			return err
		}
	}
	return nil
}

// Dirty lists what the worktree at path holds that no commit does (git
// status --porcelain): changed, added and untracked files, ignored ones
// left out.
func Dirty(ctx context.Context, path string) ([]string, error) {
	out, err := git(ctx, path, "status", "--porcelain", "--untracked-files=all")
	if err != nil {
		return nil, err
	}
	var files []string
	for _, line := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if len(line) > 3 {
			files = append(files, line[3:])
		}
	}
	return files, nil
}

// Snapshot commits everything the worktree at path holds that no commit
// does (ignored files left out) as one commit authored by author, and
// returns the head; committed says whether there was anything to commit.
// The user's commit hooks do not run: this is huddle keeping a teammate's
// work, not the teammate's commit.
func (r *Repo) Snapshot(ctx context.Context, path, message, author string) (head string, committed bool, err error) {
	if _, err := git(ctx, path, "add", "--all"); err != nil {
		return "", false, err
	}
	_, err = git(ctx, path, "diff", "--cached", "--quiet")
	var ge *GitError
	switch {
	case errors.As(err, &ge) && ge.Code == 1:
		if _, err := gitIn(ctx, path, nil, r.identity(ctx, author), "commit", "--quiet", "--no-verify", "-m", message); err != nil {
			return "", false, err
		}
		committed = true
	case err != nil:
		return "", false, err
	}
	out, err := git(ctx, path, "rev-parse", "HEAD")
	if err != nil {
		return "", false, err
	}
	return strings.TrimSpace(string(out)), committed, nil
}

// CopyIncludes copies into the worktree dst the files of the repository's
// directory src that the globs match (doublestar patterns relative to
// src, such as ".env" or "config/*.local"): what git does not carry
// because it ignores them. A matched directory is copied whole; a file
// dst has already is left as it is; .git is never copied. It returns the
// paths copied, relative.
func CopyIncludes(src, dst string, globs []string) ([]string, error) {
	var copied []string
	fsys := os.DirFS(src)
	for _, g := range globs {
		matches, err := doublestar.Glob(fsys, g, doublestar.WithNoFollow())
		if err != nil {
			return copied, fmt.Errorf("include %q: %w", g, err)
		}
		for _, m := range matches {
			if m == ".git" || strings.HasPrefix(m, ".git/") {
				continue
			}
			err := filepath.WalkDir(filepath.Join(src, m), func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				rel, _ := filepath.Rel(src, p)
				if d.IsDir() {
					if d.Name() == ".git" {
						return filepath.SkipDir
					}
					return nil
				}
				if !d.Type().IsRegular() {
					return nil
				}
				done, err := copyNew(p, filepath.Join(dst, rel))
				if done {
					copied = append(copied, filepath.ToSlash(rel))
				}
				return err
			})
			if err != nil {
				return copied, fmt.Errorf("include %q: %w", g, err)
			}
		}
	}
	return copied, nil
}

// copyNew copies the file src to dst, keeping its mode, unless dst exists.
func copyNew(src, dst string) (bool, error) {
	if _, err := os.Lstat(dst); err == nil {
		return false, nil
	}
	in, err := os.Open(src)
	if err != nil {
		return false, err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return false, err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return false, err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err == nil, err
}

// Size is what the files under path take, in bytes (symbolic links not
// followed; a file that goes while it counts is skipped).
func Size(path string) (int64, error) {
	var n int64
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		if fi, ierr := d.Info(); ierr == nil {
			n += fi.Size() // a file that went meanwhile counts nothing
		}
		return nil
	})
	return n, err
}

// ValidateInclude checks an include glob: a valid pattern, relative, and
// staying inside the repository.
func ValidateInclude(g string) error {
	if g == "" || !doublestar.ValidatePattern(g) {
		return fmt.Errorf("%q is not a glob pattern", g)
	}
	if filepath.IsAbs(g) || g == ".." || strings.HasPrefix(g, "../") || strings.Contains(g, "/../") {
		return fmt.Errorf("%q: an include is relative to the repository and stays inside it", g)
	}
	return nil
}
