package supervisor

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"huddle/inbox"
	"huddle/internal/benchfloor"
	"huddle/internal/testkit/dirlead"
	"huddle/internal/testkit/files"
	"huddle/internal/testkit/teamkit"
	"huddle/protocol"
	"huddle/team"
	"huddle/teamdir"
)

// thousandTeam writes a team of n scripted teammates that warm up for a
// millisecond and then wait for an hour, and returns its directory.
func thousandTeam(b *testing.B, n int) string {
	dir := b.TempDir()
	var members []team.MemberSpec
	for i := range n {
		members = append(members, team.MemberSpec{Name: fmt.Sprintf("m%04d", i), Runtime: team.RuntimeSpec{Kind: team.RuntimeScript,
			Steps: []team.Step{{Work: team.Duration(time.Millisecond), Activity: "warming up"}, {Wait: team.Duration(time.Hour)}}}})
	}
	teamkit.WriteTeam(b, dir, team.Team{Name: "big", Members: members})
	return dir
}

// spawnFloor is the file system's part of spawning n teammates, done bare
// in a directory of its own inside the team directory, writeSlots at a
// time as the runtime spawns: for each one a record written temp + rename
// (its cursor journal is created by its first commit, after the spawn). A
// spawn does at least that; the time depends on the disk at that hour (on
// ext4 without a journal, as on this project's CI machines, a create scans
// the inodes deleted in the last minutes, one block group at a time:
// docs/PERFORMANCE.md), which this benchmark's figure then reads against.
// The floor's directory and the runtime's members/ are both made in the
// team directory, and ext4 tries a new directory's parent's block group
// first, so the two most often pay the same scan; from two unrelated temp
// directories the ratio ran anywhere from 0.77 to 14.7.
func spawnFloor(b *testing.B, team string, n int) time.Duration {
	dir := filepath.Join(team, "spawn-floor")
	if err := os.Mkdir(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	rec := bytes.Repeat([]byte("x"), 200)
	var g errgroup.Group
	g.SetLimit(writeSlots)
	start := time.Now()
	for i := range n {
		g.Go(func() error {
			// The write the runtime makes of a record, and nothing else.
			return teamdir.ReplaceFile(filepath.Join(dir, fmt.Sprintf("m%04d.json", i)), rec)
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// BenchmarkThousandTeammates starts 1,000 scripted teammates in one process
// and reports: the time from calling Run to the team_started event (every
// teammate spawned: record written, inbox consumed, run goroutine started);
// the time until every teammate is working; and the heap and stack each
// teammate costs once every one of them has received a message (sent with
// inbox.Append, each delivered to its handler): heap as the spans in use
// (what the process holds, freed slots in them included) and as the live
// objects alone.
func BenchmarkThousandTeammates(b *testing.B) {
	const n = 1000
	for range b.N {
		dir := thousandTeam(b, n)
		floor := spawnFloor(b, dir, n)
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		started := make(chan time.Time, 1)
		working, idle, delivered := make(chan struct{}, n), make(chan struct{}, n), make(chan struct{}, n)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		start := time.Now()
		go func() {
			done <- Run(ctx, files.Open(b, dir), dir, Options{OnEvent: func(e Event) {
				switch {
				case e["event"] == "team_started":
					started <- time.Now()
				case e["event"] == "message_delivered" && e["from"] == protocol.Lead:
					delivered <- struct{}{}
				case e["event"] != "member_status":
				case e["status"] == string(protocol.MemberWorking) && e["activity"] == "warming up":
					working <- struct{}{}
				case e["status"] == string(protocol.MemberIdle):
					idle <- struct{}{}
				}
			}})
		}()
		toStarted := (<-started).Sub(start)
		for range n {
			<-working
		}
		allWorking := time.Since(start)
		for range n {
			<-idle
		}
		for i := range n {
			m := protocol.NewMessage(protocol.TypeMessage, protocol.Lead, fmt.Sprintf("m%04d", i))
			m.Content = "hello"
			if err := inbox.Append(dir, m.To, &m); err != nil {
				b.Fatal(err)
			}
		}
		for range n {
			<-delivered
		}
		// Stacks shrink by half at most once per collection: three of them
		// (an idle process gets one every two minutes) bring the run
		// goroutines' stacks to what they hold while waiting.
		for range 3 {
			runtime.GC()
		}
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		heap := float64(int64(after.HeapInuse)-int64(before.HeapInuse)) / n
		stack := float64(int64(after.StackInuse)-int64(before.StackInuse)) / n
		live := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(toStarted.Microseconds())/1000, "ms-spawn→team_started")
		b.ReportMetric(float64(floor.Microseconds())/1000, "floor-ms")
		b.ReportMetric(float64(toStarted)/float64(floor), "spawn-ratio")
		b.ReportMetric(float64(allWorking.Microseconds())/1000, "ms-spawn→all-working")
		b.ReportMetric(heap+stack, "heap-B/teammate")
		b.ReportMetric(stack, "stack-B/teammate")
		b.ReportMetric(live, "live-B/teammate")
		b.ReportMetric(float64(threads(b)), "os-threads")
	}
}

// threads is how many OS threads the process has: each keeps its stacks
// (counted in StackInuse) for the life of the process.
func threads(b *testing.B) int {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(raw)) {
		if n, ok := strings.CutPrefix(line, "Threads:"); ok {
			v, _ := strconv.Atoi(strings.TrimSpace(n))
			return v
		}
	}
	return 0
}

// BenchmarkIdleRuntime starts 1,000 scripted teammates, waits until every
// one is idle, and then measures the whole process over a window of 3 s in
// which nothing happens: CPU time (user + system, getrusage) as a share of
// one core's wall time, and context switches (voluntary + involuntary) per
// second, a count of the process's wake-ups. Twice: with the inbox's
// options as they are by default, and with its periodic rescan put off
// (a day), which shows what the team runtime itself costs.
//
// members=5000 runs the defaults with 5,000 teammates: flat in team size,
// its cpu-% is that of 1,000.
func BenchmarkIdleRuntime(b *testing.B) {
	b.Run("inbox-defaults", func(b *testing.B) { benchIdle(b, 1000, inbox.Options{}) })
	b.Run("inbox-rescan-off", func(b *testing.B) { benchIdle(b, 1000, inbox.Options{Rescan: 24 * time.Hour}) })
	b.Run("members=5000", func(b *testing.B) { benchIdle(b, 5000, inbox.Options{}) })
}

func benchIdle(b *testing.B, n int, in inbox.Options) {
	const window = 3 * time.Second
	for range b.N {
		dir := thousandTeam(b, n)
		idle := make(chan struct{}, n)
		ctx, cancel := context.WithCancel(context.Background())
		rt, err := Start(ctx, files.Open(b, dir, in), dir, Options{OnEvent: func(e Event) {
			if e["event"] == "member_status" && e["status"] == string(protocol.MemberIdle) {
				idle <- struct{}{}
			}
		}})
		if err != nil {
			b.Fatal(err)
		}
		for range n {
			<-idle
		}
		// The teammates' last writes may still be settling: what the
		// garbage collector does after them is not idle work, nor is the
		// runtime's background scavenger returning the start's memory to
		// the system over the seconds after a collection (it paces itself
		// to about 1% of a core). FreeOSMemory collects and returns it now,
		// so the window sees the steady state of a team idle for hours.
		debug.FreeOSMemory()
		u0, t0 := rusage(b), time.Now()
		idleFor(ctx, window)
		u1, wall := rusage(b), time.Since(t0)
		cancel()
		if err := rt.Wait(); err != nil {
			b.Fatal(err)
		}
		cpu := time.Duration(u1.Utime.Nano() + u1.Stime.Nano() - u0.Utime.Nano() - u0.Stime.Nano())
		switches := float64(u1.Nvcsw + u1.Nivcsw - u0.Nvcsw - u0.Nivcsw)
		b.ReportMetric(100*float64(cpu)/float64(wall), "cpu-%")
		b.ReportMetric(switches/wall.Seconds(), "wakeups/s")
	}
}

// idleFor blocks for d without a timer of the benchmark's own waking the
// process more than once.
func idleFor(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func rusage(b *testing.B) syscall.Rusage {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return u
}

// BenchmarkPlanApprovalRoundTrip measures from calling Decide to the
// teammate's status becoming working, on a real disk (not tmpfs: the
// decision's fsync is the point), and in the same run, interleaved, the
// floor: creating, writing and fsyncing a small file on the same disk.
// It reports both p50 and p99, the round trip's minus the floor's (what
// huddle adds to the one fsync the round trip needs) and their ratio.
func BenchmarkPlanApprovalRoundTrip(b *testing.B) {
	dir := benchfloor.RealDiskDir(b)
	probeDir := filepath.Join(dir, "probe")
	if err := os.Mkdir(probeDir, 0o700); err != nil {
		b.Fatal(err)
	}
	teamkit.WriteTeam(b, dir, team.Team{Name: "rt", Members: []team.MemberSpec{{Name: "alice", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript,
		Steps: []team.Step{{Plan: "again and again"}, {Loop: true}}}}}})
	opened := make(chan string, 16)
	working := make(chan time.Time, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, files.Open(b, dir), dir, Options{OnEvent: func(e Event) {
			switch {
			case e["event"] == "request_opened" && e["kind"] == "plan":
				opened <- e["id"].(string)
			case e["event"] == "member_status" && e["status"] == string(protocol.MemberWorking) && e["activity"] == "plan approved":
				working <- time.Now()
			}
		}})
	}()
	lat := make([]time.Duration, 0, b.N)
	floor := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		id := <-opened
		floor = append(floor, benchfloor.Fsync(b, filepath.Join(probeDir, fmt.Sprintf("probe-%d", i)), fsyncProbeLine))
		t0 := time.Now()
		if _, err := dirlead.Decide(dir, id, protocol.EventApprove, "", ""); err != nil {
			b.Fatal(err)
		}
		at := <-working
		lat = append(lat, at.Sub(t0))
	}
	b.StopTimer()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	p50, p99 := benchfloor.Percentiles(lat)
	f50, f99 := benchfloor.Percentiles(floor)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(p99), "p99-ms")
	b.ReportMetric(ms(f50), "fsync-p50-ms")
	b.ReportMetric(ms(f99), "fsync-p99-ms")
	b.ReportMetric(ms(p50-f50), "p50-minus-fsync-ms")
	b.ReportMetric(ms(p99-f99), "p99-minus-fsync-ms")
	b.ReportMetric(float64(p99)/float64(f99), "p99-ratio")
}

// fsyncProbeLine is what the fsync probe writes: a decision's size.
var fsyncProbeLine = []byte(`{"event":"approve","by":"lead","at":"2026-01-01T00:00:00Z"}` + "\n")
