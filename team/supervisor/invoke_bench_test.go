package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"huddle/internal/testkit/files"
	"huddle/internal/testkit/teamkit"
	"huddle/protocol"
	"huddle/team"
)

// BenchmarkTeammateCall measures a teammate-to-teammate call in one
// process: a's Caller → b's inbox → b's action → a's inbox → a's call.
func BenchmarkTeammateCall(b *testing.B) {
	dir := b.TempDir()
	os.MkdirAll(filepath.Join(dir, "ipc"), 0o700)
	os.WriteFile(filepath.Join(dir, "ipc", "a.json"), []byte(`{"allowed_targets":["b"]}`), 0o600)
	a := team.MemberSpec{Name: "a", IPC: "ipc/a.json", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript, Steps: []team.Step{{Wait: team.Duration(time.Hour)}}}}
	bm := team.MemberSpec{Name: "b", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript, Steps: []team.Step{{Wait: team.Duration(time.Hour)}}},
		Actions: map[string]team.ActionSpec{"echo": {Reply: "ok"}}}
	teamkit.WriteTeam(b, dir, team.Team{Name: "bench", Members: []team.MemberSpec{a, bm}})
	ctx, cancel := context.WithCancel(context.Background())
	rt, err := Start(ctx, files.Open(b, dir), dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { cancel(); rt.Wait() }()
	caller := rt.caller("a")
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		res := caller.Call(ctx, protocol.InvocationRequest{Caller: "a", Target: "b", Action: "echo", Prompt: "ping", TimeoutSec: 10})
		lat = append(lat, time.Since(t0))
		if res.Status != protocol.ResultOK {
			b.Fatalf("call: %+v", res)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
