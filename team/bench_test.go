package team

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"huddle/protocol"
)

// BenchmarkThousandTeammates starts 1,000 scripted teammates in one process
// and reports the time until all are working and the memory each costs
// while idle.
func BenchmarkThousandTeammates(b *testing.B) {
	const n = 1000
	for range b.N {
		dir := b.TempDir()
		var members []MemberSpec
		for i := range n {
			members = append(members, MemberSpec{Name: fmt.Sprintf("m%04d", i), Runtime: RuntimeSpec{Kind: RuntimeScript,
				Steps: []Step{{Work: Duration(time.Millisecond), Activity: "warming up"}, {Wait: Duration(time.Hour)}}}})
		}
		writeTeamB(b, dir, Team{Name: "big", Members: members})
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		working, idle := make(chan struct{}, n), make(chan struct{}, n)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		start := time.Now()
		go func() {
			done <- Run(ctx, dir, Options{OnEvent: func(e Event) {
				if e["event"] != "member_status" {
					return
				}
				switch {
				case e["status"] == string(protocol.MemberWorking) && e["activity"] == "warming up":
					working <- struct{}{}
				case e["status"] == string(protocol.MemberIdle):
					idle <- struct{}{}
				}
			}})
		}()
		for range n {
			<-working
		}
		allWorking := time.Since(start)
		for range n {
			<-idle
		}
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		perMate := float64(after.HeapInuse+after.StackInuse-before.HeapInuse-before.StackInuse) / n
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(allWorking.Milliseconds()), "ms-to-all-working")
		b.ReportMetric(perMate/1024, "KiB/idle-teammate")
	}
}

// BenchmarkPlanApprovalRoundTrip measures from Decide returning to the
// teammate's status becoming working.
func BenchmarkPlanApprovalRoundTrip(b *testing.B) {
	dir := b.TempDir()
	writeTeamB(b, dir, Team{Name: "rt", Members: []MemberSpec{{Name: "alice", Runtime: RuntimeSpec{Kind: RuntimeScript,
		Steps: []Step{{Plan: "again and again"}, {Loop: true}}}}}})
	opened := make(chan string, 16)
	working := make(chan time.Time, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, dir, Options{OnEvent: func(e Event) {
			switch {
			case e["event"] == "request_opened" && e["kind"] == "plan":
				opened <- e["id"].(string)
			case e["event"] == "member_status" && e["status"] == string(protocol.MemberWorking) && e["activity"] == "plan approved":
				working <- time.Now()
			}
		}})
	}()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		id := <-opened
		t0 := time.Now()
		if _, err := Decide(dir, id, protocol.EventApprove, "", ""); err != nil {
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
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99-ms")
}

func writeTeamB(b *testing.B, dir string, tm Team) {
	b.Helper()
	bs, err := jsonMarshal(tm)
	if err != nil {
		b.Fatal(err)
	}
	if err := writeFile(ConfigPath(dir), bs); err != nil {
		b.Fatal(err)
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func writeFile(p string, b []byte) error { return os.WriteFile(p, b, 0o600) }
