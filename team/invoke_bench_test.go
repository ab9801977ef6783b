package team

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"huddle/internal/testkit/files"
	"huddle/protocol"
)

// BenchmarkTeammateCall measures a teammate-to-teammate call in one
// process: a's Caller → b's inbox → b's action → a's inbox → a's call.
func BenchmarkTeammateCall(b *testing.B) {
	dir := b.TempDir()
	os.MkdirAll(filepath.Join(dir, "ipc"), 0o700)
	os.WriteFile(filepath.Join(dir, "ipc", "a.json"), []byte(`{"allowed_targets":["b"]}`), 0o600)
	a := MemberSpec{Name: "a", IPC: "ipc/a.json", Runtime: RuntimeSpec{Kind: RuntimeScript, Steps: []Step{{Wait: Duration(time.Hour)}}}}
	bm := MemberSpec{Name: "b", Runtime: RuntimeSpec{Kind: RuntimeScript, Steps: []Step{{Wait: Duration(time.Hour)}}},
		Actions: map[string]ActionSpec{"echo": {Reply: "ok"}}}
	writeTeamB(b, dir, Team{Name: "bench", Members: []MemberSpec{a, bm}})
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
