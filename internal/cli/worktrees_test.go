package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"huddle/internal/testkit"
	"huddle/internal/testkit/files"
	"huddle/protocol"
	"huddle/team"
)

// gitRepo makes a real repository on main with one commit.
func gitRepo(t *testing.T) string { return testkit.GitRepo(t, map[string]string{"a.txt": "one\n"}) }

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// worktreeTeam writes a team whose members (exec members that are never
// run here) work in worktrees of repo, and returns its directory.
func worktreeTeam(t *testing.T, repo string, members ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), ".huddle")
	var ms []map[string]any
	for _, m := range members {
		ms = append(ms, map[string]any{"name": m, "role": "codes", "runtime": map[string]any{"kind": "exec", "command": []string{"true"}}})
	}
	b, _ := json.Marshal(map[string]any{"name": "crew", "members": ms,
		"workspace": map[string]any{"repo": repo, "worktree": true, "max_disk": "1MiB"}})
	writeFile(t, filepath.Join(dir, "team.json"), string(b))
	return dir
}

// TestWorktreesListAndPrune: huddle worktrees lists the team's worktrees
// with their branch, ahead/behind and whether a member still works in
// them; prune names what an orphan's removal would lose and removes it
// only with --yes, leaving the member's worktree alone.
func TestWorktreesListAndPrune(t *testing.T) {
	repo := gitRepo(t)
	dir := worktreeTeam(t, repo, "alice")
	root := filepath.Join(dir, "worktrees", "crew")
	alice, bob := filepath.Join(root, "alice"), filepath.Join(root, "bob")
	testkit.Git(t, repo, "worktree", "add", "--quiet", "--track", "-b", "huddle/crew/alice", alice, "main")
	testkit.Git(t, repo, "worktree", "add", "--quiet", "--track", "-b", "huddle/crew/bob", bob, "main")
	writeFile(t, filepath.Join(bob, "b.txt"), "bob's work\n")
	testkit.Git(t, bob, "add", ".")
	testkit.Git(t, bob, "commit", "--quiet", "-m", "bob's unmerged work")
	testkit.Git(t, repo, "worktree", "add", "--quiet", "-b", "other", filepath.Join(t.TempDir(), "other"), "main")

	r := huddle(t, "worktrees", "--dir", dir, "--json").wantOK(t, "worktrees --json")
	var l struct {
		Worktrees []struct {
			Member, Branch, Base, Path string
			Ahead, Behind              int
			InUse                      bool `json:"in_use"`
			Size                       int64
		}
		Total, Limit int64
	}
	if err := json.Unmarshal([]byte(r.stdout), &l); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if len(l.Worktrees) != 2 || l.Limit != 1<<20 {
		t.Fatalf("listed %+v", l)
	}
	a, b := l.Worktrees[0], l.Worktrees[1]
	if a.Member != "alice" || !a.InUse || a.Ahead != 0 || a.Base != "main" || a.Size == 0 {
		t.Errorf("alice: %+v", a)
	}
	if b.Member != "bob" || b.InUse || b.Ahead != 1 || b.Branch != "huddle/crew/bob" {
		t.Errorf("bob: %+v", b)
	}
	if l.Total != a.Size+b.Size {
		t.Errorf("total %d, want %d", l.Total, a.Size+b.Size)
	}
	table := huddle(t, "worktrees", "--dir", dir).wantOK(t, "worktrees")
	if !strings.Contains(table.stdout, "orphan") || !strings.Contains(table.stdout, "2 worktree(s)") || !strings.Contains(table.stdout, "of max_disk 1.0 MiB") {
		t.Errorf("table:\n%s", table.stdout)
	}

	// The worktrees' disk in huddle status, past max_disk (1 MiB) a warning.
	writeFile(t, filepath.Join(bob, "big.bin"), strings.Repeat("x", 2<<20))
	status := huddle(t, "status", "--dir", dir)
	if !strings.Contains(status.stdout, "worktrees: 2 worktree(s)") || !strings.Contains(status.stdout, "OVER THE LIMIT") || !strings.Contains(status.stderr, "over max_disk 1.0 MiB") {
		t.Fatalf("status: exit %d\n%s\n%s", status.code, status.stdout, status.stderr)
	}
	if err := os.Remove(filepath.Join(bob, "big.bin")); err != nil {
		t.Fatal(err)
	}

	refused := huddle(t, "worktrees", "prune", "--dir", dir)
	if refused.code != ExitFail || !strings.Contains(refused.stderr, "1 unmerged commit(s)") || !strings.Contains(refused.stderr, "bob's unmerged work") {
		t.Fatalf("prune without --yes: exit %d, stderr %q", refused.code, refused.stderr)
	}
	if _, err := os.Stat(filepath.Join(bob, "b.txt")); err != nil {
		t.Fatalf("prune without --yes removed bob's work: %v", err)
	}
	st := files.Open(t, dir)
	tm, err := team.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	tm.Members = append(tm.Members, team.MemberSpec{Name: "bob"})
	bobWS, _ := tm.Workspace(dir, "bob")
	bobWS.Base = "main"
	rv, err := team.OpenReview(context.Background(), st, tm, bobWS, "", "done: b")
	if err != nil || rv == nil {
		t.Fatalf("bob's review: %v %v", rv, err)
	}
	huddle(t, "worktrees", "prune", "--yes", "--dir", dir).wantOK(t, "worktrees prune --yes")
	if r, err := st.Request(context.Background(), rv.ID); err != nil || r.Status != protocol.RequestCancelled {
		t.Fatalf("bob's review after its worktree went: %+v %v", r, err)
	}
	if _, err := os.Stat(bob); !os.IsNotExist(err) {
		t.Fatalf("bob's orphan is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(alice, "a.txt")); err != nil {
		t.Fatalf("prune touched alice's worktree: %v", err)
	}
	if got := testkit.Git(t, repo, "branch", "--list", "huddle/crew/*"); got != "huddle/crew/alice" && got != "+ huddle/crew/alice" {
		t.Errorf("branches left: %q", got)
	}
	huddle(t, "worktrees", "prune", "--dir", dir).wantOK(t, "prune with no orphan")
	huddle(t, "worktrees", "finish", "nobody", "--dir", dir).wantError(t, ExitFail, "nobody has no worktree", "finish nobody")
	huddle(t, "worktrees", "frobnicate", "--dir", dir).wantError(t, ExitUsage, `unknown "frobnicate"`, "frobnicate")
}

// TestWorktreesBadWorkspace: a workspace team.json cannot use is one line.
func TestWorktreesBadWorkspace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".huddle")
	writeFile(t, filepath.Join(dir, "team.json"), `{"name":"crew","members":[{"name":"a","role":"r","runtime":{"kind":"exec","command":["true"]}}],
"workspace":{"worktree":true,"merge":"squash"}}`)
	huddle(t, "worktrees", "--dir", dir).wantError(t, ExitFail, `workspace.merge "squash": want merge, ff or rebase`, "worktrees")
	writeFile(t, filepath.Join(dir, "team.json"), `{"name":"crew","members":[{"name":"a","role":"r","runtime":{"kind":"exec","command":["true"]}}],
"workspace":{"worktree":true}}`)
	huddle(t, "worktrees", "--dir", dir).wantError(t, ExitFail, `workspace.repo is required`, "worktrees")
}

// TestDiffReviewMerge: huddle diff shows a coder's uncommitted edit in its
// worktree; huddle review shows the review's stat and diff; a comment
// without --changes is a usage error; huddle merge merges it into main
// and a second merge says who won.
func TestDiffReviewMerge(t *testing.T) {
	repo := gitRepo(t)
	dir := worktreeTeam(t, repo, "alice")
	wt := filepath.Join(dir, "worktrees", "crew", "alice")
	testkit.Git(t, repo, "worktree", "add", "--quiet", "--track", "-b", "huddle/crew/alice", wt, "main")
	writeFile(t, filepath.Join(wt, "a.txt"), "one\ntwo\n")

	stat := huddle(t, "diff", "alice", "--stat", "--dir", dir).wantOK(t, "diff --stat")
	if !strings.Contains(stat.stdout, "modified  a.txt  +1  -0") || !strings.Contains(stat.stdout, "1 file(s), +1 -0") {
		t.Fatalf("diff --stat:\n%s", stat.stdout)
	}
	if d := huddle(t, "diff", "alice", "--dir", dir).wantOK(t, "diff"); !strings.Contains(d.stdout, "+two") {
		t.Fatalf("diff:\n%s", d.stdout)
	}
	huddle(t, "diff", "bob", "--dir", dir).wantError(t, ExitFail, `no member "bob"`, "diff bob")

	st := files.Open(t, dir)
	tm, err := team.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ws, _ := tm.Workspace(dir, "alice")
	r, err := team.OpenReview(context.Background(), st, tm, ws, "", "done: two")
	if err != nil || r == nil {
		t.Fatalf("OpenReview: %v %v", r, err)
	}
	show := huddle(t, "review", r.ID, "--dir", dir).wantOK(t, "review")
	if !strings.Contains(show.stdout, "huddle/crew/alice → main") || !strings.Contains(show.stdout, "+two") || !strings.Contains(show.stdout, "1 file(s), +1 -0") {
		t.Fatalf("review:\n%s", show.stdout)
	}
	huddle(t, "review", r.ID, "--comment", "a.txt:2:why", "--dir", dir).wantError(t, ExitUsage, "--comment goes with --changes", "review --comment")
	huddle(t, "review", r.ID, "--comment", "nonsense", "--changes", "x", "--dir", dir).wantError(t, ExitUsage, "want PATH:LINE:TEXT", "review --comment nonsense")
	m := huddle(t, "merge", r.ID, "--dir", dir).wantOK(t, "merge")
	if !strings.Contains(m.stdout, "merged: huddle/crew/alice into main") || testkit.Git(t, repo, "show", "main:a.txt") != "one\ntwo" {
		t.Fatalf("merge: %s; main's a.txt %q", m.stdout, testkit.Git(t, repo, "show", "main:a.txt"))
	}
	huddle(t, "merge", r.ID, "--dir", dir).wantError(t, ExitFail, "already merged by lead", "merge again")
}
