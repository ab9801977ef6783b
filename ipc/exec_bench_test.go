package ipc

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"huddle/protocol"
)

// BenchmarkExecCall measures a call to an exec target, and in the same run
// starting the same program with the same input but no answer, so the
// difference is what the call adds beyond starting a process.
func BenchmarkExecCall(b *testing.B) {
	dir := b.TempDir()
	c := &Caller{TeamDir: dir, Policy: &Policy{Enabled: true, MaxHops: 2, DefaultTimeoutSec: 10, AllowedTargets: []string{"tool"}}, Resolve: execResolver("ok")}
	bare := make([]time.Duration, 0, b.N)
	full := make([]time.Duration, 0, b.N)
	req := protocol.InvocationRequest{Caller: "me", Target: "tool", Action: "run", Prompt: "p"}
	for range b.N {
		t0 := time.Now()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), roleEnv+"=noop")
		cmd.Stdin = strings.NewReader(`{"request_id":"req-1","correlation_id":"corr-1","caller":"me","target":"tool","action":"run","prompt":"p","timeout_sec":10,"hop":0}` + "\n")
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
		bare = append(bare, time.Since(t0))
		t0 = time.Now()
		if res := c.Call(context.Background(), req); res.Status != protocol.ResultOK {
			b.Fatalf("call: %+v", res)
		}
		full = append(full, time.Since(t0))
	}
	slices.Sort(bare)
	slices.Sort(full)
	med := func(d []time.Duration) float64 { return float64(d[len(d)/2].Microseconds()) / 1000 }
	b.ReportMetric(med(bare), "start-ms")
	b.ReportMetric(med(full), "call-ms")
	b.ReportMetric(med(full)-med(bare), "overhead-ms")
}
