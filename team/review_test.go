package team_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"huddle/internal/testkit"
	"huddle/internal/testkit/teamkit"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/worktree"
)

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// coderWorkspace makes a real repository on main and member's worktree of
// it, as the runtime makes it, and returns the workspace.
func coderWorkspace(t *testing.T, k *teamkit.Kept, member string, merge string) *team.Workspace {
	t.Helper()
	repo := testkit.GitRepo(t, map[string]string{"a.txt": "one\ntwo\nthree\n"})
	on := true
	k.Tm.WorkspaceDefaults = &team.WorkspaceSpec{Repo: repo, Worktree: &on, Merge: merge}
	ws, ok := k.Tm.Workspace(t.TempDir(), member)
	if !ok {
		t.Fatalf("%s has no workspace", member)
	}
	r, err := worktree.Open(t.Context(), repo)
	if err != nil {
		t.Fatal(err)
	}
	ws.Base = "main"
	if _, err := r.Ensure(t.Context(), ws.Path, ws.Branch, ws.Base); err != nil {
		t.Fatal(err)
	}
	return ws
}

// TestTwoMergersOneWinner: the lead merges one review from two places at
// once (two handles on each store); one merges and the other is told it
// lost, the base holds the change once, and the teammate is told once.
func TestTwoMergersOneWinner(t *testing.T) {
	teamkit.OnEachStore(t, teamkit.Crew, func(t *testing.T, k *teamkit.Kept) {
		ctx := t.Context()
		ws := coderWorkspace(t, k, "ana", team.MergeMerge)
		write(t, filepath.Join(ws.Path, "a.txt"), "one\nTWO\nthree\n")
		r, err := team.OpenReview(ctx, k.St, k.Tm, ws, "", "done: TWO")
		if err != nil || r == nil {
			t.Fatalf("OpenReview: %v %v", r, err)
		}
		again, err := team.OpenReview(ctx, k.St, k.Tm, ws, "", "done: TWO")
		if err != nil || again.ID != r.ID {
			t.Fatalf("a second OpenReview of the same commit: %v %v", again, err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		start := make(chan struct{})
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = team.Merge(ctx, k.St, r.ID, protocol.Lead)
			}()
		}
		close(start)
		wg.Wait()
		var already *store.AlreadyError
		won := 0
		for i, err := range errs {
			switch {
			case err == nil:
				won++
			case errors.As(err, &already) && already.Status == protocol.RequestMerged:
			default:
				t.Fatalf("merger %d: %v", i, err)
			}
		}
		if won != 1 {
			t.Fatalf("%d mergers won: %v", won, errs)
		}
		if n := testkit.Git(t, ws.Repo, "rev-list", "--count", "main"); n != "2" {
			t.Fatalf("main has %s commits, want the first and the change", n)
		}
		if got := testkit.Git(t, ws.Repo, "show", "main:a.txt"); got != "one\nTWO\nthree" {
			t.Fatalf("main's a.txt: %q", got)
		}
		told := 0
		for _, m := range k.MessagesTo(t, "ana") {
			if strings.Contains(m.Content, r.ID) {
				told++
			}
		}
		if told != 1 {
			t.Fatalf("ana was told %d times", told)
		}
	})
}

// TestDiscardKeepsTheOldTip: a discarded change leaves the branch at the
// base and the worktree clean but for ignored files, and the discarded
// commit stays reachable; a review the base already holds opens nothing.
func TestDiscardKeepsTheOldTip(t *testing.T) {
	teamkit.OnEachStore(t, teamkit.Crew, func(t *testing.T, k *teamkit.Kept) {
		ctx := context.Background()
		ws := coderWorkspace(t, k, "ana", team.MergeMerge)
		if r, err := team.OpenReview(ctx, k.St, k.Tm, ws, "", "nothing yet"); err != nil || r != nil {
			t.Fatalf("a review of nothing: %v %v", r, err)
		}
		write(t, filepath.Join(ws.Path, "new.txt"), "mine\n")
		r, err := team.OpenReview(ctx, k.St, k.Tm, ws, "", "done: new file")
		if err != nil || r == nil {
			t.Fatal(err)
		}
		lost, err := team.Unmerged(ctx, r)
		if err != nil || len(lost) != 1 || lost[0].Subject != "ana: new file" {
			t.Fatalf("Unmerged = %v, %v", lost, err)
		}
		d, err := team.Discard(ctx, k.St, r.ID, protocol.Lead)
		if err != nil {
			t.Fatal(err)
		}
		if d.Request.Status != protocol.RequestDiscarded {
			t.Fatalf("status %s", d.Request.Status)
		}
		if testkit.Git(t, ws.Path, "rev-parse", "HEAD") != testkit.Git(t, ws.Repo, "rev-parse", "main") {
			t.Fatal("the branch is not back at main")
		}
		if _, err := os.Stat(filepath.Join(ws.Path, "new.txt")); !os.IsNotExist(err) {
			t.Fatalf("new.txt is still there: %v", err)
		}
		if got := testkit.Git(t, ws.Repo, "show", d.Kept+":new.txt"); got != "mine" {
			t.Fatalf("the discarded commit is not kept: %q", got)
		}
		if _, err := team.Merge(ctx, k.St, r.ID, protocol.Lead); err == nil {
			t.Fatal("a discarded review merged")
		}
	})
}

// TestFastForwardOnlyAsksForARebase: with "merge": "ff", a base that
// moved on is no merge: the review ends changes_requested asking for a
// rebase, and main is untouched. With "rebase", the same change is
// rebased onto main and merged.
func TestFastForwardOnlyAsksForARebase(t *testing.T) {
	teamkit.OnEachStore(t, teamkit.Crew, func(t *testing.T, k *teamkit.Kept) {
		ctx := t.Context()
		for _, mode := range []string{team.MergeFF, team.MergeRebase} {
			ws := coderWorkspace(t, k, "ana", mode)
			write(t, filepath.Join(ws.Path, "b.txt"), "b\n")
			r, err := team.OpenReview(ctx, k.St, k.Tm, ws, "", "done: b")
			if err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(ws.Repo, "c.txt"), "c\n")
			testkit.Git(t, ws.Repo, "add", "c.txt")
			testkit.Git(t, ws.Repo, "commit", "--quiet", "-m", "main moves")
			before := testkit.Git(t, ws.Repo, "rev-parse", "main")
			m, err := team.Merge(ctx, k.St, r.ID, protocol.Lead)
			switch mode {
			case team.MergeFF:
				if !errors.Is(err, worktree.ErrNotFastForward) || testkit.Git(t, ws.Repo, "rev-parse", "main") != before {
					t.Fatalf("ff-only over a moved base: %v", err)
				}
				if got := k.Request(r.ID); got.Status != protocol.RequestChangesRequested || !strings.Contains(got.Feedback, "git rebase main") {
					t.Fatalf("ff-only review: %s %q", got.Status, got.Feedback)
				}
			case team.MergeRebase:
				if err != nil || m.How != "rebased" {
					t.Fatalf("rebase: %+v %v", m, err)
				}
				if got := testkit.Git(t, ws.Repo, "rev-list", "--count", "--merges", "main"); got != "0" {
					t.Fatalf("a rebase left %s merge commits", got)
				}
				if testkit.Git(t, ws.Repo, "show", "main:b.txt") != "b" {
					t.Fatal("main does not have b.txt")
				}
			}
		}
	})
}

// TestTeardownOnlyOnceApproved: a workspace's teardown runs in its
// worktree only when the lead approved its scripts (by their sha256), and
// a failing one says which command failed.
func TestTeardownOnlyOnceApproved(t *testing.T) {
	dir := t.TempDir()
	on := true
	tm := &team.Team{Name: "crew", WorkspaceDefaults: &team.WorkspaceSpec{Repo: dir, Worktree: &on, Teardown: []string{"echo down > torn"}},
		Members: []team.MemberSpec{{Name: "ana", Runtime: team.RuntimeSpec{Kind: team.RuntimeExternal}}}}
	ws, _ := tm.Workspace(dir, "ana")
	if err := os.MkdirAll(ws.Path, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := team.Teardown(t.Context(), dir, ws); !errors.Is(err, team.ErrScriptNotApproved) {
		t.Fatalf("an unapproved teardown: %v", err)
	}
	if _, err := os.Stat(filepath.Join(ws.Path, "torn")); !os.IsNotExist(err) {
		t.Fatal("an unapproved teardown ran")
	}
	if err := team.RememberScript(dir, ws.ScriptsSum(), "su-0123456789ab", protocol.Lead); err != nil {
		t.Fatal(err)
	}
	if err := team.RememberScript(dir, ws.ScriptsSum(), "su-0123456789ab", protocol.Lead); err != nil {
		t.Fatalf("remembering it twice: %v", err)
	}
	if err := team.Teardown(t.Context(), dir, ws); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws.Path, "torn")); string(b) != "down\n" {
		t.Fatalf("torn: %q", b)
	}
	ws.Teardown = []string{"exit 3"}
	if err := team.RememberScript(dir, ws.ScriptsSum(), "su-0123456789ac", protocol.Lead); err != nil {
		t.Fatal(err)
	}
	if err := team.Teardown(t.Context(), dir, ws); err == nil || !strings.Contains(err.Error(), `"exit 3"`) {
		t.Fatalf("a failing teardown: %v", err)
	}
	if err := team.RememberScript(dir, "../../etc/passwd", "x", "y"); err == nil {
		t.Fatal("a sum that is a path was accepted")
	}
}
