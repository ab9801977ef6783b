package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"huddle/internal/testkit/files"
	"huddle/internal/testkit/teamkit"
	"huddle/protocol"
	"huddle/team"
	"huddle/teamdir"
)

// historyTeam writes a team of one exec teammate (sleep) over n final
// request records left live in requests/, as a foreign agent or a runtime
// killed before archiving leaves them (no decision beside them), and
// returns its directory.
func historyTeam(tb testing.TB, n int) string {
	tb.Helper()
	dir := tb.TempDir()
	teamkit.WriteTeam(tb, dir, team.Team{Name: "history", Members: []team.MemberSpec{
		{Name: "sleeper", Runtime: team.RuntimeSpec{Kind: team.RuntimeExec, Command: []string{"sleep", "3600"}}},
	}})
	if err := os.MkdirAll(teamdir.RequestsDirPath(dir), teamdir.DirMode); err != nil {
		tb.Fatal(err)
	}
	created := time.Now().Add(-time.Hour)
	for i := range n {
		r := protocol.NewRequest(protocol.KindPlan, protocol.NewRequestID(protocol.KindPlan), "sleeper", protocol.Lead, created.Add(time.Duration(i)*time.Millisecond), time.Minute)
		r.Plan = "plan " + fmt.Sprint(i)
		r.Status = protocol.RequestApproved
		r.History = append(r.History, protocol.Transition{At: r.Created.Add(time.Second), To: protocol.RequestApproved, By: protocol.Lead})
		b, err := json.Marshal(&r)
		if err != nil {
			tb.Fatal(err)
		}
		p, err := teamdir.RequestPath(dir, r.ID)
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, b, teamdir.FileMode); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// readFloor reads every record in requests/ once, as any start must to
// find the pending ones among them: the floor under the start.
func readFloor(tb testing.TB, dir string) time.Duration {
	start := time.Now()
	ents, err := os.ReadDir(teamdir.RequestsDirPath(dir))
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(teamdir.RequestsDirPath(dir) + "/" + e.Name())
		if err != nil {
			tb.Fatal(err)
		}
		var r protocol.Request
		if err := json.Unmarshal(b, &r); err != nil {
			tb.Fatal(err)
		}
	}
	return time.Since(start)
}

// liveRecords counts the records left in requests/ (not yet archived).
func liveRecords(tb testing.TB, dir string) int {
	ents, err := os.ReadDir(teamdir.RequestsDirPath(dir))
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if !e.IsDir() && len(e.Name()) > 5 && e.Name()[len(e.Name())-5:] == ".json" {
			n++
		}
	}
	return n
}

// BenchmarkStartOverHistory starts a team over 20,000 final records no one
// archived and reports the time from calling Run to team_started, the
// floor (reading the 20,000 records once), and the time until all of them
// are archived.
func BenchmarkStartOverHistory(b *testing.B) {
	const n = 20000
	for range b.N {
		b.StopTimer()
		dir := historyTeam(b, n)
		floor := readFloor(b, dir)
		b.StartTimer()
		started := make(chan time.Time, 1)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		start := time.Now()
		go func() {
			done <- Run(ctx, files.Open(b, dir), dir, Options{OnEvent: func(e Event) {
				if e["event"] == "team_started" {
					started <- time.Now()
				}
			}})
		}()
		toStarted := (<-started).Sub(start)
		for deadline := time.Now().Add(10 * time.Minute); liveRecords(b, dir) > 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatalf("%d records still live after 10m", liveRecords(b, dir))
			}
		}
		archived := time.Since(start)
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(toStarted.Microseconds())/1000, "ms-Run→team_started")
		b.ReportMetric(float64(floor.Microseconds())/1000, "floor-ms")
		b.ReportMetric(float64(archived.Microseconds())/1000, "ms-Run→all-archived")
	}
}
