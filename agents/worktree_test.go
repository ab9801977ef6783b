package agents_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/dirlead"
	"huddle/internal/testkit/dirrecords"
	"huddle/protocol"
)

// TestClaudeTeammateInItsWorktree: Claude Code (the fake replaying the
// real session, its Write done where it runs) as a teammate whose
// workspace has a worktree: the CLI runs in the member's worktree on its
// own branch, its file lands there and not in main, and its run's end
// opens a review of the branch, linked to the approved plan.
func TestClaudeTeammateInItsWorktree(t *testing.T) {
	repo := testkit.GitRepo(t, map[string]string{"README": "base\n"})

	b, err := os.ReadFile(filepath.Join("testdata", claudeSessionFixture))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	var script []string
	for _, l := range lines {
		if strings.HasPrefix(l, `{"duration_api_ms"`) && !strings.Contains(strings.Join(script, "\n"), "#write") {
			script = append(script, "#write hello.txt Hello from Claude Code") // its Write, before the run's result
		}
		script = append(script, l)
	}
	f := newFakeOf(t, "claude", strings.Join(script, "\n")+"\n")
	on := true
	rt := startRuntimeWith(t, map[string]any{"workspace": map[string]any{"repo": repo, "worktree": on}},
		"huddle", "agent", "claude", "--task", task, "--bin", f.bin)

	for range 2 { // the plan, rejected and revised, then approved
		plan := rt.pendingPlan(t)
		ev, fb := protocol.EventApprove, ""
		if !strings.Contains(plan.Plan, "hello") || plan.Revises == "" {
			ev, fb = protocol.EventReject, "revise"
		}
		if _, err := dirlead.Decide(rt.dir, plan.ID, ev, fb, protocol.Lead); err != nil {
			t.Fatal(err)
		}
		if ev == protocol.EventApprove {
			break
		}
	}
	for _, use := range []struct {
		tool, holds string
		ev          protocol.RequestEvent
	}{{"Write", "hello.txt", protocol.EventApprove}, {"Bash", "mkdir -p out", protocol.EventApprove}, {"Bash", "rm -rf out", protocol.EventReject}} {
		p := rt.pendingPermission(t, use.tool, use.holds)
		fb := ""
		if use.ev == protocol.EventReject {
			fb = "Keep out/: the lead wants to read it."
		}
		if _, err := dirlead.Decide(rt.dir, p.ID, use.ev, fb, protocol.Lead); err != nil {
			t.Fatal(err)
		}
	}
	wt := filepath.Join(rt.dir, "worktrees", "agents", "coder")
	review := rt.review(t)
	if review.Review.Branch != "huddle/agents/coder" || review.Review.Worktree != wt || review.Review.Files != 1 {
		t.Fatalf("the review: %+v", review.Review)
	}
	if p, err := dirrecords.LoadRequest(rt.dir, review.Review.Plan); err != nil || p.Status != protocol.RequestApproved {
		t.Fatalf("the review's plan %s: %+v %v", review.Review.Plan, p, err)
	}
	if got := testkit.Git(t, repo, "show", review.Review.Head+":hello.txt"); got != "Hello from Claude Code" {
		t.Fatalf("the reviewed hello.txt: %q", got)
	}
	if _, err := os.Stat(filepath.Join(repo, "hello.txt")); !os.IsNotExist(err) {
		t.Fatalf("hello.txt reached main's worktree: %v", err)
	}
}

// TestCodexTeammateInItsWorktree: Codex's app server (the fake replaying
// the real one, its command's file made where it runs) as a teammate with
// a worktree: its work lands on its own branch and opens a review linked
// to its plan, main untouched.
func TestCodexTeammateInItsWorktree(t *testing.T) {
	repo := testkit.GitRepo(t, map[string]string{"README": "base\n"})

	b, err := os.ReadFile(filepath.Join("testdata", codexFixture))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	last := len(lines) - 1 // the work turn's turn/completed
	if !strings.Contains(lines[last], `"turn/completed"`) {
		t.Fatalf("the fixture does not end with its turn: %.80s", lines[last])
	}
	script := append(append(append([]string{}, lines[:last]...), "#write second.txt made by Codex"), lines[last])
	f := newFakeOf(t, "codex", strings.Join(script, "\n")+"\n")
	rt := startRuntimeWith(t, map[string]any{"workspace": map[string]any{"repo": repo, "worktree": true}},
		"huddle", "agent", "codex", "--task", task, "--bin", f.bin)

	defer func() {
		if t.Failed() {
			rs, _ := dirrecords.ListRequests(rt.dir)
			for _, r := range rs {
				t.Logf("%s %s %s %s", r.ID, r.Kind, r.Status, r.ResolvedBy)
			}
			t.Logf("member %+v\nactivities %s", rt.member(t), rt.activities())
			log, _ := os.ReadFile(filepath.Join(rt.dir, "members", "coder.log"))
			t.Logf("log %s", log)
		}
	}()
	// What the plan's turn asks (before any plan: the lead decides it),
	// as the recorded session was answered.
	for _, use := range []struct {
		tool, holds string
		ev          protocol.RequestEvent
	}{{"Bash", "touch made.txt", protocol.EventApprove}, {"Edit", "notes.txt", protocol.EventApprove},
		{"Bash", "rm made.txt", protocol.EventReject}, {"Edit", "declined.txt", protocol.EventReject}} {
		p := rt.pendingPermission(t, use.tool, use.holds)
		fb := ""
		if use.ev == protocol.EventReject {
			fb = "no"
		}
		if _, err := dirlead.Decide(rt.dir, p.ID, use.ev, fb, protocol.Lead); err != nil {
			t.Fatal(err)
		}
	}
	plan := rt.pendingPlan(t)
	if _, err := dirlead.Decide(rt.dir, plan.ID, protocol.EventApprove, "", protocol.Lead); err != nil {
		t.Fatal(err)
	}
	p := rt.pendingPermission(t, "Bash", "touch second.txt")
	if _, err := dirlead.Decide(rt.dir, p.ID, protocol.EventApprove, "", protocol.Lead); err != nil {
		t.Fatal(err)
	}
	review := rt.review(t)
	if review.Review.Branch != "huddle/agents/coder" || review.Review.Plan != plan.ID {
		t.Fatalf("the review: %+v", review.Review)
	}
	if got := testkit.Git(t, repo, "show", review.Review.Head+":second.txt"); got != "made by Codex" {
		t.Fatalf("the reviewed second.txt: %q", got)
	}
	if _, err := os.Stat(filepath.Join(repo, "second.txt")); !os.IsNotExist(err) {
		t.Fatalf("second.txt reached main's worktree: %v", err)
	}
}

// review waits for coder's review request.
func (rt *runtime) review(t *testing.T) *protocol.Request {
	t.Helper()
	var review *protocol.Request
	testkit.WaitFor(t, 30*time.Second, "coder's review", func() bool {
		rs, _ := dirrecords.ListRequests(rt.dir)
		for i := range rs {
			if rs[i].Kind == protocol.KindReview && rs[i].From == "coder" {
				review = &rs[i]
				return true
			}
		}
		return false
	})
	return review
}
