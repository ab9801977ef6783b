package worktree

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// newRepo makes a real repository on main with one commit of a.txt and a
// .gitignore that ignores .env, and returns its directory.
func newRepo(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	run(t, dir, "git", "init", "--quiet", "-b", "main")
	run(t, dir, "git", "config", "user.name", "Test")
	run(t, dir, "git", "config", "user.email", "test@example.com")
	write(t, filepath.Join(dir, "a.txt"), "one\ntwo\nthree\n")
	write(t, filepath.Join(dir, ".gitignore"), ".env\nsecrets/\n")
	run(t, dir, "git", "add", ".")
	run(t, dir, "git", "commit", "--quiet", "-m", "first")
	return dir
}

func run(t testing.TB, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = gitEnv()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t testing.TB, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func open(t testing.TB, dir string) *Repo {
	t.Helper()
	r, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestEnsureMakesThenKeepsTheWorktree: the first Ensure makes the branch
// from its base and a worktree tracking it; what the teammate leaves there
// is found again by the next Ensure (a restart), which makes nothing.
func TestEnsureMakesThenKeepsTheWorktree(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	r := open(t, repo)
	wt := filepath.Join(t.TempDir(), "team", "alice")
	made, err := r.Ensure(ctx, wt, "huddle/team/alice", "main")
	if err != nil || !made {
		t.Fatalf("Ensure: made %v, %v", made, err)
	}
	write(t, filepath.Join(wt, "a.txt"), "one\nTWO\nthree\n")
	made, err = r.Ensure(ctx, wt, "huddle/team/alice", "main")
	if err != nil || made {
		t.Fatalf("Ensure again: made %v, %v", made, err)
	}
	if b, _ := os.ReadFile(filepath.Join(wt, "a.txt")); string(b) != "one\nTWO\nthree\n" {
		t.Fatalf("the work left in the worktree is gone: %q", b)
	}
	if dirty, _ := Dirty(ctx, wt); !slices.Equal(dirty, []string{"a.txt"}) {
		t.Fatalf("Dirty = %q", dirty)
	}
	head, committed, err := r.Snapshot(ctx, wt, "alice: TWO", "alice")
	if err != nil || !committed {
		t.Fatalf("Snapshot: %v %v", committed, err)
	}
	if _, again, _ := r.Snapshot(ctx, wt, "nothing", "alice"); again {
		t.Fatal("a second Snapshot with nothing new committed")
	}
	if got := run(t, wt, "git", "log", "-1", "--format=%an %s"); got != "alice alice: TWO" {
		t.Fatalf("snapshot commit: %q", got)
	}
	// The base moves on: the branch is one ahead and one behind.
	write(t, filepath.Join(repo, "b.txt"), "b\n")
	run(t, repo, "git", "add", "b.txt")
	run(t, repo, "git", "commit", "--quiet", "-m", "base moves")
	tr, err := r.Tracks(ctx, "huddle/team/")
	if err != nil {
		t.Fatal(err)
	}
	if got := tr["huddle/team/alice"]; got != (Track{Base: "main", Ahead: 1, Behind: 1}) {
		t.Fatalf("Tracks = %+v", tr)
	}
	cs, err := r.Unmerged(ctx, "main", "huddle/team/alice")
	if err != nil || len(cs) != 1 || cs[0].Subject != "alice: TWO" || !strings.HasPrefix(head, cs[0].Hash) {
		t.Fatalf("Unmerged = %v, %v (head %s)", cs, err, head)
	}
}

// TestEnsureRefuses: a path that holds something else, a branch checked
// out elsewhere and a missing base are errors that touch nothing.
func TestEnsureRefuses(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	r := open(t, repo)
	busy := t.TempDir()
	write(t, filepath.Join(busy, "mine.txt"), "keep me")
	if _, err := r.Ensure(ctx, busy, "huddle/t/a", "main"); err == nil || !strings.Contains(err.Error(), "not touching it") {
		t.Fatalf("Ensure over a full directory: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(busy, "mine.txt")); string(b) != "keep me" {
		t.Fatal("Ensure touched a directory it refused")
	}
	if _, err := r.Ensure(ctx, filepath.Join(t.TempDir(), "x"), "huddle/t/a", "nosuch"); err == nil || !strings.Contains(err.Error(), "base nosuch") {
		t.Fatalf("Ensure from a missing base: %v", err)
	}
	wt := filepath.Join(t.TempDir(), "a")
	if _, err := r.Ensure(ctx, wt, "huddle/t/a", "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Ensure(ctx, filepath.Join(t.TempDir(), "b"), "huddle/t/a", "main"); err == nil || !strings.Contains(err.Error(), "checked out in") {
		t.Fatalf("a second worktree of one branch: %v", err)
	}
	if _, err := Open(ctx, t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a git repository") {
		t.Fatalf("Open outside a repository: %v", err)
	}
}

// TestEnsureAfterTheDirectoryWent: a worktree removed by hand (rm -rf) is
// made again on its branch, whose commits are all there.
func TestEnsureAfterTheDirectoryWent(t *testing.T) {
	ctx := context.Background()
	r := open(t, newRepo(t))
	wt := filepath.Join(t.TempDir(), "a")
	if _, err := r.Ensure(ctx, wt, "huddle/t/a", "main"); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(wt, "new.txt"), "kept\n")
	if _, _, err := r.Snapshot(ctx, wt, "new", "a"); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(wt); err != nil {
		t.Fatal(err)
	}
	if e, _ := r.At(ctx, wt); e == nil || !e.Prunable {
		t.Fatalf("a removed worktree lists as %+v, want prunable", e)
	}
	if made, err := r.Ensure(ctx, wt, "huddle/t/a", "main"); err != nil || !made {
		t.Fatalf("Ensure: %v %v", made, err)
	}
	if b, err := os.ReadFile(filepath.Join(wt, "new.txt")); err != nil || string(b) != "kept\n" {
		t.Fatalf("the branch's commit is not in the new worktree: %q %v", b, err)
	}
}

// TestCopyIncludes: ignored files and directories are copied, a file the
// worktree has already is kept, .git never is, and a glob out of the
// repository is refused.
func TestCopyIncludes(t *testing.T) {
	repo := newRepo(t)
	write(t, filepath.Join(repo, ".env"), "KEY=1\n")
	write(t, filepath.Join(repo, "secrets", "deep", "k.pem"), "pem\n")
	dst := t.TempDir()
	write(t, filepath.Join(dst, "secrets", "deep", "k.pem"), "the worktree's own\n")
	got, err := CopyIncludes(repo, dst, []string{".env", "secrets", ".git", "nomatch*"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{".env"}) {
		t.Fatalf("copied %q", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "secrets", "deep", "k.pem")); string(b) != "the worktree's own\n" {
		t.Fatal("an include overwrote the worktree's file")
	}
	if _, err := os.Stat(filepath.Join(dst, ".git")); err == nil {
		t.Fatal(".git was copied")
	}
	for _, bad := range []string{"../x", "/etc/passwd", "a/../../b", "[", ""} {
		if ValidateInclude(bad) == nil {
			t.Errorf("ValidateInclude(%q) = nil", bad)
		}
	}
}

// TestRemoveAndSize: Size counts the worktree's files; Remove takes the
// worktree and the branch, and refuses a directory that is no worktree.
func TestRemoveAndSize(t *testing.T) {
	ctx := context.Background()
	r := open(t, newRepo(t))
	wt := filepath.Join(t.TempDir(), "a")
	if _, err := r.Ensure(ctx, wt, "huddle/t/a", "main"); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(wt, "big.bin"), strings.Repeat("x", 10000))
	n, err := Size(wt)
	if err != nil || n < 10000 {
		t.Fatalf("Size = %d, %v", n, err)
	}
	plain := t.TempDir()
	if err := r.Remove(ctx, plain, ""); err == nil {
		t.Fatal("Remove took a directory that is no worktree")
	}
	if err := r.Remove(ctx, wt, "huddle/t/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Fatalf("worktree still there: %v", err)
	}
	if r.HasBranch(ctx, "huddle/t/a") {
		t.Fatal("branch still there")
	}
	if err := r.Remove(ctx, wt, "huddle/t/a"); err != nil {
		t.Fatalf("removing it twice: %v", err)
	}
}

// TestDiffParsedAndConflictsFound: a real diff with a change, a new file,
// a deletion, a rename and a binary parses into its files with their
// counts and line numbers; merge-tree finds a conflict touching nothing,
// and WorkTree sees uncommitted work without touching the index.
func TestDiffParsedAndConflictsFound(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t)
	r := open(t, repo)
	write(t, filepath.Join(repo, "gone.txt"), "bye\n")
	write(t, filepath.Join(repo, "old.txt"), strings.Repeat("same line\n", 20))
	run(t, repo, "git", "add", ".")
	run(t, repo, "git", "commit", "--quiet", "-m", "more")
	wt := filepath.Join(t.TempDir(), "a")
	if _, err := r.Ensure(ctx, wt, "huddle/t/a", "main"); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(wt, "a.txt"), "one\nTWO\nthree\n")
	write(t, filepath.Join(wt, "new.txt"), "fresh\n")
	write(t, filepath.Join(wt, "bin.dat"), "\x00\x01\x02")
	run(t, wt, "git", "rm", "--quiet", "gone.txt")
	run(t, wt, "git", "mv", "old.txt", "renamed.txt")
	tree, err := WorkTree(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	if st := run(t, wt, "git", "diff", "--cached", "--name-only"); strings.Contains(st, "new.txt") {
		t.Fatal("WorkTree touched the worktree's index")
	}
	d, err := r.Diff(ctx, "main", tree)
	if err != nil {
		t.Fatal(err)
	}
	files := ParseDiff(d)
	got := map[string]FileDiff{}
	for _, f := range files {
		got[f.Path] = f
	}
	if f := got["a.txt"]; f.Status != "modified" || f.Added != 1 || f.Deleted != 1 || len(f.Hunks) != 1 {
		t.Fatalf("a.txt: %+v", f)
	} else if h := f.Hunks[0]; h.OldStart != 1 || h.Lines[1] != (Line{Kind: '-', Text: "two", Old: 2}) || h.Lines[2] != (Line{Kind: '+', Text: "TWO", New: 2}) {
		t.Fatalf("a.txt's hunk: %+v", h)
	}
	if f := got["new.txt"]; f.Status != "added" || f.Added != 1 {
		t.Errorf("new.txt: %+v", f)
	}
	if f := got["gone.txt"]; f.Status != "deleted" || f.Deleted != 1 {
		t.Errorf("gone.txt: %+v", f)
	}
	if f := got["renamed.txt"]; f.Status != "renamed" || f.OldPath != "old.txt" {
		t.Errorf("renamed.txt: %+v", f)
	}
	if f := got["bin.dat"]; !f.Binary {
		t.Errorf("bin.dat: %+v", f)
	}
	if len(files) != 5 {
		t.Errorf("%d files: %+v", len(files), files)
	}

	// main changes the same line: merge-tree names a.txt, main untouched.
	head, _, err := r.Snapshot(ctx, wt, "work", "a")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(repo, "a.txt"), "one\nDOS\nthree\n")
	run(t, repo, "git", "commit", "--quiet", "-am", "main's two")
	before := run(t, repo, "git", "rev-parse", "main")
	if _, conflicts, err := r.Conflicts(ctx, "main", head); err != nil || !slices.Equal(conflicts, []string{"a.txt"}) {
		t.Fatalf("Conflicts = %v, %v", conflicts, err)
	}
	var ce *ConflictError
	if _, err := r.Merge(ctx, "main", head, ModeMerge, wt, "m", "lead"); !errors.As(err, &ce) || !slices.Equal(ce.Files, []string{"a.txt"}) {
		t.Fatalf("Merge over a conflict: %v", err)
	}
	if run(t, repo, "git", "rev-parse", "main") != before || run(t, repo, "git", "status", "--porcelain") != "" {
		t.Fatal("a conflicting merge touched main")
	}
}
