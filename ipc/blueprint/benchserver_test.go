package blueprint

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"huddle/internal/benchfloor"
)

// benchServerEnv, set to "served" or "floor", starts this test binary as
// the server of BenchmarkCycleServerCPU instead of running the tests.
const benchServerEnv = "HUDDLE_TEST_BENCH_SERVER"

func TestMain(m *testing.M) {
	if kind := os.Getenv(benchServerEnv); kind != "" {
		os.Exit(runBenchServer(kind, os.Getenv("DIR")))
	}
	os.Exit(m.Run())
}

// runBenchServer serves on a loopback port, the stack `huddle serve` runs
// (kind "served", its store and request log in dir) or BenchmarkCycle's
// bare floor ("floor"), prints its URL and serves until its stdin closes.
func runBenchServer(kind, dir string) int {
	var hs *http.Server
	switch kind {
	case "served":
		logFile, err := os.Create(filepath.Join(dir, "serve.log"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer logFile.Close()
		srv, err := NewServed(ServedConfig{Dir: dir, Backend: noopBackend{}, MaxRunning: 4096, Keep: time.Hour, LogTo: logFile})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer srv.Close()
		hs = srv.HTTP
	case "floor":
		hs = &http.Server{Handler: floorHandler()}
	default:
		fmt.Fprintf(os.Stderr, "no bench server %q\n", kind)
		return 2
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go hs.Serve(ln)
	fmt.Printf("http://%s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	hs.Close()
	return 0
}

// benchServer is a server process of BenchmarkCycleServerCPU.
type benchServer struct {
	*benchfloor.Child
	url string
}

// startBenchServer starts a server process of kind; the benchmark's
// cleanup ends it.
func startBenchServer(b *testing.B, kind string) *benchServer {
	b.Helper()
	s := &benchServer{Child: benchfloor.StartChild(b, benchServerEnv+"="+kind, "DIR="+b.TempDir())}
	url, err := s.Out.ReadString('\n')
	if err != nil {
		b.Fatalf("%s server: %v", kind, err)
	}
	s.url = strings.TrimSpace(url)
	return s
}

// cpu is the CPU time the server process has used, every thread's, those
// ended included (/proc/PID/stat utime + stime, in clock ticks of 10 ms).
func (s *benchServer) cpu(b *testing.B) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.Cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command name, which ends at the last ')'.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	if len(f) < 13 {
		b.Fatalf("/proc/%d/stat: %q", s.Cmd.Process.Pid, raw)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %q", s.Cmd.Process.Pid, raw)
	}
	const tick = 10 * time.Millisecond // USER_HZ 100 on Linux
	return time.Duration(utime+stime) * tick
}

// BenchmarkCycleServerCPU runs BenchmarkCycle's cycles (16 clients, in
// this process) against the stack `huddle serve` runs in another process
// (this test binary re-executed), then its floor, the bare net/http
// server, likewise, and measures the servers' CPU alone, as a `huddle
// serve` spends it for callers on other machines: server-cpu-µs/cycle and
// floor-server-cpu-µs/cycle (utime + stime of the server process over the
// run, per cycle), their ratio, and server-capacity-cycles/s, the cycles a
// second this machine's cores (runtime.NumCPU) could serve at that CPU
// per cycle with the clients elsewhere; floor-capacity-cycles/s the same
// for the bare server.
//
//	go test -run '^$' -bench CycleServerCPU -benchtime 20000x -count 3 ./ipc/blueprint
func BenchmarkCycleServerCPU(b *testing.B) {
	served, floor := startBenchServer(b, "served"), startBenchServer(b, "floor")
	b.ResetTimer()
	c0 := served.cpu(b)
	runCycles(b, b.N, func(ctx context.Context) error { return servedCycle(ctx, served.url) })
	c1 := served.cpu(b)
	f0 := floor.cpu(b)
	runCycles(b, b.N, func(ctx context.Context) error { return floorCycle(ctx, floor.url) })
	f1 := floor.cpu(b)
	b.StopTimer()
	if b.Failed() {
		return
	}
	per := float64((c1 - c0).Nanoseconds()) / 1000 / float64(b.N)
	floorPer := float64((f1 - f0).Nanoseconds()) / 1000 / float64(b.N)
	b.ReportMetric(per, "server-cpu-µs/cycle")
	b.ReportMetric(floorPer, "floor-server-cpu-µs/cycle")
	if per > 0 && floorPer > 0 {
		b.ReportMetric(per/floorPer, "server-cpu-ratio")
		b.ReportMetric(float64(runtime.NumCPU())*1e6/per, "server-capacity-cycles/s")
		b.ReportMetric(float64(runtime.NumCPU())*1e6/floorPer, "floor-capacity-cycles/s")
	}
}
