package team_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"huddle/internal/benchfloor"
	"huddle/team"
)

// BenchmarkWorktrees50: huddle worktrees' listing of 50 worktrees of one
// repository (each a checkout of 200 files, a few with a commit of their
// own): every worktree with its size, branch and ahead/behind (list-ms);
// beside git worktree list alone, the one process any listing runs
// (floor-ms), timed alternately in the same run.
func BenchmarkWorktrees50(b *testing.B) {
	repo := b.TempDir()
	gitB := func(dir string, args ...string) {
		b.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	gitB(repo, "init", "--quiet", "-b", "main")
	gitB(repo, "config", "user.name", "Bench")
	gitB(repo, "config", "user.email", "bench@example.com")
	for i := range 200 {
		if err := os.WriteFile(filepath.Join(repo, fmt.Sprintf("f%03d.txt", i)), []byte(fmt.Sprintf("file %d\n", i)), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	gitB(repo, "add", ".")
	gitB(repo, "commit", "--quiet", "-m", "base")
	dir := b.TempDir()
	on := true
	tm := &team.Team{Name: "crew", WorkspaceDefaults: &team.WorkspaceSpec{Repo: repo, Worktree: &on}}
	for i := range 50 {
		name := fmt.Sprintf("m%02d", i)
		tm.Members = append(tm.Members, team.MemberSpec{Name: name, Runtime: team.RuntimeSpec{Kind: team.RuntimeExternal}})
		ws, _ := tm.Workspace(dir, name)
		gitB(repo, "worktree", "add", "--quiet", "--track", "-b", ws.Branch, ws.Path, "main")
		if i%5 == 0 {
			if err := os.WriteFile(filepath.Join(ws.Path, "new.txt"), []byte(name), 0o600); err != nil {
				b.Fatal(err)
			}
			gitB(ws.Path, "add", ".")
			gitB(ws.Path, "commit", "--quiet", "-m", "work")
		}
	}
	ctx := context.Background()
	var list, floor []time.Duration
	for b.Loop() {
		t0 := time.Now()
		cmd := exec.Command("git", "worktree", "list", "--porcelain")
		cmd.Dir = repo
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		floor = append(floor, time.Since(t0))
		t0 = time.Now()
		l, err := team.ListWorktrees(ctx, tm, dir, false)
		if err != nil || len(l.Worktrees) != 50 || l.Worktrees[0].Ahead != 1 {
			b.Fatalf("listed %d worktrees: %v", len(l.Worktrees), err)
		}
		list = append(list, time.Since(t0))
	}
	l50, l99 := benchfloor.Percentiles(list)
	f50, _ := benchfloor.Percentiles(floor)
	b.ReportMetric(float64(l50.Microseconds())/1000, "list-ms")
	b.ReportMetric(float64(l99.Microseconds())/1000, "list-p99-ms")
	b.ReportMetric(float64(f50.Microseconds())/1000, "floor-ms")
	b.ReportMetric(float64(l50)/float64(f50), "ratio")
	b.ReportMetric(0, "ns/op")
}
