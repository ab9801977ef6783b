// Package worktree owns a coding teammate's git worktree and branch: git
// driven as a process (worktree add and remove, the diff against the base,
// the merge into it, conflicts found without touching a working tree), the
// unified diff parsed for a person to read, and the size a worktree takes.
// It imports nothing of huddle's.
package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// Repo is one git repository, named by any directory inside it.
type Repo struct {
	// Dir is the directory git runs in: the top of the working tree the
	// repository was opened by.
	Dir string
	// Common is the git directory every worktree of the repository shares.
	Common string
}

// GitError is git exiting with an error: the command and what it said.
type GitError struct {
	Args   []string
	Stderr string
	Code   int
}

func (e *GitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if msg == "" {
		msg = fmt.Sprintf("exit status %d", e.Code)
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

// git runs git in dir with args and returns its stdout. The environment
// loses what would point git elsewhere (GIT_DIR, a hook's GIT_INDEX_FILE),
// and messages are in English for the parsers.
func git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	return gitIn(ctx, dir, nil, nil, args...)
}

func gitIn(ctx context.Context, dir string, stdin []byte, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(gitEnv(), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out.Bytes(), &GitError{Args: args, Stderr: errb.String(), Code: ee.ExitCode()}
		}
		return nil, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return out.Bytes(), nil
}

func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY", "GIT_PREFIX", "LC_ALL", "LANG":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0")
}

// Open opens the repository dir is in: an error when it is in none.
func Open(ctx context.Context, dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("repository %s: not a directory", dir)
	}
	out, err := git(ctx, abs, "rev-parse", "--show-toplevel", "--git-common-dir")
	if err != nil {
		return nil, fmt.Errorf("repository %s: not a git repository (%v)", dir, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		return nil, fmt.Errorf("repository %s: git rev-parse said %q", dir, out)
	}
	common := lines[1]
	if !filepath.IsAbs(common) {
		common = filepath.Join(lines[0], common)
	}
	return &Repo{Dir: lines[0], Common: filepath.Clean(common)}, nil
}

// Git runs git in the repository and returns its stdout.
func (r *Repo) Git(ctx context.Context, args ...string) ([]byte, error) {
	return git(ctx, r.Dir, args...)
}

// CurrentBranch is the branch checked out in the repository's directory.
func (r *Repo) CurrentBranch(ctx context.Context) (string, error) {
	out, err := git(ctx, r.Dir, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil {
		return "", fmt.Errorf("repository %s: no branch checked out (a detached HEAD): name the base branch", r.Dir)
	}
	return strings.TrimSpace(string(out)), nil
}

// Rev is the commit name names, in full.
func (r *Repo) Rev(ctx context.Context, name string) (string, error) {
	out, err := git(ctx, r.Dir, "rev-parse", "--verify", "--quiet", name+"^{commit}")
	if err != nil {
		return "", fmt.Errorf("%s: no such commit or branch", name)
	}
	return strings.TrimSpace(string(out)), nil
}

// HasBranch reports whether the local branch exists.
func (r *Repo) HasBranch(ctx context.Context, branch string) bool {
	_, err := git(ctx, r.Dir, "show-ref", "--verify", "--quiet", "refs/heads/"+branch)
	return err == nil
}

// Commit is one commit: its short hash and subject.
type Commit struct {
	Hash    string `json:"hash"`
	Subject string `json:"subject"`
}

func (c Commit) String() string { return c.Hash + " " + c.Subject }

// Unmerged are the commits of head that base does not hold, newest first.
func (r *Repo) Unmerged(ctx context.Context, base, head string) ([]Commit, error) {
	out, err := git(ctx, r.Dir, "log", "--format=%h %s", base+".."+head, "--")
	if err != nil {
		return nil, err
	}
	var cs []Commit
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		h, s, _ := strings.Cut(line, " ")
		cs = append(cs, Commit{Hash: h, Subject: s})
	}
	return cs, nil
}

// MergeBase is the best common ancestor of a and b.
func (r *Repo) MergeBase(ctx context.Context, a, b string) (string, error) {
	out, err := git(ctx, r.Dir, "merge-base", a, b)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// IsAncestor reports whether a is an ancestor of b (or b itself).
func (r *Repo) IsAncestor(ctx context.Context, a, b string) (bool, error) {
	_, err := git(ctx, r.Dir, "merge-base", "--is-ancestor", a, b)
	var ge *GitError
	if errors.As(err, &ge) && ge.Code == 1 {
		return false, nil
	}
	return err == nil, err
}

// identity is the environment of a commit huddle makes: authored by
// author, committed by git's configured user, or by author when none is.
func (r *Repo) identity(ctx context.Context, author string) []string {
	env := []string{"GIT_AUTHOR_NAME=" + author, "GIT_AUTHOR_EMAIL=huddle@localhost"}
	name, nerr := git(ctx, r.Dir, "config", "user.name")
	email, eerr := git(ctx, r.Dir, "config", "user.email")
	if nerr != nil || eerr != nil || len(bytes.TrimSpace(name)) == 0 || len(bytes.TrimSpace(email)) == 0 {
		env = append(env, "GIT_COMMITTER_NAME="+author, "GIT_COMMITTER_EMAIL=huddle@localhost")
	}
	return env
}

// AdminDir is the git directory of the worktree at path: where git keeps
// its HEAD and index, and huddle its own notes of it (they go with it).
func AdminDir(ctx context.Context, path string) (string, error) {
	out, err := git(ctx, path, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// Upstream is the branch branch tracks ("" when none): its base.
func (r *Repo) Upstream(ctx context.Context, branch string) string {
	out, err := git(ctx, r.Dir, "rev-parse", "--abbrev-ref", branch+"@{upstream}")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// Lock holds the repository's lock for huddle's writes (a worktree made or
// removed, a branch's config, a merge), across processes: git refuses a
// second writer of .git/config, and a review's merge must be one at a
// time. It returns the release.
func (r *Repo) Lock() (func(), error) {
	f, err := os.OpenFile(filepath.Join(r.Common, "huddle.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", r.Dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", r.Dir, err)
	}
	return func() { f.Close() }, nil
}
