package tui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"huddle/internal/benchfloor"
	"huddle/worktree"
)

// bigChange makes a real repository whose branch changes 5,000 lines over
// 20 Go files (each file's old text replaced in part, new lines added),
// and returns it with the two commits.
func bigChange(b *testing.B) (*worktree.Repo, string, string) {
	b.Helper()
	dir := b.TempDir()
	run := func(args ...string) string {
		b.Helper()
		r := &worktree.Repo{Dir: dir}
		out, err := r.Git(context.Background(), args...)
		if err != nil {
			b.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	run("init", "--quiet", "-b", "main")
	run("config", "user.name", "Bench")
	run("config", "user.email", "bench@example.com")
	write := func(i int, lines int, changed bool) {
		var s strings.Builder
		fmt.Fprintf(&s, "package p%d\n\nimport \"fmt\"\n\n", i)
		for j := range lines {
			if changed && j%2 == 0 {
				fmt.Fprintf(&s, "func f%d_%d() error { return fmt.Errorf(\"changed %d\") }\n", i, j, j)
			} else {
				fmt.Fprintf(&s, "func f%d_%d() string { return fmt.Sprint(%d) }\n", i, j, j)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.go", i)), []byte(s.String()), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 20 {
		write(i, 200, false)
	}
	run("add", ".")
	run("commit", "--quiet", "-m", "base")
	base := run("rev-parse", "HEAD")
	for i := range 20 {
		write(i, 200, true) // 100 lines changed: 100 deleted, 100 added
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("f%02d.go", i)), os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		for j := range 50 {
			fmt.Fprintf(f, "func g%d_%d() int { return %d }\n", i, j, j)
		}
		f.Close()
	}
	run("add", ".")
	run("commit", "--quiet", "-m", "change")
	head := run("rev-parse", "HEAD")
	r, err := worktree.Open(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	st, err := r.DiffStat(context.Background(), base, head)
	if err != nil || st.Added+st.Deleted != 5000 {
		b.Fatalf("the change is %+v lines, want 5,000: %v", st, err)
	}
	return r, base, head
}

// BenchmarkDiffViewOpen: a review of a 5,000-line change opens as the
// screen opens it: git diff (the review's ReviewDiff), parsed, the view
// built and its first 120×36 frame drawn (open-ms); beside git diff alone,
// the floor any diff view has (floor-ms), timed alternately in the same
// run.
func BenchmarkDiffViewOpen(b *testing.B) {
	r, base, head := bigChange(b)
	ctx := context.Background()
	var open, floor, view []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := r.Diff(ctx, base, head); err != nil {
			b.Fatal(err)
		}
		floor = append(floor, time.Since(t0))

		t0 = time.Now()
		d, err := r.Diff(ctx, base, head)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		m, _ := newTestModel(b, 120, 36)
		m.Update(diffLoadedMsg{id: "rv-000000000001", member: "alice", title: "review", files: worktree.ParseDiff(d)})
		if !strings.Contains(m.View().Content, "f00.go") {
			b.Fatal("the view does not show the first file")
		}
		open = append(open, time.Since(t0))
		view = append(view, time.Since(t1))
	}
	o50, o99 := benchfloor.Percentiles(open)
	f50, _ := benchfloor.Percentiles(floor)
	v50, _ := benchfloor.Percentiles(view)
	b.ReportMetric(float64(o50.Microseconds())/1000, "open-ms")
	b.ReportMetric(float64(o99.Microseconds())/1000, "open-p99-ms")
	b.ReportMetric(float64(f50.Microseconds())/1000, "floor-ms")
	b.ReportMetric(float64(v50.Microseconds())/1000, "view-ms")
	b.ReportMetric(float64(o50)/float64(f50), "ratio")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkDiffViewScroll: one keystroke in the open view of the 5,000-line
// change and the frame it draws, unified at 120×36 and side by side at
// 200×50: j, pgdn, n and ] in turn (frame-us, its p99); a frame drops when
// it takes longer than the UI's frame interval (1/FPS), budget-ratio is
// the p99 over it.
func BenchmarkDiffViewScroll(b *testing.B) {
	r, base, head := bigChange(b)
	d, err := r.Diff(context.Background(), base, head)
	if err != nil {
		b.Fatal(err)
	}
	files := worktree.ParseDiff(d)
	for _, size := range [][2]int{{120, 36}, {200, 50}} {
		b.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(b *testing.B) {
			m, _ := newTestModel(b, size[0], size[1])
			m.Update(diffLoadedMsg{id: "rv-000000000001", member: "alice", title: "review", files: files})
			m.View()
			keys := []string{"j", "pgdn", "n", "j", "]"}
			var lat []time.Duration
			i := 0
			for b.Loop() {
				t0 := time.Now()
				send(m, keys[i%len(keys)])
				_ = m.View()
				lat = append(lat, time.Since(t0))
				i++
			}
			p50, p99 := benchfloor.Percentiles(lat)
			budget := time.Second / FPS
			b.ReportMetric(float64(p50.Nanoseconds())/1000, "frame-us")
			b.ReportMetric(float64(p99.Nanoseconds())/1000, "frame-p99-us")
			b.ReportMetric(float64(p99)/float64(budget), "budget-ratio")
			b.ReportMetric(0, "ns/op")
		})
	}
}
